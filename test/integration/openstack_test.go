//go:build linux

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// openstackConfig is the compute node's ovsplaned: br-int (netdev) with one port of its own,
// the watchrec test plugin giving every vhu* and tap* interface a status (a watcher plugin, as
// dsa and vdpa are), and metrics on metricsAddr.
func openstackConfig(metricsAddr, pluginDir, sum string) string {
	return fmt.Sprintf(`
metrics:
  address: %s
plugin_dir: %s
plugins:
  - name: watchrec
    path: watchrec
    sha256: %s
    config:
      statuses:
        - {prefix: vhu, level: info, summary: "vhost-user port seen"}
        - {prefix: tap, level: info, summary: "tap port seen"}
bridges:
  - name: br-int
    datapath_type: netdev
    ports:
      - name: cfg0
        interfaces:
          - name: cfg0
            type: internal
`, metricsAddr, pluginDir, sum)
}

// osvifRows is what the test compares of os-vif's rows before and after the daemon's passes:
// their UUIDs (a row deleted and written again has another) and every column os-vif writes.
func osvifRows(t *testing.T, db *lab.OVSDB, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		out["Port "+n] = db.Vsctl(t, "--columns=_uuid,name,interfaces,tag,external_ids,other_config", "list", "Port", n)
		out["Interface "+n] = db.Vsctl(t, "--columns=_uuid,name,type,options,external_ids,other_config,mtu_request", "list", "Interface", n)
	}
	return out
}

// TestOpenStackOSVIF: a compute node whose br-int ovsplaned manages (the real daemon on a real
// ovsdb-server and ovs-vswitchd) and whose VIFs os-vif plugs, with Debian's python3-os-vif and
// python3-ovsdbapp, through both of os-vif's backends: the native one (ovsdbapp's IDL) and the
// vsctl one, running ovsplane's vsctl as the "ovs-vsctl" first on PATH.
//   - os-vif plugs vhost-user (dpdkvhostuserclient) and plain OVS ports onto the daemon's
//     bridge; the daemon never modifies their rows: after it repaired its own deleted port and
//     after a reload, every os-vif row has the same UUID and columns;
//   - the daemon's status does not claim them, and its watcher plugin sees each one, as owner
//     "foreign";
//   - the daemon killed (SIGKILL) and restarted while os-vif keeps plugging loses nothing:
//     every plugged port is there with its iface-id, attached-mac and vm-uuid, the daemon's own
//     objects are ready again;
//   - os-vif unplugs them all, through either backend; the daemon's bridge and port stay.
func TestOpenStackOSVIF(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedOSVIF)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	h := newDaemonHome(t, "osv-", "", 6000)
	pluginDir := filepath.Join(h.dir, "plugins")
	sum := testkit.InstallPlugin(t, "../../vswitchd/watch/testdata/watchrec", pluginDir, "watchrec")
	metricsAddr := testkit.FreeTCPAddr(t)
	if err := os.WriteFile(h.conf, []byte(openstackConfig(metricsAddr, pluginDir, sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *daemonProc {
		return h.run(ctx, time.Minute, (*daemonProc).kill, "--config", h.conf, "--data-dir", h.dir,
			"--ovsdb-endpoints", db.Endpoint, "--log-level", "info")
	}
	daemon := start()
	waitReady := func(keys ...string) {
		t.Helper()
		lab.WaitFor(t, time.Minute, "ovsplaned's "+strings.Join(keys, ", ")+" ready", func(ctx context.Context) error {
			resp, err := h.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
			if err != nil {
				return err
			}
			ready := map[string]bool{}
			for _, s := range resp.Msg.GetStatuses() {
				ready[s.GetKey()] = s.GetState() == ovsplanev1.State_STATE_READY
			}
			for _, k := range keys {
				if !ready[k] {
					return fmt.Errorf("%s not ready", k)
				}
			}
			return nil
		})
	}
	waitReady("bridge/br-int", "interface/cfg0")

	// ovsplane's vsctl as the ovs-vsctl os-vif's vsctl backend runs.
	binDir := filepath.Join(h.dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/vsctl"), filepath.Join(binDir, "ovs-vsctl")); err != nil {
		t.Fatal(err)
	}
	native := lab.OSVIFOptions{}
	vsctl := lab.OSVIFOptions{Backend: lab.OSVIFVsctl, VsctlDir: binDir}

	const instance = "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a"
	type plugged struct {
		vif lab.VIF
		via lab.OSVIFOptions
	}
	vif := func(i int, kind lab.VIFKind) lab.VIF {
		v := lab.VIF{Kind: kind, ID: fmt.Sprintf("%02xa1b2c3-d4e5-4f60-8a1b-2c3d4e5f6a7b", i), Address: fmt.Sprintf("fa:16:3e:00:20:%02x", i),
			InstanceUUID: instance, MTU: 9000}
		if kind == lab.VIFVhostUser {
			v.SocketPath = filepath.Join(h.dir, fmt.Sprintf("vhu%d.sock", i))
		} else {
			v.DatapathType = "netdev" // the bridge's own: no datapath fight here (see reconcile's TestLabOSVIFDatapathConflict)
		}
		return v
	}
	first := []plugged{{vif(1, lab.VIFVhostUser), native}, {vif(2, lab.VIFOpenVSwitch), native},
		{vif(3, lab.VIFVhostUser), vsctl}, {vif(4, lab.VIFOpenVSwitch), vsctl}}
	plug := func(p plugged) {
		t.Helper()
		if log, err := lab.OSVIFPlugWith(ctx, db.Endpoint, p.vif, p.via); err != nil {
			t.Fatalf("%v\nos-vif's log:\n%s", err, log)
		}
	}
	var names []string
	for _, p := range first {
		plug(p)
		names = append(names, p.vif.PortName())
	}
	checkPlugged := func(ps []plugged) {
		t.Helper()
		for _, p := range ps {
			v, n := p.vif, p.vif.PortName()
			if got := db.Vsctl(t, "port-to-br", n); got != "br-int" {
				t.Errorf("%s (%s backend): on bridge %q, want br-int", n, p.via.Backend, got)
			}
			for k, want := range map[string]string{"iface-id": v.ID, "attached-mac": v.Address, "vm-uuid": instance, "iface-status": "active"} {
				if got := db.Get(t, "Interface", n, "external_ids:"+k); got != want {
					t.Errorf("%s (%s backend): external_ids:%s = %q, want %q", n, p.via.Backend, k, got, want)
				}
			}
			if ext := db.Get(t, "Interface", n, "external_ids"); strings.Contains(ext, ovsdb.TagPrefix) {
				t.Errorf("%s: the daemon tagged os-vif's interface: %s", n, ext)
			}
			if v.Kind == lab.VIFVhostUser {
				if got := db.Get(t, "Interface", n, "type"); got != "dpdkvhostuserclient" {
					t.Errorf("%s: type %q, want dpdkvhostuserclient", n, got)
				}
				if got := db.Get(t, "Interface", n, "mtu_request"); got != "9000" {
					t.Errorf("%s (%s backend): mtu_request %q, want 9000", n, p.via.Backend, got)
				}
			}
		}
	}
	checkPlugged(first)
	before := osvifRows(t, db, names)

	// The daemon repairs its own port (a pass that writes) and reloads: os-vif's rows untouched.
	db.Vsctl(t, "del-port", "br-int", "cfg0")
	lab.WaitFor(t, time.Minute, "cfg0 back on br-int", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-ports", "br-int")
		if err != nil || !strings.Contains(" "+strings.Join(strings.Fields(out), " ")+" ", " cfg0 ") {
			return fmt.Errorf("ports of br-int: %q (%v)", out, err)
		}
		return nil
	})
	waitReady("interface/cfg0")
	if _, err := h.api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{})); err != nil {
		t.Fatal(err)
	}
	waitReady("bridge/br-int", "interface/cfg0")
	after := osvifRows(t, db, names)
	for k, b := range before {
		if after[k] != b {
			t.Errorf("the daemon changed os-vif's %s:\nbefore %s\nafter  %s", k, b, after[k])
		}
	}

	// Not the daemon's: absent from its statuses; its watcher plugin sees them, as foreign.
	lab.WaitFor(t, time.Minute, "the watcher plugin's status of every os-vif port", func(ctx context.Context) error {
		resp, err := h.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
		if err != nil {
			return err
		}
		for _, s := range resp.Msg.GetStatuses() {
			for _, n := range names {
				if s.GetName() == n {
					t.Fatalf("the daemon reports os-vif's %s as its own: %v", n, s)
				}
			}
		}
		seen := map[string]*ovsplanev1.WatchedStatus{}
		for _, w := range resp.Msg.GetWatched() {
			seen[w.GetInterface()] = w
		}
		for _, n := range names {
			w := seen[n]
			if w == nil {
				return fmt.Errorf("no watched status of %s: %v", n, resp.Msg.GetWatched())
			}
			if w.GetOwner() != "foreign" || w.GetBridge() != "br-int" || w.GetPort() != n {
				t.Fatalf("watched status of %s: %v, want owner foreign on br-int", n, w)
			}
		}
		return nil
	})

	// Kill the daemon while os-vif keeps plugging; restart it: nothing lost.
	var second []plugged
	for i := 5; i <= 10; i++ {
		kind, via := lab.VIFVhostUser, native
		if i%2 == 0 {
			kind = lab.VIFOpenVSwitch
		}
		if i%3 == 0 {
			via = vsctl
		}
		second = append(second, plugged{vif(i, kind), via})
	}
	var wg sync.WaitGroup
	plugErr := make(chan error, 1)
	halfway := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, p := range second {
			if i == 2 {
				close(halfway)
			}
			if log, err := lab.OSVIFPlugWith(ctx, db.Endpoint, p.vif, p.via); err != nil {
				plugErr <- fmt.Errorf("%w\nos-vif's log:\n%s", err, log)
				return
			}
		}
	}()
	<-halfway
	daemon.kill()
	daemon = start()
	wg.Wait()
	select {
	case err := <-plugErr:
		t.Fatal(err)
	default:
	}
	waitReady("bridge/br-int", "interface/cfg0")
	checkPlugged(append(append([]plugged{}, first...), second...))
	for _, p := range second {
		names = append(names, p.vif.PortName())
	}
	if ports := strings.Fields(db.Vsctl(t, "list-ports", "br-int")); len(ports) != len(names)+1 {
		t.Errorf("br-int has ports %v, want cfg0 and the %d os-vif ports", ports, len(names))
	}

	// Unplug everything through the backend that plugged it.
	for _, p := range append(first, second...) {
		if log, err := lab.OSVIFUnplugWith(ctx, db.Endpoint, p.vif, p.via); err != nil {
			t.Fatalf("%v\nos-vif's log:\n%s", err, log)
		}
	}
	if got := strings.Join(strings.Fields(db.Vsctl(t, "list-ports", "br-int")), " "); got != "cfg0" {
		t.Errorf("after unplugging, br-int has ports %q, want cfg0 only", got)
	}
	waitReady("bridge/br-int", "interface/cfg0")
	if daemon.Exited() {
		t.Errorf("the restarted ovsplaned exited: %v", daemon.Cmd.ProcessState)
	}
}

// TestOpenStackDatapathConflictReported: with the real daemon, the real os-vif plugging plain
// OVS VIFs whose port profile has no datapath_type (os-vif writes "system" onto br-int at each
// plug) is reported after the third repair: br-int's status through the API is an error naming
// datapath_type, "system" and the Neutron setting to change, the daemon logs it, and the
// metric ovsplane_reconcile_conflict{object="bridge/br-int",column="datapath_type"} is 1. The
// daemon keeps repairing: br-int ends netdev.
func TestOpenStackDatapathConflictReported(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedOSVIF)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	h := newDaemonHome(t, "osc-", "", 6000)
	metricsAddr := testkit.FreeTCPAddr(t)
	if err := os.WriteFile(h.conf, []byte(fmt.Sprintf(`
metrics:
  address: %s
bridges:
  - name: br-int
    datapath_type: netdev
`, metricsAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := h.run(ctx, time.Minute, (*daemonProc).kill, "--config", h.conf, "--data-dir", h.dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info")
	for i := 1; i <= 3; i++ {
		v := lab.VIF{Kind: lab.VIFOpenVSwitch, ID: fmt.Sprintf("%02xc0ffee-0000-4000-8000-000000000000", i),
			Address: fmt.Sprintf("fa:16:3e:00:30:%02x", i), InstanceUUID: "1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b"}
		if err := lab.OSVIFPlug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
		lab.WaitFor(t, time.Minute, "br-int repaired to netdev", func(ctx context.Context) error {
			if out, _, err := db.VsctlErr(ctx, "get", "Bridge", "br-int", "datapath_type"); err != nil || out != "netdev" {
				return fmt.Errorf("datapath_type %q (%v)", out, err)
			}
			return nil
		})
	}
	var msg string
	lab.WaitFor(t, time.Minute, "br-int's status to report the conflict", func(ctx context.Context) error {
		resp, err := h.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
		if err != nil {
			return err
		}
		for _, s := range resp.Msg.GetStatuses() {
			if s.GetKey() == "bridge/br-int" && s.GetState() == ovsplanev1.State_STATE_ERROR {
				msg = s.GetError()
				return nil
			}
		}
		return fmt.Errorf("br-int not in error")
	})
	for _, want := range []string{`bridge "br-int" datapath_type to "system"`, `repaired it to "netdev" 3 times`, "[ovs] datapath_type = netdev"} {
		if !strings.Contains(msg, want) {
			t.Errorf("br-int's status %q lacks %q", msg, want)
		}
	}
	lab.WaitFor(t, 30*time.Second, "the conflict metric", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`ovsplane_reconcile_conflict{column="datapath_type",object="bridge/br-int"} 1`,
			`ovsplane_reconcile_conflict_repairs_total{column="datapath_type",object="bridge/br-int"} 1`} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("no %s in /metrics", want)
			}
		}
		return nil
	})
	if !strings.Contains(daemon.Out.String(), "conflict with another OVSDB writer") {
		t.Errorf("the daemon did not log the conflict")
	}
}
