package host

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// TestKillNineInFlight: kill -9 while calls are in flight. Every in-flight call fails with
// Unavailable naming the plugin; the plugin is running again (a new process) within 2 s of
// the kill (measured, the target); the restart replays every owned port through
// Attach exactly once; calls then work again.
func TestKillNineInFlight(t *testing.T) {
	f := newFixture(t)
	owned := []api.PortRequest{port("killme", "o1", nil), port("killme", "o2", nil), port("killme", "o3", nil)}
	for i := range owned {
		owned[i].State = []byte(`{"ok":true}`)
	}
	var mu sync.Mutex
	var replays [][]api.ReplayResult
	f.opts.Owned = func(_ context.Context, plugin string) ([]api.PortRequest, error) {
		if plugin != "killme" {
			t.Errorf("Owned(%q)", plugin)
		}
		return owned, nil
	}
	f.opts.Replayed = func(plugin string, results []api.ReplayResult) {
		mu.Lock()
		defer mu.Unlock()
		replays = append(replays, results)
	}
	p := f.install("v1", "killme")
	f.start(p)
	st := f.status("killme")
	if st.State != StateRunning {
		t.Fatalf("state %s: %s", st.State, st.Reason)
	}
	pid1 := st.PID
	if got := f.attachLog("killme", pid1); !slices.Equal(got, []string{"br0/o1", "br0/o2", "br0/o3"}) && len(got) != 3 {
		t.Fatalf("first replay attached %v", got)
	}
	pp, name, ok := f.h.PortProvider("killme-port")
	if !ok || name != "killme" {
		t.Fatalf("PortProvider: %v %q", ok, name)
	}

	const inFlight = 5
	errs := make(chan error, inFlight)
	for i := range inFlight {
		go func() {
			_, err := pp.Attach(t.Context(), port("killme", "slow"+string(rune('a'+i)), map[string]string{"mode": "slow", "sleep": "3s"}))
			errs <- err
		}()
	}
	f.waitFor("the calls to reach the plugin", func() bool { return len(f.attachLog("killme", pid1)) == 3+inFlight })
	killed := time.Now()
	must(t, syscall.Kill(pid1, syscall.SIGKILL))
	for range inFlight {
		err := <-errs
		code, msg := codeOf(err)
		if code != api.Unavailable || !strings.Contains(msg, `plugin "killme"`) || !strings.Contains(msg, "Attach port br0/slow") {
			t.Errorf("in-flight call: code %s, %q; want unavailable naming the plugin and the call", code, msg)
		}
	}
	f.waitFor("the restart", func() bool {
		st := f.status("killme")
		return st.State == StateRunning && st.PID != 0 && st.PID != pid1
	})
	took := time.Since(killed)
	t.Logf("running again %s after kill -9", took)
	if took >= 2*time.Second {
		t.Errorf("restart took %s, the target is < 2 s", took)
	}
	st = f.status("killme")
	if st.Restarts != 1 || !strings.Contains(st.LastError, "exited") {
		t.Errorf("status after restart: restarts %d, last error %q", st.Restarts, st.LastError)
	}
	got := f.attachLog("killme", st.PID)
	slices.Sort(got)
	if !slices.Equal(got, []string{"br0/o1", "br0/o2", "br0/o3"}) {
		t.Errorf("the restarted process was attached %v, want each owned port once", got)
	}
	mu.Lock()
	if len(replays) != 2 || len(replays[1]) != 3 {
		t.Errorf("Replayed called %d times: %+v", len(replays), replays)
	} else {
		for _, r := range replays[1] {
			if r.Err != nil || len(r.Attachment.Ports) != 1 || r.Attachment.Ports[0].Name != r.Request.Name {
				t.Errorf("replay of %s: %+v", r.Request.Name, r)
			}
		}
	}
	mu.Unlock()
	if _, err := pp.Attach(t.Context(), port("killme", "after", nil)); err != nil {
		t.Errorf("Attach after the restart: %v", err)
	}
}

// TestCrashLoopOpensBreaker: a plugin that dies at every Configure is restarted with backoff
// until its breaker opens; then its status says failed with the reason, calls to its type
// fail at once naming it, and another plugin keeps working. Reset retries it.
func TestCrashLoopOpensBreaker(t *testing.T) {
	f := newFixture(t)
	f.opts.BreakerFailures = 3
	bad := f.install("v1", "crasher")
	bad.Config = map[string]any{"crash_on_configure": true}
	good := f.install("v1", "steady")
	f.start(bad, good)
	f.waitFor("the breaker", func() bool { return f.status("crasher").State == StateFailed })
	st := f.status("crasher")
	t.Logf("reason: %s", st.Reason)
	for _, w := range []string{"circuit breaker open: 3 failures within 30s", `plugin "crasher"`, "reset it or reload"} {
		if !strings.Contains(st.Reason, w) {
			t.Errorf("reason %q lacks %q", st.Reason, w)
		}
	}
	if st.Restarts != 2 {
		t.Errorf("restarts %d, want 2 (3 starts)", st.Restarts)
	}
	if n := len(f.started("crasher")); n != 3 {
		t.Errorf("%d processes started, want 3", n)
	}
	pp, _, ok := f.h.PortProvider("crasher-port")
	if !ok {
		t.Fatal("the failed plugin's type does not resolve")
	}
	_, err := pp.Attach(t.Context(), port("crasher", "p", nil))
	if code, msg := codeOf(err); code != api.Unavailable || !strings.Contains(msg, `plugin "crasher"`) || !strings.Contains(msg, "circuit breaker open") {
		t.Errorf("call to the failed plugin: %s %q", code, msg)
	}
	gp, _, _ := f.h.PortProvider("steady-port")
	if _, err := gp.Attach(t.Context(), port("steady", "p", nil)); err != nil || f.status("steady").State != StateRunning {
		t.Errorf("the other plugin: %v, %+v", err, f.status("steady"))
	}
	must(t, f.h.Reset("crasher"))
	f.waitFor("the retry after Reset", func() bool { return len(f.started("crasher")) > 3 })
	f.waitFor("the breaker again", func() bool { return f.status("crasher").State == StateFailed })
}

// TestHangingPluginTimesOut: a call the plugin never answers ends with DeadlineExceeded naming
// the plugin and the call; the plugin stays up.
func TestHangingPluginTimesOut(t *testing.T) {
	f := newFixture(t)
	f.opts.CallTimeout = 300 * time.Millisecond
	f.start(f.install("v1", "sloth"))
	pp, _, _ := f.h.PortProvider("sloth-port")
	_, err := pp.Attach(t.Context(), port("sloth", "h0", map[string]string{"mode": "hang"}))
	code, msg := codeOf(err)
	if code != api.DeadlineExceeded || !strings.Contains(msg, `plugin "sloth": Attach port br0/h0: no answer within 300ms`) {
		t.Errorf("got %s %q", code, msg)
	}
	if !errors.Is(err, api.ErrDeadlineExceeded) {
		t.Errorf("errors.Is(ErrDeadlineExceeded) false for %v", err)
	}
	if refused := (*api.RefusedAnswerError)(nil); errors.As(err, &refused) {
		t.Errorf("a call without an answer is a refused answer (the daemon would detach): %v", err)
	}
	if st := f.status("sloth"); st.State != StateRunning {
		t.Errorf("state %s", st.State)
	}
}

// TestEnvironmentNotLeaked: the plugin sees PATH, the variables its entry allows and
// go-plugin's handshake variables, nothing else of the daemon's environment.
func TestEnvironmentNotLeaked(t *testing.T) {
	t.Setenv("LEAK_CANARY", "1")
	f := newFixture(t)
	f.opts.Environ = []string{"PATH=/opt/x:/usr/bin", "HOME=/root", "SECRET=hunter2", "ALLOWED=yes"}
	p := f.install("v1", "envy")
	p.Env = []string{"ALLOWED", "ABSENT"}
	f.start(p)
	pp, _, _ := f.h.PortProvider("envy-port")
	a, err := pp.Attach(t.Context(), port("envy", "e0", map[string]string{"mode": "env"}))
	if err != nil {
		t.Fatal(err)
	}
	env := a.Endpoints
	if env["PATH"] != "/opt/x:/usr/bin" || env["ALLOWED"] != "yes" {
		t.Errorf("PATH %q, ALLOWED %q", env["PATH"], env["ALLOWED"])
	}
	for k := range env {
		switch {
		case k == "PATH" || k == "ALLOWED" || k == wire.MagicCookieKey || strings.HasPrefix(k, "PLUGIN_"):
		default:
			t.Errorf("leaked %s=%q", k, env[k])
		}
	}
	if env["PLUGIN_UNIX_SOCKET_DIR"] == "" || !strings.HasPrefix(env["PLUGIN_UNIX_SOCKET_DIR"], f.dataDir+"/plugin-run/envy-") {
		t.Errorf("socket dir %q", env["PLUGIN_UNIX_SOCKET_DIR"])
	}
}

// TestStderrForwarded: what the plugin logs (hclog JSON on stderr) and writes to stderr
// arrives in the daemon's slog output with plugin=<name>.
func TestStderrForwarded(t *testing.T) {
	f := newFixture(t)
	f.start(f.install("v1", "chatty"))
	var structured, raw bool
	f.waitFor("the plugin's log lines", func() bool {
		recs, _ := f.logs.Records() // the host's log is JSON; other lines are not records
		for _, r := range recs {
			if r["plugin"] != "chatty" {
				continue
			}
			if r["msg"] == "configured" && r["answer"] == float64(42) && r["level"] == "INFO" {
				structured = true
			}
			if r["msg"] == "raw line from chatty" && r["stream"] == "stderr" {
				raw = true
			}
		}
		return structured && raw
	})
}
