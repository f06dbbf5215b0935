//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// vdpaPF is the PF of the simulated ConnectX-6 Dx in vdpaFixture (switchdev, VFs 0 and 1).
const vdpaPF = "0000:65:00.0"

// vdpaFixture returns the absolute path of the fixture the vdpa plugin simulates.
func vdpaFixture(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../vdpa/testdata/cx6dx-switchdev.fixture")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// vdpaPort is an API port of type vdpa with the given options.
func vdpaPort(name string, opts map[string]string) *ovsplanev1.Port {
	return &ovsplanev1.Port{Name: name, Interfaces: []*ovsplanev1.Interface{{Name: name, Type: "vdpa", Options: opts}}}
}

// ifaceError is what `ovs-vsctl get Interface name error` prints, unquoted: ovs-vswitchd's
// own message for an interface it could not set up ("" when there is none).
func ifaceError(t *testing.T, db *lab.OVSDB, name string) string {
	t.Helper()
	if out := db.Get(t, "Interface", name, "error"); out != "[]" {
		return out
	}
	return ""
}

// rowCount returns how many rows of table are named name.
func rowCount(t *testing.T, db *lab.OVSDB, table, name string) int {
	t.Helper()
	return len(strings.Fields(db.Vsctl(t, "--bare", "--columns=_uuid", "find", table, "name="+name)))
}

// TestVDPAEndToEnd runs the real ovsplaned with the real vdpa plugin (built, pinned by
// SHA-256, in simulation mode on a ConnectX-6 Dx fixture) on a real ovs-vswitchd with DPDK.
// A kernel-mode vdpa port applied through the API is provisioned by the plugin (endpoint
// /dev/vhost-vdpa-N, representor) and written by the daemon as the VF representor, a type=dpdk
// interface with dpdk-devargs=<PF>,representor=vf<N>. No mlx5 device exists here, so
// ovs-vswitchd cannot attach it: the port's status must be error with ovs-vswitchd's own
// message (Interface.error), while an internal and a vhost-user port on the same bridge are
// ready and the bridge too. vsctl add-port with type=vdpa goes the same way. Bad options are
// refused by the plugin and nothing is written. Deleting a port removes its rows and runs the
// plugin's Detach (its VF can be attached again under another name). After kill -9 of
// ovsplaned and a new start, the ports are still there, once, with the same errors.
func TestVDPAEndToEnd(t *testing.T) {
	lab.Require(t, lab.NeedDPDK, lab.NeedNetns)
	ctx := timeout(t, 5*time.Minute)
	vsns := lab.NewNetns(t)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK, Netns: vsns})

	l := newDaemonLab(t, db)
	pdir, sum := buildPlugin(t, l.dir, "../../plugins/vdpa", "ovsplane-plugin-vdpa")
	conf := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: vdpa
    path: ovsplane-plugin-vdpa
    sha256: %s
    config:
      simulate: %s
bridges:
  - name: br0
    datapath_type: netdev
`, pdir, sum, vdpaFixture(t))
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := l.start(ctx)
	if p, err := pluginByName(ctx, l, "vdpa"); err != nil || p.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING {
		t.Fatalf("plugin vdpa: %+v, %v", p, err)
	}

	// 1. A kernel-mode vdpa port: the plugin provisions it, the daemon writes the representor.
	vm0 := vdpaPort("vm0", map[string]string{"pf": vdpaPF, "vf": "0", "mac": "02:11:22:33:44:00", "mode": "kernel"})
	resp, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: vm0}))
	if err != nil {
		t.Fatalf("ApplyPort vm0: %v", err)
	}
	info := resp.Msg.GetPort()
	t.Logf("vm0: status %v %q; plugin status %q; endpoints %v", info.GetStatus().GetState(), info.GetStatus().GetError(), info.GetPluginStatus(), info.GetEndpoints())
	checkVDPAInfo(t, info, "vm0", 0)
	checkVDPARows(t, db, "vm0", 0)

	// 2. No mlx5 device here: ovs-vswitchd cannot attach the representor, and the port's status
	// is its own message, the Interface.error column, in every view of the daemon.
	vsErr := ifaceError(t, db, "vm0")
	t.Logf("ovs-vswitchd's error for vm0: %q", vsErr)
	if !strings.Contains(vsErr, vdpaPF+",representor=vf0") {
		t.Fatalf("Interface vm0 error = %q, want ovs-vswitchd's message naming the devargs", vsErr)
	}
	checkVDPAError(ctx, t, l, "vm0", vsErr, info)

	// Nothing else is disturbed: an internal and a vhost-user port on the same bridge are ready
	// with an ofport, and so is the bridge.
	others := []*ovsplanev1.Port{apiPort("plain0"), {Name: "vhu0", Interfaces: []*ovsplanev1.Interface{{Name: "vhu0",
		Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": filepath.Join(db.Dir, "vhu0.sock")}}}}}
	for _, p := range others {
		resp, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: p}))
		if err != nil {
			t.Fatalf("ApplyPort %s: %v", p.Name, err)
		}
		if !checkReadyPort(t, resp.Msg.GetPort()) { // say what OVSDB held when the answer came
			t.Logf("OVSDB after ApplyPort %s: ofport %s, error %s, cur_cfg %s, next_cfg %s", p.Name, db.Get(t, "Interface", p.Name, "ofport"),
				db.Get(t, "Interface", p.Name, "error"), db.Get(t, "Open_vSwitch", ".", "cur_cfg"), db.Get(t, "Open_vSwitch", ".", "next_cfg"))
		}
	}
	checkUndisturbed(ctx, t, l, db)

	// vsctl add-port with type=vdpa goes through the daemon and ends the same way.
	vsctl := exec.CommandContext(ctx, vsctlBinary(t), "--db="+db.Endpoint, "add-port", "br0", "vm1", "--",
		"set", "Interface", "vm1", "type=vdpa", "options:pf="+vdpaPF, "options:vf=1", "options:mac=02:11:22:33:44:01", "options:mode=kernel")
	vsctl.Env = append(os.Environ(), "OVSPLANE_API=unix:"+filepath.Join(l.dir, "ovsplaned.sock"))
	out, err := vsctl.CombinedOutput()
	t.Logf("vsctl add-port vm1 type=vdpa: %v\n%s", err, out)
	// Like ovs-vsctl: the port is added (exit 0) with vswitchd's error on standard error.
	if err != nil || !strings.Contains(string(out), "Error detected while setting up 'vm1': "+ifaceError(t, db, "vm1")) {
		t.Errorf("vsctl add-port vm1 type=vdpa: %v, output %q; want success with ovs-vswitchd's error for vm1", err, out)
	}
	gp, gerr := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "vm1"}))
	if gerr != nil {
		t.Fatalf("GetPort vm1 after vsctl add-port: %v (vsctl: %v %s)", gerr, err, out)
	}
	checkVDPAInfo(t, gp.Msg.GetPort(), "vm1", 1)
	checkVDPARows(t, db, "vm1", 1)
	checkVDPAError(ctx, t, l, "vm1", ifaceError(t, db, "vm1"), nil)

	// 3. Bad input: refused by the plugin, naming the option; nothing written.
	bad := []struct {
		name string
		opts map[string]string
		code connect.Code
		says []string
	}{
		// Malformed options: the plugin's Validate names the option.
		{"bad0", map[string]string{"pf": vdpaPF, "vf": "-1", "mode": "kernel"}, connect.CodeInvalidArgument, []string{"options:vf", "must be >= 0"}},
		{"bad1", map[string]string{"vf": "1", "mode": "kernel"}, connect.CodeInvalidArgument, []string{"options:pf", "pf is required"}},
		{"bad2", map[string]string{"pf": vdpaPF, "vf": "x", "mode": "kernel"}, connect.CodeInvalidArgument, []string{"options:vf", "a VF index"}},
		// Well-formed but beyond what this PF can have (sriov_totalvfs 8): the host must change
		// (firmware NUM_OF_VFS), so it is the catalogue's SRIOV_CAP, FailedPrecondition.
		{"bad3", map[string]string{"pf": vdpaPF, "vf": "99", "mode": "kernel"}, connect.CodeFailedPrecondition, []string{"SRIOV_CAP", "vf 99", "sriov_totalvfs 8"}},
		// VF 1 is vm1's.
		{"bad4", map[string]string{"pf": vdpaPF, "vf": "1", "mode": "kernel"}, connect.CodeFailedPrecondition, []string{"VF_IN_USE", `"vm1"`}},
	}
	for _, b := range bad {
		_, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: vdpaPort(b.name, b.opts)}))
		t.Logf("%s %v: %v", b.name, b.opts, err)
		if connect.CodeOf(err) != b.code {
			t.Errorf("%s %v: code %v, want %v: %v", b.name, b.opts, connect.CodeOf(err), b.code, err)
		}
		for _, w := range b.says {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %v does not say %q", b.name, b.opts, err, w)
			}
		}
		if n := rowCount(t, db, "Port", b.name) + rowCount(t, db, "Interface", b.name); n != 0 {
			t.Errorf("refused port %s: %d rows written", b.name, n)
		}
		if _, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: b.name})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("refused port %s: GetPort %v, want NotFound", b.name, err)
		}
	}

	// 4. Delete: the rows go, and the plugin's Detach ran: VF 0 is free again, so a port of
	// another name gets it (had the plugin kept vm0's vDPA device or its record, it would be
	// refused with VF_IN_USE, as bad4 was).
	if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: "vm0"})); err != nil {
		t.Fatalf("DeletePort vm0: %v", err)
	}
	if n := rowCount(t, db, "Port", "vm0") + rowCount(t, db, "Interface", "vm0"); n != 0 {
		t.Errorf("deleted port vm0: %d rows left", n)
	}
	if slices.Contains(strings.Fields(db.Vsctl(t, "list-ports", "br0")), "vm0") {
		t.Errorf("deleted port vm0 still on br0")
	}
	if _, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "vm0"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("deleted port vm0: GetPort %v, want NotFound", err)
	}
	vm2 := vdpaPort("vm2", map[string]string{"pf": vdpaPF, "vf": "0", "mac": "02:11:22:33:44:02", "mode": "kernel"})
	resp, err = l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: vm2}))
	if err != nil {
		t.Fatalf("ApplyPort vm2 on the VF vm0 had: %v (the plugin's Detach of vm0 did not run?)", err)
	}
	checkVDPAInfo(t, resp.Msg.GetPort(), "vm2", 0)
	checkVDPARows(t, db, "vm2", 0)
	vm2Err := ifaceError(t, db, "vm2")
	checkVDPAError(ctx, t, l, "vm2", vm2Err, resp.Msg.GetPort())

	// 5. kill -9 of ovsplaned, and a new start: the ports are still there, once, untouched,
	// with the same error.
	uuids, vsErrs := map[string]string{}, map[string]string{"vm1": ifaceError(t, db, "vm1"), "vm2": vm2Err}
	for _, name := range []string{"vm1", "vm2", "plain0", "vhu0"} {
		uuids[name] = db.Get(t, "Port", name, "_uuid") + "/" + db.Get(t, "Interface", name, "_uuid")
	}
	old, err := pluginByName(ctx, l, "vdpa")
	if err != nil {
		t.Fatal(err)
	}
	daemon.kill()
	l.start(ctx)
	// The killed daemon's plugin process is not killed with it (plugins/host starts plugins in
	// their own process group without a parent-death signal): note it and end it here.
	bin := filepath.Join(pdir, "ovsplane-plugin-vdpa")
	if slices.Contains(pluginPIDs(t, bin), int(old.GetPid())) {
		t.Logf("note: the vdpa plugin of the killed ovsplaned (pid %d) still runs after the restart; killing it", old.GetPid())
		_ = syscall.Kill(int(old.GetPid()), syscall.SIGKILL)
	}
	if p, err := pluginByName(ctx, l, "vdpa"); err != nil || p.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING || p.GetPid() == old.GetPid() {
		t.Fatalf("plugin vdpa after the restart: %+v, %v", p, err)
	}
	for _, name := range []string{"vm1", "vm2", "plain0", "vhu0"} {
		if got := db.Get(t, "Port", name, "_uuid") + "/" + db.Get(t, "Interface", name, "_uuid"); got != uuids[name] {
			t.Errorf("port %s rewritten by the restart: %s → %s", name, uuids[name], got)
		}
		if n, m := rowCount(t, db, "Port", name), rowCount(t, db, "Interface", name); n != 1 || m != 1 {
			t.Errorf("port %s after the restart: %d Port rows and %d Interface rows, want 1 each", name, n, m)
		}
	}
	lp, err := l.api.ListPorts(ctx, connect.NewRequest(&ovsplanev1.ListPortsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range lp.Msg.GetPorts() {
		names = append(names, p.GetSpec().GetName())
	}
	if want := []string{"plain0", "vhu0", "vm1", "vm2"}; !slices.Equal(names, want) {
		t.Errorf("ports after the restart: %v, want %v", names, want)
	}
	for i, name := range []string{"vm1", "vm2"} {
		gp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: name}))
		if err != nil {
			t.Fatalf("GetPort %s after the restart: %v", name, err)
		}
		checkVDPAInfo(t, gp.Msg.GetPort(), name, 1-i)
		checkVDPARows(t, db, name, 1-i)
		if got := ifaceError(t, db, name); got != vsErrs[name] {
			t.Errorf("Interface %s error after the restart = %q, want %q as before", name, got, vsErrs[name])
		}
		checkVDPAError(ctx, t, l, name, vsErrs[name], nil)
	}
	checkUndisturbed(ctx, t, l, db)
}

// checkVDPAInfo checks the daemon's view of a kernel-mode vdpa port on VF vf of vdpaPF.
func checkVDPAInfo(t *testing.T, info *ovsplanev1.PortInfo, name string, vf int) {
	t.Helper()
	if info.GetPlugin() != "vdpa" {
		t.Errorf("port %s: plugin %q, want vdpa", name, info.GetPlugin())
	}
	if ep := info.GetEndpoints()["vhost-vdpa"]; !strings.HasPrefix(ep, "/dev/vhost-vdpa-") {
		t.Errorf("port %s: endpoints %v, want vhost-vdpa /dev/vhost-vdpa-N", name, info.GetEndpoints())
	}
	if rep, want := info.GetEndpoints()["representor"], fmt.Sprintf("enp101s0f0npf0vf%d", vf); rep != want {
		t.Errorf("port %s: representor endpoint %q, want %q", name, rep, want)
	}
	if !strings.Contains(info.GetPluginStatus(), "SIMULATED") {
		t.Errorf("port %s: plugin status %q does not say it is simulated", name, info.GetPluginStatus())
	}
	ifs := info.GetShape().GetInterfaces()
	want := fmt.Sprintf("%s,representor=vf%d", vdpaPF, vf)
	if info.GetShape().GetName() != name || len(ifs) != 1 || ifs[0].GetName() != name || ifs[0].GetType() != "dpdk" ||
		ifs[0].GetOptions()["dpdk-devargs"] != want {
		t.Errorf("port %s: shape %v, want one interface %s type=dpdk options:dpdk-devargs=%s", name, info.GetShape(), name, want)
	}
}

// checkVDPARows checks the OVSDB rows of a kernel-mode vdpa port on VF vf of vdpaPF: one Port
// tagged with the plugin, one Interface, the representor.
func checkVDPARows(t *testing.T, db *lab.OVSDB, name string, vf int) {
	t.Helper()
	if n, m := rowCount(t, db, "Port", name), rowCount(t, db, "Interface", name); n != 1 || m != 1 {
		t.Errorf("port %s: %d Port rows and %d Interface rows, want 1 each", name, n, m)
	}
	if got := db.Get(t, "Interface", name, "type"); got != "dpdk" {
		t.Errorf("Interface %s type = %s, want dpdk", name, got)
	}
	want := fmt.Sprintf("%s,representor=vf%d", vdpaPF, vf)
	if got := db.Get(t, "Interface", name, "options:dpdk-devargs"); got != want {
		t.Errorf("Interface %s options:dpdk-devargs = %s, want %s", name, got, want)
	}
	if got := db.Get(t, "Port", name, "external_ids:ovsplane-plugin"); got != "vdpa" {
		t.Errorf("Port %s external_ids:ovsplane-plugin = %s, want vdpa", name, got)
	}
}

// checkVDPAError checks that port name, in applied (ApplyPort's answer, if not nil) and in every
// other view of the daemon (WaitReady, GetPort, ListStatus), is in error with ovs-vswitchd's
// message vsErr for its interface.
func checkVDPAError(ctx context.Context, t *testing.T, l *daemonLab, name, vsErr string, applied *ovsplanev1.PortInfo) {
	t.Helper()
	if vsErr == "" || !strings.Contains(vsErr, "representor=vf") {
		t.Errorf("Interface %s error = %q, want ovs-vswitchd's message naming the representor devargs", name, vsErr)
		return
	}
	isErr := func(where string, s *ovsplanev1.Status) {
		t.Helper()
		if s.GetState() != ovsplanev1.State_STATE_ERROR || !strings.Contains(s.GetError(), vsErr) {
			t.Errorf("%s of %s: %v %q, want error with ovs-vswitchd's %q", where, name, s.GetState(), s.GetError(), vsErr)
		}
	}
	portErr := func(where string, info *ovsplanev1.PortInfo) {
		t.Helper()
		isErr(where+" status", info.GetStatus())
		if len(info.GetInterfaces()) != 1 {
			t.Errorf("%s of %s: interface statuses %v, want one", where, name, info.GetInterfaces())
		} else {
			isErr(where+" interface status", info.GetInterfaces()[0])
		}
	}
	if applied != nil {
		portErr("ApplyPort", applied)
	}
	// The daemon's statuses follow OVSDB asynchronously: WaitReady returns once they have
	// seen the port (an applied object they have not seen yet counts as pending), here with
	// its error; from then on GetPort and ListStatus say the same.
	_, err := l.api.WaitReady(ctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{Keys: []string{"port/" + name}}))
	if connect.CodeOf(err) != connect.CodeAborted || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), vsErr) {
		t.Errorf("WaitReady port/%s: %v, want Aborted naming the port with ovs-vswitchd's %q", name, err, vsErr)
	}
	gp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: name}))
	if err != nil {
		t.Errorf("GetPort %s: %v", name, err)
	} else {
		portErr("GetPort", gp.Msg.GetPort())
	}
	ls, err := l.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
	if err != nil {
		t.Fatalf("ListStatus: %v", err)
	}
	seen := 0
	for _, s := range ls.Msg.GetStatuses() {
		if s.GetKey() == "port/"+name || s.GetKey() == "interface/"+name {
			isErr("ListStatus "+s.GetKey(), s)
			seen++
		}
	}
	if seen != 2 {
		t.Errorf("ListStatus has %d statuses for port/%s and interface/%s, want 2", seen, name, name)
	}
}

// checkReadyPort checks a plain port: ready, its one interface with an ofport. It reports
// whether it was.
func checkReadyPort(t *testing.T, info *ovsplanev1.PortInfo) bool {
	t.Helper()
	name := info.GetSpec().GetName()
	if info.GetStatus().GetState() != ovsplanev1.State_STATE_READY || len(info.GetInterfaces()) != 1 || info.GetInterfaces()[0].GetOfport() <= 0 {
		t.Errorf("port %s: %v %q, interfaces %v; want ready with an ofport", name, info.GetStatus().GetState(), info.GetStatus().GetError(), info.GetInterfaces())
		return false
	}
	return true
}

// checkUndisturbed checks that br0 and its ports plain0 and vhu0 are ready, in the daemon and
// in OVSDB, whatever the vdpa ports next to them do. WaitReady comes first: the daemon's
// statuses follow OVSDB asynchronously, so GetPort right after ApplyPort may still say pending.
func checkUndisturbed(ctx context.Context, t *testing.T, l *daemonLab, db *lab.OVSDB) {
	t.Helper()
	if _, err := l.api.WaitReady(ctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{
		Keys: []string{"bridge/br0", "port/plain0", "port/vhu0", "interface/plain0", "interface/vhu0"}})); err != nil {
		t.Errorf("WaitReady of br0, plain0 and vhu0: %v", err)
	}
	for _, name := range []string{"plain0", "vhu0"} {
		gp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: name}))
		if err != nil {
			t.Errorf("GetPort %s: %v", name, err)
			continue
		}
		checkReadyPort(t, gp.Msg.GetPort())
		if e := ifaceError(t, db, name); e != "" {
			t.Errorf("Interface %s error = %q", name, e)
		}
		if of := db.Get(t, "Interface", name, "ofport"); of == "[]" || strings.HasPrefix(of, "-") || of == "0" {
			t.Errorf("Interface %s ofport = %s in OVSDB", name, of)
		}
	}
	br, err := l.api.GetBridge(ctx, connect.NewRequest(&ovsplanev1.GetBridgeRequest{Name: "br0"}))
	if err != nil || br.Msg.GetBridge().GetStatus().GetState() != ovsplanev1.State_STATE_READY {
		t.Errorf("bridge br0: %v, %v; want ready", br, err)
	}
}

// pluginPIDs returns the processes running the executable bin.
func pluginPIDs(t *testing.T, bin string) []int {
	t.Helper()
	return testkit.PIDs(t, func(pid int) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && exe == bin
	})
}
