package cli

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// fuzzSep separates the arguments of a fuzzed command line (a byte that never occurs in the
// seeds' arguments).
const fuzzSep = "\x00"

// FuzzParse checks that no command line makes Parse panic, that every rejected line gets a
// *ParseError with a message and status 1, and that every accepted line is well formed.
func FuzzParse(f *testing.F) {
	for _, c := range goldenCases() {
		f.Add(strings.Join(c.args, fuzzSep))
	}
	for _, line := range randomLines(rand.New(rand.NewPCG(1, 2)), 50) {
		f.Add(strings.Join(line, fuzzSep))
	}
	f.Add("--=\x00--\x00-\x00=\x00-=")
	f.Add("-\xff\x00--\xff")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, fuzzSep)
		inv, err := Parse(args)
		if err != nil {
			pe, ok := AsParseError(err)
			if !ok || pe.Msg == "" || pe.Status != ExitUsage || inv != nil {
				t.Fatalf("Parse(%q): bad error %#v (invocation %v)", args, err, inv)
			}
			return
		}
		checkInvocation(t, args, inv)
	})
}

// checkInvocation checks the invariants of an accepted command line.
func checkInvocation(t *testing.T, args []string, inv *Invocation) {
	t.Helper()
	if inv.Action != ActionRun {
		if len(inv.Commands) != 0 {
			t.Fatalf("Parse(%q): %v with commands", args, inv.Action)
		}
		return
	}
	if len(inv.Commands) == 0 {
		t.Fatalf("Parse(%q): no commands", args)
	}
	for _, c := range inv.Commands {
		if c.Spec.Name != c.Name || len(c.Args) < c.Spec.MinArgs || len(c.Args) > c.Spec.MaxArgs {
			t.Fatalf("Parse(%q): command %+v breaks its spec", args, c)
		}
		seen := map[string]bool{}
		for _, o := range c.Options {
			if seen[o.Name] || !strings.HasPrefix(o.Name, "-") {
				t.Fatalf("Parse(%q): command %s has option list %+v", args, c.Name, c.Options)
			}
			seen[o.Name] = true
		}
	}
}
