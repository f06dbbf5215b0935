package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// TestPlanCommand: --plan prints the dry-run plan for the options given, on a simulated host,
// as text (steps with reasons, the OVS interface, the guest endpoint) and as JSON; it follows
// the host (a legacy-mode PF gets the VF and eswitch steps, a switchdev one only the port's);
// an impossible request fails with the library's code (exit 1), bad usage or options exit 2.
func TestPlanCommand(t *testing.T) {
	legacy := filepath.Join("..", "..", "vdpa", "testdata", "cx6dx-legacy.fixture")
	run := func(args ...string) (rc int, stdout, stderr string) {
		t.Helper()
		var out, errOut bytes.Buffer
		rc = runCLI(args, &out, &errOut)
		return rc, out.String(), errOut.String()
	}

	rc, out, errOut := run("--plan", "--simulate", switchdevFixture, "--name", "vm1",
		"pf=0000:65:00.0", "vf=1", "mode=kernel", "mac=02:11:22:33:44:55")
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	for _, want := range []string{"SIMULATED host", "port vm1: 0000:65:00.0 VF 1 (0000:65:00.3), mode kernel",
		"vdpa dev add name vm1 mgmtdev pci/0000:65:00.3 mac 02:11:22:33:44:55", "bind vm1 to vhost_vdpa",
		"ovs: interface vm1 type=dpdk options:dpdk-devargs=0000:65:00.0,representor=vf1", "guest: vhost-vdpa",
		"note: OVS facts unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "eswitch") {
		t.Errorf("plan for a PF already in switchdev mode changes the eswitch:\n%s", out)
	}
	if !strings.Contains(errOut, "NO HARDWARE IS TOUCHED") {
		t.Errorf("no simulation warning: %s", errOut)
	}

	rc, out, errOut = run("--plan", "--json", "--simulate", legacy, "pf=0000:65:00.0", "vf=2")
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut)
	}
	var p vdpa.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	ops := map[vdpa.Op]bool{}
	for _, s := range p.Steps {
		ops[s.Op] = true
	}
	if p.Request.Name != "vdpa0" || p.Request.Mode != vdpa.ModeKernel || p.PF != "0000:65:00.0" || p.VFIndex != 2 ||
		p.OVS.Interface.Type != "dpdk" || p.OVS.Interface.Options["dpdk-devargs"] != "0000:65:00.0,representor=vf2" ||
		!ops[vdpa.OpEswitch] || !ops[vdpa.OpVDPAAdd] {
		t.Errorf("plan on the legacy host: %+v (ops %v)", p, ops)
	}

	bad := []struct {
		args []string
		rc   int
		says string
	}{
		{[]string{"--plan", "--simulate", switchdevFixture, "pf=0000:65:00.0", "vf=99"}, 1, "SRIOV_CAP"},
		{[]string{"--plan", "--simulate", switchdevFixture, "pf=0000:66:00.0"}, 1, "PF_NOT_FOUND"},
		{[]string{"--plan", "--simulate", switchdevFixture, "vf=1"}, 2, "pf is required"},
		{[]string{"--plan", "--simulate", switchdevFixture, "pf=0000:65:00.0", "vf=-1"}, 2, "vf -1"},
		{[]string{"--plan", "--simulate", switchdevFixture, "pf=0000:65:00.0", "colour=blue"}, 2, `unknown option "colour"`},
		{[]string{"--plan", "--simulate", switchdevFixture, "pf"}, 2, "want key=value"},
		{[]string{"--plan", "--simulate", switchdevFixture, "pf=0000:65:00.0", "pf=0000:65:00.1"}, 2, "given twice"},
		{[]string{"--plan", "--simulate", switchdevFixture}, 2, "usage"},
		{[]string{"--plan", "--detect", "pf=0000:65:00.0"}, 2, "usage"},
		{[]string{"--plan", "--simulate", "/nonexistent.fixture", "pf=0000:65:00.0"}, 1, "fixture"},
	}
	for _, b := range bad {
		rc, _, errOut := run(b.args...)
		if rc != b.rc || !strings.Contains(errOut, b.says) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", b.args, rc, errOut, b.rc, b.says)
		}
	}
}
