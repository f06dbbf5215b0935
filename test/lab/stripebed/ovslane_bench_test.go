//go:build linux

package stripebed

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/ovslane"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// ovsPoliciesEnv selects the policies BenchmarkStripeOVSDPDK runs in each mode, comma-separated
// (unset: weighted).
const ovsPoliciesEnv = "STRIPEBED_OVS_POLICIES"

// ovsModesEnv selects the modes BenchmarkStripeOVSDPDK runs, comma-separated, from kernel,
// ovs-dpdk (internal-port lanes), ovs-dpdk-veth (veth lanes, PMD-polled on the DPDK node) and
// ovs-dpdk-veth-adapt (veth lanes paced by ovslane.Adapter) (unset: all four).
const ovsModesEnv = "STRIPEBED_OVS_MODES"

// ovsSecondsEnv sets each arm's length in seconds at the summed rate (unset: 10): the TCP
// connection carries that many seconds' worth of bytes, so a slow arm takes longer.
const ovsSecondsEnv = "STRIPEBED_OVS_SECONDS"

// ovsPaceEnv sets the OVS-DPDK mode's pace factor, the share of each link's tbf rate its lane is
// paced to (unset: DefaultPaceFactor).
const ovsPaceEnv = "STRIPEBED_OVS_PACE"

// BenchmarkStripeOVSDPDK measures what the OVS-DPDK link mode costs next to the kernel-NIC mode
// on the same bed in one run: the links alone (3 s each), then per policy the stripe through
// tun devices in kernel-NIC mode and in OVS-DPDK mode (node A ovs-vswitchd-dpdk with af_packet
// DPDK ports, node B the userspace datapath) with internal-port lanes and with veth lanes
// (STRIPEBED_OVS_MODES picks a subset), each one TCP connection of 10 s at the summed
// measured rate and one UDP stream at that rate for 10 s. It reports per arm the TCP throughput
// as % of the summed measured link rates, the UDP delivery, and the CPU time per Gbit carried by
// TCP: the test process (both engines, tunnels and the traffic sockets, getrusage) and, in OVS
// mode, both ovs-vswitchd processes (/proc/PID/stat), separately. STRIPEBED_OVS_PACE sets the
// OVS mode's pace factor (default DefaultPaceFactor). Run it with
// `make bench-stripe-ovs` (or go test -run '^$' -bench BenchmarkStripeOVSDPDK -benchtime 1x
// ./test/lab/stripebed/) and note /proc/loadavg, which the log prints.
func BenchmarkStripeOVSDPDK(b *testing.B) {
	lab.Require(b, lab.NeedNetns, lab.NeedDPDK)
	bed := New(b, Spec{})
	load := Load{LinkSeconds: 3, ArmSeconds: 10}
	if v := os.Getenv(ovsSecondsEnv); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || !(secs >= 1 && secs <= 600) {
			b.Fatalf("%s=%q: want seconds from 1 to 600", ovsSecondsEnv, v)
		}
		load.ArmSeconds = secs
	}
	ctx := b.Context()
	links, err := bed.MeasureLinks(ctx, load)
	if err != nil {
		b.Fatal(err)
	}
	rates := make([]float64, len(links))
	sum := 0.0
	for i, l := range links {
		rates[i], sum = l.BitsPerSecond, sum+l.BitsPerSecond
	}
	b.Logf("links alone: %v bit/s, sum %.0f Mbit/s; loadavg %s", rates, sum/1e6, loadavg())
	pace := DefaultPaceFactor
	if v := os.Getenv(ovsPaceEnv); v != "" {
		if pace, err = strconv.ParseFloat(v, 64); err != nil || !(pace > 0 && pace <= 1) {
			b.Fatalf("%s=%q: want a factor in (0, 1]", ovsPaceEnv, v)
		}
	}
	kinds := []string{string(policy.KindWeighted)}
	if v := os.Getenv(ovsPoliciesEnv); v != "" {
		kinds = strings.Split(v, ",")
	}
	modes := []string{"kernel", "ovs-dpdk", "ovs-dpdk-veth", "ovs-dpdk-veth-adapt"}
	if v := os.Getenv(ovsModesEnv); v != "" {
		modes = strings.Split(v, ",")
	}
	for _, mode := range modes {
		mode = strings.TrimSpace(mode)
		if !slices.Contains([]string{"kernel", "ovs-dpdk", "ovs-dpdk-veth", "ovs-dpdk-veth-adapt"}, mode) {
			b.Fatalf("%s: mode %q: want kernel, ovs-dpdk, ovs-dpdk-veth or ovs-dpdk-veth-adapt", ovsModesEnv, mode)
		}
		for _, kind := range kinds {
			b.Run(mode+"/"+kind, func(b *testing.B) {
				k := policy.Kind(strings.TrimSpace(kind))
				var s *Stripe
				var switches []int
				var adapter *ovslane.Adapter
				if mode == "kernel" {
					s = bed.StartStripe(b, k, rates)
				} else {
					so := bed.StartStripeOVS(b, OVSLaneOptions{Policy: k, PaceFactor: pace, VethLanes: strings.HasPrefix(mode, "ovs-dpdk-veth"),
						Adaptive: mode == "ovs-dpdk-veth-adapt"})
					s, switches, adapter = so.Stripe, []int{so.OA.Sw.PID(), so.OB.Sw.PID()}, so.OA.Adapter
				}
				cpu0, sw0 := cpuTime(b), switchCPU(b, switches)
				rs, err := bed.RunPair(b.Context(), load, rates, Pair{Arm: "stripe " + mode + " " + kind, Src: s.AAddr, Dst: s.BAddr})
				cpu, sw := cpuTime(b)-cpu0, switchCPU(b, switches)-sw0
				if err != nil {
					b.Fatal(err)
				}
				tcp := rs[0]
				u, err := UDPStream(b.Context(), bed.A, bed.B, UDPSpec{Src: s.AAddr, Dst: s.BAddr, RateBitsPerSec: sum,
					Duration: time.Duration(load.ArmSeconds * float64(time.Second))})
				if err != nil {
					b.Fatal(err)
				}
				ea, eb := s.A.Engine.Stats(), s.B.Engine.Stats()
				if err := s.Stop(); err != nil {
					b.Fatalf("stop: %v", err)
				}
				if adapter != nil { // read after Stop, which ended its goroutine
					b.Logf("node A's adapter: scale %.2f at the end, lowered in %d periods", adapter.Scale(), adapter.Decreases())
				}
				gbit := float64(tcp.Bytes) * 8 / 1e9
				b.ReportMetric(tcp.PctOfSum, "tcp-pct-of-sum")
				b.ReportMetric(u.DeliveredBitsPerSecond/1e6, "udp-Mbit/s")
				b.ReportMetric(cpu.Seconds()/gbit, "proc-cpu-s/Gbit")
				b.ReportMetric(sw.Seconds()/gbit, "ovs-cpu-s/Gbit")
				b.Logf("%s %s (OVS pace factor %v): TCP %.0f Mbit/s = %.1f %% of %.0f (retrans %d, link CoV %.2f); UDP offered %.0f, delivered %.0f Mbit/s, lost %d of %d; "+
					"CPU per Gbit of TCP: process %.2f s, ovs-vswitchd %.2f s; engine A resent %d, B lost %d, reordered %d (max depth %d); loadavg %s",
					mode, kind, pace, tcp.BitsPerSecond/1e6, tcp.PctOfSum, sum/1e6, tcp.Retrans, tcp.LoadCoV, u.OfferedBitsPerSecond/1e6,
					u.DeliveredBitsPerSecond/1e6, u.Lost, u.Sent, cpu.Seconds()/gbit, sw.Seconds()/gbit, ea.Retransmits, eb.Lost,
					eb.Reordered, eb.MaxReorderDepth, loadavg())
			})
		}
	}
}

// switchCPU is pidsCPU, failing b on an error.
func switchCPU(b *testing.B, pids []int) time.Duration {
	d, err := pidsCPU(pids)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
