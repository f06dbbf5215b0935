package vsctl

import (
	"math"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
	vsschema "github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
)

func testSchema(t *testing.T) *dbcmd.Schema {
	t.Helper()
	s, err := dbcmd.ParseSchema(vsschema.JSON())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNameScore(t *testing.T) {
	cases := []struct {
		name, s string
		want    int
	}{
		{"Bridge", "Bridge", math.MaxInt},
		{"Bridge", "bridge", math.MaxInt - 1},
		{"stp_enable", "STP-ENABLE", math.MaxInt - 1},
		{"stp_enable", "stp-en", 6},
		{"Bridge", "", 0},
		{"Bridge", "Bridges", 0},
		{"Bridge", "x", 0},
	}
	for _, c := range cases {
		if got := nameScore(c.name, c.s); got != c.want {
			t.Errorf("nameScore(%q, %q) = %d, want %d", c.name, c.s, got, c.want)
		}
	}
}

// The messages below were read from ovs-vsctl 3.1.
func TestFindTableAndColumn(t *testing.T) {
	s := testSchema(t)
	for in, want := range map[string]string{
		"br": "Bridge", "open-v": "Open_vSwitch", "QOS": "QoS", "qo": "QoS", "Queue": "Queue",
		"sflow": "sFlow", "in": "Interface", "ipfix": "IPFIX",
	} {
		ts, err := findTable(s, in)
		if err != nil || ts.Name != want {
			t.Errorf("findTable(%q) = %v, %v; want %s", in, ts, err, want)
		}
	}
	for in, want := range map[string]string{
		"Foo": `unknown table "Foo"`,
		"i":   `"i" matches multiple table names: IPFIX, Interface`,
		"":    `unknown table ""`,
	} {
		if _, err := findTable(s, in); err == nil || err.Error() != want {
			t.Errorf("findTable(%q): %v, want %s", in, err, want)
		}
	}
	br := s.Tables["Bridge"]
	for in, want := range map[string]string{
		"n":        `Bridge contains more than one column whose name matches "n": name, netflow`,
		"_uuid":    `Bridge does not contain a column whose name matches "_uuid"`,
		"_version": `Bridge does not contain a column whose name matches "_version"`,
	} {
		if _, err := findColumn(br, in); err == nil || err.Error() != want {
			t.Errorf("findColumn(%q): %v, want %s", in, err, want)
		}
	}
	if cs, err := findColumn(br, "stp-en"); err != nil || cs.Name != "stp_enable" {
		t.Errorf("findColumn(stp-en) = %v, %v", cs, err)
	}
}

func TestParseToken(t *testing.T) {
	cases := []struct{ in, tok, rest, err string }{
		{"name=x", "name", "=x", ""},
		{`other_config:"a b"=c`, "other_config", `:"a b"=c`, ""},
		{`"a:b"=c`, `"a:b"`, "=c", ""},
		{`a\:b=c`, "a:b", "=c", ""},
		{`"a\"b"`, `"a\"b"`, "", ""},
		{`a\`, "", "", `a\: backslash at end of argument`},
		{`"a`, "", "", `"a: quoted string extends past end of argument`},
		{"", "", "", ""},
	}
	for _, c := range cases {
		tok, rest, err := parseToken(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("parseToken(%q) error %v, want %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil || tok != c.tok || rest != c.rest {
			t.Errorf("parseToken(%q) = %q, %q, %v; want %q, %q", c.in, tok, rest, err, c.tok, c.rest)
		}
	}
}

func TestParseColumnArg(t *testing.T) {
	s := testSchema(t)
	br := s.Tables["Bridge"]
	ca, err := parseColumnArg(br, "other:a<=b", relOps())
	if err != nil || ca.Col.Name != "other_config" || !ca.HasKey || ca.Key != "a" || ca.Op != "<=" || ca.Value != "b" {
		t.Errorf("other:a<=b: %+v %v", ca, err)
	}
	ca, err = parseColumnArg(br, "name{not-in}[a]", relOps())
	if err != nil || ca.Op != "{not-in}" || ca.Value != "[a]" {
		t.Errorf("name{not-in}[a]: %+v %v", ca, err)
	}
	for _, c := range []struct {
		arg string
		ops []string
		err string
	}{
		{"name=", []string{"="}, `name=: argument does not end in "=" followed by a value.`},
		{"name", relOps(), `name: argument does not end in "=", "!=", "<", ">", "<=", ">=", "{=}", "{!=}", "{<}", "{>}", "{<=}", "{>=}", "{in}", or "{not-in}" followed by a value.`},
		{"name=x", nil, `name=x: trailing garbage "=x" in argument`},
		{":x", nil, `:x: missing column name`},
	} {
		if _, err := parseColumnArg(br, c.arg, c.ops); err == nil || err.Error() != c.err {
			t.Errorf("parseColumnArg(%q): %v, want %s", c.arg, err, c.err)
		}
	}
	if err := missingOperator("x", []string{"=", "!="}); err.Error() != `x: argument does not end in "=" or "!=" followed by a value.` {
		t.Errorf("two operators: %v", err)
	}
}

func ints(v ...int64) datum.Datum {
	d := datum.Datum{Keys: []datum.Atom{}}
	for _, i := range v {
		d.Keys = append(d.Keys, datum.Atom{Type: datum.TypeInteger, Int: i})
	}
	return d
}

func TestEvalRelOp(t *testing.T) {
	cases := []struct {
		a, b datum.Datum
		op   string
		want bool
	}{
		{ints(1), ints(1), "=", true},
		{ints(1), ints(2), "<", true},
		{ints(5), ints(1, 2), "<", true}, // fewer elements sort first
		{ints(1, 2), ints(1, 2), "{=}", true},
		{ints(1), ints(1, 2), "{<}", true},
		{ints(1, 2), ints(1, 2), "{<}", false},
		{ints(1, 2), ints(1, 2), "{<=}", true},
		{ints(1, 2, 3), ints(1, 2), "{>}", true},
		{ints(1, 2), ints(2), "{>=}", true},
		{ints(1), ints(1, 2), "{in}", true},
		{ints(1, 3), ints(1, 2), "{in}", false},
		{ints(3), ints(1, 2), "{not-in}", true},
		{ints(), ints(1), "{not-in}", true},
		{ints(1), ints(1), "!=", false},
		{ints(1), ints(2), "{!=}", true},
		{ints(2), ints(1), ">=", true},
	}
	for _, c := range cases {
		if got := evalRelOp(c.a, c.b, false, c.op); got != c.want {
			t.Errorf("%v %s %v = %v, want %v", c.a.Keys, c.op, c.b.Keys, got, c.want)
		}
	}
	str := func(s string) datum.Atom { return datum.Atom{Type: datum.TypeString, Str: s} }
	m1 := datum.Datum{Keys: []datum.Atom{str("x")}, Values: []datum.Atom{str("1")}}
	m2 := datum.Datum{Keys: []datum.Atom{str("x"), str("y")}, Values: []datum.Atom{str("1"), str("2")}}
	m3 := datum.Datum{Keys: []datum.Atom{str("x")}, Values: []datum.Atom{str("2")}}
	if !evalRelOp(m1, m2, true, "{<}") || evalRelOp(m3, m2, true, "{<=}") || !evalRelOp(m3, m1, true, "{not-in}") {
		t.Error("map set operators compare key-value pairs")
	}
}

func TestUUIDForms(t *testing.T) {
	if !isFullUUID("12345678-1234-1234-1234-123456789ABC") || isFullUUID("12345678") {
		t.Error("isFullUUID")
	}
	for in, want := range map[string]int{"1234": 4, "12345678-": 9, "12345678-1": 10, "1234567x": 0, "123456789": 0, "": 0} {
		if got := uuidPrefixLen(in); got != want {
			t.Errorf("uuidPrefixLen(%q) = %d, want %d", in, got, want)
		}
	}
}

// serverConds hands ovsdb-server the equalities and the map-key tests it can evaluate exactly,
// and nothing when a condition is invalid or names a symbol.
func TestServerConds(t *testing.T) {
	s := testSchema(t)
	iface := s.Tables["Interface"]
	type cond struct{ col, op, val string }
	desc := func(cs []dbcmd.Cond) []cond {
		var out []cond
		for _, c := range cs {
			v := datum.FormatDatum(datum.ColumnType{Key: datum.BaseType{Type: datum.TypeString}, Value: &datum.BaseType{Type: datum.TypeString}, Max: datum.MaxUnlimited}, c.Value, datum.DataString)
			if c.Value.Values == nil {
				v = c.Value.Keys[0].Str
			}
			out = append(out, cond{c.Column, c.Op, v})
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want []cond
	}{
		{[]string{"name=p1"}, []cond{{"name", "==", "p1"}}},
		{[]string{"external_ids:iface-id=abc"}, []cond{{"external_ids", "includes", `{iface-id=abc}`}}},
		{[]string{"external_ids:iface-id=abc", "name=p1"}, []cond{{"external_ids", "includes", `{iface-id=abc}`}, {"name", "==", "p1"}}},
		// a missing key matches {=} [] and != : left to the client
		{[]string{"external_ids:iface-id{=}[]"}, nil},
		{[]string{"external_ids:iface-id!=abc"}, nil},
		// no key equals two values, or none: nothing the server could be asked
		{[]string{"external_ids:iface-id=[a,b]"}, nil},
		{[]string{"external_ids:iface-id=[]"}, nil},
		// an invalid condition or a symbol: the client sees every row
		{[]string{"name=p1", "nosuchcolumn=1"}, nil},
		{[]string{"name=p1", "external_ids:x=@a"}, nil},
	} {
		got := desc(serverConds(iface, c.args))
		if len(got) != len(c.want) {
			t.Errorf("serverConds(%q) = %v, want %v", c.args, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("serverConds(%q) = %v, want %v", c.args, got, c.want)
				break
			}
		}
	}
}
