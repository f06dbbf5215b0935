package datum

import (
	"errors"
	"testing"
)

func TestUnionSubtract(t *testing.T) {
	str := func(s string) Atom { return Atom{Type: TypeString, Str: s} }
	a := Datum{Keys: []Atom{str("a"), str("b")}, Values: []Atom{str("1"), str("2")}}
	b := Datum{Keys: []Atom{str("a"), str("c")}, Values: []Atom{str("9"), str("3")}}
	u := Union(a, b, true)
	if got := FormatDatum(ColumnType{Key: NewBaseType(TypeString), Value: &BaseType{Type: TypeString}, Max: MaxUnlimited}, u, DataString); got != `{a="1", b="2", c="3"}` {
		t.Errorf("union = %s", got)
	}
	d := Subtract(u, Datum{Keys: []Atom{str("a"), str("b")}, Values: []Atom{str("1"), str("9")}}, true)
	if len(d.Keys) != 2 || d.Keys[0].Str != "b" {
		t.Errorf("subtract pairs = %v", d.Keys)
	}
	d = Subtract(u, Datum{Keys: []Atom{str("a"), str("b")}}, true)
	if len(d.Keys) != 1 || d.Keys[0].Str != "c" {
		t.Errorf("subtract keys = %v", d.Keys)
	}
}

func TestIncludesExcludesDiff(t *testing.T) {
	str := func(s string) Atom { return Atom{Type: TypeString, Str: s} }
	smap := func(kv ...string) Datum {
		var k, v []Atom
		for i := 0; i+1 < len(kv); i += 2 {
			k, v = append(k, str(kv[i])), append(v, str(kv[i+1]))
		}
		return NewDatum(k, append([]Atom{}, v...))
	}
	set := func(ks ...string) Datum {
		var k []Atom
		for _, s := range ks {
			k = append(k, str(s))
		}
		return NewDatum(k, nil)
	}
	mt := ColumnType{Key: NewBaseType(TypeString), Value: &BaseType{Type: TypeString}, Max: MaxUnlimited}
	st := ColumnType{Key: NewBaseType(TypeString), Max: MaxUnlimited}
	m := smap("a", "1", "b", "2")
	for _, tt := range []struct {
		e                  Datum
		includes, excludes bool
	}{
		{smap(), true, true},
		{smap("a", "1"), true, false},
		{smap("a", "9"), false, true}, // a pair matches only with its value
		{smap("a", "1", "c", "3"), false, false},
		{smap("c", "3"), false, true},
	} {
		if got := m.Includes(tt.e); got != tt.includes {
			t.Errorf("%s includes %s = %v", FormatDatum(mt, m, DataString), FormatDatum(mt, tt.e, DataString), got)
		}
		if got := m.Excludes(tt.e); got != tt.excludes {
			t.Errorf("%s excludes %s = %v", FormatDatum(mt, m, DataString), FormatDatum(mt, tt.e, DataString), got)
		}
	}
	if got := FormatDatum(mt, Diff(m, smap("b", "3", "c", "4"), true), DataString); got != `{a="1", b="3", c="4"}` {
		t.Errorf("map diff = %s", got)
	}
	if got := FormatDatum(mt, Diff(m, m, true), DataString); got != "{}" {
		t.Errorf("map diff with itself = %s", got)
	}
	if got := FormatDatum(st, Diff(set("a", "b"), set("b", "c"), false), DataString); got != "[a, c]" {
		t.Errorf("set diff = %s", got)
	}
}

func TestSortUnique(t *testing.T) {
	str := func(s string) Atom { return Atom{Type: TypeString, Str: s} }
	d, err := SortUnique([]Atom{str("b"), str("a")}, []Atom{str("2"), str("1")}, true)
	if err != nil || d.Keys[0].Str != "a" || d.Values[0].Str != "1" {
		t.Fatalf("SortUnique = %v, %v", d, err)
	}
	_, err = SortUnique([]Atom{str("b"), str("a"), str("b")}, nil, false)
	var dup *DuplicateError
	if !errors.As(err, &dup) || dup.Key.Str != "b" || err.Error() != "set contains duplicate value" {
		t.Fatalf("SortUnique with a duplicate: %v", err)
	}
}
