//go:build linux

package vswitchd_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

// The harness of the multi-port object tests (multiport_lab_test.go).

// mportLab is a real ovsdb-server with a dummy ovs-vswitchd, the test plugin
// testdata/multiportplugin (port type mport) installed and pinned in a plugin dir, and an
// in-process daemon with its plugin host on them, which the test can restart.
type mportLab struct {
	t        *testing.T
	db       *lab.OVSDB
	dir      string // plugin dir's parent and the host's data dir
	entry    model.Plugin
	cfg      *config.Config
	logs     *testkit.LogBuffer
	h        *host.Host
	d        *vswitchd.Daemon
	stopping func()
}

// mportHost adapts *host.Host to vswitchd.Plugins, as cmd/ovsplaned does.
type mportHost struct {
	h *host.Host
	d atomic.Pointer[vswitchd.Daemon]
}

func (p *mportHost) PortProvider(t string) (api.PortProvider, string, bool) {
	return p.h.PortProvider(t)
}
func (p *mportHost) Reload(ctx context.Context, ps []model.Plugin) error { return p.h.Reload(ctx, ps) }
func (p *mportHost) Flows(ctx context.Context, b api.BridgeFacts) []api.PluginFlows {
	return p.h.Flows(ctx, b)
}
func (p *mportHost) Cookies() api.CookieRange { return host.PluginCookies() }
func (p *mportHost) GlobalConfig(ctx context.Context, daemon map[string]string) vswitchd.PluginGlobals {
	g := p.h.GlobalConfig(ctx, daemon)
	return vswitchd.PluginGlobals{OtherConfig: g.OtherConfig, Unknown: g.Unknown}
}
func (p *mportHost) Plugins() []model.PluginInfo {
	var out []model.PluginInfo
	for _, st := range p.h.Plugins() {
		out = append(out, st.Info())
	}
	return out
}

func newMportLab(t *testing.T, cfg *config.Config) *mportLab {
	t.Helper()
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	dir := testkit.ShortTempDir(t, "mport-") // the plugin's socket path must fit 107 bytes
	sum := testkit.InstallPlugin(t, "./testdata/multiportplugin", filepath.Join(dir, "plugins"), "mport")
	l := &mportLab{t: t, db: db, dir: dir, cfg: cfg, logs: &testkit.LogBuffer{},
		entry: model.Plugin{Name: "mport", Path: "mport", SHA256: sum}}
	t.Cleanup(func() {
		l.stop()
		if t.Failed() {
			t.Logf("daemon and host log (tail):\n%s", l.logs.Tail(6000))
		}
	})
	return l
}

// start starts a new client, plugin host and daemon, as ovsplaned starts.
func (l *mportLab) start() {
	t := l.t
	t.Helper()
	log := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{l.db.Endpoint}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ph := &mportHost{}
	h, err := host.New(host.Options{PluginDir: filepath.Join(l.dir, "plugins"), DataDir: l.dir, Logger: log, Environ: os.Environ(),
		Owned: func(ctx context.Context, plugin string) ([]api.PortRequest, error) {
			if d := ph.d.Load(); d != nil {
				return d.PluginPorts(ctx, plugin)
			}
			return nil, nil
		},
		Replayed: func(plugin string, rs []api.ReplayResult) {
			if d := ph.d.Load(); d != nil {
				d.PluginReplayed(plugin, rs)
			}
		},
		Facts: func(context.Context) (api.HostFacts, error) {
			f := c.Facts()
			return api.HostFacts{OVSVersion: f.OVSVersion, IfaceTypes: f.IfaceTypes, DatapathTypes: f.DatapathTypes}, nil
		},
		OnChange: func(st host.Status) {
			if d := ph.d.Load(); d != nil {
				go d.PluginChanged(st.Name)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ph.h = h
	d, err := vswitchd.New(ctx, c, l.cfg, vswitchd.Options{Logger: log, Plugins: ph, Reconcile: vswitchdtest.FastReconcile()})
	if err != nil {
		t.Fatal(err)
	}
	ph.d.Store(d)
	if err := h.Start(ctx, []model.Plugin{l.entry}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	l.h, l.d = h, d
	l.stopping = func() {
		cancel()
		<-done
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = d.Close(cctx)
		_ = h.Close(cctx)
		c.Close()
	}
	l.waitRunning(0)
}

func (l *mportLab) stop() {
	if l.stopping != nil {
		l.stopping()
		l.stopping = nil
	}
}

// waitRunning waits until the plugin runs with a pid other than not, and the daemon has
// reacted to it (a reconcile pass after the replay); it returns the pid.
func (l *mportLab) waitRunning(not int) int {
	l.t.Helper()
	var pid int
	lab.WaitFor(l.t, 30*time.Second, "plugin mport running", func(context.Context) error {
		sts := l.h.Plugins()
		if len(sts) == 0 {
			return fmt.Errorf("not listed")
		}
		if st := sts[0]; st.State != host.StateRunning || st.PID == not {
			return fmt.Errorf("state %s, pid %d", st.State, st.PID)
		}
		pid = sts[0].PID
		return nil
	})
	l.d.PluginChanged("mport") // what OnChange started too: idempotent, and done once this returns
	if err := l.d.Reconcile(l.t.Context()); err != nil {
		l.t.Fatal(err)
	}
	return pid
}

// events returns the plugin's events.log lines.
func (l *mportLab) events() []string {
	b, _ := os.ReadFile(filepath.Join(l.dir, "plugin-data", "mport", "events.log"))
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

func (l *mportLab) hasEvent(e string) bool {
	for _, x := range l.events() {
		if x == strings.ReplaceAll(e, " ", "_") {
			return true
		}
	}
	return false
}

// portMonitor runs `ovsdb-client monitor` on the Port table: ovsdb-server sends one update per
// transaction, which it prints as one JSON line listing every row the transaction inserted,
// deleted or changed.
type portMonitor struct {
	mu    sync.Mutex
	lines []string
}

func startPortMonitor(t *testing.T, db *lab.OVSDB) *portMonitor {
	m := &portMonitor{}
	cmd := exec.CommandContext(t.Context(), "ovsdb-client", "--format=json", "monitor", db.Endpoint, "Open_vSwitch", "Port", "name,!initial")
	cmd.Env = append(os.Environ(), db.Env()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
	}()
	// Markers until one shows: the monitor is live (it prints no initial rows).
	n := 0
	lab.WaitFor(t, 20*time.Second, "the monitor live", func(context.Context) error {
		n++
		marker := fmt.Sprintf("mon-%d", n)
		db.Vsctl(t, "--no-wait", "add-br", marker)
		db.Vsctl(t, "--no-wait", "del-br", marker)
		if m.mentioning(0, marker) == nil {
			return fmt.Errorf("no update after %d markers", n)
		}
		return nil
	})
	return m
}

// sync adds and removes a marker bridge with ovs-vsctl and waits until the monitor printed
// the addition, so every transaction before it has been printed too; it returns how many
// lines were printed before the marker.
func (m *portMonitor) sync(t *testing.T, db *lab.OVSDB, marker string) int {
	t.Helper()
	db.Vsctl(t, "--no-wait", "add-br", marker)
	db.Vsctl(t, "--no-wait", "del-br", marker)
	n := -1
	lab.WaitFor(t, 20*time.Second, "monitor saw "+marker, func(context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, l := range m.lines {
			if strings.Contains(l, `"insert","`+marker+`"`) {
				n = i
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	return n
}

// mentioning returns the lines from index from on that name one of names as a row's name.
func (m *portMonitor) mentioning(from int, names ...string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, l := range m.lines[min(from, len(m.lines)):] {
		for _, n := range names {
			if strings.Contains(l, `,"`+n+`"]`) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// rowUUIDs returns the _uuid of each of obj1's rows, one line each.
func (l *mportLab) rowUUIDs() string {
	var b strings.Builder
	for _, r := range []string{"Port obj1", "Port obj1-x", "Port obj1-t", "Bridge obj1-br"} {
		table, name, _ := strings.Cut(r, " ")
		fmt.Fprintf(&b, "%s %s\n", r, l.db.Get(l.t, table, name, "_uuid"))
	}
	return b.String()
}

func (l *mportLab) hostPID() int {
	for _, st := range l.h.Plugins() {
		return st.PID
	}
	l.t.Fatal("no plugin")
	return 0
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func hasStatus(sts []model.Status, key string, state model.State) bool {
	for _, s := range sts {
		if s.Key() == key {
			return s.State == state
		}
	}
	return false
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func (l *mportLab) hasEventPrefix(p string) bool {
	p = strings.ReplaceAll(p, " ", "_")
	for _, x := range l.events() {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}
