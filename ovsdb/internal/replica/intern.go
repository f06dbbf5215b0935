package replica

// interner shares equal strings (map keys, short map values, interface types) between rows.
// It is bounded: past max entries a string is simply not shared; nothing is evicted. It is not
// safe for concurrent use (the store serialises its readers of table-updates).
type interner struct {
	m   map[string]string
	max int
}

// maxInternedValue is the longest map value that is interned: owners, generations, origins
// and enum-like values are shared, long values (specs, OVN iface-ids) are kept as they are.
const maxInternedValue = 24

func newInterner(max int) *interner {
	return &interner{m: make(map[string]string), max: max}
}

// get returns a string equal to b, shared with earlier calls when possible. It does not
// retain b.
func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.m) < in.max {
		in.m[s] = s
	}
	return s
}

// value interns b if it is short, and copies it otherwise.
func (in *interner) value(b []byte) string {
	if len(b) <= maxInternedValue {
		return in.get(b)
	}
	return string(b)
}
