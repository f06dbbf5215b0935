//go:build linux

package vsctl

import (
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

func TestParseISIDVlan(t *testing.T) {
	if _, _, err := parseISIDVlan([]string{"abc", "1"}); err == nil || err.Error() != "Invalid argument abc" {
		t.Errorf("abc: %v", err)
	}
	if a, b, err := parseISIDVlan([]string{"100", "10x"}); err != nil || a != 100 || b != 10 {
		t.Errorf("100 10x: %d %d %v", a, b, err)
	}
}

// TestVSwitchCommandsMatchOvsVsctl runs a vswitch session with ovs-vsctl and with vsctl on
// fresh databases and compares exit statuses, outputs and final databases.
func TestVSwitchCommandsMatchOvsVsctl(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := filepath.Join(t.TempDir(), "vsctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/ovsplane/ovsplane/cmd/vsctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The shared session files run in test/vsctldiff; this session adds what they avoid:
	// show over several ports. ovs-vsctl prints a bridge's ports in UUID order, which differs
	// between runs, so show's lines are compared as a multiset.
	s := vswitchSession()
	ref, cand := vsctldiff.Run(t, "ovs-vsctl", s), vsctldiff.Run(t, bin, s)
	for _, o := range []*vsctldiff.Outcome{ref, cand} {
		for i := range o.Steps {
			if len(o.Steps[i].Args) > 0 && o.Steps[i].Args[len(o.Steps[i].Args)-1] == "show" {
				lines := strings.Split(o.Steps[i].Stdout, "\n")
				slices.Sort(lines)
				o.Steps[i].Stdout = strings.Join(lines, "\n")
			}
		}
	}
	if diffs := vsctldiff.Compare(ref, cand, true); len(diffs) != 0 {
		t.Errorf("vsctl differs from ovs-vsctl in %d places:\n%s", len(diffs), strings.Join(diffs, "\n\n"))
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
