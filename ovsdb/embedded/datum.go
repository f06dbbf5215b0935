package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// OVSDB values as the server compares them. The value model itself (atoms, datums sorted by
// key so that two sets or maps a client sends in different orders compare equal, default
// values, the includes/excludes functions and update2 diffs) is ovsdb/datum's; libovsdb's
// engine compares Go values with reflect.DeepEqual instead, so every comparison the embedded
// server makes itself (wait, where clauses of monitors, monitor diffs) goes through datum.
//
// What stays here is the wire: decoding the values clients send, which arrive either as
// JSON-RPC decoded with UseNumber or in libovsdb's Go notation and may name a UUID by its
// "named-uuid" from the same transaction, and encoding datums back as Go values for
// encoding/json. datum parses and formats ovs-vsctl's syntax and OVS's JSON bytes, neither
// of which is this.

// row is one row's columns as datums; a column it lacks has its default value.
type row map[string]datum.Datum

// uuidType is the type of the _uuid column.
var uuidType = datum.ColumnType{Key: datum.NewBaseType(datum.TypeUUID), Min: 1, Max: 1}

// columnType returns the type of column in ts (its atomic types and number of elements; the
// embedded server checks no other constraint); _uuid is a UUID.
func columnType(ts *ovsdb.TableSchema, column string) (datum.ColumnType, bool) {
	if column == "_uuid" {
		return uuidType, true
	}
	c := ts.Column(column)
	if c == nil || c.TypeObj == nil || c.TypeObj.Key == nil {
		return datum.ColumnType{}, false
	}
	key, err := datum.ParseAtomicType(c.TypeObj.Key.Type)
	if err != nil {
		return datum.ColumnType{}, false
	}
	t := datum.ColumnType{Key: datum.NewBaseType(key), Min: uint64(max(c.TypeObj.Min(), 0)), Max: datum.MaxUnlimited}
	if m := c.TypeObj.Max(); m >= 0 {
		t.Max = uint64(m)
	}
	if c.TypeObj.Value != nil {
		v, err := datum.ParseAtomicType(c.TypeObj.Value.Type)
		if err != nil {
			return datum.ColumnType{}, false
		}
		vt := datum.NewBaseType(v)
		t.Value = &vt
	}
	return t, true
}

// get returns column c of r, its default if r lacks it.
func (r row) get(ts *ovsdb.TableSchema, c string) datum.Datum {
	if d, ok := r[c]; ok {
		return d
	}
	t, _ := columnType(ts, c)
	return datum.DefaultDatum(t)
}

// parseDatum converts v to a datum of type t. v may be JSON decoded with
// UseNumber (["set",[...]], ["map",[...]], ["uuid",...], an atom) or a value
// of libovsdb's notation (ovsdb.OvsSet, ovsdb.OvsMap, ovsdb.UUID, Go atoms).
// names resolves "named-uuid" references; it may be nil. Duplicate keys are
// refused, as ovsdb-server refuses them.
func parseDatum(t datum.ColumnType, v any, names map[string]string) (datum.Datum, error) {
	var keys, values []datum.Atom
	addPair := func(k, v any) error {
		if !t.IsMap() {
			return fmt.Errorf("unexpected map value")
		}
		ka, err := parseAtom(t.Key.Type, k, names)
		if err != nil {
			return err
		}
		va, err := parseAtom(t.Value.Type, v, names)
		if err != nil {
			return err
		}
		keys, values = append(keys, ka), append(values, va)
		return nil
	}
	addKey := func(e any) error {
		a, err := parseAtom(t.Key.Type, e, names)
		keys = append(keys, a)
		return err
	}
	var err error
	switch x := v.(type) {
	case ovsdb.OvsSet:
		for _, e := range x.GoSet {
			if err = addKey(e); err != nil {
				break
			}
		}
		return sortUnique(keys, values, t, err)
	case ovsdb.OvsMap:
		for k, val := range x.GoMap {
			if err = addPair(k, val); err != nil {
				break
			}
		}
		return sortUnique(keys, values, t, err)
	case []any:
		if len(x) == 2 && x[0] == "set" {
			elems, ok := x[1].([]any)
			if !ok {
				return datum.Datum{}, fmt.Errorf("set value is not an array")
			}
			for _, e := range elems {
				if err = addKey(e); err != nil {
					break
				}
			}
			return sortUnique(keys, values, t, err)
		}
		if len(x) == 2 && x[0] == "map" {
			pairs, ok := x[1].([]any)
			if !ok {
				return datum.Datum{}, fmt.Errorf("map value is not an array")
			}
			for _, p := range pairs {
				kv, ok := p.([]any)
				if !ok || len(kv) != 2 {
					return datum.Datum{}, fmt.Errorf("map element is not a [key, value] pair")
				}
				if err = addPair(kv[0], kv[1]); err != nil {
					break
				}
			}
			return sortUnique(keys, values, t, err)
		}
	}
	if t.IsMap() {
		return datum.Datum{}, fmt.Errorf("expected a map, got %v", v)
	}
	a, err := parseAtom(t.Key.Type, v, names)
	if err != nil {
		return datum.Datum{}, err
	}
	return datum.Datum{Keys: []datum.Atom{a}}, nil
}

// sortUnique finishes parseDatum: it passes on err, else sorts the elements and refuses
// duplicates with the embedded server's message.
func sortUnique(keys, values []datum.Atom, t datum.ColumnType, err error) (datum.Datum, error) {
	if err != nil {
		return datum.Datum{}, err
	}
	d, err := datum.SortUnique(keys, values, t.IsMap())
	if dup := (*datum.DuplicateError)(nil); errors.As(err, &dup) {
		return datum.Datum{}, fmt.Errorf("duplicate value %v in set or map", atomJSON(dup.Key))
	}
	return d, err
}

// parseAtom converts one atom of type typ.
func parseAtom(typ datum.AtomicType, v any, names map[string]string) (datum.Atom, error) {
	switch typ {
	case datum.TypeInteger:
		switch x := v.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return datum.Atom{Type: typ, Int: i}, nil
			}
			if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
				return datum.Atom{Type: typ, Int: int64(f)}, nil
			}
		case int:
			return datum.Atom{Type: typ, Int: int64(x)}, nil
		case int64:
			return datum.Atom{Type: typ, Int: x}, nil
		case float64:
			if x == math.Trunc(x) {
				return datum.Atom{Type: typ, Int: int64(x)}, nil
			}
		}
	case datum.TypeReal:
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				return datum.Atom{Type: typ, Real: f}, nil
			}
		case float64:
			return datum.Atom{Type: typ, Real: x}, nil
		case int:
			return datum.Atom{Type: typ, Real: float64(x)}, nil
		case int64:
			return datum.Atom{Type: typ, Real: float64(x)}, nil
		}
	case datum.TypeBoolean:
		if b, ok := v.(bool); ok {
			return datum.Atom{Type: typ, Bool: b}, nil
		}
	case datum.TypeString:
		if s, ok := v.(string); ok {
			return datum.Atom{Type: typ, Str: s}, nil
		}
	case datum.TypeUUID:
		switch x := v.(type) {
		case ovsdb.UUID:
			return parseUUID(x.GoUUID, names)
		case []any:
			if len(x) == 2 {
				s, _ := x[1].(string)
				switch x[0] {
				case "uuid":
					if _, err := uuid.Parse(s); err != nil {
						return datum.Atom{}, fmt.Errorf("%q is not a valid UUID", s)
					}
					return uuidAtom(s), nil
				case "named-uuid":
					if u, ok := names[s]; ok {
						return uuidAtom(u), nil
					}
					return datum.Atom{}, fmt.Errorf("unknown named-uuid %q", s)
				}
			}
		}
	}
	return datum.Atom{}, fmt.Errorf("%v is not a valid %s", v, typ)
}

// uuidAtom is the UUID atom u, lower case.
func uuidAtom(u string) datum.Atom {
	return datum.Atom{Type: datum.TypeUUID, Str: strings.ToLower(u)}
}

// parseUUID takes libovsdb's UUID notation, where a named UUID is kept as
// its name.
func parseUUID(s string, names map[string]string) (datum.Atom, error) {
	if _, err := uuid.Parse(s); err == nil {
		return uuidAtom(s), nil
	}
	if u, ok := names[s]; ok {
		return uuidAtom(u), nil
	}
	return datum.Atom{}, fmt.Errorf("%q is not a valid UUID", s)
}

// toJSON returns d in OVSDB notation for a column of type t, as Go values for encoding/json.
func toJSON(t datum.ColumnType, d datum.Datum) any {
	if t.IsMap() {
		pairs := make([]any, len(d.Keys))
		for i := range d.Keys {
			pairs[i] = []any{atomJSON(d.Keys[i]), atomJSON(d.Values[i])}
		}
		return []any{"map", pairs}
	}
	if len(d.Keys) == 1 {
		return atomJSON(d.Keys[0])
	}
	atoms := make([]any, len(d.Keys))
	for i, k := range d.Keys {
		atoms[i] = atomJSON(k)
	}
	return []any{"set", atoms}
}

// atomJSON returns a as the Go value encoding/json writes as its OVSDB notation.
func atomJSON(a datum.Atom) any {
	switch a.Type {
	case datum.TypeInteger:
		return a.Int
	case datum.TypeReal:
		return a.Real
	case datum.TypeBoolean:
		return a.Bool
	case datum.TypeUUID:
		return []any{"uuid", a.Str}
	}
	return a.Str
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
	out["_uuid"] = datum.Datum{Keys: []datum.Atom{uuidAtom(s)}}
	return out, nil
}
