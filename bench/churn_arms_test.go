//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// The arms of BenchmarkChurn (see churn_test.go), one churnArmFunc each.

// churnDefaultPhaseTimeout bounds one phase of one arm (every request in it, ovs-vsctl processes
// included) unless OVSPLANE_CHURN_PHASE_TIMEOUT says otherwise. At 2,000 ports and 50 clients
// the per-port ovs-vsctl arm needs more (see docs/benchmarks.md); the others take seconds to
// minutes.
const churnDefaultPhaseTimeout = 30 * time.Minute

// churnPython is the interpreter with python3-ovsdbapp: Debian's, by path, since a python3 found
// earlier in $PATH (pyenv, a virtualenv) usually lacks the distribution's packages.
const churnPython = "/usr/bin/python3"

// churnFloor is the floor: no clients and no daemon, just package ovsdb committing e.clients
// ports per transaction, one transaction after the other, each waiting for ovs-vswitchd (cur_cfg)
// and returning the ports' ofports. A port's latency is its transaction's commit time.
func churnFloor(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.phaseTimeout)
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{e.db.Endpoint}, AttachToForeignBridges: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	var t churnTiming
	start := time.Now()
	for chunk := range slices.Chunk(e.names, e.clients) {
		t0 := time.Now()
		tx := c.NewTxn(1)
		for _, name := range chunk {
			if phase == churnCreate {
				tx.EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: name,
					Interfaces: []model.Interface{{Name: name, Type: e.ifaceType(), Options: e.ifaceOptions(name)}}}})
			} else {
				tx.DeletePort("br0", name)
			}
		}
		pending, err := tx.CommitPending(ctx, ovsdb.CommitOptions{ApplyTimeout: e.phaseTimeout})
		if err != nil {
			tb.Fatalf("floor %s %s…: %v", phase, chunk[0], err)
		}
		t1 := time.Now()
		res, err := pending.Wait(ctx)
		if err != nil {
			tb.Fatalf("floor %s %s…: %v", phase, chunk[0], err)
		}
		t.commit += t1.Sub(t0)
		t.ack += time.Since(t1)
		if phase == churnCreate {
			if len(res.Interfaces) != len(chunk) {
				tb.Fatalf("floor create %s…: %d interfaces acknowledged, want %d", chunk[0], len(res.Interfaces), len(chunk))
			}
			for _, st := range res.Interfaces {
				if st.Ofport < 1 || st.Error != "" {
					tb.Fatalf("floor create: interface %s: ofport %d, error %q", st.Name, st.Ofport, st.Error)
				}
			}
		}
		d := time.Since(t0)
		for range chunk {
			t.lat = append(t.lat, d)
		}
		t.batches = append(t.batches, len(chunk))
	}
	t.wall = time.Since(start)
	return t
}

// churnOvsplaned is the arm the benchmark exists for: e.clients concurrent clients of the
// ovsplaned API (the real binary, on a unix socket), each asking for one port (type internal on
// br0) and getting its ofport in the reply, then deleting it. The daemon starts with the create
// phase, outside the timing but inside the phase's transaction count (its first pass creates
// br0, which it must own: ovs-vsctl's br0 is removed first), and serves both phases. Batch sizes
// come from the daemon's debug log (one "batch committed" line per OVSDB transaction).
func churnOvsplaned(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	if e.daemon == nil {
		startChurnDaemon(tb, e, nil, nil)
	}
	d := e.daemon
	logged := len(d.out.String())
	commit0, ack0 := d.metric(`ovsplane_batch_commit_seconds_sum{result="ok"}`), d.metric(`ovsplane_batch_apply_seconds_sum`)
	t := churnFanOut(tb, e, func(ctx context.Context, name string) error {
		if phase == churnDelete {
			_, err := d.API.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: name}))
			return err
		}
		port := &ovsplanev1.Port{Name: name, Interfaces: []*ovsplanev1.Interface{{Name: name, Type: e.ifaceTypeOf(name), Options: e.ifaceOptions(name)}}}
		resp, err := d.API.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: port}))
		if err != nil {
			return err
		}
		ifs := resp.Msg.Port.GetInterfaces()
		if len(ifs) != 1 || ifs[0].GetOfport() <= 0 || ifs[0].GetError() != "" {
			return fmt.Errorf("port %s: no ofport or an error: %v", name, resp.Msg.Port)
		}
		return nil
	})
	t.commit = secs(d.metric(`ovsplane_batch_commit_seconds_sum{result="ok"}`) - commit0)
	t.ack = secs(d.metric(`ovsplane_batch_apply_seconds_sum`) - ack0)
	// The daemon's log reaches us through a pipe: the last batches' lines may still be on
	// their way when the last caller has its answer. Every request is in one batch.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		t.batches = loggedBatches(d.out.String()[logged:])
		sum := 0
		for _, n := range t.batches {
			sum += n
		}
		if sum >= len(e.names) || time.Now().After(deadline) {
			break
		}
	}
	return t
}

// loggedBatches returns the sizes of the batches the daemon's debug log reports ("batch
// committed" lines).
func loggedBatches(log string) []int {
	var out []int
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="batch committed"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "size="); ok {
				if n, err := strconv.Atoi(v); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// startChurnDaemon starts e's ovsplaned, with a debug log (the batch sizes come from it), after
// removing ovs-vsctl's br0 (the daemon must own it). prepare, if set, adjusts the daemon before
// its start (arguments, configuration); ready, if set, checks it after.
func startChurnDaemon(tb testing.TB, e *churnEnv, prepare func(*benchDaemon), ready func(context.Context, *benchDaemon)) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.db.Vsctl(tb, "del-br", "br0")
	d := newBenchDaemon(tb, e.db)
	d.logLevel = "debug"
	if prepare != nil {
		prepare(d)
	}
	d.start(ctx)
	if ready != nil {
		ready(ctx, d)
	}
	e.daemon = d
}

// churnVsctl runs one waiting `ovs-vsctl add-port` process per port from e.clients workers, each
// followed by `ovs-vsctl get Interface p ofport error` to confirm the port; or one `del-port`
// process per port.
func churnVsctl(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	return churnFanOut(tb, e, func(ctx context.Context, name string) error { return vsctlPort(ctx, e, phase, name) })
}

// vsctlPort is one request of the per-port ovs-vsctl arm: add-port and get of its ofport, or
// del-port.
func vsctlPort(ctx context.Context, e *churnEnv, phase churnPhase, name string) error {
	if phase == churnDelete {
		return vsctlQuiet(ctx, e.db, "del-port", "br0", name)
	}
	if err := vsctlQuiet(ctx, e.db, append([]string{"add-port", "br0", name, "--"}, e.vsctlIfaceArgs(name)...)...); err != nil {
		return err
	}
	out, _, err := churnVsctlRun(ctx, e.db, "get", "Interface", name, "ofport", "error")
	if err != nil {
		return err
	}
	return checkOfportError(name, strings.Split(out, "\n"))
}

// churnBulkVsctl adds all ports in one waiting ovs-vsctl transaction and reads their ofports with
// one `list Interface`; or deletes them all in one transaction. The one request's latency is
// every port's.
func churnBulkVsctl(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.phaseTimeout)
	defer cancel()
	var args []string
	for _, name := range e.names {
		if phase == churnCreate {
			args = append(append(args, "--", "add-port", "br0", name, "--"), e.vsctlIfaceArgs(name)...)
		} else {
			args = append(args, "--", "del-port", "br0", name)
		}
	}
	start := time.Now()
	if err := vsctlQuiet(ctx, e.db, args[1:]...); err != nil {
		tb.Fatalf("bulk %s: %v", phase, err)
	}
	if phase == churnCreate {
		out, _, err := churnVsctlRun(ctx, e.db, "--format=csv", "--no-headings", "--columns=name,ofport,error", "list", "Interface")
		if err != nil {
			tb.Fatal(err)
		}
		seen := 0
		for line := range strings.Lines(out) {
			f := strings.Split(strings.TrimSpace(line), ",")
			if len(f) != 3 || f[0] == "br0" {
				continue
			}
			if err := checkOfportError(f[0], f[1:]); err != nil {
				tb.Fatal(err)
			}
			seen++
		}
		if seen != len(e.names) {
			tb.Fatalf("bulk create: %d interfaces listed, want %d", seen, len(e.names))
		}
	}
	d := time.Since(start)
	lat := make([]time.Duration, len(e.names))
	for i := range lat {
		lat[i] = d
	}
	return churnTiming{wall: d, lat: lat, batches: []int{len(e.names)}}
}

// churnOvsdbapp runs churn_ovsdbapp.py: e.clients threads sharing one ovsdbapp connection, one
// transaction per port, as Neutron and os-vif do. The script times itself from the moment its
// connection has synchronised (a long-running agent is connected already).
func churnOvsdbapp(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	return runOvsdbappScript(tb, e, phase, e.names, 0).churnTiming
}

// ovsdbappRun is one run of churn_ovsdbapp.py: its timing (a latency per port done) and, when a
// deadline cut it (some ports never started), the ports it did.
type ovsdbappRun struct {
	churnTiming
	cut  bool
	done []string // the ports done, when cut
}

// runOvsdbappScript runs churn_ovsdbapp.py's phase on names. With deadline > 0 the script starts
// no request once deadline has passed and lets those in flight finish (the run is then cut if
// some ports were never started); e.phaseTimeout still bounds the whole process. Any failed
// request fails tb.
func runOvsdbappScript(tb testing.TB, e *churnEnv, phase churnPhase, names []string, deadline time.Duration) ovsdbappRun {
	tb.Helper()
	requireOvsdbapp(tb)
	ctx, cancel := context.WithTimeout(context.Background(), e.phaseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, churnPython, "churn_ovsdbapp.py", "--db", e.db.Endpoint, "--bridge", "br0",
		"--phase", phase.String(), "--clients", strconv.Itoa(e.clients),
		"--timeout", strconv.Itoa(int(e.phaseTimeout.Seconds())), "--names", strings.Join(names, ","),
		"--deadline", strconv.FormatFloat(deadline.Seconds(), 'f', 3, 64))
	cmd.Env = append(os.Environ(), e.db.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("churn_ovsdbapp.py %s: %v\n%s", phase, err, lastLines(stderr.String(), 30))
	}
	var out struct {
		WallS       float64   `json:"wall_s"`
		Latencies   []float64 `json:"latencies_s"`
		Failed      int       `json:"failed"`
		FirstErrors []string  `json:"errors"`
		Cut         bool      `json:"cut"`
		DoneNames   []string  `json:"done_names"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		tb.Fatalf("churn_ovsdbapp.py %s printed %q: %v\n%s", phase, stdout.String(), err, lastLines(stderr.String(), 30))
	}
	if out.Failed > 0 {
		tb.Fatalf("ovsdbapp %s: %d of %d requests failed; first errors:\n%s", phase, out.Failed, len(names),
			strings.Join(out.FirstErrors, "\n"))
	}
	if out.Cut && len(out.DoneNames) != len(out.Latencies) {
		tb.Fatalf("ovsdbapp %s: cut with %d ports done but %d latencies", phase, len(out.DoneNames), len(out.Latencies))
	}
	if !out.Cut && len(out.Latencies) != len(names) {
		tb.Fatalf("ovsdbapp %s: not cut, yet %d latencies for %d ports", phase, len(out.Latencies), len(names))
	}
	r := ovsdbappRun{churnTiming: churnTiming{wall: seconds(out.WallS)}, cut: out.Cut, done: out.DoneNames}
	for _, s := range out.Latencies {
		r.lat = append(r.lat, seconds(s))
	}
	return r
}

// requireOvsdbapp skips tb when python3-ovsdbapp is missing (fails it under OVSPLANE_REQUIRE_LAB,
// as lab.Require does: `make test` installs it with scripts/lab-setup.sh).
func requireOvsdbapp(tb testing.TB) {
	tb.Helper()
	out, err := exec.Command(churnPython, "-c", "import ovsdbapp.schema.open_vswitch.impl_idl").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("ovsdbapp arm: %s cannot import ovsdbapp (%v: %s); apt-get install -y python3-ovsdbapp",
		churnPython, err, bytes.TrimSpace(out))
	if v, _ := strconv.ParseBool(os.Getenv(lab.RequireEnv)); v {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// churnFanOut runs do for every port from e.clients goroutines and times each call. The first
// error stops the handing out of ports and fails tb once the workers are done.
func churnFanOut(tb testing.TB, e *churnEnv, do func(ctx context.Context, name string) error) churnTiming {
	tb.Helper()
	t, err := churnFanOutErr(e, do)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// churnFanOutErr is churnFanOut returning the first error instead of failing: the timing then
// has a zero latency for every port not done.
func churnFanOutErr(e *churnEnv, do func(ctx context.Context, name string) error) (churnTiming, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.phaseTimeout)
	defer cancel()
	lat := make([]time.Duration, len(e.names))
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range e.clients {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				if err := do(ctx, e.names[i]); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	for i := range e.names {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	return churnTiming{wall: time.Since(start), lat: lat}, firstErr
}

// vsctlQuiet runs a waiting ovs-vsctl command that prints nothing on success. ovs-vsctl exits 0
// when ovs-vswitchd could not set an interface up and only says so on stderr ("Error detected
// while setting up 'X'"), so anything on stderr is an error too, except its complaints about its
// own slowness ("timeval|WARN|Unreasonably long 3341ms poll interval", a big transaction).
func vsctlQuiet(ctx context.Context, db *lab.OVSDB, args ...string) error {
	_, stderr, err := churnVsctlRun(ctx, db, args...)
	if err != nil {
		return err
	}
	var msgs []string
	for line := range strings.Lines(stderr) {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "|timeval|WARN|") {
			msgs = append(msgs, line)
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("ovs-vsctl %s: %s", shortArgs(args), strings.Join(msgs, "\n"))
	}
	return nil
}

// churnVsctlRun runs `ovs-vsctl --db=<db> args…` and returns its trimmed stdout and stderr. It is
// lab.OVSDB.VsctlErr without the lab's 2 s exec.Cmd.WaitDelay: with 50 processes on 2 vCPUs and a
// busy ovsdb-server, an ovs-vsctl that exited normally sometimes had its output collected later
// than that, and the lab then reports a failure.
func churnVsctlRun(ctx context.Context, db *lab.OVSDB, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + db.Endpoint}, args...)...)
	cmd.Env = append(os.Environ(), db.Env()...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	stdout, stderr = strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String())
	if err != nil {
		err = fmt.Errorf("ovs-vsctl %s: %w: %s", shortArgs(args), err, stderr)
	}
	return stdout, stderr, err
}

// checkOfportError checks the ofport and error columns of interface name as ovs-vsctl prints
// them: a positive ofport, and an empty error ([] from get, "" from list in CSV).
func checkOfportError(name string, cols []string) error {
	if len(cols) != 2 {
		return fmt.Errorf("interface %s: ofport and error read as %q", name, cols)
	}
	of, err := strconv.Atoi(strings.TrimSpace(cols[0]))
	if e := strings.TrimSpace(cols[1]); err != nil || of < 1 || (e != "[]" && e != "" && e != `""`) {
		return fmt.Errorf("interface %s: ofport %s, error %s", name, cols[0], cols[1])
	}
	return nil
}

// shortArgs abbreviates a long command line for an error message.
func shortArgs(args []string) string {
	if len(args) > 12 {
		return strings.Join(args[:12], " ") + fmt.Sprintf(" … (%d more)", len(args)-12)
	}
	return strings.Join(args, " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
