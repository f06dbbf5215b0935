package datum

import (
	"math"
	"strings"
	"testing"
)

func mustColumnType(t testing.TB, js string) ColumnType {
	t.Helper()
	ct, err := ColumnTypeFromJSON([]byte(js))
	if err != nil {
		t.Fatalf("ColumnTypeFromJSON(%s): %v", js, err)
	}
	return ct
}

func TestColumnTypeFromJSON(t *testing.T) {
	tests := []struct {
		name, js, english string
		wantErr           bool
		check             func(ColumnType) bool
	}{
		{"scalar", `"integer"`, "integer", false, func(c ColumnType) bool { return c.IsScalar() }},
		{"optional", `{"key":{"type":"integer","minInteger":0,"maxInteger":4095},"min":0,"max":1}`,
			"set of up to 1 integers", false, func(c ColumnType) bool {
				return c.Key.MinInteger == 0 && c.Key.MaxInteger == 4095 && c.Min == 0 && c.Max == 1
			}},
		{"map", `{"key":"string","value":"string","min":0,"max":"unlimited"}`,
			"map of (string, string) pairs", false, func(c ColumnType) bool { return c.IsMap() && c.Max == MaxUnlimited }},
		{"set 1+", `{"key":"string","min":1,"max":"unlimited"}`, "set of 1 or more strings", false, nil},
		{"set 1-4", `{"key":"real","min":1,"max":4}`, "set of 1 to 4 reals", false, nil},
		{"enum", `{"key":{"type":"string","enum":["set",["b","a"]]},"min":0,"max":1}`, "set of up to 1 strings", false,
			func(c ColumnType) bool { return len(c.Key.Enum) == 2 && c.Key.Enum[0].Str == "a" }},
		{"single enum", `{"key":{"type":"string","enum":"x"}}`, "string", false,
			func(c ColumnType) bool { return len(c.Key.Enum) == 1 }},
		{"ref", `{"key":{"type":"uuid","refTable":"Port","refType":"weak"},"min":0,"max":"unlimited"}`, "set of uuids", false,
			func(c ColumnType) bool { return c.Key.RefTable == "Port" && c.Key.RefType == "weak" }},
		{"real bounds", `{"key":{"type":"real","minReal":0.5}}`, "real", false,
			func(c ColumnType) bool { return c.Key.MinReal == 0.5 && c.Key.MaxReal == math.MaxFloat64 }},
		{"bad atomic", `"float"`, "", true, nil},
		{"no key", `{"min":0}`, "", true, nil},
		{"bad max", `{"key":"string","max":"lots"}`, "", true, nil},
		{"min>max", `{"key":"string","min":1,"max":0}`, "", true, nil},
		{"bad min", `{"key":"string","min":2,"max":5}`, "", true, nil},
		{"not json", `{`, "", true, nil},
		{"bad enum", `{"key":{"type":"integer","enum":"x"}}`, "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, err := ColumnTypeFromJSON([]byte(tt.js))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := ct.English(); got != tt.english {
				t.Errorf("English() = %q, want %q", got, tt.english)
			}
			if tt.check != nil && !tt.check(ct) {
				t.Errorf("unexpected type %+v", ct)
			}
		})
	}
}

func TestParseAndFormatDatum(t *testing.T) {
	strMap := `{"key":"string","value":"string","min":0,"max":"unlimited"}`
	ints := `{"key":{"type":"integer","minInteger":0,"maxInteger":4095},"min":0,"max":4096}`
	reals := `{"key":{"type":"real","minReal":-1.5,"maxReal":2.5},"min":0,"max":"unlimited"}`
	str := `{"key":{"type":"string","minLength":2,"maxLength":3}}`
	uuids := `{"key":{"type":"uuid","refTable":"Port"},"min":0,"max":"unlimited"}`
	refs := func(name string) (string, bool) {
		if name == "@p" {
			return "AAAAAAAA-0000-0000-0000-000000000001", true
		}
		return "", false
	}
	tests := []struct {
		typ, in            string
		str, bare, js, err string
	}{
		{strMap, `{b=1,a="x y"}`, `{a="x y", b="1"}`, `a=x y b=1`, `["map",[["a","x y"],["b","1"]]]`, ""},
		{ints, "3,1-2", "[1, 2, 3]", "1 2 3", `["set",[1,2,3]]`, ""},
		{ints, "7", "[7]", "7", "7", ""},
		{ints, "[]", "[]", "", `["set",[]]`, ""},
		{reals, "[0.1,2.5,-1]", "[-1, 0.1, 2.5]", "-1 0.1 2.5", `["set",[-1,0.1,2.5]]`, ""},
		{reals, "3", "", "", "", "constraint violation: 3 is not in the valid range -1.5 to 2.5 (inclusive)"},
		{reals, "x", "", "", "", `"x" is not a valid real number`},
		{str, "ab", "ab", "ab", `"ab"`, ""},
		{str, "a", "", "", "", `constraint violation: "a" length 1 is less than minimum allowed length 2`},
		{str, "abcd", "", "", "", `constraint violation: "abcd" length 4 is greater than maximum allowed length 3`},
		{uuids, "@p", "[aaaaaaaa-0000-0000-0000-000000000001]", "aaaaaaaa-0000-0000-0000-000000000001",
			`["uuid","aaaaaaaa-0000-0000-0000-000000000001"]`, ""},
		{uuids, "@q", "", "", "", `row id "@q" is referenced but never created (e.g. with "-- --id=@q create ...")`},
		{`"boolean"`, "on", "true", "true", "true", ""},
		{strMap, "{a=b", "", "", "", `{a=b: missing "}" at end of data`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ct := mustColumnType(t, tt.typ)
			d, err := ParseDatum(ct, tt.in, refs)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for style, want := range []string{tt.str, tt.bare, tt.js} {
				if got := FormatDatum(ct, d, DataStyle(style)); got != want {
					t.Errorf("style %d: got %q, want %q", style, got, want)
				}
			}
		})
	}
}

func TestParseAtom(t *testing.T) {
	tests := []struct {
		name, typ, in, want, err string
	}{
		{"spaces kept", `"string"`, "b c", "b c", ""},
		{"brace kept", `"string"`, "b}", "b}", ""},
		{"quoted", `"string"`, `"a\tb"`, "a\tb", ""},
		{"empty", `"string"`, "", "", `An empty string is not valid as input; use "" to represent the empty string`},
		{"bad quote", `"string"`, `"x"y`, "", `"x"y: missing quote at end of quoted string`},
		{"int", `"integer"`, "12", "12", ""},
		{"no range", `"integer"`, "1-2", "", `"1-2" is not a valid integer or range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := mustColumnType(t, tt.typ)
			a, err := ParseAtom(ct.Key, tt.in, nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := FormatDatum(ct, Datum{Keys: []Atom{a}}, DataBare)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParseDatum(f *testing.F) {
	for _, s := range []string{"{a=b}", "[1-3,5]", `"a\u00e9"`, "{", "[", "1-", `"\ud800\udc00"`, "", " ", "@x"} {
		f.Add(s)
	}
	types := []string{
		`{"key":"string","value":"string","min":0,"max":"unlimited"}`,
		`{"key":{"type":"integer","minInteger":0,"maxInteger":4095},"min":0,"max":4096}`,
		`{"key":{"type":"string","enum":["set",["a","b"]]},"min":0,"max":1}`,
		`"integer"`, `"real"`, `"boolean"`, `"uuid"`,
		`{"key":"integer","value":"real","min":1,"max":3}`,
	}
	cts := make([]ColumnType, len(types))
	for i, js := range types {
		cts[i] = mustColumnType(f, js)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, ct := range cts {
			d, err := ParseDatum(ct, s, func(string) (string, bool) { return "", false })
			if err != nil {
				if strings.TrimSpace(err.Error()) == "" {
					t.Fatalf("empty error for %q", s)
				}
				continue
			}
			if ct.IsMap() && len(d.Values) != len(d.Keys) {
				t.Fatalf("map datum with %d keys, %d values", len(d.Keys), len(d.Values))
			}
			for i := 1; i < len(d.Keys); i++ {
				if compareAtoms(d.Keys[i-1], d.Keys[i]) >= 0 {
					t.Fatalf("keys not sorted for %q", s)
				}
			}
			for _, style := range []DataStyle{DataString, DataBare, DataJSON} {
				_ = FormatDatum(ct, d, style)
			}
			// The string style reads back to the same datum (a NUL, which no C argument can
			// hold, is printed as \u0000 and rejected on input, as ovs-vsctl does).
			if strings.IndexByte(s, 0) >= 0 {
				continue
			}
			back, err := ParseDatum(ct, FormatDatum(ct, d, DataString), nil)
			if err != nil || FormatDatum(ct, back, DataJSON) != FormatDatum(ct, d, DataJSON) {
				t.Fatalf("round trip of %q via %q: %v", s, FormatDatum(ct, d, DataString), err)
			}
		}
	})
}

// InvalidUTF8 names the first invalid sequence as OVS's utf8_validate does (ovs-vsctl prints it
// in "constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence …"), reading the
// string as a C string: a sequence cut short by the end is reported with the terminating 0x00.
func TestInvalidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"br0":                    "",
		"\u00e9\u20ac\U0001F600": "",
		"\xff":                   " 0xff",
		"a\xfeb":                 " 0xfe",
		"\xc0\x80":               " 0xc0", // overlong lead byte
		"a\xc3(b":                " 0xc3 0x28",
		"a\xc3":                  " 0xc3 0x00",
		"q\xe1\x80":              " 0xe1 0x80 0x00",
		"\xed\xa0\x80":           " 0xed 0xa0", // surrogate
		"\xe0\x80\x80":           " 0xe0 0x80", // overlong
		"\xf4\x90\x80\x80":       " 0xf4 0x90", // past U+10FFFF
		"\xf0\x9f\x98":           " 0xf0 0x9f 0x98 0x00",
		"ok\xffthen\xfe":         " 0xff",
	} {
		if got := InvalidUTF8(in); got != want {
			t.Errorf("InvalidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
