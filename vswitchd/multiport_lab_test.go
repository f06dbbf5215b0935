//go:build linux

package vswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func mportPort(name string, opts map[string]string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "mport", Options: opts}}}
}

// obj1Ports are the Port rows of object obj1 (the created bridge's local port included).
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

	began := time.Now()
	info, err := l.d.ApplyPort(ctx, "br0", mportPort("obj1", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ApplyPort of a 3-port, 2-bridge object (attach, one transaction, ovs-vswitchd's acknowledgement): %v", time.Since(began).Round(time.Millisecond))
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
	began = time.Now()
	l.waitRunning(pid)
	t.Logf("kill -9 to the plugin running again with obj1 replayed (and one reconcile pass): %v", time.Since(began).Round(time.Millisecond))
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
	began = time.Now()
	if err := l.d.DeletePort(ctx, "obj1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("DeletePort of the object (one transaction, then Detach): %v", time.Since(began).Round(time.Millisecond))
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

	// The API cannot take the object's rows.
	if _, err := l.d.ApplyBridge(ctx, model.Bridge{Name: "cobj-br"}); !errors.Is(err, model.ErrConflict) || !strings.Contains(err.Error(), `plugin object "cobj"`) {
		t.Errorf("ApplyBridge of the object's bridge: %v", err)
	}
	plain := model.Port{Name: "cobj-x", Interfaces: []model.Interface{{Name: "cobj-x", Type: "internal"}}}
	if _, err := l.d.ApplyPort(ctx, "br0", plain); !errors.Is(err, model.ErrConflict) || !strings.Contains(err.Error(), `plugin object "cobj"`) {
		t.Errorf("ApplyPort of the object's port: %v", err)
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
