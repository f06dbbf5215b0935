//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// vsctl against ovs-vsctl, one process per command, the way scripts call them (issue 3).
//
// Each bridge size gets one fresh ovsdb-server whose bridge br0 holds N ports p0…p(N-1) (written
// with raw OVSDB transactions, not ovs-vsctl, which would take minutes at 20,000). Each cell runs
// one command a fixed number of times per tool, alternating which tool goes first in each pair so
// that drift (the machine warming up or getting busy) hits both alike, and times each invocation
// from fork to exit. A first, untimed pair warms the caches up and measures each tool's peak RSS
// (see vsctl_rss_test.go). After every pair, outside the timing, the harness checks what the
// tools did — both printed the same, the right port was added or deleted — and puts the database
// back to N ports: a port added is removed, a port deleted is added again, a value set is set
// back. Every port carries the external_ids an OpenStack-style agent writes (Interface:
// iface-id, attached-mac, iface-status, vm-uuid; Port: iface-id, vm-uuid, see portExternalIDs),
// so that finds and listings scan real data. Metrics per cell:
//
//	ovs-vsctl-median-ms, vsctl-median-ms
//	                               median wall time of one invocation
//	vsctl/ovs-vsctl                ratio of the two medians (below 1: vsctl is faster)
//	ovs-vsctl-cpu-ms/op, vsctl-cpu-ms/op
//	                               median CPU time of one invocation: the tool's own plus what
//	                               ovsdb-server spent meanwhile (ovs-vswitchd's is left out)
//	ovs-vsctl-maxrss-KiB, vsctl-maxrss-KiB
//	                               peak RSS of one invocation (ru_maxrss of the child)
//
// On a busy machine the wall times grow with the load while the CPU times hardly move; compare
// tools within one run. ns/op is of no interest: it includes the untimed pair, checks and
// restores.
//
// BenchmarkVsctl runs every command with --no-wait and no ovs-vswitchd: the OVSDB side alone.
// BenchmarkVsctlWait runs add-port and del-port in their default form, waiting until a running
// ovs-vswitchd (dummy datapath) has applied the change; vswitchd's reconfiguration, which grows
// with the bridge, is part of both tools' time there.
//
// The vsctl under test is ./cmd/vsctl, built with `go build` at the start. The environment
// variable VSCTL_BIN (a path, or a name looked up in $PATH) benchmarks that binary instead;
// VSCTL_BIN=/usr/bin/ovs-vsctl checks the harness end to end (every ratio then comes out ≈1).
//
// With -benchtime 1x (as `make bench` runs) each cell times vsctlSize.reps invocations per tool;
// -benchtime Kx times K times as many. A single size or command is picked as usual, e.g.
// -bench 'Vsctl/ports=5000$/get$'. VSCTL_BENCH_WAIT_5000=1 adds 5,000 ports to the waiting forms.
//
// `make bench-vsctl` runs both benchmarks and rewrites the tables of docs/benchmarks.md from
// their output (scripts/bench-vsctl-table.py).

// vsctlBinEnv names the environment variable that replaces the vsctl built from ./cmd/vsctl.
const vsctlBinEnv = "VSCTL_BIN"

// vsctlInvocationTimeout kills one invocation of either tool that hangs.
const vsctlInvocationTimeout = 2 * time.Minute

// vsctlSize is one bridge size and the number of timed invocations per tool in each of its cells
// at -benchtime 1x.
type vsctlSize struct{ ports, reps int }

// vsctlNoWaitSizes: one ovs-vsctl invocation costs 1–2 s of CPU at 20,000 ports (3–9 s of wall
// time on a busy 2-vCPU machine); BenchmarkVsctl takes about 10 minutes with
// VSCTL_BIN=ovs-vsctl on one, half that when vsctl is fast.
var vsctlNoWaitSizes = []vsctlSize{{100, 15}, {1000, 9}, {5000, 7}, {20000, 5}}

// vsctlWaitSizes: ovs-vswitchd (dummy datapath) reconfigures the whole bridge on every change,
// ≈0.5 s at 1,000 ports. At 5,000 ports a waiting add-port or del-port takes 10–20 s on a quiet
// machine (over a minute on a loaded one, and ovs-vswitchd needs about 2 minutes to start), so
// that size runs only when the environment variable vsctlWaitBigEnv is set to 1; 20,000 ports
// would take hours.
var vsctlWaitSizes = []vsctlSize{{100, 10}, {1000, 10}}

// vsctlWaitBigEnv adds 5,000 ports (3 pairs per cell) to BenchmarkVsctlWait when set to 1.
const vsctlWaitBigEnv = "VSCTL_BENCH_WAIT_5000"

// BenchmarkVsctl compares vsctl with ovs-vsctl, both with --no-wait and without ovs-vswitchd, on
// bridges of 100 to 20,000 ports.
func BenchmarkVsctl(b *testing.B) {
	lab.Require(b, lab.NeedOVS)
	tools, launcher := vsctlTools(b)
	for _, size := range vsctlNoWaitSizes {
		b.Run(fmt.Sprintf("ports=%d", size.ports), func(b *testing.B) {
			l := newVsctlLab(b, tools, launcher, size.ports, false)
			for _, c := range l.noWaitCommands() {
				b.Run(c.name, func(b *testing.B) { l.runCell(b, c, size.reps*b.N) })
			}
		})
	}
}

// BenchmarkVsctlWait compares the waiting forms of add-port and del-port: a running ovs-vswitchd
// with the dummy datapath, and each tool returns once it has applied the change.
func BenchmarkVsctlWait(b *testing.B) {
	lab.Require(b, lab.NeedOVS)
	tools, launcher := vsctlTools(b)
	sizes := vsctlWaitSizes
	if os.Getenv(vsctlWaitBigEnv) == "1" {
		sizes = append(sizes[:len(sizes):len(sizes)], vsctlSize{5000, 3})
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("ports=%d", size.ports), func(b *testing.B) {
			l := newVsctlLab(b, tools, launcher, size.ports, true)
			for _, c := range l.writeCommands() {
				b.Run(c.name, func(b *testing.B) { l.runCell(b, c, size.reps*b.N) })
			}
		})
	}
}

// vsctlTool is one of the two programs compared; name prefixes its metrics.
type vsctlTool struct{ name, path string }

// vsctlTools returns ovs-vsctl and the vsctl under test ($VSCTL_BIN, or ./cmd/vsctl built into a
// temporary directory), and the RSS launcher.
func vsctlTools(b *testing.B) (tools [2]vsctlTool, launcher string) {
	b.Helper()
	ref, err := exec.LookPath("ovs-vsctl")
	if err != nil {
		b.Fatal(err)
	}
	cand := os.Getenv(vsctlBinEnv)
	if cand != "" {
		if cand, err = exec.LookPath(cand); err != nil {
			b.Fatalf("%s: %v", vsctlBinEnv, err)
		}
		b.Logf("benchmarking %s=%s against %s", vsctlBinEnv, cand, ref)
	} else {
		cand = buildVsctlForBench(b)
	}
	return [2]vsctlTool{{"ovs-vsctl", ref}, {"vsctl", cand}}, buildRSSLauncher(b)
}

// buildVsctlForBench builds ./cmd/vsctl of this module into b's temporary directory.
func buildVsctlForBench(b *testing.B) string {
	b.Helper()
	root, err := benchModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "vsctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/vsctl")
	cmd.Dir = root
	// Built as `make build` builds it: static (no cgo), which starts ~3 ms faster.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		hint := fmt.Sprintf("(set %s to benchmark another binary, e.g. %s=/usr/bin/ovs-vsctl to check the harness)", vsctlBinEnv, vsctlBinEnv)
		if _, statErr := os.Stat(filepath.Join(root, "cmd", "vsctl")); errors.Is(statErr, os.ErrNotExist) {
			b.Fatalf("nothing to benchmark: %s/cmd/vsctl does not exist yet (go build: %v)\n%s", root, err, hint)
		}
		b.Fatalf("cannot build the vsctl under test: `go build ./cmd/vsctl` in %s failed: %v\n%s\n%s", root, err, out, hint)
	}
	return bin
}

// benchModuleRoot walks up from the working directory to the directory holding go.mod.
func benchModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the benchmark's working directory")
		}
		dir = parent
	}
}

// vsctlLab is an ovsdb-server whose br0 holds ports p0…p(n-1), with an ovs-vswitchd when wait.
type vsctlLab struct {
	db       *lab.OVSDB
	raw      rawOVSDB
	tools    [2]vsctlTool
	launcher string // the RSS launcher
	rssFile  string // where it writes
	n        int
	wait     bool
	fresh    int // names new-0, new-1… handed out to add-port so far
}

func newVsctlLab(b *testing.B, tools [2]vsctlTool, launcher string, n int, wait bool) *vsctlLab {
	b.Helper()
	start := time.Now()
	db := lab.StartOVSDB(b)
	db.Vsctl(b, "--no-wait", "add-br", "br0")
	l := &vsctlLab{db: db, raw: rawOVSDB{sock: db.Sock}, tools: tools, launcher: launcher,
		rssFile: filepath.Join(b.TempDir(), "maxrss"), n: n, wait: wait}
	names := make([]string, n)
	for i := range names {
		names[i] = l.port(i)
	}
	for chunk := range slices.Chunk(names, 2000) {
		if err := l.raw.addPorts(chunk, false); err != nil {
			b.Fatalf("populate br0: %v", err)
		}
	}
	l.checkPortCount(b)
	if wait {
		db.StartOVSVswitchd(b, lab.OVSVswitchdSpec{Mode: lab.Dummy, StartTimeout: 5 * time.Minute})
	}
	b.Logf("br0 with %d ports ready in %.1f s", n, time.Since(start).Seconds())
	return l
}

// port returns the name of existing port k.
func (l *vsctlLab) port(k int) string { return "p" + strconv.Itoa(k) }

// spread returns the existing port to use for invocation j: distinct for the first n
// invocations and scattered over the bridge (7919 is prime, so coprime to the sizes).
func (l *vsctlLab) spread(j int) string { return l.port(j * 7919 % l.n) }

// vsctlCommand is one cell: args gives the command of tool t (0 ovs-vsctl, 1 vsctl) in pair i,
// and check, run after each pair outside the timing, verifies the outputs and the database and
// restores the bridge to its n ports.
type vsctlCommand struct {
	name  string
	args  func(i, t int) []string
	check func(b *testing.B, args [2][]string, out [2]vsctlRun)
}

// noWaitCommands are the cells of BenchmarkVsctl.
func (l *vsctlLab) noWaitCommands() []vsctlCommand {
	return append([]vsctlCommand{
		{"get", func(i, t int) []string { return []string{"get", "Interface", l.spread(i), "ofport"} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if got := strings.TrimSpace(out[0].stdout); got != "[]" {
					b.Fatalf("ovs-vsctl %s printed %q, want [] (no ovs-vswitchd)", strings.Join(args[0], " "), got)
				}
			}},
		{"list-ports", func(i, t int) []string { return []string{"list-ports", "br0"} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if got := len(strings.Fields(out[0].stdout)); got != l.n {
					b.Fatalf("ovs-vsctl list-ports br0 printed %d names, want %d", got, l.n)
				}
			}},
		{"port-to-br", func(i, t int) []string { return []string{"port-to-br", l.spread(i)} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if got := strings.TrimSpace(out[0].stdout); got != "br0" {
					b.Fatalf("ovs-vsctl %s printed %q, want br0", strings.Join(args[0], " "), got)
				}
			}},
		{"show", func(i, t int) []string { return []string{"show"} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if got := strings.Count(out[0].stdout, "\n        Port "); got != l.n+1 { // and br0's internal port
					b.Fatalf("ovs-vsctl show printed %d ports, want %d", got, l.n+1)
				}
			}},
		{"find", func(i, t int) []string { return []string{"find", "Interface", "name=" + l.spread(i)} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if !strings.Contains(out[0].stdout, `name                : `+args[0][2][len("name="):]+"\n") {
					b.Fatalf("ovs-vsctl %s printed no such interface:\n%s", strings.Join(args[0], " "), out[0].stdout)
				}
			}},
		{"iface-to-br", func(i, t int) []string { return []string{"iface-to-br", l.spread(i)} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out)
				if got := strings.TrimSpace(out[0].stdout); got != "br0" {
					b.Fatalf("ovs-vsctl %s printed %q, want br0", strings.Join(args[0], " "), got)
				}
			}},
		{"find-iface-id", func(i, t int) []string {
			return []string{"find", "Interface", "external_ids:iface-id=" + portExternalIDs(l.spread(i))["iface-id"]}
		}, l.findsOne("name                : ")},
		{"find-port-vm", func(i, t int) []string {
			return []string{"find", "Port", "external_ids:vm-uuid=" + portExternalIDs(l.spread(i))["vm-uuid"]}
		}, l.findsOne("name                : ")},
		{"list-columns", func(i, t int) []string {
			return []string{"--columns=name,ofport,external_ids", "list", "Interface"}
		}, func(b *testing.B, args [2][]string, out [2]vsctlRun) {
			l.sameOutput(b, args, out)
			if got := strings.Count(out[0].stdout, "\nexternal_ids "); got != l.n+1 {
				b.Fatalf("ovs-vsctl %s printed %d interfaces, want %d", strings.Join(args[0], " "), got, l.n+1)
			}
		}},
		{"set", func(i, t int) []string {
			return []string{"set", "Interface", l.spread(2*i + t), "external_ids:iface-status=inactive"}
		}, func(b *testing.B, args [2][]string, out [2]vsctlRun) {
			l.sameOutput(b, args, out) // both print nothing
			names := []string{args[0][2], args[1][2]}
			if err := l.raw.checkExternalID(names, "iface-status", "inactive"); err != nil {
				b.Fatalf("after set: %v", err)
			}
			if err := l.raw.setExternalID(names, "iface-status", "active"); err != nil {
				b.Fatalf("restore after set: %v", err)
			}
		}},
	}, l.writeCommands()...)
}

// findsOne checks a find that must print exactly one record: the same for both tools, and one
// line starting with field.
func (l *vsctlLab) findsOne(field string) func(b *testing.B, args [2][]string, out [2]vsctlRun) {
	return func(b *testing.B, args [2][]string, out [2]vsctlRun) {
		l.sameOutput(b, args, out)
		if got := strings.Count("\n"+out[0].stdout, "\n"+field); got != 1 {
			b.Fatalf("ovs-vsctl %s printed %d records, want 1:\n%s", strings.Join(args[0], " "), got, out[0].stdout)
		}
	}
}

// writeCommands are add-port and del-port, the cells of both benchmarks.
func (l *vsctlLab) writeCommands() []vsctlCommand {
	return []vsctlCommand{
		{"add-port", func(i, t int) []string {
			l.fresh++
			return []string{"add-port", "br0", "new-" + strconv.Itoa(l.fresh-1)}
		}, func(b *testing.B, args [2][]string, out [2]vsctlRun) {
			l.sameOutput(b, args, out) // both print nothing
			names := []string{args[0][2], args[1][2]}
			if err := l.raw.checkPorts(names, l.wait); err != nil {
				b.Fatalf("after add-port: %v", err)
			}
			if err := l.raw.delPorts(names, l.wait); err != nil {
				b.Fatalf("restore after add-port: %v", err)
			}
		}},
		{"del-port", func(i, t int) []string { return []string{"del-port", "br0", l.spread(2*i + t)} },
			func(b *testing.B, args [2][]string, out [2]vsctlRun) {
				l.sameOutput(b, args, out) // both print nothing
				names := []string{args[0][2], args[1][2]}
				if err := l.raw.checkGone(names); err != nil {
					b.Fatalf("after del-port: %v", err)
				}
				if err := l.raw.addPorts(names, l.wait); err != nil {
					b.Fatalf("restore after del-port: %v", err)
				}
			}},
	}
}

// vsctlRun is what one invocation printed and cost.
type vsctlRun struct {
	stdout, stderr string
	wall           time.Duration
	cpu            time.Duration // the tool's and ovsdb-server's
	maxRSS         int64         // KiB
}

// sameOutput fails b unless both tools printed the same stdout; args are for the message.
func (l *vsctlLab) sameOutput(b *testing.B, args [2][]string, out [2]vsctlRun) {
	b.Helper()
	if out[0].stdout == out[1].stdout {
		return
	}
	a, c := strings.Split(out[0].stdout, "\n"), strings.Split(out[1].stdout, "\n")
	line := 0
	for line < min(len(a), len(c)) && a[line] == c[line] {
		line++
	}
	at := func(s []string) string {
		if line < len(s) {
			return strconv.Quote(s[line])
		}
		return "end of output"
	}
	b.Fatalf("%s `%s` printed something else than ovs-vsctl `%s` (%d and %d bytes); first difference at line %d:\n  ovs-vsctl: %s\n  %s: %s",
		l.tools[1].name, strings.Join(args[1], " "), strings.Join(args[0], " "), len(out[0].stdout), len(out[1].stdout),
		line+1, at(a), l.tools[1].name, at(c))
}

// runCell runs an untimed pair of invocations of c through the RSS launcher, then times reps
// pairs, and reports the metrics.
func (l *vsctlLab) runCell(b *testing.B, c vsctlCommand, reps int) {
	var wall, cpu [2][]time.Duration
	var maxRSS [2]int64
	for i := range reps + 1 {
		var args [2][]string
		var out [2]vsctlRun
		for k := range 2 {
			t := (i + k) % 2 // even pairs start with ovs-vsctl, odd ones with vsctl
			args[t] = c.args(i, t)
			out[t] = l.run(b, l.tools[t], args[t], i == 0)
			if i == 0 {
				maxRSS[t] = out[t].maxRSS
			} else {
				wall[t] = append(wall[t], out[t].wall)
				cpu[t] = append(cpu[t], out[t].cpu)
			}
		}
		c.check(b, args, out)
	}
	ms := func(d []time.Duration) float64 { return float64(medianDuration(d).Microseconds()) / 1000 }
	b.ReportMetric(ms(wall[0]), "ovs-vsctl-median-ms")
	b.ReportMetric(ms(wall[1]), "vsctl-median-ms")
	b.ReportMetric(ms(wall[1])/ms(wall[0]), "vsctl/ovs-vsctl")
	b.ReportMetric(ms(cpu[0]), "ovs-vsctl-cpu-ms/op")
	b.ReportMetric(ms(cpu[1]), "vsctl-cpu-ms/op")
	b.ReportMetric(float64(maxRSS[0]), "ovs-vsctl-maxrss-KiB")
	b.ReportMetric(float64(maxRSS[1]), "vsctl-maxrss-KiB")
	l.checkPortCount(b)
}

// medianDuration returns the median of d (the mean of the middle two for an even count), 0 for none.
func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// run runs one invocation of tool against the lab's database and fails b when it exits
// non-zero. With rss it runs it through the RSS launcher to measure its peak RSS (its wall time
// then includes the launcher's). With wait it also checks that the tool waited: next_cfg went
// up and ovs-vswitchd's cur_cfg had caught up when the tool exited.
func (l *vsctlLab) run(b *testing.B, tool vsctlTool, args []string, rss bool) vsctlRun {
	b.Helper()
	full := []string{"--db=" + l.db.Endpoint}
	if !l.wait {
		full = append(full, "--no-wait")
	}
	full = append(full, args...)
	var before int64
	if l.wait {
		var err error
		if before, _, err = l.raw.cfg(); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), vsctlInvocationTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool.path, full...)
	if rss {
		cmd = exec.CommandContext(ctx, l.launcher, append([]string{l.rssFile, tool.path}, full...)...)
	}
	cmd.Env = append(os.Environ(), l.db.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	server := l.db.PID()
	serverCPU := processCPU(server)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	serverCPU = processCPU(server) - serverCPU
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", tool.name, strings.Join(full, " "), err, stderr.String())
	}
	r := vsctlRun{stdout: stdout.String(), stderr: stderr.String(), wall: wall,
		cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() + serverCPU}
	if rss {
		data, err := os.ReadFile(l.rssFile)
		if err == nil {
			r.maxRSS, err = strconv.ParseInt(string(data), 10, 64)
		}
		if err != nil {
			b.Fatalf("peak RSS of %s: %v", tool.name, err)
		}
		if err := os.Remove(l.rssFile); err != nil {
			b.Fatal(err)
		}
	}
	if l.wait {
		next, cur, err := l.raw.cfg()
		if err != nil {
			b.Fatal(err)
		}
		if next <= before || cur < next {
			b.Fatalf("%s %s returned before ovs-vswitchd applied its change: next_cfg %d → %d, cur_cfg %d",
				tool.name, strings.Join(args, " "), before, next, cur)
		}
	}
	return r
}

// checkPortCount fails b unless br0 holds exactly the lab's n ports (plus its internal port).
func (l *vsctlLab) checkPortCount(b *testing.B) {
	b.Helper()
	got, err := l.raw.portCount("br0")
	if err != nil {
		b.Fatal(err)
	}
	if got != l.n+1 {
		b.Fatalf("br0 has %d ports, want %d and br0 itself", got, l.n)
	}
}

// processCPU returns the CPU time all threads of process pid have used so far, from the
// scheduler's nanosecond account (/proc/PID/task/TID/schedstat), or 0 when it cannot be read.
func processCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	var total time.Duration
	for _, path := range tasks {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}
