//go:build linux

package flowbed_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab/flowbed"
)

// envInt returns the environment variable name as an int, or def when unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// processCPU is the test process's user plus system CPU time (generator, receiver, collector).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFlowgen is `make bench-flowgen`: for 64, 512 and 1448-byte frames it sends
// FLOWBED_FRAMES frames (default 200000) over FLOWBED_FLOWS flows (default 64), at FLOWBED_PPS
// frames/s (default 0: as fast as the TX ring goes), through the OVS-DPDK bridge with NetFlow
// export, and reports per arm the achieved send and receive rates, the loss, NetFlow's
// exported packets against generated and received, and its octets per packet against the
// frame size. The per-flow tables go to the log (-v). One iteration is enough (-benchtime 1x).
func BenchmarkFlowgen(b *testing.B) {
	flows := envInt(b, "FLOWBED_FLOWS", 64)
	frames := envInt(b, "FLOWBED_FRAMES", 200000)
	pps := envInt(b, "FLOWBED_PPS", 0)
	bed := flowbed.New(b, flowbed.Spec{})
	for _, size := range []int{64, 512, 1448} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			for b.Loop() {
				spec := bed.GenSpec(size, flows, uint64(frames))
				spec.PacketsPerSecond = float64(pps)
				cpu0 := processCPU()
				res := bed.Run(b, spec, 60*time.Second)
				cpu := processCPU() - cpu0
				var out bytes.Buffer
				_ = res.Report.WriteTable(&out)
				_ = res.WriteTable(&out)
				load, _ := os.ReadFile("/proc/loadavg")
				b.Logf("%d-byte frames, %d flows, load %s\n%s", size, flows, strings.TrimSpace(string(load)), out.String())
				r := res.Report
				b.ReportMetric(r.SentPPS, "sent-pps")
				b.ReportMetric(r.RecvPPS, "recv-pps")
				b.ReportMetric(r.SentFrameBitsPerSecond/1e6, "sent-Mbit/s")
				b.ReportMetric(100*r.LossRatio, "loss-%")
				b.ReportMetric(ratio(res.ExportedPackets, r.SentPackets), "exported/sent")
				b.ReportMetric(ratio(res.ExportedPackets, r.RecvPackets), "exported/recv")
				b.ReportMetric(ratio(res.ExportedOctets, res.ExportedPackets), "octets/exported-pkt")
				b.ReportMetric(float64(res.Records), "records")
				if gbit := float64(r.SentPackets) * float64(size) * 8 / 1e9; gbit > 0 {
					b.ReportMetric(cpu.Seconds()/gbit, "cpu-s/Gbit")
				}
			}
		})
	}
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
