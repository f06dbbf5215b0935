//go:build linux

package stripebed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/ovslane"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/openflow"
)

// The OVS-DPDK link mode's bed: names and the cookie range its rules are written with (the
// shape of a plugin's range: 0xa5, a 16-bit slot, 40 bits of the plugin's own).
const (
	ovsLaneBridge = "br0"
	ovsLaneOwner  = "stripe"
	// DefaultPaceFactor is the share of each link's tbf rate the engines pace its lane to.
	DefaultPaceFactor = 0.95
	// The lane rules' cookie range and group range.
	ovsLaneCookieValue = 0xa5_0001_00_00000000
	ovsLaneCookieMask  = 0xff_ffff_00_00000000
	ovsLaneGroupFirst  = 2 << 16
	ovsLaneGroupCount  = 1 << 16
)

// OVSLaneNode is one node of the OVS-DPDK link mode: its switch, the bridge's NICs and lanes
// (lane i bound to NIC i), and the engine and tunnel over the lanes.
type OVSLaneNode struct {
	// DB and Sw are the node's database and switch.
	DB *lab.OVSDB
	Sw *lab.OVSVswitchd
	// NICs are the NIC ports on br0, in link order (type dpdk on the DPDK node, the veth ends'
	// system ports on the other); Lanes the lanes' internal ports.
	NICs, Lanes []string
	// NICType is the NICs' interface type ("dpdk" or "" for system ports).
	NICType string
	// LaneDevs are the devices the engine opens, in link order: the lanes themselves for
	// internal lanes, the far ends of the lanes' veth pairs for veth lanes.
	LaneDevs []string
	// Ofports are the interfaces' ofports by name.
	Ofports map[string]int64
	// Paced are the engine's links, each its lane paced to its rate.
	Paced []*ovslane.PacedLink
	// Adapter adapts the paced links' rates when OVSLaneOptions.Adaptive is set.
	Adapter *ovslane.Adapter
}

// StripeOVS is the stripe engine in OVS-DPDK link mode on both nodes of a bed, each carrying a
// tun device as StartStripe's does (A 10.78.0.1/24, B 10.78.0.2/24).
type StripeOVS struct {
	*Stripe
	// OA and OB are the nodes' switches, ports and paced links.
	OA, OB OVSLaneNode
}

// OVSLaneOptions choose how StartStripeOVS runs.
type OVSLaneOptions struct {
	// Policy is the engines' send policy (default weighted).
	Policy policy.Kind
	// PaceFactor is the share of each link's tbf rate its lane is paced to, (0, 1]
	// (0: DefaultPaceFactor).
	PaceFactor float64
	// BothUserspace runs node A on the userspace datapath too (system ports) instead of
	// ovs-vswitchd-dpdk.
	BothUserspace bool
	// VethLanes makes lane i a veth pair instead of an internal port: one end is a port of the
	// bridge of the NICs' kind (a DPDK af_packet port, polled by a PMD thread, on the DPDK node;
	// a system port on the userspace node), and the engine opens the other end.
	VethLanes bool
	// Adaptive adapts each node's lane rates to its engine's resends (ovslane.Adapter), from
	// PaceFactor × the tbf rates down.
	Adaptive bool
}

// StartStripeOVS puts each node's link ends into an OVS bridge br0 (userspace datapath) and
// runs the stripe engine in OVS-DPDK link mode over them. Node A runs ovs-vswitchd-dpdk with
// each link end as a DPDK port (type=dpdk, an af_packet vdev on the veth: net_af_packetN,
// iface=END); node B runs the non-DPDK ovs-vswitchd with the ends as system ports, because only
// one DPDK vswitchd runs on a machine at a time (lab.DPDKLockFile; 2 GiB of hugepages hold one).
// Offloads are turned off on every end (af_packet needs whole, checksummed frames) and the system
// ports get QoS linux-noop, so the tbf root qdiscs survive; it checks that they did.
//
// Each bridge runs in fail_mode secure (no NORMAL flow: the links are four parallel paths
// between the two bridges, a loop for NORMAL's flooding), and gets one internal port per link, the lanes stl0..stlN-1; the rules binding lane i
// to NIC i are stripe/ovslane.Flows of the bridge's facts, written by the daemon's own
// programmer (vswitchd/openflow) with a plugin-shaped cookie range. On each node the engine
// opens the lanes (set up first) with AF_PACKET links paced to PaceFactor × their tbf rate
// (ovslane.Pace), and a tun device is carried over it. It waits until each engine knows its peer
// on every link. Everything is stopped at the test's cleanup.
func (b *Bed) StartStripeOVS(t testing.TB, o OVSLaneOptions) *StripeOVS {
	t.Helper()
	if o.Policy == "" {
		o.Policy = policy.KindWeighted
	}
	if o.PaceFactor == 0 {
		o.PaceFactor = DefaultPaceFactor
	}
	if !(o.PaceFactor > 0 && o.PaceFactor <= 1) {
		t.Fatalf("stripebed: pace factor %v: want (0, 1]", o.PaceFactor)
	}
	so := &StripeOVS{}
	so.OA = b.startOVSLanes(t, b.A, b.ends(true), !o.BothUserspace, o.VethLanes)
	so.OB = b.startOVSLanes(t, b.B, b.ends(false), false, o.VethLanes)
	ctx, cancel := context.WithTimeout(t.Context(), lacpWait)
	defer cancel()
	if err := b.CheckShaping(ctx); err != nil {
		t.Fatalf("stripebed: after adding the links to OVS: %v", err)
	}
	vmax := make([]float64, len(b.Links))
	capa := make([]uint64, len(b.Links))
	for i, l := range b.Links {
		vmax[i] = float64(l.RateMbit) * 1e6 / 8
		capa[i] = uint64(l.RateMbit)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	s := &Stripe{AAddr: stripePrefix(1).Addr(), BAddr: stripePrefix(2).Addr(), cancel: stop}
	so.Stripe = s
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stripebed: %v", err)
		}
	})
	var err error
	if s.A, err = s.startLaneNode(rctx, b.A, &so.OA, 1, 2, vmax, capa, o, stripePrefix(1)); err != nil {
		t.Fatalf("stripebed: node A: %v", err)
	}
	if s.B, err = s.startLaneNode(rctx, b.B, &so.OB, 2, 1, vmax, capa, o, stripePrefix(2)); err != nil {
		t.Fatalf("stripebed: node B: %v", err)
	}
	for _, n := range []struct {
		e    *engine.Engine
		peer uint32
	}{{s.A.Engine, 2}, {s.B.Engine, 1}} {
		lab.WaitFor(t, stripeDiscovery, "stripe discovery of the peer on every lane", func(context.Context) error {
			nodes := n.e.Peers()
			if len(nodes) != 1 || nodes[0].ID != n.peer || len(nodes[0].NICs) != len(b.Links) {
				return fmt.Errorf("peers %+v", nodes)
			}
			return nil
		})
	}
	return so
}

// startOVSLanes starts one node's switch with br0 holding its link ends as NICs (DPDK ports
// when dpdk) and the lanes (veth pairs when veth, internal ports otherwise), and programs the
// lane rules.
func (b *Bed) startOVSLanes(t testing.TB, ns *lab.Netns, ends []string, dpdk, veth bool) OVSLaneNode {
	t.Helper()
	n := OVSLaneNode{DB: lab.StartOVSDB(t), Ofports: map[string]int64{}}
	// The veth lanes exist before the switch, so they outlive it at cleanup.
	var lanePairs []*lab.VethPair
	if veth {
		for range ends {
			lanePairs = append(lanePairs, lab.NewVethPair(t, lab.VethSpec{ANetns: ns, BNetns: ns, DisableOffloads: true}))
		}
	}
	mode := lab.Userspace
	if dpdk {
		mode, n.NICType = lab.DPDK, "dpdk"
	}
	n.Sw = n.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: mode, Netns: ns})
	// fail_mode=secure: the bridge gets no NORMAL flow. Its NICs are four parallel links to the
	// other node's bridge, which NORMAL would flood around in a loop (a broadcast storm); the
	// lanes' rules are all this bed forwards.
	args := []string{"add-br", ovsLaneBridge, "--", "set", "Bridge", ovsLaneBridge, "datapath_type=netdev", "fail_mode=secure"}
	for i, end := range ends {
		lab.DisableOffloads(t, ns, end)
		nic := end
		if dpdk {
			nic = "nic" + strconv.Itoa(i)
			args = append(args, "--", "add-port", ovsLaneBridge, nic, "--", "set", "Interface", nic, "type=dpdk",
				"options:dpdk-devargs="+n.Sw.AFPacketDevargs(end))
		} else {
			args = append(args, "--", "add-port", ovsLaneBridge, nic, "--", "set", "Port", nic, "qos=@noop")
		}
		lane, dev := "stl"+strconv.Itoa(i), "stl"+strconv.Itoa(i)
		switch {
		case !veth:
			args = append(args, "--", "add-port", ovsLaneBridge, lane, "--", "set", "Interface", lane, "type=internal")
		case dpdk:
			dev = lanePairs[i].B.Name
			args = append(args, "--", "add-port", ovsLaneBridge, lane, "--", "set", "Interface", lane, "type=dpdk",
				"options:dpdk-devargs="+n.Sw.AFPacketDevargs(lanePairs[i].A.Name))
		default:
			lane, dev = lanePairs[i].A.Name, lanePairs[i].B.Name
			args = append(args, "--", "add-port", ovsLaneBridge, lane)
		}
		n.NICs, n.Lanes, n.LaneDevs = append(n.NICs, nic), append(n.Lanes, lane), append(n.LaneDevs, dev)
	}
	if !dpdk {
		args = append(args, "--", "--id=@noop", "create", "QoS", "type=linux-noop")
	}
	n.DB.Vsctl(t, args...)
	facts := api.BridgeFacts{Name: ovsLaneBridge, DatapathType: "netdev"}
	spec := ovslane.Spec{Bridge: ovsLaneBridge}
	for i := range n.NICs {
		for _, name := range []string{n.NICs[i], n.Lanes[i]} {
			if e := strings.Trim(n.DB.Get(t, "Interface", name, "error"), `"[]`); e != "" {
				t.Fatalf("stripebed: interface %s in %s: %s", name, ns, e)
			}
			of, err := strconv.ParseInt(n.DB.Get(t, "Interface", name, "ofport"), 10, 64)
			if err != nil {
				t.Fatalf("stripebed: ofport of %s: %v", name, err)
			}
			n.Ofports[name] = of
		}
		facts.Ports = append(facts.Ports,
			api.BridgePort{Port: n.NICs[i], Interface: n.NICs[i], Type: n.NICType, Ofport: n.Ofports[n.NICs[i]], Owner: api.OwnerOvsplane},
			api.BridgePort{Port: n.Lanes[i], Interface: n.Lanes[i], Type: laneType(veth, n.NICType), Ofport: n.Ofports[n.Lanes[i]], Owner: api.OwnerPlugin, Plugin: ovsLaneOwner})
		spec.Bindings = append(spec.Bindings, ovslane.Binding{NIC: n.NICs[i], Lane: n.Lanes[i]})
	}
	flows, err := ovslane.Flows(spec, facts, ovsLaneOwner)
	if err != nil {
		t.Fatalf("stripebed: %v", err)
	}
	prog := &openflow.Programmer{RunDir: n.DB.Dir}
	if err := prog.Sync(t.Context(), ovsLaneBridge, api.CookieRange{Value: ovsLaneCookieValue, Mask: ovsLaneCookieMask},
		api.GroupRange{First: ovsLaneGroupFirst, Count: ovsLaneGroupCount}, api.FlowSet{Flows: flows}); err != nil {
		t.Fatalf("stripebed: program the lane rules in %s: %v", ns, err)
	}
	return n
}

// laneType is the lanes' interface type: internal, or the NICs' type for veth lanes.
func laneType(veth bool, nicType string) string {
	if veth {
		return nicType
	}
	return "internal"
}

// startLaneNode opens the node's lanes (set up, paced) in ns and runs the engine and the tunnel.
func (s *Stripe) startLaneNode(ctx context.Context, ns *lab.Netns, n *OVSLaneNode, self, peer uint32, vmax []float64,
	capa []uint64, o OVSLaneOptions, addr netip.Prefix) (StripeNode, error) {
	var sn StripeNode
	err := ns.Do(func() error {
		for i, lane := range n.LaneDevs {
			if err := ovslane.Up(lane); err != nil {
				return err
			}
			l, err := link.Open(ctx, link.Config{Interface: lane})
			if err != nil {
				return err
			}
			s.closes = append(s.closes, l.Close)
			p, err := ovslane.Pace(l, vmax[i]*o.PaceFactor)
			if err != nil {
				return err
			}
			n.Paced = append(n.Paced, p)
			sn.Links = append(sn.Links, p)
		}
		e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: sn.Links, Vmax: vmax,
			Policy: policy.Config{Kind: o.Policy, Delta: 0.1, Capacities: capa}})
		if err != nil {
			return err
		}
		sn.Engine = e
		s.run(func() error { return e.Run(ctx) })
		if o.Adaptive {
			ad, err := ovslane.NewAdapter(n.Paced, func() uint64 { return e.Stats().Retransmits })
			if err != nil {
				return err
			}
			n.Adapter = ad
			s.run(func() error {
				if err := ad.Run(ctx); err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			})
		}
		// The tunnel waits for the engine's Run itself (Tunnel.Run).
		sn.Tunnel, err = tunnel.Open(ctx, tunnel.Config{Name: stripeTun, Addr: addr, Engine: e, TxQueueLen: 4096})
		if err != nil {
			return err
		}
		s.closes = append(s.closes, sn.Tunnel.Close)
		return nil
	})
	if err != nil {
		return sn, err
	}
	s.run(func() error { return sn.Tunnel.Run(ctx) })
	return sn, nil
}

// LaneFlowPackets reads, from the node's switch, the packets each lane rule matched: out[i] is
// lane i → NIC i (stripe frames the engine sent on link i), in[i] NIC i → lane i (stripe frames
// received on link i).
func (n *OVSLaneNode) LaneFlowPackets(ctx context.Context, ns *lab.Netns) (out, in []uint64, err error) {
	dump, err := ns.Exec(ctx, "ovs-ofctl", "-O", "OpenFlow13", "--no-names", "dump-flows", n.Sw.OpenFlowTarget(ovsLaneBridge),
		fmt.Sprintf("cookie=%#x/%#x", uint64(ovsLaneCookieValue), uint64(ovsLaneCookieMask)))
	if err != nil {
		return nil, nil, fmt.Errorf("dump the lane rules: %w", err)
	}
	nPacketsRe := regexp.MustCompile(`n_packets=([0-9]+)`)
	outputRe := regexp.MustCompile(`actions=output:([0-9]+)`)
	byOutput := map[int64]uint64{}
	for line := range strings.Lines(dump) {
		o, p := outputRe.FindStringSubmatch(line), nPacketsRe.FindStringSubmatch(line)
		if o == nil || p == nil {
			continue
		}
		port, _ := strconv.ParseInt(o[1], 10, 64)
		byOutput[port], _ = strconv.ParseUint(p[1], 10, 64)
	}
	for i := range n.NICs {
		nic, lane := n.Ofports[n.NICs[i]], n.Ofports[n.Lanes[i]]
		if _, ok := byOutput[nic]; !ok {
			return nil, nil, fmt.Errorf("no rule lane %s → NIC %s in:\n%s", n.Lanes[i], n.NICs[i], dump)
		}
		if _, ok := byOutput[lane]; !ok {
			return nil, nil, fmt.Errorf("no rule NIC %s → lane %s in:\n%s", n.NICs[i], n.Lanes[i], dump)
		}
		out, in = append(out, byOutput[nic]), append(in, byOutput[lane])
	}
	return out, in, nil
}

// StopSwitches stops the stripe (engines, tunnels, links) and then both nodes' ovs-vswitchd,
// which releases the link ends (their databases stay until the test's cleanup), so another arm
// can put the ends into a switch of its own. It returns the stripe's error.
func (s *StripeOVS) StopSwitches(t testing.TB) error {
	t.Helper()
	err := s.Stop()
	s.OA.Sw.Stop(t)
	s.OB.Sw.Stop(t)
	return err
}

// StripeOVSArm measures the stripe engine in OVS-DPDK link mode with the options o
// (StartStripeOVS): one TCP connection and one UDP stream between the nodes' tunnel addresses,
// as RunPair, rates being the links' measured bit/s. The arm's name says the policy, the lane
// kind and the pace factor; the note adds the engine's retransmits and losses on A and the
// reordering on B. It stops the switches afterwards (StopSwitches), so the OVS bond arms can
// follow in the same run.
func (b *Bed) StripeOVSArm(t testing.TB, load Load, rates []float64, o OVSLaneOptions) ([]Result, error) {
	t.Helper()
	so := b.StartStripeOVS(t, o)
	lanes := "internal lanes"
	if o.VethLanes {
		lanes = "veth lanes"
	}
	pace := o.PaceFactor
	if pace == 0 {
		pace = DefaultPaceFactor
	}
	policy := o.Policy
	if policy == "" {
		policy = "weighted"
	}
	arm := fmt.Sprintf("stripe ovs-dpdk %s (%s, paced at %.2g×)", policy, lanes, pace)
	pids := []int{so.OA.Sw.PID(), so.OB.Sw.PID()}
	sw0, cerr := pidsCPU(pids)
	rs, err := b.RunPair(t.Context(), load, rates, Pair{Arm: arm, Src: so.AAddr, Dst: so.BAddr, UDP: true})
	sw1, cerr1 := pidsCPU(pids)
	a, bs := so.A.Engine.Stats(), so.B.Engine.Stats()
	if serr := so.StopSwitches(t); err == nil && serr != nil {
		err = serr
	}
	var gbit float64
	for _, r := range rs {
		gbit += float64(r.Bytes) * 8 / 1e9
	}
	swCPU := "unknown (" + fmt.Sprint(errors.Join(cerr, cerr1)) + ")"
	if cerr == nil && cerr1 == nil && gbit > 0 {
		swCPU = fmt.Sprintf("%.2f s per Gbit", (sw1-sw0).Seconds()/gbit)
	}
	for i := range rs {
		rs[i].Note += fmt.Sprintf("; engine (both protos): A resent %d frames, B lost %d, reordered %d (max depth %d); "+
			"both ovs-vswitchd (both protos, not in the CPU column): %s", a.Retransmits, bs.Lost, bs.Reordered, bs.MaxReorderDepth, swCPU)
	}
	return rs, err
}

// pidsCPU is the user plus system CPU time of the processes pids so far (/proc/PID/stat).
func pidsCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
		}
		// The command is in parentheses and may hold spaces: fields count from the last ')'.
		i := bytes.LastIndex(data, []byte(") "))
		var f []string
		if i >= 0 {
			f = strings.Fields(string(data[i+2:]))
		}
		if len(f) < 13 {
			return 0, fmt.Errorf("CPU of process %d: unexpected /proc stat %q", pid, data)
		}
		// utime and stime are fields 14 and 15 of stat, 12 and 13 after the command.
		for _, s := range f[11:13] {
			ticks, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
			}
			total += time.Duration(ticks) * time.Second / 100 // USER_HZ
		}
	}
	return total, nil
}
