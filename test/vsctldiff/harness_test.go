//go:build linux

package vsctldiff

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

func TestSplitWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: `add-br br0`, want: []string{"add-br", "br0"}},
		{in: `  set  Interface p1   options:x="a b"  `, want: []string{"set", "Interface", "p1", `options:x=a b`}},
		{in: `set Interface p1 'external_ids:k="v w"'`, want: []string{"set", "Interface", "p1", `external_ids:k="v w"`}},
		{in: `find Interface name=p\ 1`, want: []string{"find", "Interface", "name=p 1"}},
		{in: `x "a\"b\\c\d"`, want: []string{"x", `a"b\c\d`}},
		{in: `x ""`, want: []string{"x", ""}},
		{in: `x "unterminated`, bad: true},
		{in: `x 'unterminated`, bad: true},
		{in: `x trailing\`, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := SplitWords(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("SplitWords(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("SplitWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func loadSession(t *testing.T, name string) Session {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sessions", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSession(name, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The harness must call two runs of the same tool equal: otherwise every difference it reports
// about vsctl could be noise.
func TestSameToolTwiceHasNoDifferences(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	s := loadSession(t, "basic.txt")
	a, b := Run(t, "ovs-vsctl", s), Run(t, "ovs-vsctl", s)
	if diffs := Compare(a, b, true); len(diffs) != 0 {
		t.Fatalf("ovs-vsctl vs itself: %d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
	// The session must really exercise something: errors, successes and a non-empty database.
	exits := map[int]int{}
	for _, st := range a.Steps {
		exits[st.Exit]++
	}
	if exits[0] == 0 || exits[1] == 0 || exits[2] == 0 {
		t.Errorf("session exit statuses %v: want successes (0), errors (1) and br-exists false (2)", exits)
	}
	if !strings.Contains(a.Dump, "Bridge: ") {
		t.Errorf("final dump has no bridge rows:\n%s", a.Dump)
	}
}

// And it must see a difference in each dimension it compares: exit status, stdout, stderr and
// the final database. The candidate is ovs-vsctl behind a wrapper that misbehaves on purpose.
func TestHarnessDetectsEachKindOfDifference(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "bad-vsctl")
	script := `#!/bin/sh
case "$*" in
  *" br-exists nope") exit 0 ;;                       # wrong exit status
  *" list-br") ovs-vsctl "$@"; echo extra ;;          # extra stdout
  *" no-such-command") echo "bad-vsctl: different wording" >&2; exit 1 ;;
  *" add-port br0 p1") ovs-vsctl "$@" -- set Interface p1 mtu_request=1234 ;;  # different database
  *) exec ovs-vsctl "$@" ;;
esac
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := loadSession(t, "basic.txt")
	diffs := Compare(Run(t, "ovs-vsctl", s), Run(t, wrapper, s), true)
	joined := strings.Join(diffs, "\n")
	for _, want := range []string{"`br-exists nope`: exit 2, candidate 0", "`list-br`: stdout", "`no-such-command`: stderr", "mtu_request=1234"} {
		if !strings.Contains(joined, want) {
			t.Errorf("differences do not mention %q:\n%s", want, joined)
		}
	}
}

// A starved ovs-vsctl's timeval warnings are not a difference: they are dropped and the vlog
// lines after them renumbered, so the rest still compares exactly.
func TestLoadWarningsAreDropped(t *testing.T) {
	starved := "TIME|00001|reconnect|INFO|x\n" +
		"TIME|00002|timeval|WARN|Unreasonably long 1944ms poll interval (5ms user, 2ms system)\n" +
		"TIME|00003|timeval|WARN|faults: 138 minor, 0 major\n" +
		"TIME|00004|timeval|WARN|context switches: 0 voluntary, 6 involuntary\n" +
		"TIME|00005|fatal_signal|WARN|terminating with signal 14 (Alarm clock)\n"
	want := "TIME|00001|reconnect|INFO|x\nTIME|00002|fatal_signal|WARN|terminating with signal 14 (Alarm clock)\n"
	if got := dropLoadWarnings(starved); got != want {
		t.Errorf("dropLoadWarnings:\n%s\nwant:\n%s", got, want)
	}
	other := "TIME|00001|timeval|WARN|something else\n"
	if got := dropLoadWarnings(other); got != other {
		t.Errorf("a timeval line that is not a load warning was changed: %q", got)
	}
}
