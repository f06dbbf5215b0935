//go:build linux

package overlaybed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Load sizes a measurement.
type Load struct {
	// Pings is the number of echo requests per arm (200 ms apart); 1 to 1000.
	Pings int
	// TCPBytes is what each TCP transfer (iperf3 -n) moves; 0 skips the throughput; at most 4 GiB.
	TCPBytes int64
}

// check validates the load.
func (l Load) check() error {
	if l.Pings < 1 || l.Pings > 1000 {
		return fmt.Errorf("overlaybed load: %d pings, want 1 to 1000", l.Pings)
	}
	if l.TCPBytes < 0 || l.TCPBytes > 4<<30 {
		return fmt.Errorf("overlaybed load: %d TCP bytes, want 0 to 4 GiB", l.TCPBytes)
	}
	return nil
}

// ArmResult is one arm's measurement between two sites.
type ArmResult struct {
	// Arm names the path ("direct", "via s1") and Builder who installed its routes ("bed
	// flows" or "overlay plugin").
	Arm, Builder string
	// Src and Dst are the sites; Path lists the sites the packets cross, Src first.
	Src, Dst string
	Path     []string
	// Ping is the round trip from Src to Dst's overlay address.
	Ping lab.PingStats
	// Forward and Reverse are the TCP transfers Src→Dst and Dst→Src (zero when skipped).
	Forward, Reverse lab.TransferStats
	// Drops are the underlay's drops during the arm (all paths).
	Drops Drops
	// Versions counts the route versions the plugin's controller published during the arm
	// (-1: no plugin; set by the caller).
	Versions int64
}

// Report is a run of arms with the conditions it ran in.
type Report struct {
	// Sites is the number of sites in the bed; Delays the spec's one-way delays.
	Sites                              int
	IntraDelay, CrossDelay, SuperDelay time.Duration
	// LoadAvg is /proc/loadavg before and after the run (the machine is shared; numbers are noisy).
	LoadAvgBefore, LoadAvgAfter string
	// Results are the arms, in run order.
	Results []ArmResult
	// Moves are the link degradations measured with the plugin.
	Moves []Move
}

// NewReport starts a report for b, reading the load average.
func (b *Bed) NewReport() *Report {
	return &Report{Sites: len(b.Sites), IntraDelay: b.Spec.IntraDelay, CrossDelay: b.Spec.CrossDelay,
		SuperDelay: b.Spec.SuperDelay, LoadAvgBefore: loadAvg()}
}

// loadAvg returns the first three fields of /proc/loadavg, or "?".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// MeasureArm measures the current routes between src and dst (set by the caller: SetRoutes or
// the plugin) and appends the result: a warm-up, load.Pings echo requests, then one TCP
// transfer each way. It fails the test when a ping gets no reply or a transfer fails.
func (b *Bed) MeasureArm(t testing.TB, rep *Report, arm, builder, src, dst string, path []string, load Load) ArmResult {
	t.Helper()
	if err := load.check(); err != nil {
		t.Fatalf("%v", err)
	}
	s, d := b.Site(src), b.Site(dst)
	if s == nil || d == nil {
		t.Fatalf("overlaybed: measure %s→%s: unknown site", src, dst)
	}
	if err := b.Warm(t.Context(), src, dst); err != nil {
		t.Fatalf("%v", err)
	}
	r := ArmResult{Arm: arm, Builder: builder, Src: src, Dst: dst, Path: path, Versions: -1}
	drops0, err := b.Drops(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", arm, err)
	}
	if r.Ping, err = b.Ping(t.Context(), src, dst, load.Pings); err != nil {
		t.Fatalf("%s: %v", arm, err)
	}
	if load.TCPBytes > 0 {
		if r.Forward, err = lab.Iperf3(t.Context(), s.NS, d.NS, d.Overlay.String(), load.TCPBytes); err != nil {
			t.Fatalf("%s: %v", arm, err)
		}
		if r.Reverse, err = lab.Iperf3(t.Context(), d.NS, s.NS, s.Overlay.String(), load.TCPBytes); err != nil {
			t.Fatalf("%s: %v", arm, err)
		}
	}
	drops, err := b.Drops(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", arm, err)
	}
	r.Drops = drops.Sub(drops0)
	t.Logf("%s (%s) %s→%s: rtt %v (%d/%d), tcp %.1f / %.1f Mbit/s, underlay drops %+v", arm, builder, src, dst, r.Ping.AvgRTT,
		r.Ping.Received, r.Ping.Transmitted, r.Forward.BitsPerSecond/1e6, r.Reverse.BitsPerSecond/1e6, r.Drops)
	rep.Results = append(rep.Results, r)
	return r
}

// FormatMarkdown renders the report as docs/benchmarks.md's table: one row per arm, and the
// relayed arms' change against the first direct arm of the same pair.
func (rep *Report) FormatMarkdown() string {
	var w strings.Builder
	fmt.Fprintf(&w, "%d sites; one-way underlay delays (udprelay): %v inside a carrier, %v to s1, %v to s2, %v directly across carriers. "+
		"loadavg before %s, after %s (2 vCPU shared: throughput is noisy). \"bed flows\" rows: routes written by the bed itself "+
		"(per-peer VXLAN ports, OpenFlow on br-int); \"overlay plugin\" rows: the real ovsplaned + ovsplane-plugin-overlay on every site, "+
		"routes computed by overlay/controller from probed links in the 3-member fabric cluster, path read from the relays' counters. The seed reports −92 %% latency and 8.8× TCP one way for relaying.\n\n",
		rep.Sites, rep.IntraDelay, rep.SuperDelay, BackupSuperDelay, rep.CrossDelay, rep.LoadAvgBefore, rep.LoadAvgAfter)
	w.WriteString("| arm | routes installed by | path | ping RTT (ms) | RTT vs direct | TCP → (Mbit/s) | TCP ← (Mbit/s) | TCP → / ← vs direct | retrans → / ← | relay drops / relay socket overflows | route versions during the arm |\n")
	w.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	direct := map[[2]string]ArmResult{}
	for _, r := range rep.Results {
		key := [2]string{r.Src, r.Dst}
		base, haveBase := direct[key]
		if !haveBase && r.Arm == "direct" {
			direct[key] = r
		}
		rttCmp, tcpCmp := "—", "—"
		if haveBase && base.Ping.AvgRTT > 0 {
			rttCmp = fmt.Sprintf("%+.0f %%", 100*(float64(r.Ping.AvgRTT)/float64(base.Ping.AvgRTT)-1))
			if base.Forward.BitsPerSecond > 0 && base.Reverse.BitsPerSecond > 0 {
				tcpCmp = fmt.Sprintf("%.1f× / %.1f×", r.Forward.BitsPerSecond/base.Forward.BitsPerSecond,
					r.Reverse.BitsPerSecond/base.Reverse.BitsPerSecond)
			}
		}
		versions := "—"
		if r.Versions >= 0 {
			versions = strconv.FormatInt(r.Versions, 10)
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %.1f | %s | %.1f | %.1f | %s | %d / %d | %d / %d | %s |\n",
			r.Arm, r.Builder, strings.Join(r.Path, " → "), float64(r.Ping.AvgRTT)/float64(time.Millisecond), rttCmp,
			r.Forward.BitsPerSecond/1e6, r.Reverse.BitsPerSecond/1e6, tcpCmp, r.Forward.Retransmits, r.Reverse.Retransmits,
			r.Drops.Relay, r.Drops.EdgeRcvbuf, versions)
	}
	rep.formatMoves(&w)
	return w.String()
}

// formatMoves renders the degradations' table (empty without any).
func (rep *Report) formatMoves(w *strings.Builder) {
	if len(rep.Moves) == 0 {
		return
	}
	w.WriteString("\nLink degradation (overlay plugin; probes every 100 ms, 10 per report, agents and flow refresh every 100 ms):\n\n")
	w.WriteString("| degraded path | one-way delay now | pings | path before | path after | route moved after (s) | every site acked that version after (s) | versions published meanwhile |\n")
	w.WriteString("| --- | ---: | --- | --- | --- | ---: | ---: | ---: |\n")
	for _, m := range rep.Moves {
		fmt.Fprintf(w, "| %s | %v | %s → %s | %s | %s | %.2f | %.2f | %d |\n", m.Link, m.Shape.Delay, m.Src, m.Dst,
			strings.Join(m.Before, " → "), strings.Join(m.After, " → "), m.Moved.Seconds(), m.Acked.Seconds(), m.Published)
	}
}

// Finish records the load average after the run.
func (rep *Report) Finish() { rep.LoadAvgAfter = loadAvg() }
