//go:build linux

package vswitchd_test

import (
	"bufio"
	"context"
	"errors"
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
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

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
func (p *mportHost) GlobalConfig(ctx context.Context, daemon map[string]string) (map[string]string, []error) {
	return p.h.GlobalConfig(ctx, daemon).OtherConfig, nil
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
		for _, st := range l.h.Plugins() {
			if st.State == host.StateRunning && st.PID != not {
				pid = st.PID
				return nil
			}
			return fmt.Errorf("state %s, pid %d", st.State, st.PID)
		}
		return fmt.Errorf("not listed")
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

func mportPort(name string, opts map[string]string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "mport", Options: opts}}}
}

// obj1Rows are the rows of object obj1 (the created bridge's local port included).
var obj1Ports = []string{"obj1", "obj1-x", "obj1-t", "obj1-br"}

// TestPluginObjectOfThreePorts: a plugin object of three ports on two bridges (one created for
// it) against a real ovsdb-server and ovs-vswitchd, with the real test plugin under the plugin
// host. It is written in one transaction (one update of an ovsdb-client monitor holds its
// four Port rows), every row carries the plugin and the object, it survives a kill -9 of the
// plugin and a restart of the daemon with its replay unchanged (no transaction touches it),
// and DeletePort removes it in one transaction, leaving no row and no bridge. A crash between
// Attach and the write (the Attach done, nothing written) leaves nothing after the restart.
func TestPluginObjectOfThreePorts(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	cfg := &config.Config{Bridges: []model.Bridge{{Name: "br0"}}}
	l := newMportLab(t, cfg)
	l.start()
	mon := startPortMonitor(t, l.db)
	ctx := t.Context()

	info, err := l.d.ApplyPort(ctx, "br0", mportPort("obj1", nil))
	if err != nil {
		t.Fatal(err)
	}
	if info.Plugin != "mport" || info.Status.State != model.StateReady || len(info.Interfaces) != 3 {
		t.Fatalf("ApplyPort obj1: %+v", info)
	}
	after := mon.sync(t, l.db, "mark1")
	if lines := mon.mentioning(0, obj1Ports...); len(lines) != 1 || !containsAll(lines[0], `"insert","obj1"`, `"insert","obj1-x"`, `"insert","obj1-t"`, `"insert","obj1-br"`) {
		t.Fatalf("object obj1 not written in one transaction; Port updates naming it:\n%s", strings.Join(lines, "\n"))
	}
	uuids := l.rowUUIDs()
	for _, r := range []string{"Port obj1-x", "Port obj1-t", "Bridge obj1-br", "Port obj1"} {
		table, name, _ := strings.Cut(r, " ")
		ext := l.db.Get(t, table, name, "external_ids")
		if !strings.Contains(ext, `ovsplane-object=obj1`) || !strings.Contains(ext, `ovsplane-plugin=mport`) {
			t.Errorf("%s external_ids lack the plugin and object tags: %s", r, ext)
		}
	}
	if got := l.db.Get(t, "Port", "obj1-t", "_uuid"); !strings.Contains(l.db.Vsctl(t, "list-ports", "obj1-br"), "obj1-t") || got == "" {
		t.Errorf("obj1-t is not on obj1-br")
	}

	// kill -9 the plugin: it is restarted and replays obj1; nothing is written.
	pid := l.hostPID()
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	l.waitRunning(pid)
	if !l.hasEvent("attach obj1 replay=true state=obj1:1") {
		t.Errorf("no replay of obj1 after the plugin's kill -9; events %q", l.events())
	}
	mark := mon.sync(t, l.db, "mark2")
	if lines := mon.mentioning(after+1, obj1Ports...); len(lines) != 0 {
		t.Errorf("the replay after a kill -9 changed obj1's rows:\n%s", strings.Join(lines, "\n"))
	}

	// A crash between Attach and its write: the plugin attached orphan1, nothing was written.
	prov, _, ok := l.h.PortProvider("mport")
	if !ok {
		t.Fatal("no provider of mport")
	}
	if _, err := prov.Attach(ctx, api.PortRequest{Bridge: "br0", Name: "orphan1", Type: "mport"}); err != nil {
		t.Fatal(err)
	}

	// Restart the daemon (and its plugin host): the object is adopted from OVSDB, replayed,
	// and nothing is written; the orphan is detached.
	l.stop()
	l.start()
	if got := l.rowUUIDs(); got != uuids {
		t.Errorf("rows of obj1 after the restarts:\n%s\nbefore:\n%s", got, uuids)
	}
	if lines := mon.mentioning(mark+1, obj1Ports...); len(lines) != 0 {
		t.Errorf("the daemon's restart changed obj1's rows:\n%s", strings.Join(lines, "\n"))
	}
	lab.WaitFor(t, 20*time.Second, "orphan1 detached", func(context.Context) error {
		if !l.hasEvent("detach orphan1 state=orphan1:1") {
			return fmt.Errorf("events %q", l.events())
		}
		return nil
	})
	if l.hasEvent("detach obj1 state=obj1:1") {
		t.Errorf("obj1 was detached by a restart; events %q", l.events())
	}
	if st := l.d.Status(); !hasStatus(st, "port/obj1", model.StateReady) || !hasStatus(st, "bridge/obj1-br", model.StateReady) {
		t.Errorf("statuses after the restart: %+v", st)
	}

	// DeletePort removes the object in one transaction: no row, no bridge, detached once.
	mark = mon.sync(t, l.db, "mark3")
	if err := l.d.DeletePort(ctx, "obj1"); err != nil {
		t.Fatal(err)
	}
	mon.sync(t, l.db, "mark4")
	if lines := mon.mentioning(mark+1, obj1Ports...); len(lines) != 1 || !containsAll(lines[0], `"delete","obj1"`, `"delete","obj1-x"`, `"delete","obj1-t"`, `"delete","obj1-br"`) {
		t.Errorf("object obj1 not removed in one transaction:\n%s", strings.Join(lines, "\n"))
	}
	if _, _, err := l.db.VsctlErr(ctx, "br-exists", "obj1-br"); err == nil {
		t.Errorf("bridge obj1-br is still there")
	}
	for _, n := range obj1Ports[:3] {
		if out, _, _ := l.db.VsctlErr(ctx, "--columns=name", "find", "Port", "name="+n); strings.TrimSpace(out) != "" {
			t.Errorf("port %s is still there: %s", n, out)
		}
	}
	if !l.hasEvent("detach obj1 state=obj1:1") {
		t.Errorf("obj1 not detached after DeletePort; events %q", l.events())
	}
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

// TestPluginObjectRefusalsAndConfigStatus: against real OVS with the real test plugin,
//   - a shape naming a port or a bridge someone else created (ovs-vsctl), or holding more
//     than vswitchd.MaxObjectPorts ports, is refused: the call fails naming the plugin, the
//     object and why, the plugin's Attach is followed by Detach of that request, nothing of
//     the object is written, and the foreign rows are left as they were;
//   - a configuration-file object of the plugin's type is written with all its rows, and a
//     configuration port no plugin attaches shows in the real vsctl binary's `status`, through
//     the API, as `not attached: <why>`.
func TestPluginObjectRefusalsAndConfigStatus(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	cfg := &config.Config{Bridges: []model.Bridge{{Name: "br0", Ports: []model.Port{
		mportPort("cobj", nil),
		{Name: "cfgwait", Interfaces: []model.Interface{{Name: "cfgwait", Type: "nosuch"}}},
	}}}}
	l := newMportLab(t, cfg)
	l.db.Vsctl(t, "--no-wait", "add-br", "fbr")
	l.db.Vsctl(t, "--no-wait", "add-port", "fbr", "fport", "--", "set", "Interface", "fport", "type=internal")
	l.start()
	ctx := t.Context()

	cases := []struct {
		object string
		opts   map[string]string
		want   error
		msg    string
	}{
		{"obj2", map[string]string{"foreign_port": "fport"}, model.ErrConflict, `"fport", which exists in OVSDB and was not created by ovsplane`},
		{"obj3", map[string]string{"foreign_bridge": "fbr"}, model.ErrConflict, `"fbr", which exists in OVSDB and was not created by ovsplane`},
		{"obj4", map[string]string{"ports": "17"}, model.ErrFailed, "17 OVS ports, more than 16 per object"},
		{"obj5", map[string]string{"foreign_port": "cfgwait"}, model.ErrConflict, `port "cfgwait" of the configuration file`},
		{"obj6", map[string]string{"foreign_bridge": "cobj-br"}, model.ErrConflict, `the plugin object "cobj"`},
	}
	for _, c := range cases {
		_, err := l.d.ApplyPort(ctx, "br0", mportPort(c.object, c.opts))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), `plugin "mport"`) {
			t.Errorf("%s: %v, want %v with %q naming the plugin", c.object, err, c.want, c.msg)
		}
		if !l.hasEventPrefix("detach " + c.object + " state=") {
			t.Errorf("%s: refused, but not detached; events %q", c.object, l.events())
		}
		for _, n := range []string{c.object, c.object + "-x", c.object + "-t", c.object + "-br"} {
			if out, _, _ := l.db.VsctlErr(ctx, "--columns=name", "find", "Port", "name="+n); strings.TrimSpace(out) != "" {
				t.Errorf("%s: port %s of a refused object was written", c.object, n)
			}
		}
	}
	if ext := l.db.Get(t, "Port", "fport", "external_ids"); strings.Contains(ext, "ovsplane") {
		t.Errorf("the foreign port was touched: %s", ext)
	}
	if ports := l.db.Vsctl(t, "list-ports", "fbr"); strings.TrimSpace(ports) != "fport" {
		t.Errorf("the foreign bridge's ports changed: %s", ports)
	}
	if !strings.Contains(l.logs.String(), "plugin's Attach answer refused; detaching what it attached") {
		t.Errorf("no refusal logged for the operator")
	}

	// The configuration's object: all its rows, tagged, and ready as one.
	lab.WaitFor(t, 20*time.Second, "cobj ready", func(context.Context) error {
		if !hasStatus(l.d.Status(), "port/cobj", model.StateReady) {
			return fmt.Errorf("%+v", l.d.Status())
		}
		return nil
	})
	for _, r := range []string{"Port cobj-x", "Port cobj-t", "Bridge cobj-br"} {
		table, name, _ := strings.Cut(r, " ")
		if ext := l.db.Get(t, table, name, "external_ids"); !strings.Contains(ext, "ovsplane-object=cobj") {
			t.Errorf("%s external_ids: %s", r, ext)
		}
	}

	// The real vsctl against the daemon's API: the port no plugin attaches is listed.
	sock := filepath.Join(l.dir, "api.sock")
	srv := apiserver.New(l.d, apiserver.Options{})
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, config.API{Listen: []string{"unix:" + sock}}) }()
	defer func() { stop(); <-served }()
	vsctl := testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/vsctl")
	var out []byte
	lab.WaitFor(t, 20*time.Second, "vsctl status", func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, vsctl, "status")
		cmd.Env = append(os.Environ(), "OVSPLANE_API=unix:"+sock)
		var err error
		out, err = cmd.CombinedOutput()
		if !strings.Contains(string(out), "port/cfgwait") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "port/cfgwait ") {
			if !containsAll(line, "error", `not attached: no configured plugin provides type "nosuch"`) {
				t.Errorf("vsctl status: %q", line)
			}
		}
		if strings.HasPrefix(line, "port/cobj ") && !strings.Contains(line, "ready") {
			t.Errorf("vsctl status: %q", line)
		}
	}
	t.Logf("vsctl status:\n%s", out)
}

func (l *mportLab) hasEventPrefix(p string) bool {
	p = strings.ReplaceAll(p, " ", "_")
	for _, x := range l.events() {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}
