package main

import (
	"fmt"
	"io"
	"strings"
)

// reportInfo is what the report says about the run besides the measurements.
type reportInfo struct {
	Config  *Config
	Command string // the command line that produced the run
	When    string // date of the run, or a dry-run notice
	DryRun  bool
	Err     error // what stopped the run early, if anything
}

// cellKey finds a measurement.
type cellKey struct {
	scenario string
	mode     Mode
	size     int
}

// writeReport renders the measurements as a section in docs/benchmarks.md's format: heading,
// command, run line, one table with a row per scenario and size (off / on side by side and
// their ratio), notes on what the columns mean, and the raw numbers.
func writeReport(w io.Writer, info reportInfo, ms []Measurement) error {
	c := info.Config
	var b strings.Builder
	title := "## DSA vhost offload (issue 15)"
	if c.Host != "" {
		title += ": " + c.Host
	}
	b.WriteString(title + "\n\n")
	if info.DryRun {
		b.WriteString("**Dry run: every number below comes from the recorded sample outputs in " +
			"bench/dsakit/testdata/samples, not from a measurement.**\n\n")
	}
	where := "as root, on a host as described in docs/dsa.md, \"Hardware measurement kit\""
	if info.DryRun {
		where = "anywhere: it runs nothing"
	}
	fmt.Fprintf(&b, "Command (%s):\n\n```sh\n%s\n```\n\n", where, info.Command)
	fmt.Fprintf(&b, "%s: %d s warm-up and a %d s window per cell, vhost async threshold %d B, DSA off then on "+
		"(other_config:vhost-async-support, ovs-vswitchd restarted in between):\n\n", info.When, c.WarmupS, c.DurationS, c.Threshold)

	cells := map[cellKey]Measurement{}
	for _, m := range ms {
		cells[cellKey{m.Scenario, m.Mode, m.Size}] = m
	}
	b.WriteString("| scenario | frame (B) | Mpps off / on | Gbit/s off / on | PMD busy % off / on | PMD cycles/pkt off / on | vhost_async Δ (on) | on/off | |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, sc := range c.Scenarios {
		for _, size := range c.Sizes {
			off, okOff := cells[cellKey{sc.Name, DSAOff, size}]
			on, okOn := cells[cellKey{sc.Name, DSAOn, size}]
			if !okOff && !okOn {
				continue
			}
			pair := func(f func(Measurement) string) string {
				l, r := "–", "–"
				if okOff {
					l = f(off)
				}
				if okOn {
					r = f(on)
				}
				return l + " / " + r
			}
			ratio, note, async := "–", "", "–"
			if okOn {
				async = fmt.Sprint(on.AsyncOps)
				if on.AsyncOps == 0 {
					note = "**DSA unused** (no vhost_async copies)"
				}
			}
			if okOff && okOn {
				r := on.Gbps() / off.Gbps()
				ratio = fmt.Sprintf("%.3f×", r)
				if r < 1 && note == "" {
					note = "**slower with DSA**"
				}
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", sc.Name, size,
				pair(func(m Measurement) string { return fmt.Sprintf("%.2f", m.Mpps()) }),
				pair(func(m Measurement) string { return fmt.Sprintf("%.2f", m.Gbps()) }),
				pair(func(m Measurement) string { return fmt.Sprintf("%.1f", m.PMD.BusyPct()) }),
				pair(func(m Measurement) string { return fmt.Sprintf("%.0f", m.PMD.CyclesPerPacket()) }),
				async, ratio, note)
		}
	}
	if info.Err != nil {
		fmt.Fprintf(&b, "\n**The run stopped early:** %v\n", info.Err)
	}
	b.WriteString("\nWhat the columns are:\n\n")
	for _, sc := range c.Scenarios {
		fmt.Fprintf(&b, "- **%s**: packets and bytes are the growth of tx_packets / tx_bytes of %s over the window.\n",
			sc.Name, strings.Join(quoteAll(sc.Measure), " + "))
	}
	b.WriteString("- **Gbit/s** counts L2 frames as OVS does (no preamble, inter-frame gap or CRC); **on/off** " +
		"is Gbit/s with DSA on over off at the same size (Mpps gives the same ratio).\n" +
		"- **PMD busy %** is processing / (idle + processing) cycles of all PMD threads over the window, " +
		"**PMD cycles/pkt** processing cycles per received packet (`ovs-appctl dpif-netdev/pmd-stats-show` " +
		"after `pmd-stats-clear`).\n" +
		"- **vhost_async Δ** is the growth of the vhost_async* coverage counters (`ovs-appctl coverage/show`) " +
		"during the DSA-on window: 0 means no copy went to DSA and the \"on\" column measured the CPU path.\n")
	b.WriteString("\nRaw numbers (scenario, DSA, frame B, window s, packets, bytes, PMDs, idle cycles, processing cycles, packets received by PMDs, vhost_async Δ):\n\n```\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "%s\t%s\t%d\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", m.Scenario, m.Mode, m.Size, m.Seconds,
			m.Packets, m.Bytes, m.PMD.PMDs, m.PMD.Idle, m.PMD.Busy, m.PMD.Packets, m.AsyncOps)
	}
	b.WriteString("```\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// quoteAll wraps each name in backquotes.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}
