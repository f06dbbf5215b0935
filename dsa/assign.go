package dsa

import (
	"fmt"
	"strconv"
	"strings"
)

// PMD is one of ovs-vswitchd's poll-mode driver threads, as dpif-netdev/pmd-rxq-show lists it.
type PMD struct {
	// Core is the CPU core the thread is pinned to; NUMA its node.
	Core, NUMA int
	// Isolated is true when rxq affinity pinned queues to this PMD (pmd-rxq-affinity).
	Isolated bool
	// Rxqs are the receive queues the thread polls.
	Rxqs []PMDRxq
}

// PMDRxq is one receive queue a PMD thread polls.
type PMDRxq struct {
	// Port is the OVS port (interface) name; Queue the queue id.
	Port  string
	Queue int
	// Enabled is false for a queue the peer has not enabled (a vhost-user queue the guest
	// does not use).
	Enabled bool
	// UsagePct is the share of the PMD's cycles the queue took over the last minute, in
	// percent, or -1 when OVS has no measurement yet ("NOT AVAIL").
	UsagePct int
}

// Assignment is which DMA device each PMD thread would use, the way the vhost async build of
// OVS assigns them, and what is wrong with that.
type Assignment struct {
	// PMDs has one entry per PMD thread, in the order given to AssignPMDs.
	PMDs []PMDAssignment
	// Warnings are CodeNUMA (a PMD uses a device on another node) and CodeTooFewWQs (PMDs
	// left with CPU copies).
	Warnings []Warning
}

// PMDAssignment is the DMA device of one PMD thread.
type PMDAssignment struct {
	// Core and NUMA are the PMD thread's.
	Core, NUMA int
	// WQ is the DMA device (work queue) the thread uses, nil when it copies with the CPU.
	WQ *WQRef
	// SameNUMA is true when WQ is on the thread's own NUMA node.
	SameNUMA bool
	// Why says in plain words why the thread got WQ (or none).
	Why string
}

// maxListed bounds the cores a warning's Object lists.
const maxListed = 16

// AssignPMDs predicts the DMA device each PMD thread gets in the vhost async build of OVS
// (Intel's dpdk-dma-tracking branch): each thread takes one DMA device of its own; threads
// are served in the order of pmds (pmd-rxq-show's order) and take the first free device in
// the order of wqs (DPDK's dmadev ids) on their own NUMA node, else the first free device on
// any other node (a CodeNUMA warning: cross-socket DMA), else none: the thread copies with
// the CPU (one CodeTooFewWQs warning for all such threads). A device whose NUMA node is
// unknown (-1) never counts as the thread's own node. The result is deterministic; the work
// is linear in len(pmds)+len(wqs).
func AssignPMDs(pmds []PMD, wqs []WQRef) Assignment {
	a := Assignment{PMDs: make([]PMDAssignment, 0, len(pmds))}
	used := make([]bool, len(wqs))
	// byNUMA holds, per node, the indices of its devices in order; next[node] is how far
	// that node's list has been handed out.
	byNUMA := map[int][]int{}
	for i, w := range wqs {
		if w.NUMA >= 0 {
			byNUMA[w.NUMA] = append(byNUMA[w.NUMA], i)
		}
	}
	next := map[int]int{}
	anyNext := 0
	var cpuCores []int
	for _, p := range pmds {
		pa := PMDAssignment{Core: p.Core, NUMA: p.NUMA}
		pick := -1
		if p.NUMA >= 0 {
			list := byNUMA[p.NUMA]
			for next[p.NUMA] < len(list) && used[list[next[p.NUMA]]] {
				next[p.NUMA]++
			}
			if next[p.NUMA] < len(list) {
				pick = list[next[p.NUMA]]
				pa.SameNUMA = true
			}
		}
		if pick < 0 {
			for anyNext < len(wqs) && used[anyNext] {
				anyNext++
			}
			if anyNext < len(wqs) {
				pick = anyNext
			}
		}
		switch {
		case pick >= 0 && pa.SameNUMA:
			used[pick] = true
			w := wqs[pick]
			pa.WQ = &w
			pa.Why = fmt.Sprintf("%s on NUMA %d, the PMD thread's own node", w.Name, w.NUMA)
		case pick >= 0:
			used[pick] = true
			w := wqs[pick]
			pa.WQ = &w
			pa.Why = fmt.Sprintf("%s on %s: no free work queue on the PMD thread's NUMA %d, so its copies cross sockets", w.Name, numaName(w.NUMA), p.NUMA)
			a.Warnings = append(a.Warnings, Warning{Code: CodeNUMA, Object: "pmd core " + strconv.Itoa(p.Core),
				Message: fmt.Sprintf("PMD thread on core %d (NUMA %d) uses %s on %s: cross-socket DMA is slower; add work queues on a DSA device of NUMA %d (devices[].numa)", p.Core, p.NUMA, w.Name, numaName(w.NUMA), p.NUMA)})
		default:
			cpuCores = append(cpuCores, p.Core)
			pa.Why = fmt.Sprintf("CPU copy: all %d work queues are taken by other PMD threads", len(wqs))
			if len(wqs) == 0 {
				pa.Why = "CPU copy: there is no DSA work queue"
			}
		}
		a.PMDs = append(a.PMDs, pa)
	}
	if len(cpuCores) > 0 {
		a.Warnings = append(a.Warnings, Warning{Code: CodeTooFewWQs, Object: "pmd cores " + listCores(cpuCores),
			Message: fmt.Sprintf("%d PMDs > %d WQs: extra PMDs fall back to CPU copy; add WQs (wqs.count, or another device) or run fewer PMD threads (other_config:pmd-cpu-mask)", len(pmds), len(wqs))})
	}
	return a
}

// numaName renders a device's node, "NUMA n" or "an unknown NUMA node".
func numaName(n int) string {
	if n < 0 {
		return "an unknown NUMA node"
	}
	return "NUMA " + strconv.Itoa(n)
}

// listCores renders at most maxListed cores, "1,3,5" or "1,2,…(+4)".
func listCores(cores []int) string {
	var b strings.Builder
	for i, c := range cores {
		if i == maxListed {
			fmt.Fprintf(&b, ",…(+%d)", len(cores)-maxListed)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
	}
	return b.String()
}

// Bounds of PMDCoresFromMask.
const (
	// MaxPMDMaskDigits bounds other_config:pmd-cpu-mask, in hex digits (1024 cores).
	MaxPMDMaskDigits = 256
)

// PMDCoresFromMask returns the CPU cores other_config:pmd-cpu-mask names, ascending: bit n of
// the hex mask (optionally prefixed 0x or 0X) is core n, as OVS reads it. It is for when
// dpif-netdev/pmd-rxq-show cannot be read; OVS starts PMD threads only on those of the cores
// that exist. An empty mask returns nil: OVS then picks one core per NUMA node itself, which
// the mask cannot tell. Where OVS logs and ignores a non-hex digit, this refuses it, and a mask
// longer than MaxPMDMaskDigits digits.
func PMDCoresFromMask(mask string) ([]int, error) {
	digits := mask
	if len(digits) >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
		digits = digits[2:]
	}
	if mask == "" {
		return nil, nil
	}
	if digits == "" {
		return nil, fmt.Errorf("other_config:pmd-cpu-mask %q has no hex digits (e.g. 0x6 for cores 1 and 2)", mask)
	}
	if len(digits) > MaxPMDMaskDigits {
		return nil, fmt.Errorf("other_config:pmd-cpu-mask of %d hex digits (at most %d)", len(digits), MaxPMDMaskDigits)
	}
	var cores []int
	for i := len(digits) - 1; i >= 0; i-- {
		v, ok := hexValue(digits[i])
		if !ok {
			return nil, fmt.Errorf("other_config:pmd-cpu-mask %.70q: %q is not a hex digit (write the mask in hex, e.g. 0x6 for cores 1 and 2)", mask, digits[i])
		}
		base := (len(digits) - 1 - i) * 4
		for bit := 0; bit < 4; bit++ {
			if v&(1<<bit) != 0 {
				cores = append(cores, base+bit)
			}
		}
	}
	return cores, nil
}

func hexValue(c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0'), true
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}
