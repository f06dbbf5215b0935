//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/ovsplane/ovsplane/api/client"
	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// These tests run the real ovsplaned binary against a real ovsdb-server and ovs-vswitchd (the
// dummy datapath) and talk to it through its API, as a cloud platform would.

// ovsplanedPkg is the daemon's main package, built once per test binary (testkit.BuildOnce).
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// daemonProc is one ovsplaned process of a test.
type daemonProc struct{ *testkit.Proc }

func (p *daemonProc) kill() { p.Kill() }

func (p *daemonProc) stop(t *testing.T) {
	t.Helper()
	if !p.Stop(30 * time.Second) {
		t.Errorf("ovsplaned did not stop within 30 s of SIGTERM")
	}
}

// daemonHome is an ovsplaned data dir and config file, the API client on its socket, and the
// output of every ovsplaned run in it, logged when the test fails: what daemonLab and
// sandboxLab share.
type daemonHome struct {
	t    *testing.T
	dir  string
	conf string
	api  *client.Client
	logs []*testkit.LogBuffer
}

// newDaemonHome makes a data dir named prefix+random (short: the socket paths below it must
// fit 107 bytes) holding config, and dials the API socket there. A failed test logs the last
// logTail bytes of each run's output.
func newDaemonHome(t *testing.T, prefix, config string, logTail int) *daemonHome {
	t.Helper()
	h := &daemonHome{t: t, dir: testkit.ShortTempDir(t, prefix)}
	h.conf = filepath.Join(h.dir, "ovsplaned.yaml")
	if err := os.WriteFile(h.conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	api, err := client.Dial("unix:" + filepath.Join(h.dir, "ovsplaned.sock"))
	if err != nil {
		t.Fatal(err)
	}
	h.api = api
	t.Cleanup(func() {
		api.Close()
		if t.Failed() {
			for i, b := range h.logs {
				t.Logf("ovsplaned run %d log (tail):\n%s", i+1, b.Tail(logTail))
			}
		}
	})
	return h
}

// run starts ovsplaned with args and waits up to wait until its API answers with OVSDB
// connected; it fails the test when ovsplaned exits meanwhile. atEnd stops it when the test
// ends.
func (h *daemonHome) run(ctx context.Context, wait time.Duration, atEnd func(*daemonProc), args ...string) *daemonProc {
	h.t.Helper()
	p := &daemonProc{testkit.Start(h.t, exec.Command(testkit.BuildOnce(h.t, ovsplanedPkg), args...))}
	h.logs = append(h.logs, p.Out)
	h.t.Cleanup(func() { atEnd(p) })
	deadline := time.Now().Add(wait)
	for {
		hr, err := h.api.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err == nil && hr.Msg.OvsdbConnected {
			return p
		}
		if p.Exited() {
			h.t.Fatalf("ovsplaned %v exited at start (%v):\n%s", args, p.Cmd.ProcessState, p.Out)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("ovsplaned %v: API not answering after %v (last error %v):\n%s", args, wait, err, p.Out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemonLab is an ovsplaned data dir and config on a lab OVSDB.
type daemonLab struct {
	*daemonHome
	db *lab.OVSDB
	// foreign are ports someone else (ovs-vsctl) put on br0: not the daemon's, not orphans.
	foreign map[string]bool
}

const daemonConfig = `
bridges:
  - name: br0
    datapath_type: netdev
    ports:
      - name: cfg0
        interfaces:
          - name: cfg0
            type: internal
`

func newDaemonLab(t *testing.T, db *lab.OVSDB) *daemonLab {
	t.Helper()
	return &daemonLab{daemonHome: newDaemonHome(t, "opd-", daemonConfig, 3000), db: db}
}

// newDummyDaemonLab is the set-up most of these tests share: it requires root and OVS, starts
// a lab OVSDB with a dummy-datapath ovs-vswitchd and returns it with a daemonLab on it (not
// started yet).
func newDummyDaemonLab(t *testing.T) (*lab.OVSDB, *daemonLab) {
	t.Helper()
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	return db, newDaemonLab(t, db)
}

// start runs ovsplaned and waits until its API answers and OVSDB is connected.
func (l *daemonLab) start(ctx context.Context) *daemonProc {
	l.t.Helper()
	return l.run(ctx, 30*time.Second, (*daemonProc).kill, "--config", l.conf, "--data-dir", l.dir,
		"--ovsdb-endpoints", l.db.Endpoint, "--log-level", "info")
}

func apiPort(name string) *ovsplanev1.Port {
	return &ovsplanev1.Port{Name: name, Interfaces: []*ovsplanev1.Interface{{Name: name, Type: "internal"}}}
}

// outcome is what a churn client learned about one port.
type outcome int

const (
	unknown outcome = iota // never touched, or the last request failed: either state is fine
	present                // the last request that returned was a successful apply
	absent                 // the last request that returned was a successful delete
)

// churnModel tracks, per port name, the last acknowledged outcome. Each name belongs to one
// worker, so requests for a name never race with each other.
type churnModel struct {
	mu    sync.Mutex
	state map[string]outcome
	acked int
	errs  []string // the first few failures' texts, for logs
	// failures are every failed request, in the order they returned.
	failures []churnFailure
}

// churnFailure is one failed churn request: its error and whether the churn had been told to
// stop (its context had ended) when the request returned.
type churnFailure struct {
	name    string
	err     error
	stopped bool
}

func (m *churnModel) set(name string, o outcome, err error, stopped bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.state[name] = unknown
		if len(m.errs) < 5 {
			m.errs = append(m.errs, err.Error())
		}
		m.failures = append(m.failures, churnFailure{name: name, err: err, stopped: stopped})
		return
	}
	m.state[name] = o
	m.acked++
}

// ackedCount returns how many requests were acknowledged so far.
func (m *churnModel) ackedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acked
}

// churn runs workers that each own names worker, worker+workers, … < n and randomly apply or
// delete them until ctx ends.
func (l *daemonLab) churn(ctx context.Context, m *churnModel, n, workers int, rng *rand.Rand) {
	var wg sync.WaitGroup
	seeds := make([]uint64, workers)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seeds[w], 1))
			for ctx.Err() == nil {
				k := w + workers*r.IntN((n-w+workers-1)/workers)
				name := fmt.Sprintf("c%d", k)
				rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				if r.IntN(3) == 0 {
					_, err := l.api.DeletePort(rctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: name}))
					if connect.CodeOf(err) == connect.CodeNotFound {
						err = nil // not there: absent as well
					}
					m.set(name, absent, err, ctx.Err() != nil)
				} else {
					resp, err := l.api.ApplyPort(rctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort(name)}))
					if err == nil && resp.Msg.Port.GetStatus().GetState() != ovsplanev1.State_STATE_READY {
						err = fmt.Errorf("port %s applied but %v: %s", name, resp.Msg.Port.GetStatus().GetState(), resp.Msg.Port.GetStatus().GetError())
					}
					m.set(name, present, err, ctx.Err() != nil)
				}
				cancel()
			}
		})
	}
	wg.Wait()
}

// checkConverged waits until OVSDB holds exactly what the model and the daemon say: every
// port the model knows present, none it knows absent, the daemon's API ports equal to OVSDB's,
// each port on br0 once with one interface that has an ofport, no orphan rows.
func (l *daemonLab) checkConverged(ctx context.Context, m *churnModel) {
	l.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if last = l.converged(ctx, m); last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.t.Fatalf("not converged after 60 s: %v", last)
}

func (l *daemonLab) converged(ctx context.Context, m *churnModel) error {
	resp, err := l.api.ListPorts(ctx, connect.NewRequest(&ovsplanev1.ListPortsRequest{}))
	if err != nil {
		return err
	}
	daemonPorts := map[string]bool{}
	for _, p := range resp.Msg.Ports {
		if p.GetStatus().GetState() != ovsplanev1.State_STATE_READY {
			return fmt.Errorf("port %s is %v %s", p.GetSpec().GetName(), p.GetStatus().GetState(), p.GetStatus().GetError())
		}
		daemonPorts[p.GetSpec().GetName()] = true
	}
	rows := l.db.Vsctl(l.t, "--format=csv", "--no-headings", "--columns=name,ofport", "list", "Interface")
	ifaces := map[string]string{}
	for _, line := range strings.Split(rows, "\n") {
		if f := strings.Split(line, ","); len(f) == 2 {
			if _, dup := ifaces[f[0]]; dup {
				return fmt.Errorf("interface %s twice", f[0])
			}
			ifaces[f[0]] = f[1]
		}
	}
	portRows := strings.Fields(l.db.Vsctl(l.t, "--format=table", "--no-headings", "--columns=name", "list", "Port"))
	onBridge := strings.Fields(l.db.Vsctl(l.t, "list-ports", "br0"))
	if len(portRows) != len(onBridge)+1 { // +1: br0's local port
		return fmt.Errorf("%d Port rows but %d ports on br0 (+ local): orphans", len(portRows), len(onBridge))
	}
	if len(ifaces) != len(portRows) {
		return fmt.Errorf("%d Interface rows for %d ports: orphans", len(ifaces), len(portRows))
	}
	inDB := map[string]bool{}
	for _, p := range onBridge {
		inDB[p] = true
		if of := ifaces[p]; of == "" || of == "[]" || strings.HasPrefix(of, "-") || of == "0" {
			return fmt.Errorf("port %s has no ofport (%q)", p, of)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, o := range m.state {
		switch {
		case o == present && !inDB[name]:
			return fmt.Errorf("port %s was acknowledged but is not in OVSDB: lost", name)
		case o == absent && inDB[name]:
			return fmt.Errorf("port %s was deleted (acknowledged) but is in OVSDB", name)
		}
	}
	for p := range inDB {
		if !daemonPorts[p] && !l.foreign[p] {
			return fmt.Errorf("port %s in OVSDB is not one of the daemon's: orphan", p)
		}
	}
	for p := range daemonPorts {
		if !inDB[p] {
			return fmt.Errorf("daemon lists port %s that OVSDB lacks", p)
		}
	}
	return nil
}

// kill -9 of ovsplaned at random points during a port churn, twenty times: after each restart
// OVSDB converges to the desired state, with no acknowledged change lost, no orphan and no
// duplicate.
func TestDaemonKill9DuringChurn(t *testing.T) {
	ctx := timeout(t, 10*time.Minute)
	_, l := newDummyDaemonLab(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	m := &churnModel{state: map[string]outcome{}}
	const rounds, ports, workers = 20, 500, 25
	for round := range rounds {
		p := l.start(ctx)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		crng := rand.New(rand.NewPCG(rng.Uint64(), 3)) // the churn's own: rng stays this goroutine's
		go func() { l.churn(cctx, m, ports, workers, crng); close(done) }()
		time.Sleep(time.Duration(50+rng.IntN(700)) * time.Millisecond)
		p.kill()
		cancel()
		<-done
		if round%5 == 4 { // now and then, check the state right after a restart
			p := l.start(ctx)
			l.checkConverged(ctx, m)
			p.kill()
		}
	}
	final := l.start(ctx)
	l.checkConverged(ctx, m)
	m.mu.Lock()
	t.Logf("%d acknowledged requests over %d kills; some request errors: %q", m.acked, rounds, m.errs)
	m.mu.Unlock()
	if m.acked < rounds {
		t.Errorf("only %d acknowledged requests: the churn did not run", m.acked)
	}
	final.stop(t)
}

// Restarting ovsdb-server during a churn: every request ends, applied or with a typed error —
// Unavailable carrying the API's retry hint (a google.rpc.RetryInfo detail, apiserver.RetryDelay),
// or Canceled once the churn itself stopped — never an untyped one; the daemon reconnects and
// converges with nothing acknowledged lost. The churn is acknowledged before and after the
// outage. Requests sent once the daemon has seen ovsdb-server go down (an ApplyPort and a
// DeletePort of an acknowledged port, each with a deadline far longer than the daemon's
// reconnect wait) must end with Unavailable and the retry hint before their deadline — the
// daemon answers within vswitchd.DefaultReconnectWait instead of holding them until the caller
// gives up — and, never sent, change nothing: the port stays, the new one never appears.
func TestDaemonSurvivesOVSDBRestart(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	p := l.start(ctx)
	// "kept" is acknowledged before the outage; its deletion is refused during it.
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("kept")})); err != nil {
		t.Fatal(err)
	}
	m := &churnModel{state: map[string]outcome{"kept": present}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { l.churn(cctx, m, 200, 20, rand.New(rand.NewPCG(1, 2))); close(done) }()
	const batch = 50 // acknowledged requests before and after the outage
	lab.WaitFor(t, time.Minute, "the churn running before the restart", func(context.Context) error {
		if n := m.ackedCount(); n < batch {
			return fmt.Errorf("%d acknowledged requests", n)
		}
		return nil
	})
	db.Stop(t)
	lab.WaitFor(t, time.Minute, "the daemon seeing ovsdb-server down", func(ctx context.Context) error {
		h, err := l.api.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err != nil || h.Msg.OvsdbConnected {
			return fmt.Errorf("health: connected %v, %v", h != nil && h.Msg.OvsdbConnected, err)
		}
		return nil
	})
	// Sent while ovsdb-server is down, each with a deadline far beyond the reconnect wait.
	const callerDeadline = 2 * time.Minute
	outage := func(what string, call func(context.Context) error) {
		rctx, rcancel := context.WithTimeout(ctx, callerDeadline)
		defer rcancel()
		err := call(rctx)
		t.Logf("%s while ovsdb-server was down: %v", what, err)
		switch code := connect.CodeOf(err); {
		case err == nil:
			t.Errorf("%s acknowledged while ovsdb-server was down", what)
		case rctx.Err() != nil:
			t.Errorf("%s while ovsdb-server was down was held until the caller's deadline (%s): %v", what, code, err)
		case code != connect.CodeUnavailable:
			t.Errorf("%s while ovsdb-server was down: %s, want unavailable: %v", what, code, err)
		default:
			if delay, ok := retryHint(err); !ok || delay <= 0 {
				t.Errorf("%s while ovsdb-server was down: unavailable without a retry hint (google.rpc.RetryInfo): %v", what, err)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		outage("ApplyPort outage", func(ctx context.Context) error {
			_, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("outage")}))
			return err
		})
	})
	wg.Go(func() {
		outage("DeletePort kept", func(ctx context.Context) error {
			_, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: "kept"}))
			return err
		})
	})
	wg.Wait()
	db.Start(t)
	// The daemon reconnects within its backoff (at most a few seconds); until then writes keep
	// failing fast with the retry hint, and DeletePort of an unmanaged name still "succeeds".
	lab.WaitFor(t, time.Minute, "the daemon reconnecting to ovsdb-server", func(ctx context.Context) error {
		h, err := l.api.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err != nil || !h.Msg.OvsdbConnected {
			return fmt.Errorf("health: connected %v, %v", h != nil && h.Msg.OvsdbConnected, err)
		}
		return nil
	})
	m.mu.Lock()
	m.state["outage"] = absent // refused before anything was sent: it must never appear
	restarted := m.acked
	m.mu.Unlock()
	lab.WaitFor(t, time.Minute, "the churn running again after the restart", func(context.Context) error {
		if n := m.ackedCount() - restarted; n < batch {
			return fmt.Errorf("%d acknowledged requests since the restart", n)
		}
		return nil
	})
	cancel()
	<-done
	m.mu.Lock()
	hinted := 0
	for _, f := range m.failures {
		code := connect.CodeOf(f.err)
		if code == connect.CodeCanceled && f.stopped {
			continue // the churn's own cancel
		}
		if code != connect.CodeUnavailable {
			t.Errorf("%s: %s error during the restart, want unavailable with a retry hint: %v", f.name, code, f.err)
			continue
		}
		if delay, ok := retryHint(f.err); !ok || delay <= 0 {
			t.Errorf("%s: unavailable without a retry hint (google.rpc.RetryInfo): %v", f.name, f.err)
			continue
		}
		hinted++
	}
	t.Logf("%d acknowledged requests, %d failed (%d unavailable with a retry hint); some: %q", m.acked, len(m.failures), hinted, m.errs)
	m.mu.Unlock()
	// Every acknowledged apply present, every acknowledged delete absent, "kept" still there
	// (its deletion was refused), "outage" absent (its apply was refused), no orphan.
	l.checkConverged(ctx, m)
	// Still serving: one more port goes through.
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("after")})); err != nil {
		t.Fatalf("apply after the restart: %v", err)
	}
	p.stop(t)
}

// retryHint returns the retry delay of err's google.rpc.RetryInfo detail, the API's retry hint.
func retryHint(err error) (time.Duration, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0, false
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if ri, ok := v.(*errdetails.RetryInfo); derr == nil && ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// Killing ovs-vswitchd turns the statuses to error, starting it again brings them back to ready.
func TestDaemonFollowsVswitchd(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 5*time.Minute)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	l := newDaemonLab(t, db)
	l.start(ctx)
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("vm1")})); err != nil {
		t.Fatal(err)
	}
	wait := func(want ovsplanev1.State, says string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "vm1"}))
			if err == nil && resp.Msg.Port.GetStatus().GetState() == want && strings.Contains(resp.Msg.Port.GetStatus().GetError(), says) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("port vm1 not %v (%q) after 30 s: %v %v", want, says, resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait(ovsplanev1.State_STATE_READY, "")
	if err := syscall.Kill(vs.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(ovsplanev1.State_STATE_ERROR, "ovs-vswitchd is not running")
	vs.Start(t)
	wait(ovsplanev1.State_STATE_READY, "")
}

// A concurrent ovs-vsctl writer on the same bridge: its rows stay untouched, ours stay
// correct; bad input over the API is refused whole.
func TestDaemonLeavesForeignRowsAlone(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	p := l.start(ctx)
	m := &churnModel{state: map[string]outcome{}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { l.churn(cctx, m, 100, 10, rand.New(rand.NewPCG(3, 4))); close(done) }()
	var foreign []string
	for i := range 20 {
		name := fmt.Sprintf("os%d", i)
		db.Vsctl(t, "add-port", "br0", name, "--", "set", "Interface", name, "type=internal",
			"external_ids:iface-id=vif-"+name, "--", "set", "Port", name, "tag=42")
		foreign = append(foreign, name)
	}
	l.foreign = map[string]bool{}
	for _, f := range foreign {
		l.foreign[f] = true
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	before := db.Vsctl(t, "--columns=name,tag,external_ids,other_config", "--format=csv", "find", "Port", "tag=42")
	// Bad input: refused with a clear error, nothing written.
	bad := []struct {
		port *ovsplanev1.Port
		code connect.Code
		says string
	}{
		{&ovsplanev1.Port{Name: "b1", Interfaces: []*ovsplanev1.Interface{{Name: "b1", Type: "warp"}}}, connect.CodeInvalidArgument, "unknown interface type"},
		{&ovsplanev1.Port{Name: "b2", Interfaces: []*ovsplanev1.Interface{{Name: "b2", Type: "vxlan"}}}, connect.CodeInvalidArgument, "remote_ip"},
		{apiPort("this-name-is-far-too-long"), connect.CodeInvalidArgument, "longer than 15"},
		{&ovsplanev1.Port{Name: "b3", Interfaces: []*ovsplanev1.Interface{{Name: "b3"}, {Name: "b3"}}}, connect.CodeInvalidArgument, "duplicate interface"},
		{apiPort("os3"), connect.CodeFailedPrecondition, "os3"},
	}
	for _, b := range bad {
		_, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: b.port}))
		if connect.CodeOf(err) != b.code || !strings.Contains(err.Error(), b.says) {
			t.Errorf("port %s: got %v, want %v mentioning %q", b.port.Name, err, b.code, b.says)
		}
	}
	l.checkConverged(ctx, m)
	after := db.Vsctl(t, "--columns=name,tag,external_ids,other_config", "--format=csv", "find", "Port", "tag=42")
	if before != after {
		t.Errorf("foreign ports changed:\nbefore %s\nafter  %s", before, after)
	}
	listed := strings.Fields(db.Vsctl(t, "list-ports", "br0"))
	for _, f := range foreign {
		if !slices.Contains(listed, f) {
			t.Errorf("foreign port %s gone", f)
		}
	}
	for _, name := range []string{"b1", "b2", "b3", "this-name-is-far-too-long"} {
		if slices.Contains(listed, name) {
			t.Errorf("refused port %s was written", name)
		}
	}
	p.stop(t)
}
