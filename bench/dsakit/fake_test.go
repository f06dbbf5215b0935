package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeEnv names the state directory of the fake OVS tools; set, the test binary acts as one.
const fakeEnv = "DSAKIT_FAKE_STATE"

// TestMain turns the test binary into a fake ovs-vsctl / ovs-appctl / systemctl / generator when
// fakeEnv is set, so TestRealRunWithFakeTools drives the kit's real executor end to end.
func TestMain(m *testing.M) {
	if dir := os.Getenv(fakeEnv); dir != "" {
		os.Exit(fakeTool(dir, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeTool answers one invocation: args[0] says which tool it plays. It records every call in
// dir/calls, keeps the vhost-async-support value in dir/mode, and prints the recorded samples of
// that mode, alternating before/after for the snapshots.
func fakeTool(dir string, args []string) int {
	appendFile(filepath.Join(dir, "calls"), strings.Join(args, " ")+"\n")
	mode := "off"
	if b, err := os.ReadFile(filepath.Join(dir, "mode")); err == nil {
		mode = string(b)
	}
	sample := func(name string) int {
		b, err := os.ReadFile(filepath.Join("testdata", "samples", mode, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(b)
		return 0
	}
	// phase alternates before/after per kind of snapshot.
	phase := func(kind string) string {
		p := filepath.Join(dir, kind+".n")
		b, _ := os.ReadFile(p)
		n, _ := strconv.Atoi(string(b))
		os.WriteFile(p, []byte(strconv.Itoa(n+1)), 0o644)
		if n%2 == 0 {
			return "before"
		}
		return "after"
	}
	all := strings.Join(args, " ")
	switch {
	case strings.Contains(all, "vhost-async-support=true"):
		os.WriteFile(filepath.Join(dir, "mode"), []byte("on"), 0o644)
	case strings.Contains(all, "vhost-async-support=false"):
		os.WriteFile(filepath.Join(dir, "mode"), []byte("off"), 0o644)
	case slices.Contains(args, "list-commands"):
		return sample("list-commands.txt")
	case slices.Contains(args, "list") && slices.Contains(args, "Interface"):
		return sample("stats-" + phase("stats") + ".json")
	case slices.Contains(args, "coverage/show"):
		return sample("coverage-" + phase("coverage") + ".txt")
	case slices.Contains(args, "dpif-netdev/pmd-stats-show"):
		return sample("pmd-stats-show.txt")
	}
	return 0
}

func appendFile(p, s string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		f.WriteString(s)
		f.Close()
	}
}

// TestRealRunWithFakeTools runs one scenario and one size through the real executor with the
// test binary standing in for every tool: argv reach the programs unchanged, outputs are parsed
// from real processes, the background generator is waited for, and the report has both modes.
func TestRealRunWithFakeTools(t *testing.T) {
	state := t.TempDir()
	t.Setenv(fakeEnv, state)
	devDSA := t.TempDir()
	if err := os.WriteFile(filepath.Join(devDSA, "wq0.0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Vsctl: []string{self, "vsctl"}, Appctl: []string{self, "appctl"}, Restart: []string{self, "restart"},
		DevDSA: devDSA, Sizes: []int{1518},
		Scenarios: []Scenario{{Name: "PVP", Setup: [][]string{{self, "setup", "vm 1"}},
			Traffic: []string{self, "traffic", "--size={size}", "{seconds}"}, Measure: []string{"dpdk0"},
			Teardown: [][]string{{self, "teardown"}}}}}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	var plan bytes.Buffer
	k := &kit{cfg: cfg, ex: execRunner{}, plan: &plan, second: time.Millisecond}
	ms, err := k.Run(t.Context())
	if err != nil {
		t.Fatalf("%v\n%s", err, plan.String())
	}
	if len(ms) != 2 || ms[0].Mode != DSAOff || ms[1].Mode != DSAOn || ms[1].Packets != 63000000 || ms[1].AsyncOps == 0 {
		t.Fatalf("measurements = %+v", ms)
	}
	calls, err := os.ReadFile(filepath.Join(state, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"setup vm 1\n", "traffic --size=1518 5\n", "appctl netdev-dpdk/set-vhost-async-thresh 128\n", "teardown\n"} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("no call %q among:\n%s", want, calls)
		}
	}
	var out bytes.Buffer
	if err := writeReport(&out, reportInfo{Config: cfg, When: "Run of test", Command: "make dsa-kit"}, ms); err != nil {
		t.Fatal(err)
	}
	// The windows are timed with the real clock, so the rates are not asserted, only present.
	if !strings.Contains(out.String(), "| PVP | 1518 |") || !strings.Contains(out.String(), "× |") {
		t.Errorf("report:\n%s", out.String())
	}
}
