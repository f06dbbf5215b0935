package cli

import (
	"slices"
	"strings"
	"testing"
)

// FuzzCutOption checks that no command line makes CutOption panic, that what it returns is
// the line with arguments removed (in order), at least one when it found --daemon, and that
// a line without it comes back unchanged.
func FuzzCutOption(f *testing.F) {
	for _, c := range goldenCases() {
		f.Add(strings.Join(c.args, fuzzSep))
		f.Add(strings.Join(append([]string{"--daemon=unix:/x"}, c.args...), fuzzSep))
	}
	f.Add("--daemon\x00unix:/x\x00-t\x005\x00add-port\x00br0\x00p0")
	f.Add("--daemon")
	f.Add("--daemon=")
	f.Add("-vt5\x00--daemon=a\x00--\x00--daemon=b")
	f.Add("-t\x00--daemon=x\x00show")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, fuzzSep)
		v, found, rest, err := CutOption(args, "daemon")
		if err != nil {
			if found || rest != nil || !slices.Contains(args, "--daemon") {
				t.Fatalf("CutOption(%q): error %v with found %v, rest %q", args, err, found, rest)
			}
			return
		}
		if !found {
			if v != "" || !slices.Equal(rest, args) {
				t.Fatalf("CutOption(%q) found nothing but returned %q, %q", args, v, rest)
			}
			return
		}
		if len(rest) >= len(args) {
			t.Fatalf("CutOption(%q) found %q but cut nothing: %q", args, v, rest)
		}
		// rest is args with some arguments removed, in order.
		i := 0
		for _, a := range args {
			if i < len(rest) && rest[i] == a {
				i++
			}
		}
		if i != len(rest) {
			t.Fatalf("CutOption(%q) = %q: not a subsequence", args, rest)
		}
	})
}

func TestCutOptionReadsGetoptsWay(t *testing.T) {
	for _, tc := range []struct{ line, value, rest string }{
		{"-t --daemon=x show", "", "-t --daemon=x show"}, // -t's value
		{"--db --daemon=x show", "", "--db --daemon=x show"},
		{"-vt5 --daemon=x show", "x", "-vt5 show"},
		{"--may-exist --daemon x add-br b", "x", "--may-exist add-br b"},
		{"--daemon=x -- --daemon=y show", "x", "-- --daemon=y show"},
	} {
		v, _, rest, err := CutOption(strings.Fields(tc.line), "daemon")
		if err != nil || v != tc.value || strings.Join(rest, " ") != tc.rest {
			t.Errorf("%q: %q, %q, %v; want %q, %q", tc.line, v, rest, err, tc.value, tc.rest)
		}
	}
}
