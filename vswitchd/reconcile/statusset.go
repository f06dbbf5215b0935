package reconcile

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
)

// statusSet is the statuses of a refresh, sorted by kind then name with one status per
// object: a slice of exactly the statuses rather than a map by key, which at two or three
// statuses per port kept a key string and a map slot of ~1.5 times the status per entry.
// Lookups are binary searches.
type statusSet []model.Status

// compareStatus orders statuses by kind then name (the order of Reconciler.Status).
func compareStatus(a, b model.Status) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// settle sorts ss and keeps, for each object, the status put last (as a map by key would),
// returning the result at its exact size.
func (ss statusSet) settle() statusSet {
	slices.SortStableFunc(ss, compareStatus)
	out := ss[:0]
	for i, s := range ss {
		if i+1 < len(ss) && compareStatus(s, ss[i+1]) == 0 {
			continue // a later put of the same object wins
		}
		out = append(out, s)
	}
	if cap(out)-len(out) > len(out)/8 { // kept until the next refresh: drop append's spare room
		out = slices.Clone(out)
	}
	return out
}

// find returns the index of the status of kind and name, and whether there is one.
func (ss statusSet) find(kind model.Kind, name string) (int, bool) {
	return slices.BinarySearchFunc(ss, model.Status{Kind: kind, Name: name}, compareStatus)
}

// get returns the status of key ("port/NAME"…).
func (ss statusSet) get(key string) (model.Status, bool) {
	kind, name, ok := strings.Cut(key, "/")
	if !ok {
		return model.Status{}, false
	}
	if i, found := ss.find(model.Kind(kind), name); found {
		return ss[i], true
	}
	return model.Status{}, false
}

// changes returns the statuses of next that differ from (or are not in) old, and the objects
// of old that next does not have, as removed (empty State). Both must be settled.
func changes(old, next statusSet) []model.Status {
	var out []model.Status
	i, j := 0, 0
	for i < len(old) || j < len(next) {
		c := 0
		switch {
		case i == len(old):
			c = 1
		case j == len(next):
			c = -1
		default:
			c = compareStatus(old[i], next[j])
		}
		switch {
		case c < 0: // gone
			s := old[i]
			out = append(out, model.Status{Kind: s.Kind, Name: s.Name, Bridge: s.Bridge})
			i++
		case c > 0: // new
			out = append(out, next[j])
			j++
		default:
			if old[i] != next[j] {
				out = append(out, next[j])
			}
			i++
			j++
		}
	}
	return out
}
