//go:build linux

package stripebed

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

func TestJainAndCoV(t *testing.T) {
	for _, c := range []struct {
		xs        []float64
		jain, cov float64
	}{
		{[]float64{1, 1, 1, 1}, 1, 0},
		{[]float64{1, 0, 0, 0}, 0.25, math.Sqrt(3)},
		{[]float64{1, 2, 3, 4}, 100.0 / 120, math.Sqrt(1.25) / 2.5},
		{nil, 0, 0},
	} {
		if got := Jain(c.xs); math.Abs(got-c.jain) > 1e-9 {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.jain)
		}
		if got := CoV(c.xs); math.Abs(got-c.cov) > 1e-9 {
			t.Errorf("CoV(%v) = %v, want %v", c.xs, got, c.cov)
		}
	}
	u := Utilization([]int64{125e5, 25e6}, []float64{100e6, 200e6}, 1)
	if len(u) != 2 || u[0] != 1 || u[1] != 1 {
		t.Errorf("Utilization = %v, want [1 1]", u)
	}
}

func TestParsers(t *testing.T) {
	snmp := "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 42 0\n"
	if v, err := snmpValue([]byte(snmp), "Tcp", "RetransSegs"); err != nil || v != 42 {
		t.Errorf("snmpValue = %d, %v; want 42", v, err)
	}
	if _, err := snmpValue([]byte("Tcp: A\n"), "Tcp", "RetransSegs"); err == nil {
		t.Error("snmpValue of a file without the counter: no error")
	}
	dev := "Inter-|   Receive |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"
	m, err := parseNetDev([]byte(dev))
	if err != nil || m["lo"] != (IfBytes{RX: 100, TX: 200}) || len(m) != 1 {
		t.Errorf("parseNetDev = %v, %v", m, err)
	}
	for _, s := range []Spec{{RatesMbit: make([]int, MaxLinks+1)}, {RatesMbit: []int{0}}, {RatesMbit: []int{100}, Queue: 2e9}, {BurstBytes: 100}} {
		if _, err := s.normalize(); err == nil {
			t.Errorf("Spec %+v: no error", s)
		}
	}
	if b := burstBytes(400); b != 1_000_000 {
		t.Errorf("burst at 400 Mbit/s = %d, want 20 ms = 1000000", b)
	}
	if b := burstBytes(10); b != minBurst {
		t.Errorf("burst at 10 Mbit/s = %d, want the floor %d", b, minBurst)
	}
}

// TestHarness is the short form of the benchmark: it checks the harness, not the speed. The
// links must carry tbf at the configured rates on both ends, every arm must move its bytes and
// report numbers within physical bounds, and nothing may be left behind.
func TestHarness(t *testing.T) {
	lab.Require(t, lab.NeedNetns, lab.NeedOVS, lab.NeedDPDK)
	var names []string
	var rep Report
	t.Run("matrix", func(t *testing.T) {
		b := New(t, Spec{})
		names = append(names, b.A.Name, b.B.Name)
		for _, l := range b.Links {
			names = append(names, l.A.Name)
		}
		if err := b.CheckShaping(t.Context()); err != nil {
			t.Fatal(err)
		}
		rep = RunAlternatives(t, b, Load{LinkSeconds: 0.3, ArmSeconds: 0.5, LatencySeconds: 1.5, OVSDPDK: []OVSLaneOptions{{}}})
		t.Logf("\n%s", rep.FormatMarkdown())
	})
	for _, l := range rep.Links {
		if limit := float64(l.ConfiguredMbit) * 1e6 * 1.5; l.BitsPerSecond <= 0 || l.BitsPerSecond > limit {
			t.Errorf("link %d measured %.0f bit/s, want within (0, %.0f]", l.Index, l.BitsPerSecond, limit)
		}
	}
	if rep.CC != "cubic" && rep.CC != "reno" {
		t.Errorf("default congestion control %q, want cubic or reno", rep.CC)
	}
	if len(rep.Results) != 15 {
		t.Errorf("%d results, want 15 (single link tcp+udp, MPTCP tcp, 3 stripe policies tcp+udp, stripe in OVS-DPDK mode tcp+udp, 2 OVS bonds tcp+udp)", len(rep.Results))
	}
	var ovsArm bool
	for _, r := range rep.Results {
		ovsArm = ovsArm || strings.HasPrefix(r.Arm, "stripe ovs-dpdk ")
	}
	if !ovsArm {
		t.Errorf("no stripe arm in OVS-DPDK link mode among the results")
	}
	for _, r := range rep.Results {
		if r.Bytes <= 0 || r.BitsPerSecond <= 0 || r.PctOfSum <= 0 || r.PctOfSum > 150 {
			t.Errorf("%s %s: %d bytes, %.0f bit/s, %.1f %% of the sum: want bytes moved and at most 150 %%",
				r.Arm, r.Proto, r.Bytes, r.BitsPerSecond, r.PctOfSum)
		}
		var carried int64
		for _, x := range r.LinkBytes {
			carried += x
		}
		if carried < r.Bytes {
			t.Errorf("%s %s: links carried %d bytes A→B, less than the %d delivered", r.Arm, r.Proto, carried, r.Bytes)
		}
		if r.Retrans < 0 || r.LoadCoV < 0 || r.LoadJain < 1/float64(len(r.LinkBytes))-1e-9 || r.LoadJain > 1+1e-9 {
			t.Errorf("%s %s: retransmits %d, CoV %v, Jain %v out of bounds", r.Arm, r.Proto, r.Retrans, r.LoadCoV, r.LoadJain)
		}
		if r.UDP != nil && (r.UDP.Received+r.UDP.Lost != r.UDP.Sent || r.UDP.Received == 0) {
			t.Errorf("%s udp: sent %d, received %d, lost %d", r.Arm, r.UDP.Sent, r.UDP.Received, r.UDP.Lost)
		}
		if r.Proto == "tcp" && (r.Latency == nil || r.Latency.Samples == 0 || r.Latency.P50 <= 0 || r.Latency.P50 > r.Latency.P99) {
			t.Errorf("%s tcp: latency %+v, want answered requests and p50 ≤ p99", r.Arm, r.Latency)
		}
		if !r.OutsideCPU && r.CPUSeconds <= 0 {
			t.Errorf("%s %s: no CPU time measured", r.Arm, r.Proto)
		}
		if r.Proto == "tcp" && r.Note != "cc "+rep.CC && !strings.HasPrefix(r.Note, "cc "+rep.CC+"; ") {
			t.Errorf("%s tcp: %q, want the pinned congestion control %s", r.Arm, r.Note, rep.CC)
		}
	}
	if len(rep.Results) > 2 && strings.HasPrefix(rep.Results[2].Arm, "MPTCP") {
		var used int
		for _, x := range rep.Results[2].LinkBytes {
			if x > 1<<20 {
				used++
			}
		}
		if used < 2 {
			t.Errorf("MPTCP carried more than 1 MB on %d links, want several: %v", used, rep.Results[2].LinkBytes)
		}
	}
	// The subtest's cleanup has run: nothing of it may be left.
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("namespace %s left behind", n)
		}
		if out, err := exec.Command("ip", "-o", "link", "show", "dev", n).CombinedOutput(); err == nil {
			t.Errorf("interface %s left behind in the root namespace: %s", n, out)
		}
	}
}
