package datum

import "slices"

// Union returns d with the elements of e that it lacks; for a map (isMap), the pairs of e whose
// key d lacks: a key already in d keeps d's value. d and e must be sorted datums of the same
// type; neither is modified. This is OVSDB's "insert" mutator and ovs-vsctl's add.
func Union(d, e Datum, isMap bool) Datum {
	keys := slices.Clone(d.Keys)
	var vals []Atom
	if isMap {
		vals = append([]Atom{}, d.Values...)
	}
	for i, k := range e.Keys {
		if _, ok := d.Find(k); ok {
			continue
		}
		keys = append(keys, k)
		if isMap {
			vals = append(vals, e.Values[i])
		}
	}
	return NewDatum(keys, vals)
}

// Subtract returns d without the elements of e; for a map (isMap), without the keys of e when
// e has no values, else without the pairs of e (a pair goes only when d holds that key with
// that value). d and e must be sorted; neither is modified. The result's Keys is never nil, nor
// its Values for a map. This is OVSDB's "delete" mutator and ovs-vsctl's remove.
func Subtract(d, e Datum, isMap bool) Datum {
	keys := []Atom{}
	var vals []Atom
	if isMap {
		vals = []Atom{}
	}
	for i, k := range d.Keys {
		if j, ok := e.Find(k); ok && (!isMap || e.Values == nil || compareAtoms(e.Values[j], d.Values[i]) == 0) {
			continue
		}
		keys = append(keys, k)
		if isMap {
			vals = append(vals, d.Values[i])
		}
	}
	return Datum{Keys: keys, Values: vals}
}
