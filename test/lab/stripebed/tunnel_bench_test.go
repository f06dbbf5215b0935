//go:build linux

package stripebed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// policiesEnv selects the policies BenchmarkStripeTunnel measures: a comma-separated list of
// policy kinds, each optionally followed, in any order, by "+nooffload" (tun devices without
// offloads), "+sndbuf" (link send buffers of 5 ms at the link's rate,
// StripeOptions.SendBufferMs), "+ring" (links receive through TPACKET_V3 rings of
// link.RingBlocks, 4 MiB), "+ringmsN" (rings holding N ms at the link's rate), "+pace" (links
// paced to their rates), "+rtoN" (engines' least retransmit timeout N ms) and "+txqN" (tun
// transmit queues of N packets); unset, weighted+pace,
// weighted and round-robin.
const policiesEnv = "STRIPEBED_POLICIES"

// tcpMiBEnv sets BenchmarkStripeTunnel's TCP transfer in MiB (default 64; longer transfers
// weigh TCP's start less).
const tcpMiBEnv = "STRIPEBED_TCP_MIB"

// BenchmarkStripeTunnel is the focused measurement of the transparent mode alone: per policy,
// one TCP transfer of 64 MiB through the tunnels on the default bed, reporting the throughput,
// its share of the summed link rates and the whole process's CPU time per tunnel packet and
// per Gbit (both nodes' engines and tunnels and the traffic sockets, from getrusage); then 2 s
// of UDP datagrams that fit the tunnel's MTU, paced to the summed rates. Run it with
// -benchtime 1x; the policies run back to back so they see the same host load.
func BenchmarkStripeTunnel(b *testing.B) {
	lab.Require(b, lab.NeedNetns)
	bed := New(b, Spec{})
	rates := make([]float64, len(bed.Links))
	sum := 0.0
	for i, l := range bed.Links {
		rates[i] = float64(l.RateMbit) * 1e6
		sum += rates[i]
	}
	kinds := []string{"weighted+pace", "weighted", "round-robin"}
	if v := os.Getenv(policiesEnv); v != "" {
		kinds = strings.Split(v, ",")
	}
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			o, err := parseVariant(kind)
			if err != nil {
				b.Fatal(err)
			}
			s := bed.StartStripeWith(b, o, rates)
			n := int64(64 << 20)
			if v := os.Getenv(tcpMiBEnv); v != "" {
				mib, err := strconv.Atoi(v)
				if err != nil || mib < 1 || mib > 1<<14 {
					b.Fatalf("%s=%q: want 1 to %d MiB", tcpMiBEnv, v, 1<<14)
				}
				n = int64(mib) << 20
			}
			d0, err := bed.dropCounters(b.Context(), s)
			if err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuTime(b)
			r, err := TCPBulk(b.Context(), bed.A, bed.B, TCPSpec{Src: s.AAddr, Dst: s.BAddr, Bytes: n, CC: defaultCC()})
			cpu := cpuTime(b) - cpu0
			if err != nil {
				b.Fatalf("TCP over the tunnel: %v", err)
			}
			d1, err := bed.dropCounters(b.Context(), s)
			if err != nil {
				b.Fatal(err)
			}
			ta, tb := s.A.Tunnel.Stats(), s.B.Tunnel.Stats()
			pkts := ta.TxPackets + tb.TxPackets
			ea, eb := s.A.Engine.Stats(), s.B.Engine.Stats()
			b.Logf("%s: tunnel A read %d times for %d packets, B wrote %d times for %d; engine A resent %d, srtt %v, max ack delay %v; B reordered %d (max depth %d)",
				kind, ta.Reads, ta.TxPackets, tb.Writes, tb.RxPackets, ea.Retransmits, ea.SRTT, ea.MaxAckDelay, eb.Reordered, eb.MaxReorderDepth)
			// UDP: 2 s of datagrams that fit the tunnel's MTU, paced to the summed rates.
			cpu1 := cpuTime(b)
			u, err := UDPStream(b.Context(), bed.A, bed.B, UDPSpec{Src: s.AAddr, Dst: s.BAddr, RateBitsPerSec: sum, Duration: 2 * time.Second})
			ucpu := cpuTime(b) - cpu1
			if err != nil {
				b.Fatalf("UDP over the tunnel: %v", err)
			}
			d2, err := bed.dropCounters(b.Context(), s)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: drops during TCP %+v, during UDP %+v", kind, d1.Sub(d0), d2.Sub(d1))
			lat, err := Latency(b.Context(), bed.A, bed.B, LatencySpec{Src: s.AAddr, Dst: s.BAddr, LoadBitsPerSec: sum / 2, Duration: 3 * time.Second, CC: defaultCC()})
			if err != nil {
				b.Fatalf("latency over the tunnel: %v", err)
			}
			b.Logf("%s: latency at half the summed rate: p50 %v, p99 %v (%d samples, load delivered %.0f Mbit/s)", kind, lat.P50, lat.P99, lat.Samples, lat.LoadBitsPerSecond/1e6)
			if err := s.Stop(); err != nil {
				b.Fatalf("stop: %v", err)
			}
			b.ReportMetric(float64(lat.P50.Microseconds())/1e3, "p50-ms")
			b.ReportMetric(float64(lat.P99.Microseconds())/1e3, "p99-ms")
			b.ReportMetric(u.DeliveredBitsPerSecond/1e6, "udp-Mbit/s")
			b.ReportMetric(100*float64(u.Lost)/float64(max(1, u.Sent)), "udp-loss-pct")
			b.Logf("%s: UDP offered %.0f Mbit/s of %d-byte datagrams, delivered %.0f Mbit/s (%.1f %% of the sum), lost %d of %d, CPU %v (%.2f s per Gbit delivered)",
				kind, u.OfferedBitsPerSecond/1e6, u.Payload, u.DeliveredBitsPerSecond/1e6, 100*u.DeliveredBitsPerSecond/sum, u.Lost, u.Sent, ucpu,
				ucpu.Seconds()/max(1e-9, u.DeliveredBitsPerSecond*u.Seconds/1e9))
			b.ReportMetric(cpu.Seconds()/(float64(r.Bytes)*8/1e9), "tcp-cpu-s/Gbit")
			b.ReportMetric(r.BitsPerSecond/1e6, "Mbit/s")
			b.ReportMetric(100*r.BitsPerSecond/sum, "pct-of-sum")
			b.ReportMetric(float64(cpu.Microseconds())/float64(max(1, pkts)), "cpu-µs/pkt")
			b.Logf("%s: %d bytes in %.2f s, %.0f Mbit/s (%.1f %% of %.0f), %d tunnel packets both ways, CPU %v",
				kind, r.Bytes, r.Seconds, r.BitsPerSecond/1e6, 100*r.BitsPerSecond/sum, sum/1e6, pkts, cpu)
		})
	}
}

// parseVariant parses one entry of policiesEnv.
func parseVariant(kind string) (StripeOptions, error) {
	parts := strings.Split(strings.TrimSpace(kind), "+")
	o := StripeOptions{Policy: policy.Kind(parts[0])}
	for _, p := range parts[1:] {
		switch {
		case p == "pace":
			o.Pace = true
		case p == "ring":
			o.RxRing = true
		case p == "sndbuf":
			o.SendBufferMs = 5
		case p == "nooffload":
			o.NoOffload = true
		case strings.HasPrefix(p, "ringms"):
			n, err := strconv.Atoi(p[6:])
			if err != nil || n < 1 || n > 10000 {
				return o, fmt.Errorf("%s=%q: %q: want ringms1 to ringms10000", policiesEnv, kind, p)
			}
			o.RxRing, o.RingMs = true, n
		case strings.HasPrefix(p, "rto"):
			n, err := strconv.Atoi(p[3:])
			if err != nil || n < 1 || n > 10000 {
				return o, fmt.Errorf("%s=%q: %q: want rto1 to rto10000 (ms)", policiesEnv, kind, p)
			}
			o.RetransmitTimeout = time.Duration(n) * time.Millisecond
		case strings.HasPrefix(p, "txq"):
			n, err := strconv.Atoi(p[3:])
			if err != nil || n < 1 || n > 1<<20 {
				return o, fmt.Errorf("%s=%q: %q: want txq1 to txq%d", policiesEnv, kind, p, 1<<20)
			}
			o.TunQueueLen = n
		default:
			return o, fmt.Errorf("%s=%q: unknown option %q: want pace, ring, ringmsN, sndbuf, nooffload, rtoN or txqN", policiesEnv, kind, p)
		}
	}
	return o, nil
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
