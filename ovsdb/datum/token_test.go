package datum

import "testing"

// Tokens are read as ovsdb_token_parse reads them: a backslash outside double quotes makes the
// next character literal and disappears (ZStack's agent escapes the colons of a PCI address in a
// find condition this way); one inside quotes stays for the JSON unescape; quotes anywhere in a
// token hide delimiters.
func TestTokenEscapes(t *testing.T) {
	strSet := `{"key":"string","min":0,"max":"unlimited"}`
	strMap := `{"key":"string","value":"string","min":0,"max":"unlimited"}`
	tests := []struct {
		typ, in string
		keys    []string
		err     string
	}{
		{typ: strSet, in: `0000\:3b\:00.2`, keys: []string{"0000:3b:00.2"}},
		{typ: strSet, in: `a\,b,c`, keys: []string{"a,b", "c"}},
		{typ: strSet, in: `\x`, keys: []string{"x"}},
		{typ: strSet, in: `"x\"y"`, keys: []string{`x"y`}},
		{typ: strSet, in: `a"b:c"`, keys: []string{`a"b:c"`}},
		{typ: strMap, in: `{k\=1=v\}}`, keys: []string{"k=1"}},
		{typ: strSet, in: `ab\`, err: `ab\: backslash at end of argument`},
		{typ: strSet, in: `a"b`, err: `a"b: quoted string extends past end of argument`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDatum(mustColumnType(t, tt.typ), tt.in, nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseDatum(%q) error %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDatum(%q): %v", tt.in, err)
			}
			if len(d.Keys) != len(tt.keys) {
				t.Fatalf("ParseDatum(%q) = %d keys, want %q", tt.in, len(d.Keys), tt.keys)
			}
			for i, k := range tt.keys {
				if d.Keys[i].Str != k {
					t.Errorf("ParseDatum(%q) key %d = %q, want %q", tt.in, i, d.Keys[i].Str, k)
				}
			}
		})
	}
	if d, err := ParseDatum(mustColumnType(t, strMap), `{k\=1=v\}}`, nil); err == nil && d.Values[0].Str != "v}" {
		t.Errorf("map value = %q, want %q", d.Values[0].Str, "v}")
	}
}
