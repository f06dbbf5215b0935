package ovsproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bounds of ParsePMDRxqShow.
const (
	// MaxPMDRxqShowText bounds the text, in bytes (a unixctl reply's bound).
	MaxPMDRxqShowText = MaxUnixctlReply
	// MaxPMDRxqShowLines bounds its lines.
	MaxPMDRxqShowLines = 1 << 16
	// MaxPMDThreads bounds the PMD threads.
	MaxPMDThreads = 1024
	// MaxPMDRxqs bounds the receive queues, all PMD threads together.
	MaxPMDRxqs = 16384
	// MaxPMDPortName bounds a port name, in bytes.
	MaxPMDPortName = 256
	// maxPMDCore and maxPMDNUMA bound the core and NUMA ids.
	maxPMDCore = 1 << 16
	maxPMDNUMA = 1 << 10
)

// PMDThread is one poll-mode driver thread of ovs-vswitchd's userspace datapath, as
// `dpif-netdev/pmd-rxq-show` lists it.
type PMDThread struct {
	// NUMA is the thread's NUMA node (numa_id), Core the CPU core it is pinned to (core_id).
	NUMA, Core int
	// Isolated is true when pmd-rxq-affinity pinned queues to it, so OVS assigns it no others.
	Isolated bool
	// Rxqs are the receive queues it polls, in the listed order.
	Rxqs []PMDRxq
	// OverheadPct is the share of its cycles spent outside the queues, in percent; -1 when
	// OVS has no measurement yet ("NOT AVAIL") or lists no queues.
	OverheadPct int
}

// PMDRxq is one receive queue a PMD thread polls.
type PMDRxq struct {
	// Port is the interface name; Queue its queue id.
	Port  string
	Queue int
	// Enabled is false for a queue listed "(disabled)": a vhost-user queue the guest does not
	// use. OVS before 2.12 does not list the state; its queues count as enabled.
	Enabled bool
	// UsagePct is the queue's share of the thread's cycles, in percent; -1 when OVS has no
	// measurement yet ("NOT AVAIL", the first seconds after a change).
	UsagePct int
}

// ErrNoDatapath is what PMDRxqShow returns, wrapped, when ovs-vswitchd has no userspace
// (netdev) datapath: it then has no PMD threads ("please specify an existing datapath").
var ErrNoDatapath = errors.New("ovs-vswitchd has no userspace (netdev) datapath, so no PMD threads")

// ParsePMDRxqShow reads the reply of `dpif-netdev/pmd-rxq-show` (OVS 3.1):
//
//	Displaying last 60 seconds pmd usage %
//	pmd thread numa_id 0 core_id 1:
//	  isolated : false
//	  port: vhu0              queue-id:  0 (enabled)   pmd usage:  0 %
//	  overhead:  0 %
//
// and returns the PMD threads in the listed order (OVS sorts them by NUMA node and core). An
// empty reply, or the heading alone (a netdev bridge without PMD ports, or -pmd of a core
// without a PMD thread), has no threads. Port names may hold spaces (the name ends at the last
// "queue-id:" after white space). Indented lines it does not know inside a thread are skipped, so a later OVS
// may add some; any other unknown line, a malformed known line, a port line outside a thread,
// and text past the bounds (MaxPMDRxqShowText bytes, MaxPMDRxqShowLines lines, MaxPMDThreads
// threads, MaxPMDRxqs queues, MaxPMDPortName-byte names) are errors naming the line.
func ParsePMDRxqShow(text string) ([]PMDThread, error) {
	if len(text) > MaxPMDRxqShowText {
		return nil, fmt.Errorf("pmd-rxq-show: %d bytes (at most %d)", len(text), MaxPMDRxqShowText)
	}
	if n := strings.Count(text, "\n"); n > MaxPMDRxqShowLines {
		return nil, fmt.Errorf("pmd-rxq-show: %d lines (at most %d)", n, MaxPMDRxqShowLines)
	}
	var pmds []PMDThread
	nrxq := 0
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		lineErr := func(format string, args ...any) error {
			return fmt.Errorf("pmd-rxq-show: line %d %.80q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		var cur *PMDThread
		if len(pmds) > 0 {
			cur = &pmds[len(pmds)-1]
		}
		switch {
		case trimmed == "":
		case strings.HasPrefix(line, "Displaying ") && len(pmds) == 0:
		case strings.HasPrefix(line, "pmd thread "):
			if len(pmds) == MaxPMDThreads {
				return nil, lineErr("more than %d PMD threads", MaxPMDThreads)
			}
			p, err := parsePMDHead(trimmed)
			if err != nil {
				return nil, lineErr("%v", err)
			}
			pmds = append(pmds, p)
		case cur == nil:
			return nil, lineErr("not a heading or a PMD thread")
		case strings.HasPrefix(trimmed, "isolated"):
			v, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(trimmed, "isolated")), ":")
			switch v = strings.TrimSpace(v); {
			case ok && v == "true":
				cur.Isolated = true
			case ok && v == "false":
				cur.Isolated = false
			default:
				return nil, lineErr(`want "isolated : true" or "isolated : false"`)
			}
		case strings.HasPrefix(trimmed, "port:"):
			if nrxq == MaxPMDRxqs {
				return nil, lineErr("more than %d receive queues", MaxPMDRxqs)
			}
			q, err := parseRxqLine(strings.TrimPrefix(trimmed, "port:"))
			if err != nil {
				return nil, lineErr("%v", err)
			}
			cur.Rxqs = append(cur.Rxqs, q)
			nrxq++
		case strings.HasPrefix(trimmed, "overhead:"):
			pct, err := parsePct(strings.TrimPrefix(trimmed, "overhead:"))
			if err != nil {
				return nil, lineErr("overhead: %v", err)
			}
			cur.OverheadPct = pct
		case line != trimmed && line[0] == ' ':
			// An indented line of a later OVS: skipped.
		default:
			return nil, lineErr("not a PMD thread's line")
		}
	}
	return pmds, nil
}

// parsePMDHead parses "pmd thread numa_id N core_id M:".
func parsePMDHead(s string) (PMDThread, error) {
	f := strings.Fields(s)
	if len(f) != 6 || f[0] != "pmd" || f[1] != "thread" || f[2] != "numa_id" || f[4] != "core_id" || !strings.HasSuffix(f[5], ":") {
		return PMDThread{}, errors.New(`want "pmd thread numa_id N core_id M:"`)
	}
	numa, err := strconv.Atoi(f[3])
	if err != nil || numa < -1 || numa > maxPMDNUMA {
		return PMDThread{}, fmt.Errorf("numa_id %.20q is not a number from -1 to %d", f[3], maxPMDNUMA)
	}
	core, err := strconv.Atoi(strings.TrimSuffix(f[5], ":"))
	if err != nil || core < 0 || core > maxPMDCore {
		return PMDThread{}, fmt.Errorf("core_id %.20q is not a number from 0 to %d", f[5], maxPMDCore)
	}
	return PMDThread{NUMA: numa, Core: core, OverheadPct: -1}, nil
}

// parseRxqLine parses what follows "port:" on a queue line:
// "vhu0              queue-id:  0 (enabled)   pmd usage:  0 %".
func parseRxqLine(s string) (PMDRxq, error) {
	const qid = "queue-id:"
	// The last "queue-id:" after white space (OVS 3.1 pads with spaces, before 2.16 a tab).
	at := len(s)
	for {
		at = strings.LastIndex(s[:at], qid)
		if at <= 0 {
			return PMDRxq{}, errors.New("no queue-id")
		}
		if s[at-1] == ' ' || s[at-1] == '\t' {
			break
		}
	}
	name := strings.TrimSpace(s[:at])
	if name == "" || len(name) > MaxPMDPortName {
		return PMDRxq{}, fmt.Errorf("port name of %d bytes (want 1 to %d)", len(name), MaxPMDPortName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return PMDRxq{}, fmt.Errorf("port name %q holds a control character", name)
		}
	}
	rest := strings.TrimSpace(s[at+len(qid):])
	f := strings.Fields(rest)
	if len(f) == 0 {
		return PMDRxq{}, errors.New("no queue id")
	}
	queue, err := strconv.Atoi(f[0])
	if err != nil || queue < 0 || queue > maxPMDCore {
		return PMDRxq{}, fmt.Errorf("queue-id %.20q is not a number from 0 to %d", f[0], maxPMDCore)
	}
	q := PMDRxq{Port: name, Queue: queue, Enabled: true, UsagePct: -1}
	f = f[1:]
	if len(f) > 0 && strings.HasPrefix(f[0], "(") {
		switch f[0] {
		case "(enabled)":
		case "(disabled)":
			q.Enabled = false
		default:
			return PMDRxq{}, fmt.Errorf("queue state %.20q is neither (enabled) nor (disabled)", f[0])
		}
		f = f[1:]
	}
	if len(f) < 2 || f[0] != "pmd" || f[1] != "usage:" {
		return PMDRxq{}, errors.New(`no "pmd usage:"`)
	}
	pct, err := parsePct(strings.Join(f[2:], " "))
	if err != nil {
		return PMDRxq{}, fmt.Errorf("pmd usage: %w", err)
	}
	q.UsagePct = pct
	return q, nil
}

// parsePct parses "N %" (0..100) or "NOT AVAIL" (-1).
func parsePct(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "NOT AVAIL" {
		return -1, nil
	}
	n, ok := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("%.20q is neither a percentage from 0 to 100 nor NOT AVAIL", s)
	}
	return v, nil
}

// PMDRxqShow runs `dpif-netdev/pmd-rxq-show` at the unixctl socket ctl and parses the reply
// (see ParsePMDRxqShow). An ovs-vswitchd without a userspace datapath answers with an error;
// that is ErrNoDatapath, wrapped.
func PMDRxqShow(ctx context.Context, ctl string) ([]PMDThread, error) {
	out, err := Unixctl(ctx, ctl, "dpif-netdev/pmd-rxq-show")
	if err != nil {
		var ue *UnixctlError
		if errors.As(err, &ue) && strings.Contains(ue.Message, "please specify an existing datapath") {
			return nil, fmt.Errorf("%s: %w", ctl, ErrNoDatapath)
		}
		return nil, err
	}
	return ParsePMDRxqShow(out)
}
