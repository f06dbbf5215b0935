package replica

import (
	"cmp"
	"slices"
	"sort"
)

// Map columns are kept as key/value pairs in one []string: p[2i] is a key, p[2i+1] its value,
// sorted by key, keys unique.

// pairSlice sorts pairs by key.
type pairSlice []string

func (p pairSlice) Len() int           { return len(p) / 2 }
func (p pairSlice) Less(i, j int) bool { return p[2*i] < p[2*j] }
func (p pairSlice) Swap(i, j int) {
	p[2*i], p[2*j] = p[2*j], p[2*i]
	p[2*i+1], p[2*j+1] = p[2*j+1], p[2*i+1]
}

// normPairs sorts pairs as read from the wire by key; of pairs with equal keys the last read
// wins (what a Go map, libovsdb's, makes of them). It works in place.
func normPairs(p []string) []string {
	if len(p) <= 2 {
		return p
	}
	sort.Stable(pairSlice(p))
	out := p[:0]
	for i := 0; i < len(p); i += 2 {
		if n := len(out); n > 0 && out[n-2] == p[i] {
			out[n-1] = p[i+1]
			continue
		}
		out = append(out, p[i], p[i+1])
	}
	return out
}

// lookupPair finds key in sorted pairs p.
func lookupPair(p []string, key string) (string, bool) {
	i, found := sort.Find(len(p)/2, func(i int) int { return cmp.Compare(key, p[2*i]) })
	if !found {
		return "", false
	}
	return p[2*i+1], true
}

// applyMapDiff applies an update2 map difference d to old (both sorted, keys unique) and
// returns a new slice: a pair of d whose key is absent from old is inserted, one whose key
// has the same value in old deletes the key, one with another value replaces it.
func applyMapDiff(old, d []string) []string {
	if len(d) == 0 {
		return old
	}
	out := make([]string, 0, len(old)+len(d))
	i, j := 0, 0
	for i < len(old) || j < len(d) {
		switch {
		case j == len(d) || (i < len(old) && old[i] < d[j]):
			out = append(out, old[i], old[i+1])
			i += 2
		case i == len(old) || d[j] < old[i]:
			out = append(out, d[j], d[j+1])
			j += 2
		default: // same key
			if old[i+1] != d[j+1] {
				out = append(out, d[j], d[j+1])
			}
			i += 2
			j += 2
		}
	}
	if len(out) == 0 {
		return nil
	}
	return slices.Clip(out)
}

// normSet sorts a set's elements and drops duplicates, in place.
func normSet[T any](s []T, c func(a, b T) int) []T {
	slices.SortFunc(s, c)
	return slices.CompactFunc(s, func(a, b T) bool { return c(a, b) == 0 })
}

// symDiff returns the symmetric difference of two sorted, duplicate-free sets: the result of
// applying an update2 set difference d to old. nil when empty.
func symDiff[T any](old, d []T, c func(a, b T) int) []T {
	if len(d) == 0 {
		return old
	}
	out := make([]T, 0, len(old)+len(d))
	i, j := 0, 0
	for i < len(old) || j < len(d) {
		switch {
		case j == len(d) || (i < len(old) && c(old[i], d[j]) < 0):
			out = append(out, old[i])
			i++
		case i == len(old) || c(d[j], old[i]) < 0:
			out = append(out, d[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return slices.Clip(out)
}

// uuidStrings formats a set of uuids; nil when empty.
func uuidStrings(s []UUID) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, len(s))
	for i, u := range s {
		out[i] = u.String()
	}
	return out
}

// pairsMap builds a fresh map from pairs; nil when empty.
func pairsMap(p []string) map[string]string {
	if len(p) == 0 {
		return nil
	}
	m := make(map[string]string, len(p)/2)
	for i := 0; i < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

// mapPairs returns a map's pairs sorted by key; nil when empty.
func mapPairs(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	p := make([]string, 0, 2*len(m))
	for k, v := range m {
		p = append(p, k, v)
	}
	sort.Sort(pairSlice(p))
	return p
}
