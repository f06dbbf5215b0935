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

// Includes reports whether every element of e is in d: for maps, every pair (key and value),
// as OVSDB's "includes" condition function.
func (d Datum) Includes(e Datum) bool {
	for i, k := range e.Keys {
		j, ok := d.Find(k)
		if !ok || (e.Values != nil && d.Values != nil && compareAtoms(d.Values[j], e.Values[i]) != 0) {
			return false
		}
	}
	return true
}

// Excludes reports whether no element of e is in d: for maps, no pair (key and value), as
// OVSDB's "excludes" condition function.
func (d Datum) Excludes(e Datum) bool {
	for i, k := range e.Keys {
		j, ok := d.Find(k)
		if ok && (e.Values == nil || d.Values == nil || compareAtoms(d.Values[j], e.Values[i]) == 0) {
			return false
		}
	}
	return true
}

// Diff returns the difference from d to e that an OVSDB update2 "modify" carries
// (ovsdb-server's ovsdb_datum_diff): for sets the elements in exactly one of them; for maps
// (isMap) the pairs of d whose key e lacks, and the pairs of e that d lacks or holds with
// another value. Applying it to d (removing present elements, adding absent ones, replacing
// changed values) gives e.
func Diff(d, e Datum, isMap bool) Datum {
	var keys, vals []Atom
	for i, k := range d.Keys {
		if _, ok := e.Find(k); !ok {
			keys = append(keys, k)
			if isMap {
				vals = append(vals, d.Values[i])
			}
		}
	}
	for i, k := range e.Keys {
		j, ok := d.Find(k)
		if !ok || isMap && compareAtoms(d.Values[j], e.Values[i]) != 0 {
			keys = append(keys, k)
			if isMap {
				vals = append(vals, e.Values[i])
			}
		}
	}
	if isMap && vals == nil {
		vals = []Atom{}
	}
	return NewDatum(keys, vals)
}
