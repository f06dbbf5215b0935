package controller

import (
	"fmt"
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
// enough to be a new version: some node's table changed significantly (tableMoved) or a node
// with routes lost them all. Nodes with no routes equal missing nodes.
func significant(published, tables fabric.Tables, h float64) bool {
	for n, r := range tables {
		if tableMoved(published[n], r, h) {
			return true
		}
	}
	for n, r := range published {
		if len(r) > 0 && len(tables[n]) == 0 {
			return true
		}
	}
	return false
}

// tableMoved reports whether one node's table changed significantly: it gained or lost a
// destination, a next hop changed, an entry stopped parsing as "<next hop> <cost>" the same
// way, or a cost moved by more than h × its published value. Costs that moved less are
// measurement noise (probe RTTs grow under load); the comparison is always against the
// published table, so a slow drift still publishes once it has added up past the threshold.
func tableMoved(old, cur map[string]string, h float64) bool {
	if len(cur) != len(old) {
		return true
	}
	for dst, e := range cur {
		o, ok := old[dst]
		if !ok {
			return true
		}
		if o != e && costMoved(o, e, h) {
			return true
		}
	}
	return false
}

// Settle applies the hysteresis per node: it returns tables in which every node's table that
// did not move significantly against its published table (next hops and destinations equal,
// every cost within h × its published value) is replaced by the published one, and how many
// nodes' tables differ from published after that (nodes that lost all routes included). A
// version built from it rewrites only the tables that really changed, so the fabric writes
// and agents read only those. The result shares maps with its inputs: do not modify them. h
// must be within MinCostHysteresis–MaxCostHysteresis.
func Settle(published, tables fabric.Tables, h float64) (fabric.Tables, int, error) {
	if !(h >= MinCostHysteresis && h <= MaxCostHysteresis) {
		return nil, 0, fmt.Errorf("controller: settle with cost hysteresis %v: give %v to %v", h, MinCostHysteresis, MaxCostHysteresis)
	}
	out := make(fabric.Tables, len(tables))
	moved := 0
	for n, r := range tables {
		old, ok := published[n]
		switch {
		case ok && !tableMoved(old, r, h):
			out[n] = old
		default:
			out[n] = r
			if len(r) > 0 || len(old) > 0 {
				moved++
			}
		}
	}
	for n, r := range published {
		if _, ok := tables[n]; !ok && len(r) > 0 {
			moved++
		}
	}
	return out, moved, nil
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
