//go:build linux

package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/watch"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// record is one line of the watchrec plugin's events.log (testdata/watchrec).
type record struct {
	PID    int                `json:"pid"`
	At     int64              `json:"at"`
	Failed bool               `json:"failed"`
	Batch  api.PortEventBatch `json:"batch"`
}

// rig is a real ovsdb-server and ovs-vswitchd (dummy datapath), the daemon's ovsdb client and
// one writer on it, a plugin host running the watchrec plugin as a real process, and the
// Dispatcher between them, fed by the host's state changes as ovsplaned feeds it.
type rig struct {
	t       *testing.T
	ctx     context.Context
	db      *lab.OVSDB
	c       *ovsdb.Client
	w       *writer.Writer
	h       *host.Host
	disp    *watch.Dispatcher
	root    string
	entry   model.Plugin
	pidSeen map[int]bool
}

// newRig starts OVS and the client; start starts the plugin and the Dispatcher.
func newRig(t *testing.T) *rig {
	t.Helper()
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint}, Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w, err := writer.New(ctx, c, writer.Options{Logger: testkit.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return &rig{t: t, ctx: ctx, db: db, c: c, w: w, root: testkit.ShortTempDir(t, "wt"), pidSeen: map[int]bool{}}
}

// start installs watchrec with filter and config, runs the Dispatcher with opts and starts
// the plugin under a host whose calls time out after callTimeout.
func (r *rig) start(filter api.WatchFilter, config map[string]any, opts watch.Options, callTimeout time.Duration) {
	t := r.t
	t.Helper()
	bin := testkit.BuildOnce(t, "./testdata/watchrec")
	pluginDir, dataDir := filepath.Join(r.root, "p"), filepath.Join(r.root, "d")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{pluginDir, dataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "watchrec"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	fj, _ := json.Marshal(filter)
	var disp *watch.Dispatcher
	hostReady := make(chan struct{})
	h, err := host.New(host.Options{PluginDir: pluginDir, DataDir: dataDir, Logger: testkit.Logger(t, slog.LevelWarn),
		Environ: []string{"PATH=/usr/bin:/bin", "WATCHREC_FILTER=" + string(fj)}, CallTimeout: callTimeout,
		HealthInterval: 500 * time.Millisecond,
		OnChange: func(host.Status) {
			go func() { // as cmd/ovsplaned's pluginHost does: never back into the host synchronously
				<-hostReady
				disp.SetWatchers(watch.HostWatchers(r.h))
			}()
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	opts.Owner, opts.PluginKey, opts.Logger = r.c.Owner(), vswitchd.PluginKey, testkit.Logger(t, slog.LevelInfo)
	feed := r.c.WatchInterfaces()
	disp = watch.New(feed, r.w, opts)
	r.disp = disp
	close(hostReady)
	dctx, stop := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { _ = disp.Run(dctx); close(done) }()
	t.Cleanup(func() {
		stop()
		<-done
		feed.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = h.Close(cctx)
	})
	r.entry = model.Plugin{Name: "watchrec", Path: "watchrec", SHA256: testkit.FileSHA256(t, filepath.Join(pluginDir, "watchrec")),
		Config: config, Env: []string{"WATCHREC_FILTER"}}
	if err := h.Start(r.ctx, []model.Plugin{r.entry}); err != nil {
		t.Fatal(err)
	}
	if st := r.status(); st.State != host.StateRunning {
		t.Fatalf("watchrec: %+v", st)
	}
	disp.SetWatchers(watch.HostWatchers(h))
}

// reconfigure hands the running plugin a new config (host Reload: Configure again, same process).
func (r *rig) reconfigure(config map[string]any) {
	r.t.Helper()
	r.entry.Config = config
	if err := r.h.Reload(r.ctx, []model.Plugin{r.entry}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) status() host.Status {
	for _, st := range r.h.Plugins() {
		if st.Name == "watchrec" {
			return st
		}
	}
	r.t.Fatal("no watchrec plugin")
	return host.Status{}
}

func (r *rig) stats() watch.Stats {
	for _, s := range r.disp.Stats() {
		if s.Plugin == "watchrec" {
			return s
		}
	}
	return watch.Stats{}
}

// records reads everything the plugin recorded so far.
func (r *rig) records() []record {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.root, "d", "plugin-data", "watchrec", "events.log"))
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			r.t.Fatalf("events.log: %v: %s", err, sc.Text())
		}
		out = append(out, rec)
	}
	return out
}

// waitEvent waits until the plugin recorded an event for which match holds and returns it
// with its record (a bound only keeps a broken test from hanging).
func (r *rig) waitEvent(what string, match func(rec record, ev api.PortEvent) bool) (record, api.PortEvent) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, rec := range r.records() {
			for _, ev := range rec.Batch.Events {
				if !rec.Failed && match(rec, ev) {
					return rec, ev
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the plugin never saw %s; stats %+v; records:\n%s", what, r.stats(), r.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *rig) dump() string {
	var b strings.Builder
	for _, rec := range r.records() {
		fmt.Fprintf(&b, "pid %d failed %v resync %v done %v:", rec.PID, rec.Failed, rec.Batch.Resync, rec.Batch.ResyncDone)
		for _, ev := range rec.Batch.Events {
			fmt.Fprintf(&b, " %s:%d:%s/%s ofport %d;", ev.Interface, ev.Kind, ev.Bridge, ev.Port, ev.Ofport)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// view replays what the plugin process pid was told, as a plugin following the contract
// would: a Resync batch starts over, then events add, change and remove. complete is true
// when the last snapshot was done.
func view(recs []record, pid int) (v map[string]api.PortEvent, complete bool) {
	v = map[string]api.PortEvent{}
	complete = true
	for _, rec := range recs {
		if rec.PID != pid || rec.Failed {
			continue
		}
		if rec.Batch.Resync {
			clear(v)
			complete = false
		}
		for _, ev := range rec.Batch.Events {
			if ev.Kind == api.EventRemoved {
				delete(v, ev.Interface)
			} else {
				v[ev.Interface] = ev
			}
		}
		if rec.Batch.ResyncDone {
			complete = true
		}
	}
	return v, complete
}

// ifacesOn lists the interfaces OVSDB holds on the given bridges (ovs-vsctl's list-ifaces,
// plus each bridge's own interface, which it does not list).
func (r *rig) ifacesOn(bridges ...string) map[string]bool {
	r.t.Helper()
	out := map[string]bool{}
	for _, br := range bridges {
		out[br] = true
		for _, p := range strings.Fields(r.db.Vsctl(r.t, "list-ifaces", br)) {
			out[p] = true
		}
	}
	return out
}

// waitView waits until the plugin process pid's view (complete) names exactly want.
func (r *rig) waitView(pid int, want map[string]bool, check func(map[string]api.PortEvent) error) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, complete := view(r.records(), pid)
		err := fmt.Errorf("snapshot not complete")
		if complete {
			err = sameNames(v, want)
			if err == nil && check != nil {
				err = check(v)
			}
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("plugin pid %d's view: %v; stats %+v; records:\n%s", pid, err, r.stats(), r.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sameNames(v map[string]api.PortEvent, want map[string]bool) error {
	for n := range want {
		if _, ok := v[n]; !ok {
			return fmt.Errorf("%s missing", n)
		}
	}
	for n := range v {
		if !want[n] {
			return fmt.Errorf("%s should be gone", n)
		}
	}
	return nil
}

// requireOvsdbapp fails or skips (as lab.Require does) when python3-ovsdbapp is missing.
func requireOvsdbapp(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import ovsdbapp.schema.open_vswitch.impl_idl").Run(); err != nil {
		msg := "python3-ovsdbapp is missing (/usr/bin/python3 cannot import ovsdbapp): apt-get install -y python3-ovsdbapp, or run `make test` as root"
		if os.Getenv(lab.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// ovsdbappScript adds a port the way os-vif does (ovsdbapp's add_port, then the Interface's
// external_ids), in one transaction, and prints the unix nanoseconds just before the
// transaction and just after it committed.
const ovsdbappScript = `
import sys, time
from ovsdbapp.backend.ovs_idl import connection
from ovsdbapp.schema.open_vswitch import impl_idl
endpoint, bridge, port = sys.argv[1:4]
idl = connection.OvsdbIdl.from_server(endpoint, 'Open_vSwitch')
api = impl_idl.OvsdbIdl(connection.Connection(idl, timeout=30))
before = time.time_ns()
with api.transaction(check_error=True) as txn:
    txn.add(api.add_port(bridge, port, may_exist=True))
    txn.add(api.db_set('Interface', port, ('external_ids', {'iface-id': 'vm-' + port, 'attached-mac': 'fa:16:3e:00:00:01', 'iface-status': 'active'})))
after = time.time_ns()
print(before, after)
`

// ovsdbappAddPort runs ovsdbappScript and returns its two times.
func (r *rig) ovsdbappAddPort(bridge, port string) (before, after time.Time) {
	r.t.Helper()
	out, err := exec.CommandContext(r.ctx, "/usr/bin/python3", "-c", ovsdbappScript, r.db.Endpoint, bridge, port).CombinedOutput()
	if err != nil {
		r.t.Fatalf("ovsdbapp add_port %s: %v\n%s", port, err, out)
	}
	var b, a int64
	if _, err := fmt.Sscan(string(out), &b, &a); err != nil {
		r.t.Fatalf("ovsdbapp output %q: %v", out, err)
	}
	return time.Unix(0, b), time.Unix(0, a)
}
