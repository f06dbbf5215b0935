//go:build linux

package stripebed

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestStripeOVSDPDK is the OVS-DPDK link mode's short form (correctness only, no timing): node
// A's links are DPDK ports of ovs-vswitchd-dpdk, node B's system ports of the userspace
// datapath, each engine reaches them through lanes bound by stripe/ovslane's rules. One TCP
// connection delivers every byte; a slow UDP stream arrives complete, in order and without
// duplicates; the engine loses nothing. Stripe frames flowed over every lane both ways: each
// lane → NIC rule and each NIC → lane rule matched packets on both switches, and every engine
// link sent frames.
func TestStripeOVSDPDK(t *testing.T) {
	lab.Require(t, lab.NeedNetns, lab.NeedDPDK)
	b := New(t, Spec{})
	s := b.StartStripeOVS(t, OVSLaneOptions{})
	checkStripeOVS(t, b, s)
}

// TestStripeOVSDPDKVethLanes is TestStripeOVSDPDK with veth lanes (OVSLaneOptions.VethLanes):
// the same checks, and on the DPDK node a PMD thread polls every lane
// (dpif-netdev/pmd-rxq-show lists each lane port), not the main thread.
func TestStripeOVSDPDKVethLanes(t *testing.T) {
	lab.Require(t, lab.NeedNetns, lab.NeedDPDK)
	b := New(t, Spec{})
	s := b.StartStripeOVS(t, OVSLaneOptions{VethLanes: true})
	rxq, err := b.A.Exec(t.Context(), "ovs-appctl", "-t", s.OA.Sw.CtlPath, "dpif-netdev/pmd-rxq-show")
	if err != nil {
		t.Fatalf("pmd-rxq-show on node A: %v", err)
	}
	for _, lane := range s.OA.Lanes {
		if !regexp.MustCompile(`port: +` + regexp.QuoteMeta(lane) + ` +queue-id`).MatchString(rxq) {
			t.Errorf("node A: lane %s is not polled by a PMD thread; pmd-rxq-show:\n%s", lane, rxq)
		}
	}
	checkStripeOVS(t, b, s)
}

// checkStripeOVS moves TCP and UDP through s and checks what TestStripeOVSDPDK says.
func checkStripeOVS(t *testing.T, b *Bed, s *StripeOVS) {
	t.Helper()
	ctx := t.Context()
	const n = 4 << 20
	tctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a bound on a hang, not a speed assertion
	defer cancel()
	r, err := TCPBulk(tctx, b.A, b.B, TCPSpec{Src: s.AAddr, Dst: s.BAddr, Bytes: n, CC: defaultCC()})
	if err != nil {
		s.logState(t, b)
		t.Fatalf("TCP over the lanes: %v", err)
	}
	if r.Bytes != n {
		t.Errorf("TCP over the lanes: received %d bytes, want %d", r.Bytes, n)
	}
	u, err := UDPStream(ctx, b.A, b.B, UDPSpec{Src: s.AAddr, Dst: s.BAddr, RateBitsPerSec: 20e6, Duration: time.Second})
	if err != nil {
		t.Fatalf("UDP over the lanes: %v", err)
	}
	if u.Sent == 0 || u.Lost != 0 || u.Reordered != 0 || u.Duplicates != 0 {
		t.Errorf("UDP over the lanes: %+v, want every datagram once and in order", u)
	}
	for _, node := range []struct {
		name string
		o    *OVSLaneNode
		ns   *lab.Netns
	}{{"A (dpdk)", &s.OA, b.A}, {"B (userspace)", &s.OB, b.B}} {
		out, in, err := node.o.LaneFlowPackets(ctx, node.ns)
		if err != nil {
			t.Fatalf("node %s: %v", node.name, err)
		}
		for i := range out {
			if out[i] == 0 || in[i] == 0 {
				t.Errorf("node %s link %d: lane→NIC rule matched %d packets, NIC→lane %d: want stripe frames over every lane both ways",
					node.name, i, out[i], in[i])
			}
		}
		t.Logf("node %s: lane→NIC packets %v, NIC→lane packets %v", node.name, out, in)
	}
	for i, l := range s.A.Engine.Stats().Links {
		if l.TxFrames == 0 {
			t.Errorf("engine A link %d (%s) sent no frames", i, l.Name)
		}
	}
	if es := s.B.Engine.Stats(); es.Lost != 0 {
		t.Errorf("engine B lost %d frames", es.Lost)
	}
	ta, tb := s.A.Tunnel.Stats(), s.B.Tunnel.Stats()
	if ta.TxPackets == 0 || ta.Malformed+tb.Malformed+tb.Foreign+tb.WriteErrors != 0 {
		t.Errorf("tunnel counters A %+v, B %+v: want traffic and nothing malformed or foreign", ta, tb)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// logState logs what the engines and the switches counted, for a failure's diagnosis.
func (s *StripeOVS) logState(t *testing.T, b *Bed) {
	t.Helper()
	t.Logf("engine A: %+v", s.A.Engine.Stats())
	t.Logf("engine B: %+v", s.B.Engine.Stats())
	t.Logf("tunnel A: %+v; tunnel B: %+v", s.A.Tunnel.Stats(), s.B.Tunnel.Stats())
	for _, n := range []struct {
		o  *OVSLaneNode
		ns *lab.Netns
	}{{&s.OA, b.A}, {&s.OB, b.B}} {
		out, in, err := n.o.LaneFlowPackets(context.WithoutCancel(t.Context()), n.ns)
		t.Logf("%s: lane→NIC %v, NIC→lane %v, %v", n.ns, out, in, err)
		if dump, err := n.ns.Exec(context.WithoutCancel(t.Context()), "ovs-appctl", "-t", n.o.Sw.CtlPath, "dpif-netdev/pmd-stats-show"); err == nil {
			t.Logf("%s pmd stats:\n%s", n.ns, dump)
		}
	}
}
