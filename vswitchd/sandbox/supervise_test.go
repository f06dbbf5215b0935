//go:build linux

package sandbox

// Supervision and stale-socket tests: kill -9 of each daemon with real processes, the restart
// backoff, and the removal of sockets nobody listens on.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

func TestBackoff(t *testing.T) {
	var b backoff
	b.started = time.Now()
	var got []time.Duration
	for range 8 {
		got = append(got, b.delay())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, restartMax, restartMax}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	b.exited(b.started.Add(restartStable / 2)) // a short run: the delays keep growing
	if d := b.delay(); d != restartMax {
		t.Errorf("after a short run: delay %v, want %v", d, restartMax)
	}
	b.exited(b.started.Add(restartStable)) // a stable run: start over
	if d := b.delay(); d != restartMin {
		t.Errorf("after a stable run: delay %v, want %v", d, restartMin)
	}
}

// testLogger logs to the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testkit.Output(t), nil))
}

func TestVhostSockDirs(t *testing.T) {
	for _, tc := range []struct {
		sub  string
		want []string
	}{
		{"", []string{"/s"}},
		{"vhost", []string{"/s", "/s/vhost"}},
		{"a/b", []string{"/s", "/s/a/b"}},
		{".", []string{"/s"}},
		{"..", []string{"/s"}},
		{"../other", []string{"/s"}},
		{"a/../../x", []string{"/s"}},
		{"/abs", []string{"/s"}},
	} {
		if got := vhostSockDirs("/s", map[string]string{"vhost-sock-dir": tc.sub}); !slices.Equal(got, tc.want) {
			t.Errorf("vhost-sock-dir %q: %v, want %v", tc.sub, got, tc.want)
		}
	}
}

// restartGate lets a test hold each restart attempt until it has looked at the sandbox.
type restartGate struct {
	attempts chan string   // the supervisor announces an attempt with the daemon's name
	release  chan struct{} // the test lets it go
}

func newRestartGate() *restartGate {
	return &restartGate{attempts: make(chan string), release: make(chan struct{})}
}

// hook is Options.beforeRestart.
func (g *restartGate) hook(ctx context.Context, name string) {
	select {
	case g.attempts <- name:
	case <-ctx.Done():
		return
	}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
}

// next waits for the supervisor's next restart attempt and returns the daemon's name.
func (g *restartGate) next(t *testing.T) string {
	t.Helper()
	select {
	case name := <-g.attempts:
		return name
	case <-time.After(waitLimit):
		t.Fatalf("no restart attempt within %v", waitLimit)
		return ""
	}
}

// killAndRestart kills daemon name (pid) with SIGKILL, checks that the sandbox reports it down
// while its restart is held, lets the restart go and waits for the new process. It returns the
// new pid.
func killAndRestart(t *testing.T, s *Sandbox, g *restartGate, name string, pid func(Status) int) int {
	t.Helper()
	old := pid(s.Status())
	if !ovsproc.Alive(old) {
		t.Fatalf("%s pid %d not running before the kill", name, old)
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := g.next(t); got != name {
		t.Fatalf("restart attempt for %s, want %s", got, name)
	}
	// Held before its restart: the old process is gone and the sandbox says so.
	if ovsproc.Alive(old) {
		t.Errorf("%s pid %d still alive after SIGKILL", name, old)
	}
	st := s.Status()
	if why := st.Down[name]; !strings.Contains(why, "signal: killed") || !strings.Contains(why, strconv.Itoa(old)) {
		t.Errorf("Status().Down[%s] = %q, want the killed pid %d and its signal", name, why, old)
	}
	if d := st.Degraded(); len(d) != 1 || !strings.Contains(d[0], name) {
		t.Errorf("Degraded() = %q, want one line about %s", d, name)
	}
	g.release <- struct{}{}
	lab.WaitFor(t, waitLimit, name+" to be restarted", func(context.Context) error {
		if st := s.Status(); st.Restarts[name] != 1 || len(st.Down) != 0 {
			return fmt.Errorf("restarts %v, down %v", st.Restarts, st.Down)
		}
		return nil
	})
	now := pid(s.Status())
	if now == old || !ovsproc.Alive(now) || !ovsproc.IsOurs(now, "--pidfile="+filepath.Join(s.Dir(), name+".pid")) {
		t.Fatalf("%s after the restart: pid %d (alive %v), before %d", name, now, ovsproc.Alive(now), old)
	}
	if d := s.Status().Degraded(); len(d) != 0 {
		t.Errorf("Degraded() after the restart = %q, want none", d)
	}
	return now
}

func TestKilledDaemonsAreRestarted(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	g := newRestartGate()
	s := start(t, Options{Dir: dir, DPDK: DPDKOff, Logger: testLogger(t), beforeRestart: g.hook})
	vsctl(t, s, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev",
		"--", "add-port", "br0", "p0", "--", "set", "Interface", "p0", "type=internal")
	ofport := vsctl(t, s, "get", "Interface", "p0", "ofport")
	if n, err := strconv.Atoi(ofport); err != nil || n <= 0 {
		t.Fatalf("p0 ofport %q before the kills", ofport)
	}

	t.Run("ovsdb-server", func(t *testing.T) {
		swBefore := s.Status().VswitchdPID
		killAndRestart(t, s, g, "ovsdb-server", func(st Status) int { return st.OVSDBPID })
		// The database is intact, and the running ovs-vswitchd reconnects to the new server:
		// a new port gets its ofport (ovs-vsctl waits for ovs-vswitchd).
		if got := vsctl(t, s, "get", "Interface", "p0", "ofport"); got != ofport {
			t.Errorf("p0 ofport %s after the restart, want %s", got, ofport)
		}
		vsctl(t, s, "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=internal")
		if of, err := strconv.Atoi(vsctl(t, s, "get", "Interface", "p1", "ofport")); err != nil || of <= 0 {
			t.Errorf("p1 ofport %d (%v) on the restarted ovsdb-server", of, err)
		}
		if st := s.Status(); st.VswitchdPID != swBefore || st.Restarts["ovs-vswitchd"] != 0 {
			t.Errorf("ovs-vswitchd pid %d → %d, restarts %d: want it untouched", swBefore, st.VswitchdPID, st.Restarts["ovs-vswitchd"])
		}
	})
	t.Run("ovs-vswitchd", func(t *testing.T) {
		pid := killAndRestart(t, s, g, "ovs-vswitchd", func(st Status) int { return st.VswitchdPID })
		if s.VswitchdPID() != pid {
			t.Errorf("VswitchdPID() = %d, want %d", s.VswitchdPID(), pid)
		}
		// The restarted ovs-vswitchd applied the database (restart waits for cur_cfg): the
		// ports are back, in its own network namespace.
		for _, p := range []string{"p0", "p1"} {
			if of, err := strconv.Atoi(vsctl(t, s, "get", "Interface", p, "ofport")); err != nil || of <= 0 {
				t.Errorf("%s ofport %d (%v) after the restart", p, of, err)
			}
		}
		if err := linkInNetns(t.Context(), pid, "p0"); err != nil {
			t.Errorf("p0 not in the new vswitchd's namespace: %v", err)
		}
		if out, err := s.appctl(t.Context(), s.sw, "version"); err != nil {
			t.Errorf("ovs-appctl version after the restart: %v %s", err, out)
		}
	})
	t.Run("both", func(t *testing.T) {
		// ovsdb-server dies, and ovs-vswitchd while the database's restart is held: the
		// database comes back first, then ovs-vswitchd against it.
		st := s.Status()
		if err := syscall.Kill(st.OVSDBPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if got := g.next(t); got != "ovsdb-server" {
			t.Fatalf("first restart attempt for %s, want ovsdb-server", got)
		}
		if err := syscall.Kill(st.VswitchdPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		lab.WaitFor(t, waitLimit, "ovs-vswitchd to exit", func(context.Context) error {
			if !s.sw.Current().Exited() {
				return fmt.Errorf("pid %d still running", st.VswitchdPID)
			}
			return nil
		})
		g.release <- struct{}{}
		if got := g.next(t); got != "ovs-vswitchd" {
			t.Fatalf("second restart attempt for %s, want ovs-vswitchd", got)
		}
		if d := s.Status().Down; d["ovsdb-server"] != "" || !strings.Contains(d["ovs-vswitchd"], "signal: killed") {
			t.Errorf("Down = %q while ovs-vswitchd's restart is held, want only ovs-vswitchd", d)
		}
		g.release <- struct{}{}
		lab.WaitFor(t, waitLimit, "both restarted", func(context.Context) error {
			if st := s.Status(); st.Restarts["ovsdb-server"] != 2 || st.Restarts["ovs-vswitchd"] != 2 || len(st.Down) != 0 {
				return fmt.Errorf("restarts %v, down %v", st.Restarts, st.Down)
			}
			return nil
		})
		now := s.Status()
		for _, pid := range []int{now.OVSDBPID, now.VswitchdPID} {
			if !ovsproc.Alive(pid) || pid == st.OVSDBPID || pid == st.VswitchdPID {
				t.Errorf("pids before %d/%d, after %d/%d", st.OVSDBPID, st.VswitchdPID, now.OVSDBPID, now.VswitchdPID)
			}
		}
		if of, err := strconv.Atoi(vsctl(t, s, "get", "Interface", "p0", "ofport")); err != nil || of <= 0 {
			t.Errorf("p0 ofport %d (%v) after both restarts", of, err)
		}
	})
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("Close: %v", err)
	}
	assertNoProcesses(t, dir)
}
