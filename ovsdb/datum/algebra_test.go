package datum

import "testing"

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
