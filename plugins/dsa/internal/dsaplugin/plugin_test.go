package dsaplugin

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// TestInfo: the plugin watches every vhost-user interface, whoever created it (no bridge,
// owner or key restriction), serves watcher and global_config, and provides no type.
func TestInfo(t *testing.T) {
	conn := sdktest.Connect(t, New(Options{Logger: testkit.Logger(t, slog.LevelDebug)}))
	info := conn.Info
	if info.Name != Name || len(info.Types) != 0 {
		t.Fatalf("info %+v", info)
	}
	for _, c := range []api.Capability{api.CapabilityWatcher, api.CapabilityGlobalConfig} {
		if !slices.Contains(info.Capabilities, c) {
			t.Errorf("capabilities %v lack %s", info.Capabilities, c)
		}
	}
	w := info.Watch
	if !slices.Equal(w.InterfaceTypes, []string{"dpdkvhostuser", "dpdkvhostuserclient"}) || len(w.Bridges) != 0 || len(w.Owners) != 0 || len(w.ExternalIDKeys) != 0 {
		t.Errorf("watch %+v", w)
	}
}

// TestAutoOnStockOVS: on a stock ovs-vswitchd (Debian's 3.1, no vhost async) mode auto
// provisions dsa0 (both work queues enabled user queues for DPDK, device nodes present),
// contributes nothing (no vhost-async-support: upstream OVS would ignore it, and writing it is
// no success), reports Degraded "prepared, unused", and gives every vhost-user port — os-vif's
// too — the honest CPU-copy status naming the PMD thread and the work queue it would use.
func TestAutoOnStockOVS(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	if err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(2)})); err != nil {
		t.Fatal(err)
	}
	if r.attr("sys/bus/dsa/devices/dsa0/state") != "enabled" || r.attr("sys/bus/dsa/devices/wq0.1/state") != "enabled" ||
		!strings.HasPrefix(r.attr("sys/bus/dsa/devices/wq0.0/name"), "dpdk_") || !r.node("wq0.0") || !r.node("wq0.1") {
		t.Errorf("dsa0 not provisioned: state %q, wq0.1 %q, wq0.0 name %q",
			r.attr("sys/bus/dsa/devices/dsa0/state"), r.attr("sys/bus/dsa/devices/wq0.1/state"), r.attr("sys/bus/dsa/devices/wq0.0/name"))
	}
	if gc, err := r.host.Contribute(); err != nil || len(gc.OtherConfig) != 0 || len(gc.DPDKExtra) != 0 {
		t.Errorf("contribution on stock OVS: %+v, %v; want none", gc, err)
	}
	h, err := r.host.Health()
	if err != nil || h.State != api.HealthDegraded || !strings.Contains(h.Message, "prepared, unused: this ovs-vswitchd has no vhost async support") ||
		!strings.Contains(h.Message, "OVS_NO_VHOST_ASYNC") || !strings.Contains(h.Message, "2 work queues") {
		t.Errorf("health %+v, %v", h, err)
	}
	st := r.statuses(t, "vhu0", "vhu1")
	for _, n := range []string{"vhu0", "vhu1"} {
		s := st[n]
		if s.Level != api.StatusWarning || !strings.Contains(s.Summary, "CPU copy: this ovs-vswitchd has no vhost async support (DSA prepared, unused)") ||
			s.Details["reason"] != string(dsa.CodeOVSNoVhostAsync) || s.Details["pmd_core"] != "1" || s.Details["wq"] != "wq0.0" || s.Details["mode"] != AsyncAuto {
			t.Errorf("%s: %+v", n, s)
		}
	}
	// Nothing was asked of ovs-vswitchd but reads.
	for _, c := range r.ovs.Calls() {
		if strings.Contains(c.Method, "set-") {
			t.Errorf("the plugin called %s on a stock ovs-vswitchd", c.Method)
		}
	}
}

// TestRequireOnStockOVS: mode require on a stock ovs-vswitchd fails Configure with
// OVS_NO_VHOST_ASYNC and its reason, before touching the host.
func TestRequireOnStockOVS(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(2), "ovs": map[string]any{"asyncMode": "require"}}))
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "OVS_NO_VHOST_ASYNC") ||
		!strings.Contains(err.Error(), "no vhost async DMA support") {
		t.Fatalf("Configure: %v", err)
	}
	if ch := r.fs.Changes(); len(ch) != 0 || r.attr("sys/bus/dsa/devices/dsa0/state") != "disabled" {
		t.Errorf("the host was changed: %v", ch)
	}
}

// TestCapableOVS: with a vhost async build (the fake's capable command set) and
// vhost-async-support=true active, the plugin contributes the key, sets the threshold through
// the unixctl socket and reads it back, reports healthy, and each port's PMD thread gets its
// own work queue: "accelerated: PMD core 1 (NUMA 0) uses wq0.0". Before the key is active
// (restart pending) the ports say CPU copy until ovs-vswitchd restarts.
func TestCapableOVS(t *testing.T) {
	r := newRig(t, simidxd.SPR, true)
	cfg := r.config(t, map[string]any{"devices": dsa0(2), "ovs": map[string]any{"asyncMode": "require", "threshold": 256}})
	if err := r.host.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if n, set := r.ovs.Thresh(); n != 256 || !set {
		t.Errorf("threshold %d (set %v), want 256", n, set)
	}
	gc, err := r.host.Contribute()
	if err != nil || gc.OtherConfig[dsa.VhostAsyncSupportKey] != "true" || len(gc.OtherConfig) != 1 {
		t.Errorf("contribution %+v, %v", gc, err)
	}
	// The key is in OVSDB and the running process answers for its threshold, but no DMA copy
	// was counted: enabled, not "accelerated".
	if h, err := r.host.Health(); err != nil || h.State != api.HealthOK || !strings.Contains(h.Message, "vhost async enabled, no DMA copies observed yet") ||
		strings.Contains(h.Message, "accelerating") || !strings.Contains(h.Message, "advice: set other_config:tx-flush-interval=50 (now unset") {
		t.Errorf("health %+v, %v", h, err)
	}
	st := r.statuses(t, "vhu0", "vhu1")
	for _, n := range []string{"vhu0", "vhu1"} {
		s := st[n]
		if s.Level != api.StatusInfo || !strings.HasSuffix(s.Summary, "vhost async enabled, no DMA copies observed yet: PMD core 1 (NUMA 0) uses wq0.0") ||
			s.Details["reason"] != "no DMA copies yet" ||
			s.Details["wq"] != "wq0.0" || s.Details["pmd_core"] != "1" || s.Details["numa"] != "0" || s.Details["threshold"] != "256" ||
			s.Details["dma_copies"] != "none yet" {
			t.Errorf("%s: %+v", n, s)
		}
	}
	// A restarted ovs-vswitchd forgets the threshold: the next batch sets it again.
	r.ovs.Close()
	r.ovs = unixctltest.Start(t, unixctltest.Options{VhostAsync: true, PMDRxqShow: unixctltest.StockPMDRxqShow(), RunDir: r.ovs.RunDir})
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Level != api.StatusInfo || s.Details["threshold"] != "256" {
		t.Errorf("vhu0 after an ovs-vswitchd restart: %+v", s)
	}
	if n, set := r.ovs.Thresh(); n != 256 || !set {
		t.Errorf("threshold after the restart %d (set %v), want 256", n, set)
	}
	// Once coverage/show counts vhost async copies, the statuses say accelerated.
	r.ovs.SetCoverage(unixctltest.StockCoverage() + "vhost_async_tx_submit      12.0/sec     10.000/sec        1.0000/sec   total: 4242\n")
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Details["dma_copies"] != "seen (1 vhost_async counters)" || s.Details["reason"] != "accelerated" ||
		!strings.Contains(s.Summary, "accelerated: PMD core 1 (NUMA 0) uses wq0.0") {
		t.Errorf("vhu0 with DMA copies counted: %+v", s)
	}
	if h, err := r.host.Health(); err != nil || h.State != api.HealthOK || !strings.Contains(h.Message, "accelerating vhost copies from 256 bytes") {
		t.Errorf("health with DMA copies counted: %+v, %v", h, err)
	}
	// An ovs-vswitchd that does not answer for its threshold is no evidence: not accelerated.
	r.ovs.Close()
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Level != api.StatusWarning || s.Details["reason"] == "accelerated" {
		t.Errorf("vhu0 with ovs-vswitchd gone: %+v", s)
	}
	r.ovs = unixctltest.Start(t, unixctltest.Options{VhostAsync: true, PMDRxqShow: unixctltest.StockPMDRxqShow(), RunDir: r.ovs.RunDir})

	// Key not active yet: ovs-vswitchd (pid 100) must restart first.
	pidfile := filepath.Join(r.ovs.RunDir, "ovs-vswitchd.pid")
	if err := os.WriteFile(pidfile, []byte("100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	delete(r.host.Facts.OtherConfig, dsa.VhostAsyncSupportKey)
	if err := r.host.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if gc, _ := r.host.Contribute(); gc.OtherConfig[dsa.VhostAsyncSupportKey] != "true" {
		t.Errorf("contribution %+v", gc)
	}
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Level != api.StatusWarning || !strings.Contains(s.Summary, "CPU copy until ovs-vswitchd restarts") {
		t.Errorf("vhu0 before the restart: %+v", s)
	}
	if h, _ := r.host.Health(); h.State != api.HealthDegraded || !strings.Contains(h.Message, "restarts") {
		t.Errorf("health before the restart: %+v", h)
	}
	// ovs-vswitchd restarts (pid 101) and read the key; the daemon does not reconfigure the
	// plugin for its own key, yet the pending restart clears.
	if err := os.WriteFile(pidfile, []byte("101\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Details["reason"] != "no DMA copies yet" {
		t.Errorf("vhu0 after the restart: %+v", s)
	}
	if h, _ := r.host.Health(); h.State != api.HealthOK || strings.Contains(h.Message, "restarts") {
		t.Errorf("health after the restart: %+v", h)
	}
}

// TestPMDsUnreadable: when ovs-vswitchd's unixctl socket does not answer, each port's status
// says the PMD threads could not be read, and why.
func TestPMDsUnreadable(t *testing.T) {
	r := newRig(t, simidxd.SPR, true)
	if err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(1)})); err != nil {
		t.Fatal(err)
	}
	r.ovs.Close()
	s := r.statuses(t, "vhu0")["vhu0"]
	if s.Level != api.StatusWarning || !strings.Contains(s.Summary, "cannot read the PMD threads") || s.Details["reason"] != "pmds unreadable" {
		t.Errorf("status %+v", s)
	}
}

// TestVFIO: a device given to vfio-pci is contributed to dpdk-extra as -a BDF,max_queues=N
// (and only that on a stock OVS); its dmadevs are DPDK's "BDF-qN".
func TestVFIO(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	err := r.host.Configure(r.config(t, map[string]any{"devices": []any{map[string]any{"dsa": "0000:6a:01.0", "driver": "vfio-pci", "wqs": map[string]any{"count": 4}}}}))
	if err != nil {
		t.Fatal(err)
	}
	gc, err := r.host.Contribute()
	if err != nil || !slices.Equal(gc.DPDKExtra, []string{"-a 0000:6a:01.0,max_queues=4"}) || len(gc.OtherConfig) != 0 {
		t.Errorf("contribution %+v, %v", gc, err)
	}
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Details["wq"] != "0000:6a:01.0-q0" {
		t.Errorf("status %+v", s)
	}
}

// TestIdempotentConfigure: a second Configure with the same configuration and facts (as the
// daemon sends after every other_config change) writes nothing; dropping the device from the
// configuration resets it, and a Configure after that writes nothing again.
func TestIdempotentConfigure(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	cfg := r.config(t, map[string]any{"devices": dsa0(2)})
	if err := r.host.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if ch := r.fs.Changes(); len(ch) == 0 {
		t.Fatal("the first Configure changed nothing")
	}
	if err := r.host.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if ch := r.fs.Changes(); len(ch) != 0 {
		t.Errorf("the second Configure changed %v", ch)
	}

	empty := r.config(t, nil)
	if err := r.host.Configure(empty); err != nil {
		t.Fatal(err)
	}
	if r.attr("sys/bus/dsa/devices/dsa0/state") != "disabled" || r.node("wq0.0") {
		t.Errorf("dsa0 not reset when dropped: state %q", r.attr("sys/bus/dsa/devices/dsa0/state"))
	}
	r.fs.Changes()
	if err := r.host.Configure(empty); err != nil {
		t.Fatal(err)
	}
	if ch := r.fs.Changes(); len(ch) != 0 {
		t.Errorf("Configure after the reset changed %v", ch)
	}
	if h, _ := r.host.Health(); !strings.Contains(h.Message, "no DSA device configured") {
		t.Errorf("health %+v", h)
	}
}

// TestLibraryErrorsCrossTheBoundary: the library's refusals reach the daemon with the contract's
// code for their catalogue code, the code and the fix in the message, and — for configuration
// mistakes — a problem on the field.
func TestLibraryErrorsCrossTheBoundary(t *testing.T) {
	cases := []struct {
		variant simidxd.Variant
		devices []any
		code    api.Code
		says    string
		field   string
	}{
		{simidxd.NoPASID, dsa0(2), api.FailedPrecondition, "DSA_NO_SVA", ""},
		{simidxd.Busy, dsa0(2), api.FailedPrecondition, "DSA_BUSY", ""},
		{simidxd.SmallWQBudget, []any{map[string]any{"dsa": "dsa0", "wqs": map[string]any{"count": 2, "size": 16}}}, api.InvalidArgument, "DSA_WQ_SIZE", ""},
		{simidxd.SPR, []any{map[string]any{"dsa": "dsa7"}}, api.FailedPrecondition, "DSA_ABSENT", ""},
		{simidxd.SPR, []any{map[string]any{"dsa": "dsa0", "wqs": map[string]any{"namePrefix": "app"}}}, api.InvalidArgument, "DSA_NAME_PREFIX", "config.devices[0].wqs.namePrefix"},
		{simidxd.SPR, []any{map[string]any{"dsa": "dsa0", "driver": "vfio-pci"}}, api.InvalidArgument, "INVALID_REQUEST", "config.devices[0].dsa"},
		{simidxd.SPR, []any{map[string]any{"dsa": "dsa0", "wqs": map[string]any{"mode": "shared"}}}, api.InvalidArgument, "INVALID_REQUEST", "config.devices[0].wqs.mode"},
	}
	for _, c := range cases {
		r := newRig(t, c.variant, false)
		err := r.host.Configure(r.config(t, map[string]any{"devices": c.devices}))
		if api.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %v: %v, want %s with %s", c.variant, c.devices, err, c.code, c.says)
			continue
		}
		if c.field != "" && !problemOn(err, c.field) {
			t.Errorf("%s %v: %v, want a problem on %s", c.variant, c.devices, err, c.field)
		}
	}
}

// TestSimulateMode: the real OpenMachine over a simulated kernel says so in health and in
// every status; a simulate directory that holds no simulation is refused on config.simulate.
func TestSimulateMode(t *testing.T) {
	h := sdktest.NewFakeHost(t, New(Options{Logger: testkit.Logger(t, slog.LevelDebug)}))
	h.Facts.DataDir = t.TempDir()
	if err := h.Configure([]byte(`{"simulate": "` + t.TempDir() + `", "devices": [{"dsa": "dsa0"}]}`)); !problemOn(err, "config.simulate") {
		t.Errorf("empty simulate dir: %v", err)
	}
	sim := newSim(t, simidxd.TwoNUMA)
	if err := h.Configure([]byte(`{"simulate": "` + sim + `", "devices": [{"dsa": "dsa0"}, {"dsa": "dsa2", "numa": 0}]}`)); err != nil {
		t.Fatal(err)
	}
	if health, err := h.Health(); err != nil || !strings.HasPrefix(health.Message, "SIMULATION") || !strings.Contains(health.Message, "2 DSA devices") ||
		!strings.Contains(health.Message, "warnings: DSA_NUMA") {
		t.Errorf("health %+v, %v", health, err)
	}
	changes, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{vhostEvent("vhu0")}})
	if err != nil || len(changes) != 1 || !strings.HasPrefix(changes[0].Status.Summary, "SIMULATED DSA: ") || changes[0].Status.Details["simulated"] != sim {
		t.Errorf("changes %+v, %v", changes, err)
	}
}

// TestPauseHook: the testing hook parses K:FILE and is inert on a real machine.
func TestPauseHook(t *testing.T) {
	if k, f, err := parsePause("3:/tmp/x"); err != nil || k != 3 || f != "/tmp/x" {
		t.Errorf("parsePause: %d %q %v", k, f, err)
	}
	for _, bad := range []string{"3", "0:/tmp/x", "x:/tmp/x", "3:rel"} {
		if _, _, err := parsePause(bad); err == nil {
			t.Errorf("parsePause(%q) accepted", bad)
		}
	}
	real := &Machine{FS: &countingFS{}}
	if m, err := withPause(real, "1:/tmp/never", testkit.Logger(t, slog.LevelDebug)); err != nil || m != real {
		t.Errorf("the hook acted on a real machine: %v %v", m, err)
	}
	simm := &Machine{FS: &countingFS{}, Simulated: "/sim"}
	if m, err := withPause(simm, "1:/tmp/x", testkit.Logger(t, slog.LevelDebug)); err != nil || m == simm {
		t.Errorf("the hook did not wrap a simulated machine: %v", err)
	}
}

// TestNoDevicesOnThisHost: on this machine's real root (no DSA, no /sys/bus/dsa) a
// configuration without devices is accepted and harmless: healthy, nothing contributed, and a
// vhost-user port is told that no work queue is prepared; one naming dsa0 is refused with
// DSA_ABSENT and the fix.
func TestNoDevicesOnThisHost(t *testing.T) {
	h := sdktest.NewFakeHost(t, New(Options{Logger: testkit.Logger(t, slog.LevelDebug)}))
	h.Facts.DataDir = t.TempDir()
	h.Facts.OVSRunDir = t.TempDir() // no ovs-vswitchd there
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if health, err := h.Health(); err != nil || health.State != api.HealthOK || health.Message != "no DSA device configured" {
		t.Errorf("health %+v, %v", health, err)
	}
	if gc, err := h.Contribute(); err != nil || len(gc.OtherConfig) != 0 || len(gc.DPDKExtra) != 0 {
		t.Errorf("contribution %+v, %v", gc, err)
	}
	changes, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{vhostEvent("vhu0")}})
	if err != nil || len(changes) != 1 || !strings.Contains(changes[0].Status.Summary, "no DSA work queue is prepared") ||
		changes[0].Status.Details["pmds"] == "" {
		t.Errorf("changes %+v, %v", changes, err)
	}
	if _, err := os.Stat("/sys/bus/dsa"); err == nil {
		return // a host with DSA: the refusal below does not apply
	}
	err = h.Configure([]byte(`{"devices": [{"dsa": "dsa0"}]}`))
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "DSA_ABSENT") || !strings.Contains(err.Error(), "modprobe idxd") {
		t.Errorf("dsa0 on a host without DSA: %v", err)
	}
}

// TestAdoptedDeviceIsNotReset: a device configured before the plugin (by accel-config, here
// the library) exactly as asked is adopted without a write, and dropping it from the
// configuration leaves it alone: the plugin only resets devices it wrote to.
func TestAdoptedDeviceIsNotReset(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	sim, err := simidxd.Open(r.sim)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := dsa.New(dsa.Config{FS: sim})
	if err != nil {
		t.Fatal(err)
	}
	req := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2}}}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Apply(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(2)})); err != nil {
		t.Fatal(err)
	}
	if ch := r.fs.Changes(); len(ch) != 0 {
		t.Errorf("adopting a matching device changed %v", ch)
	}
	if err := r.host.Configure(r.config(t, nil)); err != nil {
		t.Fatal(err)
	}
	if ch := r.fs.Changes(); len(ch) != 0 || r.attr("sys/bus/dsa/devices/dsa0/state") != "enabled" {
		t.Errorf("dropping an adopted device changed %v (state %q)", ch, r.attr("sys/bus/dsa/devices/dsa0/state"))
	}
}

// zstackSocket moves the fake ovs-vswitchd's socket to the name ZStack gives it
// (--unixctl=…/ovs-vswitchd.zs.ctl), where the run-directory discovery cannot find it, and
// returns its new path. A renamed unix socket still accepts connections under its new name.
func zstackSocket(t *testing.T, s *unixctltest.Server) string {
	t.Helper()
	zs := filepath.Join(s.RunDir, "ovs-vswitchd.zs.ctl")
	if err := os.Rename(s.Path, zs); err != nil {
		t.Fatal(err)
	}
	if ctl, err := ovsproc.VswitchdCtl(s.RunDir); err == nil {
		t.Fatalf("discovery still finds %s: the test would prove nothing", ctl)
	}
	return zs
}

// TestUnixctlOverride: on a ZStack host ovs-vswitchd answers only on its --unixctl socket
// (ovs-vswitchd.zs.ctl), which the run-directory discovery does not find. Without ovs.unixctl
// the statuses say the PMD threads cannot be read; with it, the plugin reads the capable
// build's commands through that socket (the daemon's facts have none), sets and reads back the
// threshold there, and every vhost-user port names its PMD thread and work queue.
func TestUnixctlOverride(t *testing.T) {
	r := newRig(t, simidxd.SPR, true)
	zs := zstackSocket(t, r.ovs)
	r.host.Facts.AppctlCommands = nil // the daemon found no socket to ask either

	if err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(1), "ovs": map[string]any{"threshold": 256}})); err != nil {
		t.Fatal(err)
	}
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Details["reason"] != string(dsa.CodeOVSNoVhostAsync) {
		t.Errorf("vhu0 without ovs.unixctl (no commands known): %+v", s)
	}

	err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(1), "ovs": map[string]any{"threshold": 256, "unixctl": zs}}))
	if err != nil {
		t.Fatal(err)
	}
	if n, set := r.ovs.Thresh(); n != 256 || !set {
		t.Errorf("threshold through %s: %d (set %v), want 256", zs, n, set)
	}
	if gc, err := r.host.Contribute(); err != nil || gc.OtherConfig[dsa.VhostAsyncSupportKey] != "true" {
		t.Errorf("contribution with the capable build read through ovs.unixctl: %+v, %v", gc, err)
	}
	s := r.statuses(t, "vhu0")["vhu0"]
	if s.Level != api.StatusInfo || s.Details["pmd_core"] != "1" || s.Details["wq"] != "wq0.0" || s.Details["threshold"] != "256" ||
		!strings.Contains(s.Summary, "vhost async enabled, no DMA copies observed yet: PMD core 1 (NUMA 0) uses wq0.0") {
		t.Errorf("vhu0 with ovs.unixctl: %+v", s)
	}

	// A stock build behind a socket that the configuration names but that does not answer: the
	// statuses say why, naming the socket.
	r.ovs.Close()
	s = r.statuses(t, "vhu0")["vhu0"]
	if s.Details["reason"] != "pmds unreadable" || !strings.Contains(s.Details["pmds"], "ovs-vswitchd.zs.ctl") {
		t.Errorf("vhu0 with ovs.unixctl not answering: %+v", s)
	}
}

// TestTxFlushAdvice: the health advice about tx-flush-interval appears while the key is unset,
// zero, below the advised 50 µs or not a number, and not once it is at least 50.
func TestTxFlushAdvice(t *testing.T) {
	for v, want := range map[string]bool{"": true, "0": true, "10": true, "x\n": true, "50": false, "200": false} {
		got := txFlushAdvice(v)
		if (got != "") != want || (want && (!strings.Contains(got, "tx-flush-interval=50") || strings.Contains(got, "\n"))) {
			t.Errorf("txFlushAdvice(%q) = %q, want advice: %v", v, got, want)
		}
	}
}

// TestRefusedConfigureChangesNothing: a Configure naming an absent device is refused with
// DSA_ABSENT before any reset: dsa0, configured earlier, stays enabled and is still claimed.
// When the host loses the device behind the plugin's back, a refused Configure makes Health
// and the statuses stop claiming it.
func TestRefusedConfigureChangesNothing(t *testing.T) {
	r := newRig(t, simidxd.SPR, false)
	if err := r.host.Configure(r.config(t, map[string]any{"devices": dsa0(2)})); err != nil {
		t.Fatal(err)
	}
	r.fs.Changes()
	err := r.host.Configure(r.config(t, map[string]any{"devices": []any{map[string]any{"dsa": "dsa7"}}}))
	if err == nil || !strings.Contains(err.Error(), string(dsa.CodeAbsent)) {
		t.Fatalf("configure dsa7: %v; want %s", err, dsa.CodeAbsent)
	}
	if c := r.fs.Changes(); len(c) != 0 || r.attr("sys/bus/dsa/devices/dsa0/state") != "enabled" {
		t.Errorf("a refused Configure changed the host: %v, dsa0 %q", c, r.attr("sys/bus/dsa/devices/dsa0/state"))
	}
	if h, err := r.host.Health(); err != nil || !strings.Contains(h.Message, "1 DSA devices, 2 work queues") {
		t.Errorf("health after a refused Configure: %+v, %v; want dsa0 still claimed", h, err)
	}
	// The host loses dsa0 (someone else disabled it); the next refused Configure notices.
	h, err := dsa.New(dsa.Config{FS: r.fs.FS})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Reset(t.Context(), "dsa0"); err != nil {
		t.Fatal(err)
	}
	if err := r.host.Configure(r.config(t, map[string]any{"devices": []any{map[string]any{"dsa": "dsa7"}}})); err == nil {
		t.Fatal("configure dsa7 succeeded")
	}
	if hl, err := r.host.Health(); err != nil || !strings.Contains(hl.Message, "0 DSA devices, 0 work queues") {
		t.Errorf("health after dsa0 went away: %+v, %v; want nothing claimed", hl, err)
	}
	if s := r.statuses(t, "vhu0")["vhu0"]; s.Details["wq"] != "" {
		t.Errorf("status still names a work queue: %+v", s)
	}
}

// TestZeroDevicesContributeNothing: with no device configured, a capable ovs-vswitchd is not
// asked to turn vhost async on: there is no work queue to copy with.
func TestZeroDevicesContributeNothing(t *testing.T) {
	r := newRig(t, simidxd.SPR, true)
	if err := r.host.Configure(r.config(t, map[string]any{"devices": []any{}, "ovs": map[string]any{"asyncMode": "auto"}})); err != nil {
		t.Fatal(err)
	}
	if gc, err := r.host.Contribute(); err != nil || len(gc.OtherConfig) != 0 || len(gc.DPDKExtra) != 0 {
		t.Errorf("contribution with no device: %+v, %v; want none", gc, err)
	}
}
