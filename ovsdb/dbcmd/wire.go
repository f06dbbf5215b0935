package dbcmd

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// namer maps the temporary UUIDs of rows inserted by this transaction to named-uuid names.
type namer func(uuid string) (name string, ok bool)

// encodeAtom renders a as RFC 7047 JSON.
func encodeAtom(a datum.Atom, names namer) any {
	switch a.Type {
	case datum.TypeInteger:
		return a.Int
	case datum.TypeReal:
		return a.Real
	case datum.TypeBoolean:
		return a.Bool
	case datum.TypeUUID:
		if names != nil {
			if n, ok := names(a.Str); ok {
				return []any{"named-uuid", n}
			}
		}
		return []any{"uuid", a.Str}
	}
	return a.Str
}

// encodeDatum renders d, of type ct, as RFC 7047 JSON (a one-element set as its atom).
func encodeDatum(ct datum.ColumnType, d datum.Datum, names namer) any {
	return encodeDatumForm(ct, d, names, false)
}

// encodeDatumForm is encodeDatum; with fullSets, values of set columns are always written as
// ["set", …] (which RFC 7047 allows for any set, and which libovsdb's server needs to compare a
// wait's rows correctly).
func encodeDatumForm(ct datum.ColumnType, d datum.Datum, names namer, fullSets bool) any {
	if ct.IsMap() || d.Values != nil {
		pairs := make([]any, 0, len(d.Keys))
		for i, k := range d.Keys {
			pairs = append(pairs, []any{encodeAtom(k, names), encodeAtom(d.Values[i], names)})
		}
		return []any{"map", pairs}
	}
	if len(d.Keys) == 1 && !(fullSets && !ct.IsScalar()) {
		return encodeAtom(d.Keys[0], names)
	}
	set := make([]any, 0, len(d.Keys))
	for _, k := range d.Keys {
		set = append(set, encodeAtom(k, names))
	}
	return []any{"set", set}
}

func datumFromJSON(ct datum.ColumnType, v any) (datum.Datum, error) {
	if arr, ok := v.([]any); ok && len(arr) == 2 {
		switch arr[0] {
		case "map":
			pairs, _ := arr[1].([]any)
			keys := make([]datum.Atom, 0, len(pairs))
			vals := make([]datum.Atom, 0, len(pairs))
			vt := ct.Key
			if ct.Value != nil {
				vt = *ct.Value
			}
			for _, p := range pairs {
				kv, ok := p.([]any)
				if !ok || len(kv) != 2 {
					return datum.Datum{}, fmt.Errorf("bad map pair %v", p)
				}
				k, err := atomFromJSON(ct.Key.Type, kv[0])
				if err != nil {
					return datum.Datum{}, err
				}
				val, err := atomFromJSON(vt.Type, kv[1])
				if err != nil {
					return datum.Datum{}, err
				}
				keys, vals = append(keys, k), append(vals, val)
			}
			return datum.NewDatum(keys, vals), nil
		case "set":
			elems, _ := arr[1].([]any)
			keys := make([]datum.Atom, 0, len(elems))
			for _, e := range elems {
				k, err := atomFromJSON(ct.Key.Type, e)
				if err != nil {
					return datum.Datum{}, err
				}
				keys = append(keys, k)
			}
			if ct.IsMap() {
				return datum.NewDatum(keys, []datum.Atom{}), nil
			}
			return datum.NewDatum(keys, nil), nil
		}
	}
	a, err := atomFromJSON(ct.Key.Type, v)
	if err != nil {
		return datum.Datum{}, err
	}
	return datum.Datum{Keys: []datum.Atom{a}}, nil
}

func atomFromJSON(t datum.AtomicType, v any) (datum.Atom, error) {
	a := datum.Atom{Type: t}
	switch t {
	case datum.TypeInteger:
		if n, ok := v.(json.Number); ok {
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				f, ferr := n.Float64()
				if ferr != nil || f != math.Trunc(f) {
					return a, fmt.Errorf("%v is not an integer", v)
				}
				i = int64(f)
			}
			a.Int = i
			return a, nil
		}
	case datum.TypeReal:
		if n, ok := v.(json.Number); ok {
			f, err := n.Float64()
			if err == nil {
				a.Real = f
				return a, nil
			}
		}
	case datum.TypeBoolean:
		if b, ok := v.(bool); ok {
			a.Bool = b
			return a, nil
		}
	case datum.TypeString:
		if s, ok := v.(string); ok {
			a.Str = s
			return a, nil
		}
	case datum.TypeUUID:
		if arr, ok := v.([]any); ok && len(arr) == 2 && arr[0] == "uuid" {
			if s, ok := arr[1].(string); ok {
				a.Str = lowerHex(s)
				return a, nil
			}
		}
	}
	return a, fmt.Errorf("%v is not a valid %s", v, t)
}

// lowerHex returns s in lower case, without allocating when it already is (ovsdb-server
// always sends lower-case UUIDs).
func lowerHex(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
