package datum

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// AtomicType is one of the five OVSDB atomic types of RFC 7047.
type AtomicType int

// The atomic types. The zero value is not a valid type.
const (
	TypeInteger AtomicType = iota + 1
	TypeReal
	TypeBoolean
	TypeString
	TypeUUID
)

// String returns the RFC 7047 name of t ("integer", "real", "boolean", "string", "uuid"), or
// "invalid" for any other value.
func (t AtomicType) String() string {
	switch t {
	case TypeInteger:
		return "integer"
	case TypeReal:
		return "real"
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeUUID:
		return "uuid"
	}
	return "invalid"
}

// ParseAtomicType returns the atomic type named name (RFC 7047 spelling), or an error.
func ParseAtomicType(name string) (AtomicType, error) {
	for t := TypeInteger; t <= TypeUUID; t++ {
		if t.String() == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown atomic-type %q", name)
}

// BaseType is an atomic type with the constraints of an RFC 7047 <base-type>. Constraints
// that do not apply to Type are ignored. The zero values of the bounds mean "unconstrained"
// only when built by NewBaseType or BaseTypeFromJSON; build values with those.
type BaseType struct {
	// Type is the atomic type.
	Type AtomicType
	// Enum, when non-nil, lists the only allowed values, each of type Type, sorted.
	Enum []Atom
	// MinInteger and MaxInteger bound integers (inclusive).
	MinInteger, MaxInteger int64
	// MinReal and MaxReal bound reals (inclusive).
	MinReal, MaxReal float64
	// MinLength and MaxLength bound the length of strings in Unicode characters.
	MinLength, MaxLength uint64
	// RefTable names the table a uuid refers to ("" when none); RefType is "strong" or "weak".
	RefTable, RefType string
}

// NewBaseType returns an unconstrained base type of type t.
func NewBaseType(t AtomicType) BaseType {
	return BaseType{Type: t, MinInteger: math.MinInt64, MaxInteger: math.MaxInt64,
		MinReal: -math.MaxFloat64, MaxReal: math.MaxFloat64, MaxLength: math.MaxUint32}
}

// MaxUnlimited is ColumnType.Max for a column without an upper bound on its number of elements.
const MaxUnlimited = math.MaxUint32

// ColumnType is an RFC 7047 <type>: a key type, an optional value type (a map when present),
// and the allowed number of elements, Min to Max (Max may be MaxUnlimited).
type ColumnType struct {
	// Key is the type of the keys (the elements of a set, or the scalar).
	Key BaseType
	// Value is the type of the values of a map; nil for scalars and sets.
	Value *BaseType
	// Min and Max bound the number of elements; Max is MaxUnlimited when unbounded.
	Min, Max uint64
}

// IsMap reports whether t is a map type.
func (t ColumnType) IsMap() bool { return t.Value != nil }

// IsScalar reports whether t holds exactly one atom.
func (t ColumnType) IsScalar() bool { return t.Value == nil && t.Min == 1 && t.Max == 1 }

// English describes t as ovs-vsctl does in its messages, e.g. "integer",
// "set of up to 4096 integers" or "map of (string, string) pairs".
func (t ColumnType) English() string {
	key := t.Key.Type.String()
	if t.IsScalar() {
		return key
	}
	var b strings.Builder
	if t.IsMap() {
		b.WriteString("map")
	} else {
		b.WriteString("set")
	}
	switch {
	case t.Max == MaxUnlimited && t.Min > 0:
		fmt.Fprintf(&b, " of %d or more", t.Min)
	case t.Max == MaxUnlimited:
		b.WriteString(" of")
	case t.Min > 0:
		fmt.Fprintf(&b, " of %d to %d", t.Min, t.Max)
	default:
		fmt.Fprintf(&b, " of up to %d", t.Max)
	}
	if t.IsMap() {
		fmt.Fprintf(&b, " (%s, %s) pairs", key, t.Value.Type)
	} else {
		fmt.Fprintf(&b, " %ss", key)
	}
	return b.String()
}

// ColumnTypeFromJSON builds a column type from the JSON of an ovsdb schema column's "type"
// member (RFC 7047 <type>: an atomic-type string, or an object with "key", optional "value",
// "min" and "max"). It returns an error for anything the grammar does not allow.
func ColumnTypeFromJSON(data []byte) (ColumnType, error) {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return ColumnType{}, fmt.Errorf("column type: %w", err)
	}
	return columnTypeFromAny(raw)
}

// ColumnTypeFromValue is ColumnTypeFromJSON for a type already decoded by encoding/json into
// an any (strings, float64 numbers, []any and map[string]any).
func ColumnTypeFromValue(v any) (ColumnType, error) { return columnTypeFromAny(v) }

func columnTypeFromAny(raw any) (ColumnType, error) {
	if s, ok := raw.(string); ok {
		bt, err := baseTypeFromAny(s)
		return ColumnType{Key: bt, Min: 1, Max: 1}, err
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return ColumnType{}, fmt.Errorf("column type: want string or object, got %T", raw)
	}
	kraw, ok := obj["key"]
	if !ok {
		return ColumnType{}, fmt.Errorf("column type: missing \"key\"")
	}
	key, err := baseTypeFromAny(kraw)
	if err != nil {
		return ColumnType{}, fmt.Errorf("column type key: %w", err)
	}
	ct := ColumnType{Key: key, Min: 1, Max: 1}
	if vraw, ok := obj["value"]; ok {
		v, err := baseTypeFromAny(vraw)
		if err != nil {
			return ColumnType{}, fmt.Errorf("column type value: %w", err)
		}
		ct.Value = &v
	}
	if m, ok := obj["min"]; ok {
		f, ok := m.(float64)
		if !ok || f < 0 || f > 1 || f != math.Trunc(f) {
			return ColumnType{}, fmt.Errorf("column type: bad \"min\" %v", m)
		}
		ct.Min = uint64(f)
	}
	if m, ok := obj["max"]; ok {
		switch v := m.(type) {
		case string:
			if v != "unlimited" {
				return ColumnType{}, fmt.Errorf("column type: bad \"max\" %q", v)
			}
			ct.Max = MaxUnlimited
		case float64:
			if v < 1 || v != math.Trunc(v) || v >= MaxUnlimited {
				return ColumnType{}, fmt.Errorf("column type: bad \"max\" %v", v)
			}
			ct.Max = uint64(v)
		default:
			return ColumnType{}, fmt.Errorf("column type: bad \"max\" %v", m)
		}
	}
	if ct.Min > ct.Max {
		return ColumnType{}, fmt.Errorf("column type: min %d exceeds max %d", ct.Min, ct.Max)
	}
	return ct, nil
}

func baseTypeFromAny(raw any) (BaseType, error) {
	if s, ok := raw.(string); ok {
		t, err := ParseAtomicType(s)
		if err != nil {
			return BaseType{}, err
		}
		return NewBaseType(t), nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return BaseType{}, fmt.Errorf("base type: want string or object, got %T", raw)
	}
	ts, _ := obj["type"].(string)
	t, err := ParseAtomicType(ts)
	if err != nil {
		return BaseType{}, fmt.Errorf("base type: %w", err)
	}
	bt := NewBaseType(t)
	num := func(name string) (float64, bool, error) {
		v, ok := obj[name]
		if !ok {
			return 0, false, nil
		}
		f, ok := v.(float64)
		if !ok {
			return 0, false, fmt.Errorf("base type: %q is not a number", name)
		}
		return f, true, nil
	}
	switch t {
	case TypeInteger:
		if f, ok, err := num("minInteger"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MinInteger = int64(f)
		}
		if f, ok, err := num("maxInteger"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MaxInteger = int64(f)
		}
	case TypeReal:
		if f, ok, err := num("minReal"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MinReal = f
		}
		if f, ok, err := num("maxReal"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MaxReal = f
		}
	case TypeString:
		if f, ok, err := num("minLength"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MinLength = uint64(f)
		}
		if f, ok, err := num("maxLength"); err != nil {
			return BaseType{}, err
		} else if ok {
			bt.MaxLength = uint64(f)
		}
	case TypeUUID:
		if rt, ok := obj["refTable"].(string); ok {
			bt.RefTable = rt
			bt.RefType = "strong"
			if r, ok := obj["refType"].(string); ok {
				bt.RefType = r
			}
		}
	}
	if e, ok := obj["enum"]; ok {
		enum, err := enumFromAny(t, e)
		if err != nil {
			return BaseType{}, fmt.Errorf("base type enum: %w", err)
		}
		bt.Enum = enum
	}
	return bt, nil
}

// enumFromAny decodes an enum, an <atom> or a ["set", [<atom>...]], into sorted atoms.
func enumFromAny(t AtomicType, raw any) ([]Atom, error) {
	var items []any
	if arr, ok := raw.([]any); ok && len(arr) == 2 && arr[0] == "set" {
		inner, ok := arr[1].([]any)
		if !ok {
			return nil, fmt.Errorf("bad set %v", raw)
		}
		items = inner
	} else {
		items = []any{raw}
	}
	atoms := make([]Atom, 0, len(items))
	for _, it := range items {
		a, err := atomFromJSONValue(t, it)
		if err != nil {
			return nil, err
		}
		atoms = append(atoms, a)
	}
	sortAtoms(atoms)
	return atoms, nil
}

func atomFromJSONValue(t AtomicType, v any) (Atom, error) {
	switch t {
	case TypeInteger:
		if f, ok := v.(float64); ok && f == math.Trunc(f) {
			return Atom{Type: t, Int: int64(f)}, nil
		}
	case TypeReal:
		if f, ok := v.(float64); ok {
			return Atom{Type: t, Real: f}, nil
		}
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return Atom{Type: t, Bool: b}, nil
		}
	case TypeString:
		if s, ok := v.(string); ok {
			return Atom{Type: t, Str: s}, nil
		}
	case TypeUUID:
		if arr, ok := v.([]any); ok && len(arr) == 2 && arr[0] == "uuid" {
			if s, ok := arr[1].(string); ok && IsUUID(s) {
				return Atom{Type: t, Str: strings.ToLower(s)}, nil
			}
		}
	}
	return Atom{}, fmt.Errorf("%v is not a valid %s", v, t)
}
