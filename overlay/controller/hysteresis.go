package controller

import (
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

// Bounds and default of Config.CostHysteresis.
const (
	// DefaultCostHysteresis is Config.CostHysteresis when zero: a cost must move by more than
	// 20 % of its published value to make a new version on its own.
	DefaultCostHysteresis = 0.2
	// MinCostHysteresis and MaxCostHysteresis bound Config.CostHysteresis.
	MinCostHysteresis = 0.001
	MaxCostHysteresis = 1.0
)

// significant reports whether tables differ from published (the current version's tables)
// enough to be a new version: a node's table gained or lost a destination, a next hop changed,
// an entry stopped parsing as "<next hop> <cost>" the same way, or a cost moved by more than
// h × its published value. Costs that moved less are measurement noise (probe RTTs grow under
// load); the comparison is always against the published tables, so a slow drift still
// publishes once it has added up past the threshold. Nodes with no routes equal missing nodes.
func significant(published, tables fabric.Tables, h float64) bool {
	for n, r := range tables {
		old := published[n]
		if len(r) != len(old) {
			return true
		}
		for dst, e := range r {
			o, ok := old[dst]
			if !ok {
				return true
			}
			if o != e && costMoved(o, e, h) {
				return true
			}
		}
	}
	for n, r := range published {
		if len(r) > 0 && len(tables[n]) == 0 {
			return true
		}
	}
	return false
}

// costMoved compares two entries "<next hop> <cost>": true when the next hop differs, either
// does not parse, or the cost moved by more than h × the old cost.
func costMoved(old, cur string, h float64) bool {
	oh, oc, ok1 := splitEntry(old)
	ch, cc, ok2 := splitEntry(cur)
	if !ok1 || !ok2 || oh != ch {
		return true
	}
	d := cc - oc
	if d < 0 {
		d = -d
	}
	return float64(d) > h*float64(oc)
}

// splitEntry parses "<next hop> <cost>" (the controller's table format).
func splitEntry(e string) (hop string, cost int64, ok bool) {
	hop, c, found := strings.Cut(e, " ")
	if !found {
		return "", 0, false
	}
	cost, err := strconv.ParseInt(c, 10, 64)
	if err != nil || cost < 0 {
		return "", 0, false
	}
	return hop, cost, true
}
