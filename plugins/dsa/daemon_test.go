//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// ovsplanedPkg is the daemon's main package, built once per test binary.
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// daemonConfig is ovsplaned's configuration with the dsa plugin (pinned by sum in pluginDir)
// over the simulated host sim, provisioning dsa0 with two work queues when withDevice.
func daemonConfig(pluginDir, sum, sim string, withDevice bool) string {
	devices := "[]"
	if withDevice {
		devices = `[{dsa: dsa0, wqs: {count: 2}}]`
	}
	return fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: dsa
    path: ovsplane-plugin-dsa
    sha256: %s
    config:
      simulate: %s
      devices: %s
bridges:
  - name: br0
    datapath_type: netdev
`, pluginDir, sum, sim, devices)
}

// watchedOf returns the daemon's watched status of iface by plugin dsa, or nil.
func watchedOf(ctx context.Context, api *client.Client, iface string) (*ovsplanev1.WatchedStatus, error) {
	resp, err := api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
	if err != nil {
		return nil, err
	}
	for _, w := range resp.Msg.GetWatched() {
		if w.GetPlugin() == "dsa" && w.GetInterface() == iface {
			return w, nil
		}
	}
	return nil, nil
}

// TestDaemonEndToEnd runs the real ovsplaned with the real dsa plugin (built, pinned by
// SHA-256, over a simulated SPR host) on Debian's real ovs-vswitchd-dpdk 3.1, which has no
// vhost async. The daemon's configuration provisions dsa0 (two enabled user work queues with
// their device nodes); nothing is written to OVS for it (no vhost-async-support: the build
// would ignore it). A dpdkvhostuserclient port added with ovs-vsctl — foreign to the daemon,
// tagged the way os-vif tags its ports — gets the plugin's honest status in ListStatus: CPU
// copy, this ovs-vswitchd has no vhost async support, naming the real PMD thread and the work
// queue it would use; --detect by hand says the same of the host and the running ovs-vswitchd.
// Ports plugged by os-vif itself (python3-os-vif over python3-ovsdbapp) get the same, see
// osvif. A reload with the same configuration changes nothing on the host; one without the
// device resets dsa0 (disabled, no device nodes), one with it provisions it again.
func TestDaemonEndToEnd(t *testing.T) {
	lab.Require(t, lab.NeedDPDK, lab.NeedOSVIF)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sim := newSim(t, simidxd.SPR)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})

	dir := testkit.ShortTempDir(t, "dsae2e-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-dsa")
	conf := filepath.Join(dir, "ovsplaned.yaml")
	writeConf := func(withDevice bool) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(daemonConfig(pluginDir, sum, sim, withDevice)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf(true)
	api, err := client.Dial("unix:" + filepath.Join(dir, "ovsplaned.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	daemon := testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", conf, "--data-dir", dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		daemon.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", daemon.Out.Tail(6000))
		}
	})
	lab.WaitFor(t, time.Minute, "ovsplaned up with the dsa plugin running", func(ctx context.Context) error {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
		resp, err := api.ListPlugins(ctx, connect.NewRequest(&ovsplanev1.ListPluginsRequest{}))
		if err != nil {
			return err
		}
		for _, p := range resp.Msg.GetPlugins() {
			if p.GetName() == "dsa" && p.GetState() == ovsplanev1.PluginState_PLUGIN_STATE_RUNNING {
				return nil
			}
		}
		return fmt.Errorf("plugins %v", resp.Msg.GetPlugins())
	})

	// 1. Provisioned through the daemon; OVS untouched for DSA.
	lab.WaitFor(t, 30*time.Second, "dsa0 provisioned", func(context.Context) error { return converged(sim) })
	if oc := db.Get(t, "Open_vSwitch", ".", "other_config"); strings.Contains(oc, dsa.VhostAsyncSupportKey) {
		t.Errorf("other_config %s: the plugin asked a stock ovs-vswitchd for vhost async", oc)
	}

	// 2. A foreign vhost-user port, tagged as os-vif tags its ports, gets the plugin's status.
	db.Vsctl(t, "add-port", "br0", "vhu0", "--", "set", "Interface", "vhu0", "type=dpdkvhostuserclient",
		"options:vhost-server-path="+filepath.Join(dir, "vhu0.sock"),
		"external_ids:iface-id=3c1b6fd2-vhu0", "external_ids:attached-mac=fa:16:3e:11:22:33",
		"external_ids:vm-uuid=0c4b2f44-0000", "external_ids:iface-status=active")
	var w *ovsplanev1.WatchedStatus
	lab.WaitFor(t, 30*time.Second, "vhu0's DSA status, with its PMD thread", func(ctx context.Context) error {
		var err error
		if w, err = watchedOf(ctx, api, "vhu0"); err != nil || w == nil {
			return fmt.Errorf("no status of vhu0 (%v)", err)
		}
		if w.GetDetails()["pmd_core"] == "" {
			return fmt.Errorf("no PMD thread yet: %v", w)
		}
		return nil
	})
	t.Logf("vhu0: %s %q %v", w.GetLevel(), w.GetSummary(), w.GetDetails())
	if w.GetLevel() != "warning" || w.GetOwner() != "foreign" || w.GetBridge() != "br0" ||
		!strings.Contains(w.GetSummary(), "CPU copy: this ovs-vswitchd has no vhost async support (DSA prepared, unused)") ||
		w.GetDetails()["reason"] != string(dsa.CodeOVSNoVhostAsync) || w.GetDetails()["wq"] != "wq0.0" || w.GetDetails()["mode"] != "auto" {
		t.Errorf("vhu0's status %v", w)
	}

	// --detect by hand tells the same about the real ovs-vswitchd.
	rc, out, errOut := run("--detect", "--simulate", sim, "--ovs-rundir", db.Dir)
	if rc != 0 {
		t.Fatalf("--detect: exit %d: %s", rc, errOut)
	}
	for _, want := range []string{"ovs: ovs-vswitchd 3.1.0 with DPDK", "vhost async (DMA copies): no\n    OVS_NO_VHOST_ASYNC: ",
		"PMD core " + w.GetDetails()["pmd_core"] + " (NUMA ", "polls vhu0/0", "would use wq0.0 (dsa0, NUMA 0)",
		"wq0.0: dedicated, type user, name dpdk_wq0.0", "enabled, /dev/dsa/wq0.0: DPDK takes it"} {
		if !strings.Contains(out, want) {
			t.Errorf("--detect lacks %q:\n%s", want, out)
		}
	}
	t.Logf("--detect:\n%s", out)
	// Named by its path (--ovs-ctl, as for ZStack's --unixctl=PATH), the same socket says the same.
	ctl, err := ovsproc.VswitchdCtl(db.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rc, byPath, errOut := run("--detect", "--simulate", sim, "--ovs-ctl", ctl)
	if cut := func(s string) string { _, o, _ := strings.Cut(s, "\novs: "); _, o, _ = strings.Cut(o, "\n"); return o }; rc != 0 ||
		!strings.Contains(byPath, "(unixctl "+ctl+")") || cut(byPath) != cut(out) {
		t.Errorf("--detect --ovs-ctl %s: exit %d: %s\n%s", ctl, rc, errOut, byPath)
	}

	// 2b. os-vif plugs a vhost-user VIF and a plain OVS VIF onto the daemon's bridge through
	// ovsdbapp, exactly as Nova's compute agent does: the vhost-user port gets the same honest
	// status (in the API and in `vsctl status`), the plain one none; unplugged, the status goes.
	osvif(ctx, t, db, api, dir, w)

	// 3. A reload with the same configuration changes nothing on the host.
	before := listing(t, sim)
	reload := func() {
		t.Helper()
		if _, err := api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{})); err != nil {
			t.Fatal(err)
		}
	}
	reload()
	if after := listing(t, sim); after != before {
		t.Errorf("a reload with the same configuration changed the simulated host")
	}

	// 4. Reset through the daemon: the device dropped from the configuration.
	writeConf(false)
	reload()
	lab.WaitFor(t, 30*time.Second, "dsa0 reset", func(context.Context) error {
		if s := simAttr(sim, "sys/bus/dsa/devices/dsa0/state"); s != "disabled" {
			return fmt.Errorf("dsa0 %q", s)
		}
		if _, err := os.Stat(filepath.Join(sim, "dev", "dsa", "wq0.0")); err == nil {
			return fmt.Errorf("/dev/dsa/wq0.0 still there")
		}
		return nil
	})
	lab.WaitFor(t, 30*time.Second, "vhu0 says no work queue", func(ctx context.Context) error {
		w, err := watchedOf(ctx, api, "vhu0")
		if err != nil || w == nil || !strings.Contains(w.GetSummary(), "no DSA work queue is prepared") {
			return fmt.Errorf("vhu0: %v (%v)", w, err)
		}
		return nil
	})

	// 5. And provisioned again.
	writeConf(true)
	reload()
	lab.WaitFor(t, 30*time.Second, "dsa0 provisioned again", func(context.Context) error { return converged(sim) })
	if !regexp.MustCompile(`device reset: no longer configured`).MatchString(daemon.Out.String()) {
		t.Errorf("the plugin's reset is not in the daemon's log")
	}
}

// osvif plugs, with os-vif's own OVS plugin (lab.OSVIFPlug: python3-os-vif on its ovsdbapp
// backend), a plain OVS VIF and then a vhost-user VIF (QEMU the socket's server, so OVS type
// dpdkvhostuserclient) of one instance onto br0, the bridge the daemon manages. The vhost-user
// port gets the dsa plugin's status in ListStatus — owner foreign, bridge br0, its os-vif port
// name, the CPU-copy wording of a stock ovs-vswitchd with OVS_NO_VHOST_ASYNC as the reason,
// the PMD thread polling it, that thread's NUMA node and the work queue it would use — the same
// as vhu0 (ref), which ovs-vsctl added; `vsctl status` shows it as a watched row. The plain
// port gets no status from any plugin. After os-vif's unplug the status is gone.
func osvif(ctx context.Context, t *testing.T, db *lab.OVSDB, api *client.Client, dir string, ref *ovsplanev1.WatchedStatus) {
	t.Helper()
	const instance = "6f0b3c2a-1d4e-4f5a-8b6c-7d8e9f0a1b2c"
	vhu := lab.VIF{Kind: lab.VIFVhostUser, ID: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", Address: "fa:16:3e:aa:bb:01",
		InstanceUUID: instance, Bridge: "br0", SocketPath: filepath.Join(dir, "vhu-osvif.sock")}
	tap := lab.VIF{Kind: lab.VIFOpenVSwitch, ID: "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", Address: "fa:16:3e:aa:bb:02",
		InstanceUUID: instance, Bridge: "br0", DatapathType: "netdev"} // netdev: os-vif sets it on the existing bridge
	for _, v := range []lab.VIF{tap, vhu} {
		if err := lab.OSVIFPlug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Get(t, "Interface", vhu.PortName(), "type"); got != "dpdkvhostuserclient" {
		t.Fatalf("os-vif's port %s has type %q, want dpdkvhostuserclient", vhu.PortName(), got)
	}
	for _, v := range []lab.VIF{tap, vhu} {
		if got := db.Get(t, "Interface", v.PortName(), "external_ids"); !strings.Contains(got, v.ID) || !strings.Contains(got, instance) {
			t.Fatalf("os-vif's port %s: external_ids %s lack its iface-id and vm-uuid", v.PortName(), got)
		}
	}
	if got := db.Get(t, "Bridge", "br0", "datapath_type"); got != "netdev" {
		t.Fatalf("br0 datapath_type %q after os-vif's plug, want netdev", got)
	}

	var w *ovsplanev1.WatchedStatus
	lab.WaitFor(t, 30*time.Second, "the os-vif port's DSA status, with its PMD thread", func(ctx context.Context) error {
		var err error
		if w, err = watchedOf(ctx, api, vhu.PortName()); err != nil || w == nil {
			return fmt.Errorf("no status of %s (%v)", vhu.PortName(), err)
		}
		if w.GetDetails()["pmd_core"] == "" {
			return fmt.Errorf("no PMD thread yet: %v", w)
		}
		return nil
	})
	t.Logf("%s: %s %q %v", vhu.PortName(), w.GetLevel(), w.GetSummary(), w.GetDetails())
	d := w.GetDetails()
	if w.GetLevel() != "warning" || w.GetOwner() != "foreign" || w.GetBridge() != "br0" || w.GetPort() != vhu.PortName() ||
		!strings.HasPrefix(w.GetSummary(), "SIMULATED DSA: CPU copy: this ovs-vswitchd has no vhost async support (DSA prepared, unused)") ||
		!strings.Contains(w.GetSummary(), "its PMD core "+d["pmd_core"]+" would use "+d["wq"]) ||
		d["reason"] != string(dsa.CodeOVSNoVhostAsync) || d["mode"] != "auto" || d["numa"] != "0" ||
		!regexp.MustCompile(`^wq0\.[01]$`).MatchString(d["wq"]) {
		t.Errorf("%s's status %v", vhu.PortName(), w)
	}
	if r := ref.GetDetails(); d["pmd_core"] == r["pmd_core"] && d["wq"] != r["wq"] {
		t.Errorf("%s and vhu0 share PMD core %s but not its work queue: %s, %s", vhu.PortName(), d["pmd_core"], d["wq"], r["wq"])
	}
	resp, err := api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.Msg.GetWatched() {
		if s.GetInterface() == tap.PortName() {
			t.Errorf("the plain os-vif port %s has a watched status: %v", tap.PortName(), s)
		}
	}

	// `vsctl status NAME` shows the plugin's view of the foreign port.
	var out, errOut bytes.Buffer
	rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", "unix:" + filepath.Join(dir, "ovsplaned.sock"),
		"--format", "json", "status", vhu.PortName()}, Stdout: &out, Stderr: &errOut})
	var rows []struct {
		Object, Kind, Plugin, Owner, Level, Summary string
		Details                                     map[string]string
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || rc != 0 {
		t.Fatalf("vsctl status %s: exit %d, %v:\n%s%s", vhu.PortName(), rc, err, out.String(), errOut.String())
	}
	out.Reset()
	if rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", "unix:" + filepath.Join(dir, "ovsplaned.sock"), "status"},
		Stdout: &out, Stderr: &errOut}); rc != 0 || !strings.Contains(out.String(), "dsa     "+vhu.PortName()+"  warning  SIMULATED DSA: CPU copy") {
		t.Errorf("vsctl status: exit %d:\n%s%s", rc, out.String(), errOut.String())
	}
	t.Logf("vsctl status:\n%s", out.String())
	if len(rows) != 1 || rows[0].Object != "interface/"+vhu.PortName() || rows[0].Kind != "watched" || rows[0].Plugin != "dsa" ||
		rows[0].Owner != "foreign" || rows[0].Summary != w.GetSummary() || rows[0].Details["wq"] != d["wq"] {
		t.Errorf("vsctl status %s: %s", vhu.PortName(), out.String())
	}

	for _, v := range []lab.VIF{vhu, tap} {
		if err := lab.OSVIFUnplug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
	}
	lab.WaitFor(t, 30*time.Second, "the os-vif port's status gone after its unplug", func(ctx context.Context) error {
		if w, err := watchedOf(ctx, api, vhu.PortName()); err != nil || w != nil {
			return fmt.Errorf("%s: %v (%v)", vhu.PortName(), w, err)
		}
		return nil
	})
	if w, err := watchedOf(ctx, api, "vhu0"); err != nil || w == nil {
		t.Errorf("vhu0's status went with os-vif's unplug: %v", err)
	}
}
