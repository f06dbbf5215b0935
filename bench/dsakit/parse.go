package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Bounds of the tool outputs the kit parses.
const (
	maxToolOutput = 16 << 20
	maxLines      = 200000
)

// asyncThreshCommand is the ovs-appctl command only an ovs-vswitchd with vhost async (Intel's
// dpdk-dma-tracking branch) has; upstream OVS does not.
const asyncThreshCommand = "netdev-dpdk/set-vhost-async-thresh"

// asyncCoveragePrefix starts the coverage counters of the branch's vhost async path.
const asyncCoveragePrefix = "vhost_async"

// ifaceCounters are the tx counters of one interface.
type ifaceCounters struct {
	TxPackets, TxBytes uint64
}

// parseInterfaceStats reads the output of
// `ovs-vsctl --format=json --columns=name,statistics list Interface`: {"headings":["name",
// "statistics"],"data":[["p0",["map",[["rx_bytes",0],…]]],…]} and returns the tx counters by
// interface name (zero when the interface has none yet).
func parseInterfaceStats(out string) (map[string]ifaceCounters, error) {
	if len(out) > maxToolOutput {
		return nil, fmt.Errorf("interface statistics: %d bytes, at most %d", len(out), maxToolOutput)
	}
	var doc struct {
		Headings []string            `json:"headings"`
		Data     [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("interface statistics: %w", err)
	}
	if len(doc.Headings) != 2 || doc.Headings[0] != "name" || doc.Headings[1] != "statistics" {
		return nil, fmt.Errorf("interface statistics: headings %q, want [name statistics]", doc.Headings)
	}
	res := make(map[string]ifaceCounters, len(doc.Data))
	for i, row := range doc.Data {
		if len(row) != 2 {
			return nil, fmt.Errorf("interface statistics: row %d has %d columns, want 2", i, len(row))
		}
		var name string
		if err := json.Unmarshal(row[0], &name); err != nil {
			return nil, fmt.Errorf("interface statistics: row %d name: %w", i, err)
		}
		var m []json.RawMessage
		if err := json.Unmarshal(row[1], &m); err != nil || len(m) != 2 || string(m[0]) != `"map"` {
			return nil, fmt.Errorf("interface statistics: %s: statistics is not an OVSDB map", name)
		}
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(m[1], &pairs); err != nil {
			return nil, fmt.Errorf("interface statistics: %s: %w", name, err)
		}
		var c ifaceCounters
		for _, p := range pairs {
			var k string
			var v uint64
			if json.Unmarshal(p[0], &k) != nil || json.Unmarshal(p[1], &v) != nil {
				return nil, fmt.Errorf("interface statistics: %s: entry %s=%s is not a name and a count", name, p[0], p[1])
			}
			switch k {
			case "tx_packets":
				c.TxPackets = v
			case "tx_bytes":
				c.TxBytes = v
			}
		}
		res[name] = c
	}
	return res, nil
}

// pmdCycles sums the PMD threads of `ovs-appctl dpif-netdev/pmd-stats-show` (the main thread
// is not a PMD and is left out).
type pmdCycles struct {
	PMDs                int
	Packets, Idle, Busy uint64
}

// BusyPct is the share of processing cycles among the PMDs' idle and processing cycles.
func (p pmdCycles) BusyPct() float64 {
	if p.Idle+p.Busy == 0 {
		return 0
	}
	return 100 * float64(p.Busy) / float64(p.Idle+p.Busy)
}

// CyclesPerPacket is processing cycles per received packet, 0 without packets.
func (p pmdCycles) CyclesPerPacket() float64 {
	if p.Packets == 0 {
		return 0
	}
	return float64(p.Busy) / float64(p.Packets)
}

// parsePMDStats reads `ovs-appctl dpif-netdev/pmd-stats-show` (OVS 3.x): blocks headed
// "pmd thread numa_id N core_id M:" with "packets received: N", "idle cycles: N (x%)" and
// "processing cycles: N (y%)" lines. It fails when there is no PMD thread or a PMD lacks its
// cycle lines.
func parsePMDStats(out string) (pmdCycles, error) {
	var p pmdCycles
	if len(out) > maxToolOutput {
		return p, fmt.Errorf("pmd-stats-show: %d bytes, at most %d", len(out), maxToolOutput)
	}
	inPMD := false
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 0; sc.Scan(); n++ {
		if n >= maxLines {
			return p, fmt.Errorf("pmd-stats-show: more than %d lines", maxLines)
		}
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "pmd thread ") && strings.HasSuffix(line, ":"):
			if inPMD && seen != 2 {
				return p, fmt.Errorf("pmd-stats-show: PMD %d has no idle and processing cycles", p.PMDs)
			}
			inPMD, seen = true, 0
			p.PMDs++
			continue
		case strings.HasSuffix(line, ":") && !strings.Contains(line, ": "):
			if inPMD && seen != 2 {
				return p, fmt.Errorf("pmd-stats-show: PMD %d has no idle and processing cycles", p.PMDs)
			}
			inPMD = false // "main thread:" and any other non-PMD block
			continue
		}
		if !inPMD {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		dst := map[string]*uint64{"packets received": &p.Packets, "idle cycles": &p.Idle, "processing cycles": &p.Busy}[key]
		if dst == nil {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			return p, fmt.Errorf("pmd-stats-show: %q has no value", line)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return p, fmt.Errorf("pmd-stats-show: %q: %w", line, err)
		}
		*dst += v
		if key != "packets received" {
			seen++
		}
	}
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("pmd-stats-show: %w", err)
	}
	if inPMD && seen != 2 {
		return p, fmt.Errorf("pmd-stats-show: PMD %d has no idle and processing cycles", p.PMDs)
	}
	if p.PMDs == 0 {
		return p, fmt.Errorf("pmd-stats-show: no PMD thread (is ovs-vswitchd running with DPDK and a netdev bridge?)")
	}
	return p, nil
}

// parseCoverageTotal sums the "total:" counts of the `ovs-appctl coverage/show` lines whose
// counter name starts with prefix.
func parseCoverageTotal(out, prefix string) (uint64, error) {
	if len(out) > maxToolOutput {
		return 0, fmt.Errorf("coverage/show: %d bytes, at most %d", len(out), maxToolOutput)
	}
	var sum uint64
	lines := strings.Split(out, "\n")
	if len(lines) > maxLines {
		return 0, fmt.Errorf("coverage/show: more than %d lines", maxLines)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[0], prefix) || f[len(f)-2] != "total:" {
			continue
		}
		v, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("coverage/show: %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

// hasCommand reports whether `ovs-appctl list-commands` output lists cmd.
func hasCommand(listCommands, cmd string) bool {
	for line := range strings.SplitSeq(listCommands, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == cmd {
			return true
		}
	}
	return false
}
