package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// TestDetectCommand: --detect prints the Detect report of a simulated host as text (PFs, VFs,
// modes with reasons) and as JSON; misuse is exit status 2.
func TestDetectCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := runCLI([]string{"--detect", "--simulate", switchdevFixture}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	for _, want := range []string{"SIMULATED host", "PF 0000:65:00.0", "VF 1 0000:65:00.3: driver mlx5_core, representor enp101s0f0npf0vf1",
		"  kernel: ok", "  ovs-fork: no", "OVS_NO_DPDKVDPA"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "NO HARDWARE IS TOUCHED") {
		t.Errorf("no simulation warning: %s", errOut.String())
	}
	out.Reset()
	if rc := runCLI([]string{"--detect", "--json", "--simulate", "../../vdpa/testdata/cx6dx-nomodules.fixture"}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	var r vdpa.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if r.Kernel.VDPANetlink.OK || r.Kernel.VDPANetlink.Why[0].Code != vdpa.CodeNoNetlink || len(r.PFs) == 0 {
		t.Errorf("report %+v", r.Kernel)
	}
	for _, args := range [][]string{{}, {"--json"}, {"--detect", "extra"}, {"--bogus"}} {
		if rc := runCLI(args, &out, &errOut); rc != 2 {
			t.Errorf("%v: exit %d, want 2", args, rc)
		}
	}
	if rc := runCLI([]string{"--detect", "--simulate", "/nonexistent.fixture"}, &out, &errOut); rc != 1 {
		t.Errorf("missing fixture: exit %d, want 1", rc)
	}
}

// TestDetectCommandNoFamily: --detect on a 6.18 kernel without the vdpa modules (generic
// netlink has no vdpa family) names the missing module and the modprobe that fixes it, for the
// vdpa netlink line and for the mac/mtu and max_vqp lines, and blames no kernel version.
func TestDetectCommandNoFamily(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := runCLI([]string{"--detect", "--simulate", "../../vdpa/testdata/cx6dx-kernel-6.18-nomodules.fixture"}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"kernel 6.18.44-generic\n",
		"  vdpa netlink: no\n      VDPA_NO_NETLINK: vdpa: kernel 6.18.44-generic has no vdpa netlink family (genetlink CTRL_CMD_GETFAMILY \"vdpa\": ENOENT): the vdpa module is not loaded; load it and the mlx5 vDPA driver with 'modprobe vdpa mlx5_vdpa vhost_vdpa'",
		"  set mac/mtu: no\n      VDPA_NO_NETLINK: unknown without the vdpa netlink family to ask",
		"  set max_vqp: no\n      VDPA_NO_NETLINK: unknown without the vdpa netlink family to ask"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"kernel >=", "VDPA_ATTR_UNSUPPORTED", "upgrade"} {
		if strings.Contains(text, bad) {
			t.Errorf("report says %q on a 6.18 kernel:\n%s", bad, text)
		}
	}
}
