package cli

import (
	"strings"
	"testing"
)

// caseName is a readable subtest name for a command line.
func caseName(args []string) string {
	if len(args) == 0 {
		return "(empty)"
	}
	return strings.Join(args, " ")
}

func TestParseGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(caseName(c.args), func(t *testing.T) {
			inv, err := Parse(c.args)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v, want success", err)
				}
				if inv.Action == ActionRun && len(inv.Commands) == 0 {
					t.Fatalf("Parse returned no commands")
				}
				return
			}
			pe, ok := AsParseError(err)
			if !ok {
				t.Fatalf("Parse: err = %v, want *ParseError %q", err, c.want)
			}
			if pe.Msg != c.want || pe.Status != ExitUsage || inv != nil {
				t.Fatalf("Parse: (%v, %q status %d), want (nil, %q status %d)", inv, pe.Msg, pe.Status, c.want, ExitUsage)
			}
		})
	}
}
