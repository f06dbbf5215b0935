package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenEnv set to 1 rewrites testdata/dryrun.golden.md from the dry run's output.
const goldenEnv = "DSAKIT_UPDATE_GOLDEN"

// dryRun runs the command like `make dsa-kit-dryrun` with the given samples directory.
func dryRun(t *testing.T, samples string) (code int, report, plan string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code = run([]string{"--dry-run", "--samples", samples, "--config", "testdata/kit.json"}, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// copySamples copies testdata/samples to a temporary directory a test may change.
func copySamples(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	for _, mode := range []string{"off", "on"} {
		ents, err := os.ReadDir(filepath.Join("testdata/samples", mode))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dst, mode), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("testdata/samples", mode, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, mode, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

// TestDryRunGolden runs the whole matrix from the recorded samples: every step is planned, every
// output parsed, and the report matches testdata/dryrun.golden.md.
func TestDryRunGolden(t *testing.T) {
	code, report, plan := dryRun(t, "testdata/samples")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, plan)
	}
	// 2 scenarios × 2 modes × 7 sizes, each with its own generator run and measurement.
	kinds := map[string]int{}
	for line := range strings.SplitSeq(plan, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.Trim(f[0], "0123456789") == "" {
			kinds[f[1]]++
		}
	}
	for kind, want := range map[string]int{"traffic": 28, "pmd-stats": 28, "stats": 56, "restart": 4,
		"set-thresh": 2, "check-dsa": 2, "setup": 10, "teardown": 6} {
		if kinds[kind] != want {
			t.Errorf("plan has %d %q steps, want %d", kinds[kind], kind, want)
		}
	}
	for _, want := range []string{
		`["ovs-vsctl","--timeout=30","set","Open_vSwitch",".","other_config:vhost-async-support=true"]`,
		`["ovs-appctl","--timeout=30","netdev-dpdk/set-vhost-async-thresh","128"]`,
		`["/usr/local/libexec/dsakit/trex-run","--port","0","--frame-size","9000","--duration","40","--rate","100%"]`,
		`["/usr/local/libexec/dsakit/guest-txonly","dsakit-vm1","1518","40"]`,
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %s", want)
		}
	}
	golden := filepath.Join("testdata", "dryrun.golden.md")
	if os.Getenv(goldenEnv) == "1" {
		if err := os.WriteFile(golden, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with %s=1 to create it)", err, goldenEnv)
	}
	if report != string(want) {
		t.Errorf("report differs from %s (run with %s=1 to accept):\n%s", golden, goldenEnv, report)
	}
	if !strings.Contains(report, "| PVP | 1518 | 2.00 / 2.10 | 16.00 / 16.80 | 80.0 / 68.0 | 2000 / 1619 | 126000000 | 1.050× |  |") {
		t.Errorf("report lacks the computed PVP 1518 B row:\n%s", report)
	}
}

// TestDryRunRefusesStockOVS: with the list-commands of this machine's OVS 3.1 (no vhost async)
// the DSA-on half stops with OVS_NO_VHOST_ASYNC and the report says so, keeping the off rows.
func TestDryRunRefusesStockOVS(t *testing.T) {
	dir := copySamples(t)
	stock, err := os.ReadFile("testdata/stock-list-commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "on", "list-commands.txt"), stock, 0o644); err != nil {
		t.Fatal(err)
	}
	code, report, plan := dryRun(t, dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(plan, "OVS_NO_VHOST_ASYNC") || !strings.Contains(report, "**The run stopped early:** dsakit: OVS_NO_VHOST_ASYNC") {
		t.Errorf("no OVS_NO_VHOST_ASYNC stop:\n%s\n%s", report, plan)
	}
	if !strings.Contains(report, "| PVP | 64 | 2.00 / – | 16.00 / – |") || strings.Contains(report, "VM-to-VM same node | 64") {
		t.Errorf("want the PVP off rows only:\n%s", report)
	}
	if strings.Contains(plan, "set-thresh") {
		t.Errorf("threshold set on a build without vhost async:\n%s", plan)
	}
}

// TestDryRunFlagsDSAUnused: when the vhost_async counters do not move in the on window, the
// rows say DSA was unused instead of crediting it with the difference.
func TestDryRunFlagsDSAUnused(t *testing.T) {
	dir := copySamples(t)
	before, err := os.ReadFile(filepath.Join(dir, "on", "coverage-before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "on", "coverage-after.txt"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	code, report, plan := dryRun(t, dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, plan)
	}
	if got := strings.Count(report, "**DSA unused**"); got != 14 {
		t.Errorf("%d rows flag DSA unused, want 14:\n%s", got, report)
	}
}

// TestDryRunNoTraffic: counters that do not grow stop the run with a message naming the interface.
func TestDryRunNoTraffic(t *testing.T) {
	dir := copySamples(t)
	before, err := os.ReadFile(filepath.Join(dir, "off", "stats-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "off", "stats-after.json"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, plan := dryRun(t, dir)
	if code != 1 || !strings.Contains(plan, "no packets left through dpdk0") {
		t.Errorf("exit %d, want 1 naming dpdk0:\n%s", code, plan)
	}
	// The teardown still ran after the failure.
	if !strings.Contains(plan, `["virsh","shutdown","dsakit-vm1"]`) {
		t.Errorf("no teardown after the failure:\n%s", plan)
	}
}

func TestParseRealOVS31Outputs(t *testing.T) {
	b, err := os.ReadFile("testdata/stock-stats.json")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := parseInterfaceStats(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stats["vhu1"]; !ok || len(stats) != 3 {
		t.Errorf("stats = %v, want br0, vhu1, vhu2", stats)
	}
	b, err = os.ReadFile("testdata/stock-pmd-stats-show.txt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePMDStats(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if p.PMDs != 1 || p.Idle == 0 || p.Busy != 0 || p.BusyPct() != 0 || p.CyclesPerPacket() != 0 {
		t.Errorf("pmd-stats-show = %+v", p)
	}
	b, err = os.ReadFile("testdata/stock-list-commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	if hasCommand(string(b), asyncThreshCommand) || !hasCommand(string(b), "dpif-netdev/pmd-stats-show") {
		t.Error("hasCommand misreads OVS 3.1's list-commands")
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"", `{"headings":["name"],"data":[]}`,
		`{"headings":["name","statistics"],"data":[["p0",["set",[]]]]}`,
		`{"headings":["name","statistics"],"data":[["p0",["map",[["tx_packets","x"]]]]]}`} {
		if _, err := parseInterfaceStats(bad); err == nil {
			t.Errorf("parseInterfaceStats(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "main thread:\n  packets received: 0\n",
		"pmd thread numa_id 0 core_id 1:\n  packets received: 5\n  idle cycles: 10 (50%)\n",
		"pmd thread numa_id 0 core_id 1:\n  idle cycles: x (50%)\n  processing cycles: 1 (1%)\n"} {
		if _, err := parsePMDStats(bad); err == nil {
			t.Errorf("parsePMDStats(%q) accepted", bad)
		}
	}
	if n, err := parseCoverageTotal("vhost_async_x 1.0/sec 0.0/sec 0.0/sec   total: 7\nother 0/sec total: 9\nvhost_async_y 0/sec total: 3\n", "vhost_async"); err != nil || n != 10 {
		t.Errorf("parseCoverageTotal = %d, %v, want 10", n, err)
	}
	if _, err := parseCoverageTotal("vhost_async_x 1.0/sec total: -1\n", "vhost_async"); err == nil {
		t.Error("parseCoverageTotal accepted a negative total")
	}
}

func TestConfigRejects(t *testing.T) {
	good, err := os.ReadFile("testdata/kit.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(bytes.NewReader(good)); err != nil {
		t.Fatalf("testdata/kit.json: %v", err)
	}
	cases := map[string]struct{ from, to, want string }{
		"shell":        {`["systemctl", "restart", "openvswitch-switch"]`, `["/bin/sh", "-c", "systemctl restart openvswitch-switch"]`, "not a shell"},
		"no size":      {`"--frame-size", "{size}"`, `"--frame-size", "64"`, "no {size}"},
		"tiny frame":   {`[64, 128,`, `[32, 128,`, "sizes: 32"},
		"unknown key":  {`"warmupS": 5`, `"warmup": 5`, "unknown field"},
		"no measure":   {`"measure": ["dpdk0"]`, `"measure": []`, "measure"},
		"short window": {`"durationS": 30`, `"durationS": 1`, "durationS"},
		"dup scenario": {`"name": "VM-to-VM same node"`, `"name": "PVP"`, "used twice"},
	}
	for name, c := range cases {
		in := strings.Replace(string(good), c.from, c.to, 1)
		if in == string(good) {
			t.Fatalf("%s: %q not in testdata/kit.json", name, c.from)
		}
		if _, err := LoadConfig(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: LoadConfig error = %v, want %q", name, err, c.want)
		}
	}
	if _, err := LoadConfig(strings.NewReader(strings.Repeat(" ", maxConfigBytes+1))); err == nil {
		t.Error("oversized config accepted")
	}
}

// TestExecRunner runs real programs: output captured, failures reported with the program.
func TestExecRunner(t *testing.T) {
	var ex execRunner
	out, err := ex.Run(t.Context(), step{Argv: []string{"echo", "a b", "c"}}, cmdTimeout)
	if err != nil || out != "a b c\n" {
		t.Errorf("Run echo = %q, %v", out, err)
	}
	if _, err := ex.Run(t.Context(), step{Argv: []string{"false"}}, cmdTimeout); err == nil || !strings.Contains(err.Error(), "false") {
		t.Errorf("Run false: %v", err)
	}
	wait, err := ex.Start(t.Context(), step{Argv: []string{"false"}}, cmdTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil {
		t.Error("Start false: wait returned nil")
	}
	names, err := ex.ListDir("testdata/samples")
	if err != nil || strings.Join(names, ",") != "README.md,off,on" {
		t.Errorf("ListDir = %v, %v", names, err)
	}
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{}, {"--dry-run", "--config", "testdata/kit.json"}, {"--config", "testdata/kit.json", "extra"}} {
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}
