package datum

import (
	"slices"
	"sort"
)

// CompareAtoms orders two atoms of the same type as OVSDB does: numbers numerically, false
// before true, strings and UUIDs bytewise. It returns -1, 0 or +1.
func CompareAtoms(a, b Atom) int { return compareAtoms(a, b) }

// Find returns the index of key in d.Keys (which are sorted) and whether it is there.
func (d Datum) Find(key Atom) (int, bool) {
	i := sort.Search(len(d.Keys), func(i int) bool { return compareAtoms(d.Keys[i], key) >= 0 })
	return i, i < len(d.Keys) && compareAtoms(d.Keys[i], key) == 0
}

// Equal reports whether d and e hold the same keys and values.
func (d Datum) Equal(e Datum) bool {
	eq := func(a, b Atom) bool { return a.Type == b.Type && compareAtoms(a, b) == 0 }
	return slices.EqualFunc(d.Keys, e.Keys, eq) && slices.EqualFunc(d.Values, e.Values, eq)
}

// Clone returns a copy of d that shares no storage with it.
func (d Datum) Clone() Datum {
	return Datum{Keys: slices.Clone(d.Keys), Values: slices.Clone(d.Values)}
}

// IsMapDatum reports whether d carries map values.
func (d Datum) IsMapDatum() bool { return d.Values != nil }

// NewDatum builds a datum from keys (and, for a map, values of the same length), sorting it
// and dropping duplicate keys (the last value of a duplicated map key wins). It does not check
// any column constraint.
func NewDatum(keys, values []Atom) Datum {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return compareAtoms(keys[idx[a]], keys[idx[b]]) < 0 })
	var d Datum
	if values != nil {
		d.Values = []Atom{}
	}
	d.Keys = []Atom{}
	for _, i := range idx {
		if n := len(d.Keys); n > 0 && compareAtoms(d.Keys[n-1], keys[i]) == 0 {
			if values != nil {
				d.Values[n-1] = values[i]
			}
			continue
		}
		d.Keys = append(d.Keys, keys[i])
		if values != nil {
			d.Values = append(d.Values, values[i])
		}
	}
	return d
}

// DefaultDatum returns the value OVSDB gives a column of type ct in a new row: the empty set or
// map when ct allows no elements, else the single default atom of the key type (0, 0.0, false,
// "" or the all-zero UUID, as ovsdb-server does even for enumerated types).
func DefaultDatum(ct ColumnType) Datum {
	if ct.IsMap() {
		if ct.Min == 0 {
			return Datum{Keys: []Atom{}, Values: []Atom{}}
		}
		return Datum{Keys: []Atom{DefaultAtom(ct.Key)}, Values: []Atom{DefaultAtom(*ct.Value)}}
	}
	if ct.Min == 0 {
		return Datum{Keys: []Atom{}}
	}
	return Datum{Keys: []Atom{DefaultAtom(ct.Key)}}
}

// ZeroUUID is the all-zero UUID, the default value of a uuid atom.
const ZeroUUID = "00000000-0000-0000-0000-000000000000"

// DefaultAtom returns the default atom of bt's atomic type (constraints are not applied).
func DefaultAtom(bt BaseType) Atom {
	a := Atom{Type: bt.Type}
	if bt.Type == TypeUUID {
		a.Str = ZeroUUID
	}
	return a
}
