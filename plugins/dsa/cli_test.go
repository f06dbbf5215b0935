package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
)

// newSim lays out a simulated host of variant v in a fresh directory.
func newSim(t *testing.T, v simidxd.Variant) string {
	t.Helper()
	dir := t.TempDir()
	if err := simidxd.Write(dir, v); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs the command line and returns its exit status and outputs.
func run(args ...string) (rc int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	rc = runCLI(args, &out, &errOut)
	return rc, out.String(), errOut.String()
}

// TestDetectCommand: --detect reads a simulated host (devices, drivers, PASID, NUMA, clients,
// work queues and whether DPDK takes each) and the running ovs-vswitchd through its unixctl
// socket — stock (no vhost async, with OVS_NO_VHOST_ASYNC's reason), capable, or not running —
// as text and as JSON; the PMD threads come with the work queue each would use.
func TestDetectCommand(t *testing.T) {
	stock := unixctltest.Start(t, unixctltest.Options{PMDRxqShow: unixctltest.StockPMDRxqShow()})
	capable := unixctltest.Start(t, unixctltest.Options{VhostAsync: true, PMDRxqShow: unixctltest.StockPMDRxqShow()})
	spr := newSim(t, simidxd.SPR)

	rc, out, errOut := run("--detect", "--simulate", spr, "--ovs-rundir", stock.RunDir)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	for _, want := range []string{"SIMULATED host", "dsa bus: present; drivers: idxd yes, user yes, dmaengine yes",
		"dsa0: PCI 0000:6a:01.0 (8086:0b25), PCI driver idxd, NUMA node 0", "PASID (shared virtual addressing) on, clients 0",
		"8 work queues sharing 128 descriptors", "no work queue configured (8 available)",
		"ovs: ovs-vswitchd 3.1.0 with DPDK", "vhost async (DMA copies): no\n    OVS_NO_VHOST_ASYNC: ", "upstream OVS never merged it",
		"PMD core 1 (NUMA 0): polls vhu0/0 vhu1/0; no work queue for it: CPU copy"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "NO HARDWARE IS TOUCHED") {
		t.Errorf("no simulation warning: %s", errOut)
	}

	rc, out, _ = run("--detect", "--simulate", newSim(t, simidxd.Busy), "--ovs-rundir", capable.RunDir)
	if rc != 0 {
		t.Fatalf("busy: exit %d", rc)
	}
	for _, want := range []string{"state enabled", "clients 2", "DSA_BUSY: dsa0: 2 clients", "wq0.0: dedicated, type user, name app1",
		"DPDK ignores it", "vhost async (DMA copies): yes", dsa.VhostAsyncThreshCommand} {
		if !strings.Contains(out, want) {
			t.Errorf("busy report lacks %q:\n%s", want, out)
		}
	}
	rc, out, _ = run("--detect", "--simulate", newSim(t, simidxd.NoPASID), "--ovs-rundir", t.TempDir())
	if rc != 0 || !strings.Contains(out, "DSA_NO_SVA: dsa0: pasid_enabled=0") || !strings.Contains(out, "ovs: ovs-vswitchd is not running (no unixctl socket in") {
		t.Errorf("no-pasid without OVS: exit %d:\n%s", rc, out)
	}
	rc, out, _ = run("--detect", "--root", newSim(t, simidxd.OldKernel), "--ovs-rundir", t.TempDir())
	if rc != 0 || !strings.Contains(out, "dsa (pre-5.19 kernel) yes") || strings.Contains(out, "SIMULATED") {
		t.Errorf("old kernel read through --root: exit %d:\n%s", rc, out)
	}
	rc, out, _ = run("--detect", "--root", t.TempDir(), "--ovs-rundir", t.TempDir())
	if rc != 0 || !strings.Contains(out, "dsa bus: absent") || !strings.Contains(out, "DSA_ABSENT") || !strings.Contains(out, "modprobe idxd") {
		t.Errorf("a host without DSA: exit %d:\n%s", rc, out)
	}

	// JSON, on a provisioned two-socket host under the capable OVS.
	two := newSim(t, simidxd.TwoNUMA)
	if rc, _, errOut := runApply(t, two, `{"devices": [{"dsa": "dsa0", "wqs": {"count": 1}}]}`); rc != 0 {
		t.Fatalf("provision: %s", errOut)
	}
	rc, out, errOut = run("--detect", "--json", "--simulate", two, "--ovs-rundir", capable.RunDir)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Simulated != two || len(r.Host.Devices) != 2 || r.Host.Devices[1].Name != "dsa2" || r.Host.Devices[1].NUMA != 1 ||
		!r.OVS.Running || r.OVS.Capability == nil || !r.OVS.Capability.VhostAsync || len(r.OVS.PMDs) != 1 ||
		r.OVS.Assignment == nil || r.OVS.Assignment.PMDs[0].WQ == nil || r.OVS.Assignment.PMDs[0].WQ.Name != "wq0.0" {
		t.Errorf("report %+v", r)
	}

	for _, args := range [][]string{{}, {"--json"}, {"--detect", "extra"}, {"--bogus"}, {"--detect", "--plan"},
		{"--detect", "--root", "/", "--simulate", spr}, {"--detect", "--config", "{}"}} {
		if rc, _, _ := run(args...); rc != 2 {
			t.Errorf("%v: exit %d, want 2", args, rc)
		}
	}
	if rc, _, errOut := run("--detect", "--simulate", t.TempDir()); rc != 1 || !strings.Contains(errOut, "simulate") {
		t.Errorf("an empty simulation directory: exit %d: %s", rc, errOut)
	}
}

// TestDetectOVSCtl: --ovs-ctl names ovs-vswitchd's unixctl socket for one started with
// --unixctl=PATH (ZStack's ovs-vswitchd.zs.ctl), which --ovs-rundir's discovery does not find;
// a wrong --ovs-ctl is reported as not answering, and a relative, oversized or misplaced one is
// a usage error.
func TestDetectOVSCtl(t *testing.T) {
	capable := unixctltest.Start(t, unixctltest.Options{VhostAsync: true, PMDRxqShow: unixctltest.StockPMDRxqShow()})
	zs := filepath.Join(capable.RunDir, "ovs-vswitchd.zs.ctl")
	if err := os.Rename(capable.Path, zs); err != nil {
		t.Fatal(err)
	}
	spr := newSim(t, simidxd.SPR)
	if rc, out, _ := run("--detect", "--simulate", spr, "--ovs-rundir", capable.RunDir); rc != 0 || !strings.Contains(out, "ovs-vswitchd is not running") {
		t.Fatalf("discovery found the renamed socket: exit %d:\n%s", rc, out)
	}
	rc, out, errOut := run("--detect", "--simulate", spr, "--ovs-ctl", zs)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	for _, want := range []string{"ovs: ovs-vswitchd 3.1.0 with DPDK (unixctl " + zs + ")", "vhost async (DMA copies): yes",
		"PMD core 1 (NUMA 0): polls vhu0/0 vhu1/0"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	gone := filepath.Join(capable.RunDir, "ovs-vswitchd.gone.ctl")
	if rc, out, _ := run("--detect", "--simulate", spr, "--ovs-ctl", gone); rc != 0 || !strings.Contains(out, "unixctl socket "+gone+" does not answer") {
		t.Errorf("--ovs-ctl to no socket: exit %d:\n%s", rc, out)
	}
	for _, args := range [][]string{{"--detect", "--ovs-ctl", "ovs-vswitchd.zs.ctl"}, {"--detect", "--ovs-ctl", "/" + strings.Repeat("s", 107)},
		{"--detect", "--ovs-ctl", zs, "--ovs-rundir", capable.RunDir}, {"--plan", "--config", "{}", "--ovs-ctl", zs}} {
		if rc, _, errOut := run(args...); rc != 2 || !strings.Contains(errOut, "--ovs-") {
			t.Errorf("%v: exit %d (%s), want 2", args[:3], rc, errOut)
		}
	}
}

// runApply provisions a simulated host with a configuration through the library, as the
// plugin would.
func runApply(t *testing.T, sim, config string) (int, string, string) {
	t.Helper()
	h, _, err := openHost("", sim, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Devices []dsa.DeviceRequest }
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		t.Fatal(err)
	}
	req := dsa.Request{Devices: c.Devices}
	if err := req.Normalize(""); err != nil {
		return 2, "", err.Error()
	}
	if _, err := h.Apply(t.Context(), req); err != nil {
		return 1, "", err.Error()
	}
	return 0, "", ""
}

// TestPlanCommand: --plan prints the writes Apply would make for a configuration (inline JSON
// or a file), as text and JSON, without making them; a host that already matches plans
// nothing; the library's refusal is exit 1 with its code, an invalid configuration exit 2
// naming the field.
func TestPlanCommand(t *testing.T) {
	spr := newSim(t, simidxd.SPR)
	before := listing(t, spr)
	cfg := `{"devices": [{"dsa": "dsa0", "wqs": {"count": 2, "size": 32}}]}`
	rc, out, errOut := run("--plan", "--simulate", spr, "--config", cfg)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	for _, want := range []string{"SIMULATED host", "dsa0: configure", `write "dpdk_wq0.0" to sys/bus/dsa/devices/wq0.0/name`,
		`write "dsa0" to sys/bus/dsa/drivers/idxd/bind`, `write "wq0.1" to sys/bus/dsa/drivers/user/bind`,
		"dmadevs DPDK would see: wq0.0 (dsa0, NUMA 0), wq0.1 (dsa0, NUMA 0)", "nothing was written (dry run)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if after := listing(t, spr); after != before {
		t.Errorf("--plan changed the simulated host")
	}

	file := filepath.Join(t.TempDir(), "dsa.json")
	if err := os.WriteFile(file, []byte(`{"devices": [{"dsa": "0000:6a:01.0", "driver": "vfio-pci", "wqs": {"count": 4}}], "simulate": "`+spr+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, out, errOut = run("--plan", "--json", "--config", file)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	var p dsa.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(p.Devices) != 1 || p.Devices[0].Action != dsa.ActionVFIO || len(p.DPDKExtra) != 1 || p.DPDKExtra[0] != "-a 0000:6a:01.0,max_queues=4" || len(p.WQs) != 4 {
		t.Errorf("vfio plan %+v", p)
	}

	// A host that matches plans nothing.
	if rc, _, errOut := runApply(t, spr, cfg); rc != 0 {
		t.Fatal(errOut)
	}
	if rc, out, _ := run("--plan", "--simulate", spr, "--config", cfg); rc != 0 || !strings.Contains(out, "dsa0: none") || !strings.Contains(out, "nothing to write: the host already matches") {
		t.Errorf("plan on a provisioned host: exit %d:\n%s", rc, out)
	}

	bad := []struct {
		args []string
		rc   int
		says string
	}{
		{[]string{"--plan", "--simulate", newSim(t, simidxd.NoPASID), "--config", cfg}, 1, "DSA_NO_SVA"},
		{[]string{"--plan", "--simulate", newSim(t, simidxd.Busy), "--config", cfg}, 1, "DSA_BUSY"},
		{[]string{"--plan", "--simulate", newSim(t, simidxd.SmallWQBudget), "--config", cfg}, 1, "DSA_WQ_SIZE"},
		{[]string{"--plan", "--simulate", spr, "--config", `{"devices": [{"dsa": "dsa9"}]}`}, 1, "DSA_ABSENT"},
		{[]string{"--plan", "--simulate", spr, "--config", `{"devices": [{"dsa": "dsa0", "wqs": {"namePrefix": "app"}}]}`}, 2, "DSA_NAME_PREFIX"},
		{[]string{"--plan", "--simulate", spr, "--config", `{"devices": [{"dsa": "dsa0", "driver": "uio"}]}`}, 2, "config.devices[0].driver"},
		{[]string{"--plan", "--simulate", spr, "--config", `{"devices": [{"dsa": "dsa0", "wqs": {"cnt": 2}}]}`}, 2, "config.devices[0].wqs.cnt: unknown field"},
		{[]string{"--plan", "--simulate", spr, "--config", `{"devices": [`}, 2, "config: unexpected EOF"},
		{[]string{"--plan", "--simulate", spr, "--config", "/nonexistent/dsa.json"}, 2, "no such file"},
		{[]string{"--plan", "--simulate", spr}, 2, "usage"},
		{[]string{"--plan", "--simulate", t.TempDir(), "--config", cfg}, 1, "simulate"},
	}
	for _, b := range bad {
		rc, _, errOut := run(b.args...)
		if rc != b.rc || !strings.Contains(errOut, b.says) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", b.args, rc, errOut, b.rc, b.says)
		}
	}
}

// listing is the simulated host's files and their contents, to tell whether anything changed
// (the simulator's own bookkeeping in .simidxd aside).
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".simidxd" {
			return filepath.SkipDir
		}
		b.WriteString(p + "\n")
		if d.Type().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSimulateVariant: --simulate-variant lays out a simulated host in an empty directory, so a
// newcomer can try --detect and --plan without a fixture; it keeps an existing host of the same
// variant (its state is the files), refuses another variant or an unknown one, and needs
// --simulate.
func TestSimulateVariant(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	rc, out, errOut := run("--detect", "--simulate", dir, "--simulate-variant", "two-numa")
	if rc != 0 || !strings.Contains(out, "dsa2: PCI 0000:e7:01.0") || !strings.Contains(out, "SIMULATED host") {
		t.Fatalf("rc %d, stdout:\n%s\nstderr:\n%s", rc, out, errOut)
	}
	if rc, out, errOut = run("--detect", "--simulate", dir, "--simulate-variant", "two-numa"); rc != 0 || !strings.Contains(out, "dsa2") {
		t.Fatalf("second run on the same host: rc %d, stdout:\n%s\nstderr:\n%s", rc, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--detect", "--simulate", dir, "--simulate-variant", "spr"}, `holds variant "two-numa"`},
		{[]string{"--detect", "--simulate", t.TempDir(), "--simulate-variant", "xeon9"}, "xeon9"},
		{[]string{"--detect", "--simulate-variant", "spr"}, "goes with --simulate"},
	} {
		rc, _, errOut := run(c.args...)
		if rc != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: rc %d, stderr %q, want 2 and %q", c.args, rc, errOut, c.want)
		}
	}
}

// TestPlanPermissions: --plan shows the permission steps the plugin would make for the OVS
// user — the configuration's ovs.user, else the owner of ovs-vswitchd's pidfile in
// --ovs-rundir — and names the work queues for the --file-prefix of --dpdk-extra.
func TestPlanPermissions(t *testing.T) {
	spr := newSim(t, simidxd.SPR)
	empty := t.TempDir()
	cfg := `{"devices": [{"dsa": "dsa0", "wqs": {"count": 1}}], "ovs": {"user": "123:456"}}`
	rc, out, errOut := run("--plan", "--simulate", spr, "--ovs-rundir", empty, "--config", cfg)
	if rc != 0 || !strings.Contains(out, "chown dev/dsa/wq0.0 to 123:456") || !strings.Contains(out, "chmod dev/dsa/wq0.0 to 0660") {
		t.Errorf("plan with ovs.user: exit %d: %s\n%s", rc, errOut, out)
	}
	rundir := t.TempDir()
	pidfile := filepath.Join(rundir, "ovs-vswitchd.pid")
	if err := os.WriteFile(pidfile, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pidfile, 4242, 4343); err != nil {
		t.Fatalf("chown the test pidfile (the test runs as root, as CI does): %v", err)
	}
	noUser := `{"devices": [{"dsa": "dsa0", "wqs": {"count": 1}}]}`
	rc, out, errOut = run("--plan", "--simulate", spr, "--ovs-rundir", rundir, "--config", noUser)
	if rc != 0 || !strings.Contains(out, "chown dev/dsa/wq0.0 to 4242:4343") {
		t.Errorf("plan with the pidfile's owner: exit %d: %s\n%s", rc, errOut, out)
	}
	// A work queue name prefix is DPDK's --file-prefix: refused without it, taken with it.
	ovs1 := `{"devices": [{"dsa": "dsa0", "wqs": {"count": 1, "namePrefix": "ovs1"}}]}`
	if rc, _, errOut := run("--plan", "--simulate", spr, "--ovs-rundir", empty, "--config", ovs1); rc != 2 || !strings.Contains(errOut, "DSA_NAME_PREFIX") {
		t.Errorf("namePrefix ovs1 without --dpdk-extra: exit %d: %s", rc, errOut)
	}
	rc, out, errOut = run("--plan", "--simulate", spr, "--ovs-rundir", empty, "--dpdk-extra", "--file-prefix=ovs1 --no-pci", "--config", ovs1)
	if rc != 0 || !strings.Contains(out, `write "ovs1_wq0.0"`) {
		t.Errorf("plan with --file-prefix=ovs1: exit %d: %s\n%s", rc, errOut, out)
	}
	// No user anywhere: no permission step (the nodes keep the kernel's owner and mode).
	rc, out, _ = run("--plan", "--simulate", spr, "--ovs-rundir", empty, "--config", noUser)
	if rc != 0 || strings.Contains(out, "chown") {
		t.Errorf("plan without an OVS user: exit %d:\n%s", rc, out)
	}
}

// TestAccelConfigExportImport: --export-accel-config prints a provisioned simulated host as an
// accel-config file; --plan --import-accel-config of that file on the same host plans nothing
// (adopting a matching setup is a no-op), and on a fresh host plans the configuration.
func TestAccelConfigExportImport(t *testing.T) {
	spr := newSim(t, simidxd.SPR)
	if rc, _, errOut := runApply(t, spr, `{"devices": [{"dsa": "dsa0", "wqs": {"count": 2, "size": 32}}]}`); rc != 0 {
		t.Fatal(errOut)
	}
	rc, out, errOut := run("--export-accel-config", "--simulate", spr)
	if rc != 0 || !strings.Contains(out, `"dev":"dsa0"`) || !strings.Contains(out, "dpdk_wq0.0") {
		t.Fatalf("export: exit %d: %s\n%s", rc, errOut, out)
	}
	file := filepath.Join(t.TempDir(), "accel.conf")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	rc, out, errOut = run("--plan", "--import-accel-config", file, "--simulate", spr, "--ovs-rundir", empty)
	if rc != 0 || !strings.Contains(out, "nothing to write: the host already matches") {
		t.Errorf("import on the same host: exit %d: %s\n%s", rc, errOut, out)
	}
	fresh := newSim(t, simidxd.SPR)
	rc, out, errOut = run("--plan", "--json", "--import-accel-config", file, "--simulate", fresh, "--ovs-rundir", empty)
	var p dsa.Plan
	if rc != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Devices) != 1 || p.Devices[0].Action != dsa.ActionConfigure || len(p.WQs) != 2 {
		t.Errorf("import on a fresh host: exit %d: %s\n%s", rc, errOut, out)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--plan", "--import-accel-config", filepath.Join(empty, "none"), "--simulate", spr}, "--import-accel-config"},
		{[]string{"--plan", "--import-accel-config", file, "--config", "{}", "--simulate", spr}, "usage"},
		{[]string{"--import-accel-config", file, "--simulate", spr}, "usage"},
	} {
		if rc, _, errOut := run(c.args...); rc != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d: %s", c.args, rc, errOut)
		}
	}
}
