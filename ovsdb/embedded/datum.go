package embedded

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// OVSDB values as the server compares them: a datum is a sorted set of atoms
// (or of key/value pairs), so two sets or maps that a client sends in
// different orders compare equal, and a column a row leaves out is its
// default value. libovsdb's engine compares Go values with reflect.DeepEqual
// instead; every comparison the embedded server makes itself (wait, where
// clauses of monitors, monitor diffs) goes through this file.

// uuidAtom is a UUID atom, lower case.
type uuidAtom string

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// colType is a column's OVSDB type: key (and, for maps, value) atomic types
// and the number of elements allowed.
type colType struct {
	key, value string
	min, max   int // max -1: unlimited
}

func (t colType) isMap() bool { return t.value != "" }

// uuidType is the type of the _uuid column.
var uuidType = colType{key: ovsdb.TypeUUID, min: 1, max: 1}

// columnType returns the type of column in ts; _uuid is a UUID.
func columnType(ts *ovsdb.TableSchema, column string) (colType, bool) {
	if column == "_uuid" {
		return uuidType, true
	}
	c := ts.Column(column)
	if c == nil || c.TypeObj == nil || c.TypeObj.Key == nil {
		return colType{}, false
	}
	t := colType{key: c.TypeObj.Key.Type, min: c.TypeObj.Min(), max: c.TypeObj.Max()}
	if c.TypeObj.Value != nil {
		t.value = c.TypeObj.Value.Type
	}
	return t, true
}

// datum is a column value: keys sorted and unique, values parallel to keys
// for maps, nil otherwise.
type datum struct {
	keys, values []any
}

// defaultDatum is the value of a column a row does not mention.
func defaultDatum(t colType) datum {
	if t.min == 0 {
		return datum{}
	}
	d := datum{keys: []any{defaultAtom(t.key)}}
	if t.isMap() {
		d.values = []any{defaultAtom(t.value)}
	}
	return d
}

func defaultAtom(typ string) any {
	switch typ {
	case ovsdb.TypeInteger:
		return int64(0)
	case ovsdb.TypeReal:
		return float64(0)
	case ovsdb.TypeBoolean:
		return false
	case ovsdb.TypeUUID:
		return uuidAtom(zeroUUID)
	default:
		return ""
	}
}

// parseDatum converts v to a datum of type t. v may be JSON decoded with
// UseNumber (["set",[...]], ["map",[...]], ["uuid",...], an atom) or a value
// of libovsdb's notation (ovsdb.OvsSet, ovsdb.OvsMap, ovsdb.UUID, Go atoms).
// names resolves "named-uuid" references; it may be nil.
func parseDatum(t colType, v any, names map[string]string) (datum, error) {
	var d datum
	switch x := v.(type) {
	case ovsdb.OvsSet:
		for _, e := range x.GoSet {
			a, err := parseAtom(t.key, e, names)
			if err != nil {
				return datum{}, err
			}
			d.keys = append(d.keys, a)
		}
		return d.normalize()
	case ovsdb.OvsMap:
		for k, val := range x.GoMap {
			if err := d.addPair(t, k, val, names); err != nil {
				return datum{}, err
			}
		}
		return d.normalize()
	case []any:
		if len(x) == 2 && x[0] == "set" {
			elems, ok := x[1].([]any)
			if !ok {
				return datum{}, fmt.Errorf("set value is not an array")
			}
			for _, e := range elems {
				a, err := parseAtom(t.key, e, names)
				if err != nil {
					return datum{}, err
				}
				d.keys = append(d.keys, a)
			}
			return d.normalize()
		}
		if len(x) == 2 && x[0] == "map" {
			pairs, ok := x[1].([]any)
			if !ok {
				return datum{}, fmt.Errorf("map value is not an array")
			}
			for _, p := range pairs {
				kv, ok := p.([]any)
				if !ok || len(kv) != 2 {
					return datum{}, fmt.Errorf("map element is not a [key, value] pair")
				}
				if err := d.addPair(t, kv[0], kv[1], names); err != nil {
					return datum{}, err
				}
			}
			return d.normalize()
		}
	}
	if t.isMap() {
		return datum{}, fmt.Errorf("expected a map, got %v", v)
	}
	a, err := parseAtom(t.key, v, names)
	if err != nil {
		return datum{}, err
	}
	return datum{keys: []any{a}}, nil
}

func (d *datum) addPair(t colType, k, v any, names map[string]string) error {
	if !t.isMap() {
		return fmt.Errorf("unexpected map value")
	}
	ka, err := parseAtom(t.key, k, names)
	if err != nil {
		return err
	}
	va, err := parseAtom(t.value, v, names)
	if err != nil {
		return err
	}
	d.keys, d.values = append(d.keys, ka), append(d.values, va)
	return nil
}

// normalize sorts the atoms (pairs by key) and refuses duplicate keys, as
// ovsdb-server does.
func (d datum) normalize() (datum, error) {
	idx := make([]int, len(d.keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return compareAtoms(d.keys[idx[a]], d.keys[idx[b]]) < 0 })
	out := datum{keys: make([]any, len(idx))}
	if d.values != nil {
		out.values = make([]any, len(idx))
	}
	for i, j := range idx {
		out.keys[i] = d.keys[j]
		if d.values != nil {
			out.values[i] = d.values[j]
		}
		if i > 0 && compareAtoms(out.keys[i-1], out.keys[i]) == 0 {
			return datum{}, fmt.Errorf("duplicate value %v in set or map", atomJSON(out.keys[i]))
		}
	}
	return out, nil
}

// parseAtom converts one atom of type typ.
func parseAtom(typ string, v any, names map[string]string) (any, error) {
	switch typ {
	case ovsdb.TypeInteger:
		switch x := v.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i, nil
			}
			if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
				return int64(f), nil
			}
		case int:
			return int64(x), nil
		case int64:
			return x, nil
		case float64:
			if x == math.Trunc(x) {
				return int64(x), nil
			}
		}
	case ovsdb.TypeReal:
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				return f, nil
			}
		case float64:
			return x, nil
		case int:
			return float64(x), nil
		case int64:
			return float64(x), nil
		}
	case ovsdb.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case ovsdb.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case ovsdb.TypeUUID:
		switch x := v.(type) {
		case ovsdb.UUID:
			return parseUUID(x.GoUUID, names)
		case []any:
			if len(x) == 2 {
				s, _ := x[1].(string)
				switch x[0] {
				case "uuid":
					if _, err := uuid.Parse(s); err != nil {
						return nil, fmt.Errorf("%q is not a valid UUID", s)
					}
					return uuidAtom(strings.ToLower(s)), nil
				case "named-uuid":
					if u, ok := names[s]; ok {
						return uuidAtom(u), nil
					}
					return nil, fmt.Errorf("unknown named-uuid %q", s)
				}
			}
		}
	}
	return nil, fmt.Errorf("%v is not a valid %s", v, typ)
}

// parseUUID takes libovsdb's UUID notation, where a named UUID is kept as
// its name.
func parseUUID(s string, names map[string]string) (any, error) {
	if _, err := uuid.Parse(s); err == nil {
		return uuidAtom(strings.ToLower(s)), nil
	}
	if u, ok := names[s]; ok {
		return uuidAtom(u), nil
	}
	return nil, fmt.Errorf("%q is not a valid UUID", s)
}

// compareAtoms orders two atoms of the same type as ovsdb-server does.
func compareAtoms(a, b any) int {
	switch x := a.(type) {
	case int64:
		y, _ := b.(int64)
		return cmp3(x < y, x > y)
	case float64:
		y, _ := b.(float64)
		return cmp3(x < y, x > y)
	case bool:
		y, _ := b.(bool)
		return cmp3(!x && y, x && !y)
	case string:
		return strings.Compare(x, fmt.Sprint(b))
	case uuidAtom:
		y, _ := b.(uuidAtom)
		return strings.Compare(string(x), string(y))
	}
	return 0
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// equal reports whether d and e are the same value.
func (d datum) equal(e datum) bool {
	if len(d.keys) != len(e.keys) {
		return false
	}
	for i := range d.keys {
		if compareAtoms(d.keys[i], e.keys[i]) != 0 {
			return false
		}
		if d.values != nil && e.values != nil && compareAtoms(d.values[i], e.values[i]) != 0 {
			return false
		}
	}
	return true
}

// find returns the index of key k, or -1.
func (d datum) find(k any) int {
	i := sort.Search(len(d.keys), func(i int) bool { return compareAtoms(d.keys[i], k) >= 0 })
	if i < len(d.keys) && compareAtoms(d.keys[i], k) == 0 {
		return i
	}
	return -1
}

// includes reports whether every atom (or pair) of e is in d.
func (d datum) includes(e datum) bool {
	for i, k := range e.keys {
		j := d.find(k)
		if j < 0 || (e.values != nil && d.values != nil && compareAtoms(d.values[j], e.values[i]) != 0) {
			return false
		}
	}
	return true
}

// excludes reports whether no atom (or pair) of e is in d.
func (d datum) excludes(e datum) bool {
	for i, k := range e.keys {
		j := d.find(k)
		if j >= 0 && (e.values == nil || d.values == nil || compareAtoms(d.values[j], e.values[i]) == 0) {
			return false
		}
	}
	return true
}

// diff returns the update2 "modify" diff from d to e: for sets the atoms in
// exactly one of them, for maps the removed pairs and the added or changed
// ones (ovsdb-server's ovsdb_datum_diff).
func (d datum) diff(e datum) datum {
	var out datum
	if d.values != nil || e.values != nil {
		out.values = []any{}
		for i, k := range d.keys {
			if j := e.find(k); j < 0 {
				out.keys, out.values = append(out.keys, k), append(out.values, d.values[i])
			}
		}
		for i, k := range e.keys {
			if j := d.find(k); j < 0 || compareAtoms(d.values[j], e.values[i]) != 0 {
				out.keys, out.values = append(out.keys, k), append(out.values, e.values[i])
			}
		}
	} else {
		for _, k := range d.keys {
			if e.find(k) < 0 {
				out.keys = append(out.keys, k)
			}
		}
		for _, k := range e.keys {
			if d.find(k) < 0 {
				out.keys = append(out.keys, k)
			}
		}
	}
	out, _ = out.normalize()
	return out
}

// toJSON returns d in OVSDB notation for a column of type t.
func (d datum) toJSON(t colType) any {
	if t.isMap() {
		pairs := make([]any, len(d.keys))
		for i := range d.keys {
			pairs[i] = []any{atomJSON(d.keys[i]), atomJSON(d.values[i])}
		}
		return []any{"map", pairs}
	}
	if len(d.keys) == 1 {
		return atomJSON(d.keys[0])
	}
	atoms := make([]any, len(d.keys))
	for i, k := range d.keys {
		atoms[i] = atomJSON(k)
	}
	return []any{"set", atoms}
}

func atomJSON(a any) any {
	if u, ok := a.(uuidAtom); ok {
		return []any{"uuid", string(u)}
	}
	return a
}

// row is one row's columns as datums; a column it lacks has its default
// value.
type row map[string]datum

// get returns column c of r, its default if r lacks it.
func (r row) get(ts *ovsdb.TableSchema, c string) datum {
	if d, ok := r[c]; ok {
		return d
	}
	t, _ := columnType(ts, c)
	return defaultDatum(t)
}

// rowFromModel converts a row of libovsdb's database to datums.
func rowFromModel(dbModel model.DatabaseModel, m model.Model) (row, error) {
	info, err := dbModel.NewModelInfo(m)
	if err != nil {
		return nil, err
	}
	ts := info.Metadata.TableSchema
	out := row{}
	for name, col := range ts.Columns {
		native, err := info.FieldByColumn(name)
		if err != nil {
			continue
		}
		v, err := ovsdb.NativeToOvs(col, native)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		t, _ := columnType(ts, name)
		d, err := parseDatum(t, v, nil)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		out[name] = d
	}
	id, err := info.FieldByColumn("_uuid")
	if err != nil {
		return nil, err
	}
	s, _ := id.(string)
	out["_uuid"] = datum{keys: []any{uuidAtom(strings.ToLower(s))}}
	return out, nil
}
