//go:build linux

package vsctl

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/vsctldiff"
)

func TestCAtoi(t *testing.T) {
	for in, want := range map[string]int64{
		"10": 10, " -5": -5, "abc": 0, "12abc": 12, "+7": 7, "4096": 4096,
		"99999999999999999999": -1, "2147483648": -2147483648,
	} {
		if got := cAtoi(in); got != want {
			t.Errorf("cAtoi(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestPartialMatch(t *testing.T) {
	cases := []struct {
		name, s string
		want    int
	}{
		{"tag", "tag", 1 << 30},
		{"vlan_mode", "vlan-mode", 1<<30 - 1},
		{"vlan_mode", "vlan", 4},
		{"tag", "tags", 0},
		{"trunks", "x", 0},
	}
	for _, c := range cases {
		if got := partialMatch(c.name, c.s); got != c.want {
			t.Errorf("partialMatch(%q, %q) = %d, want %d", c.name, c.s, got, c.want)
		}
	}
}

func TestParseISIDVlan(t *testing.T) {
	if _, _, err := parseISIDVlan([]string{"abc", "1"}); err == nil || err.Error() != "Invalid argument abc" {
		t.Errorf("abc: %v", err)
	}
	if a, b, err := parseISIDVlan([]string{"100", "10x"}); err != nil || a != 100 || b != 10 {
		t.Errorf("100 10x: %d %d %v", a, b, err)
	}
}

// genericCommands are the commands implemented outside this file set; lines using them are
// left out of the differential sessions here (the full sessions run in test/vsctldiff).
func genericCommands() []string {
	return []string{"comment", "get", "list", "find", "set", "add", "remove", "clear", "create", "destroy", "wait-until"}
}

// vswitchOnly keeps the lines of a session whose commands are all vswitch commands.
func vswitchOnly(s vsctldiff.Session) vsctldiff.Session {
	out := vsctldiff.Session{Name: s.Name}
	for _, line := range s.Lines {
		ok := true
		expectCmd := true
		for _, w := range line {
			switch {
			case w == "--":
				expectCmd = true
			case expectCmd && strings.HasPrefix(w, "-"):
			case expectCmd:
				if slices.Contains(genericCommands(), w) {
					ok = false
				}
				expectCmd = false
			}
		}
		if ok {
			out.Lines = append(out.Lines, line)
		}
	}
	return out
}

// TestVSwitchCommandsMatchOvsVsctl runs the vswitch command sessions with ovs-vsctl and with
// vsctl on fresh databases and compares exit statuses, outputs and final databases.
func TestVSwitchCommandsMatchOvsVsctl(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := filepath.Join(t.TempDir(), "vsctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/ovsplane/ovsplane/cmd/vsctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join("..", "..", "..", "test", "vsctldiff", "testdata", "sessions")
	names := []string{"bridges.txt", "ports.txt", "bonds.txt", "fake-bridges.txt",
		"controllers-managers-ssl.txt", "failmode-autoattach-ctzone.txt", "basic.txt",
		"emer-reset-init-show.txt"}
	sessions := []vsctldiff.Session{vswitchSession()}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		s, err := vsctldiff.ParseSession(name, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, vswitchOnly(s))
	}
	if only := os.Getenv("VSCTL_SESSION"); only != "" {
		sessions = slices.DeleteFunc(sessions, func(s vsctldiff.Session) bool { return s.Name != only })
	}
	for _, s := range sessions {
		t.Run(s.Name, func(t *testing.T) {
			ref, cand := vsctldiff.Run(t, "ovs-vsctl", s), vsctldiff.Run(t, bin, s)
			if diffs := vsctldiff.Compare(ref, cand, true); len(diffs) != 0 {
				t.Errorf("vsctl differs from ovs-vsctl in %d places:\n%s", len(diffs), strings.Join(diffs, "\n\n"))
			}
		})
	}
}

// vswitchSession exercises what the shared sessions do not: show, emer-reset, init, several
// commands per invocation, names reused within one invocation.
func vswitchSession() vsctldiff.Session {
	lines := []string{
		"init",
		"show",
		"add-br br0 -- add-port br0 p1 -- add-bond br0 b1 i1 i2 -- add-br vl9 br0 9 -- add-port vl9 q1",
		"add-port br0 p2 tag=5 trunks=1,2 -- add-port br0 'p 3' -- set-controller br0 tcp:127.0.0.1:6653",
		"set-fail-mode br0 secure -- set-manager ptcp:6640",
		"show",
		"list-ports br0 -- list-ifaces br0 -- list-ports vl9 -- list-ifaces vl9",
		"del-port br0 p1 -- add-port br0 p1 -- list-ports br0",
		"del-br br0 -- add-br br0 -- list-ports br0",
		"add-br br1 -- add-port br1 x1 -- --with-iface del-port x1 -- add-port br1 x1 -- list-ifaces br1",
		"--may-exist add-bond br1 b2 j1 j2 -- --may-exist add-bond br1 b2 j2 j1 -- list-ifaces br1",
		"--may-exist add-bond br1 b2 j1 j3",
		"--may-exist add-port br1 'p 4' -- --may-exist add-port br0 'p 4'",
		"add-port br1 e1 other_config:a=b other_config:a=c external-ids:x=y",
		"add-port br1 e2 vlan=4",
		"add-port br1 e3 tag",
		"add-port br1 e4 :x=y",
		"add-port br1 e5 tag:x=1",
		"emer-reset",
		"show",
		"list-br -- --real list-br -- --fake list-br",
		"add-br vl9 br1 9 -- del-br br1 -- list-br",
		"br-exists br1",
		"br-exists br0 -- br-exists vl9",
	}
	s := vsctldiff.Session{Name: "vswitch-extra"}
	for _, l := range lines {
		w, err := vsctldiff.SplitWords(l)
		if err != nil {
			panic(err)
		}
		s.Lines = append(s.Lines, w)
	}
	return s
}
