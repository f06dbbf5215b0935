package simvswitchd

import (
	"slices"
	"strings"
)

// OpenFlow port numbers (openflow-1.0.h).
const (
	// OFPPLocal is the ofport of a bridge's own (local) interface.
	OFPPLocal = 65534
	// OFPPMax is the highest ofport a regular interface can have.
	OFPPMax = 65279
)

// ofportMember is an interface that opened successfully on a bridge.
type ofportMember struct {
	uuid    string
	name    string
	current int // Interface.ofport, 0 when unset
	request int // Interface.ofport_request, 0 when unset
}

func validOfport(p int) bool { return p >= 1 && p <= OFPPMax }

// assignOfports gives every member of bridge an ofport, like ofproto's
// allocator: the bridge's own interface gets OFPPLocal; an interface keeps
// the ofport it has unless it requests another; a request is honoured when
// no other interface uses that number; an interface whose request cannot be
// honoured keeps its current number; everything else gets the next unused
// number after the last one allocated (last), wrapping after OFPPMax, so a
// freed number is not handed out again until the range is exhausted.
// It returns ofports by interface UUID (0 if the bridge is full) and the new
// last allocated number.
func assignOfports(bridge string, members []ofportMember, last int) (map[string]int, int) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b ofportMember) int { return strings.Compare(a.name, b.name) })
	got := make(map[string]int, len(sorted))
	used := map[int]bool{}
	take := func(m ofportMember, port int) {
		got[m.uuid] = port
		used[port] = true
	}
	for _, m := range sorted {
		if m.name == bridge {
			take(m, OFPPLocal)
		}
	}
	for _, m := range sorted {
		if _, done := got[m.uuid]; !done && validOfport(m.current) && !used[m.current] &&
			(m.request == 0 || m.request == m.current) {
			take(m, m.current)
		}
	}
	for _, m := range sorted {
		if _, done := got[m.uuid]; !done && validOfport(m.request) && !used[m.request] {
			take(m, m.request)
		}
	}
	// An interface whose request could not be honoured keeps the number it has, rather than
	// moving to a new one at every reconfiguration.
	for _, m := range sorted {
		if _, done := got[m.uuid]; !done && validOfport(m.current) && !used[m.current] {
			take(m, m.current)
		}
	}
	for _, m := range sorted {
		if _, done := got[m.uuid]; done {
			continue
		}
		port := nextFree(used, last)
		got[m.uuid] = port
		if port != 0 {
			used[port] = true
			last = port
		}
	}
	return got, last
}

// nextFree returns the first unused ofport after last, wrapping, or 0.
func nextFree(used map[int]bool, last int) int {
	for i := 1; i <= OFPPMax; i++ {
		p := (last+i-1)%OFPPMax + 1
		if !used[p] {
			return p
		}
	}
	return 0
}
