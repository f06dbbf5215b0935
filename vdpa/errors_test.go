package vdpa_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
)

const pf0 = "0000:65:00.0"

// planErr plans req on the named fixture and returns the error.
func planErr(t *testing.T, name string, req vdpa.Request, ovs vdpa.OVSState) error {
	t.Helper()
	_, h := bootNamed(t, name)
	_, err := h.Plan(ctx, req, ovs, nil)
	return err
}

// planFixtureErr plans req on fixture f and returns the error.
func planFixtureErr(t *testing.T, f *simhost.Fixture, req vdpa.Request, ovs vdpa.OVSState) error {
	t.Helper()
	_, h := boot(t, f)
	_, err := h.Plan(ctx, req, ovs, nil)
	return err
}

// planApplyErr plans and applies; the plan must succeed, the apply's error is returned.
func planApplyErr(t *testing.T, f *simhost.Fixture, req vdpa.Request, ovs vdpa.OVSState) error {
	t.Helper()
	_, h := boot(t, f)
	p, err := h.Plan(ctx, req, ovs, nil)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	_, err = h.Apply(ctx, p, nil)
	return err
}

func withFixture(t *testing.T, name string, edit func(*simhost.Fixture)) *simhost.Fixture {
	f := loadFixture(t, name)
	edit(f)
	return f
}

type errCase struct {
	name string
	code vdpa.Code
	// hint is a piece of the message that tells the user what to do.
	hint string
	run  func(t *testing.T) error
}

var errCases = []errCase{
	{"no vdpa modules", vdpa.CodeNoNetlink, "modprobe vdpa mlx5_vdpa vhost_vdpa", func(t *testing.T) error {
		return planErr(t, "cx6dx-nomodules", vdpa.Request{Name: "vm1", PF: pf0, VF: 0}, stockOVS)
	}},
	{"kernel older than 5.12", vdpa.CodeNoNetlink, "5.12", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-switchdev", func(f *simhost.Fixture) {
			f.Tree["proc/sys/kernel/osrelease"] = simhost.Entry{Kind: simhost.File, Value: "5.10.0-28-amd64"}
		})
		return planFixtureErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 0}, stockOVS)
	}},
	{"bus driver not loaded", vdpa.CodeNoBusDriver, "modprobe virtio_vdpa", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-switchdev", func(f *simhost.Fixture) {
			f.Remove("sys/bus/vdpa/drivers/virtio_vdpa")
			f.Remove("sys/module/virtio_vdpa")
		})
		return planFixtureErr(t, f, vdpa.Request{Name: "c1", PF: pf0, VF: 0, BusDriver: "virtio_vdpa"}, stockOVS)
	}},
	{"mlx5_vdpa stub (BlueField DPU mode)", vdpa.CodeNoMgmtDev, "stub", func(t *testing.T) error {
		return planErr(t, "bluefield-dpu", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, Eswitch: "skip"}, stockOVS)
	}},
	{"mgmtdev never appears", vdpa.CodeNoMgmtDev, "enable_vnet", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-legacy", func(f *simhost.Fixture) { f.Knobs["vnet"] = "off" })
		return planApplyErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 0}, stockOVS)
	}},
	{"PF absent", vdpa.CodePFNotFound, "lspci", func(t *testing.T) error {
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: "0000:99:00.0", VF: 0}, stockOVS)
	}},
	{"PF is Intel", vdpa.CodePFNotMLX5, "mlx5_core", func(t *testing.T) error {
		return planErr(t, "intel-e810", vdpa.Request{Name: "vm1", PF: "0000:3b:00.0", VF: 0}, stockOVS)
	}},
	{"VF index above sriov_totalvfs", vdpa.CodeSRIOVCap, "sriov_totalvfs 8", func(t *testing.T) error {
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 8}, stockOVS)
	}},
	{"firmware SR-IOV off", vdpa.CodeSRIOVCap, "mlxconfig", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-legacy", func(f *simhost.Fixture) {
			f.Tree["sys/devices/pci0000:64/0000:64:00.0/0000:65:00.0/sriov_totalvfs"] = simhost.Entry{Kind: simhost.File, Value: "0"}
		})
		return planFixtureErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 0}, stockOVS)
	}},
	{"VF count change with consumers", vdpa.CodeSRIOVBusy, "vdpa device vdpa0", func(t *testing.T) error {
		return planErr(t, "cx6dx-inuse", vdpa.Request{Name: "vm4", PF: pf0, VF: 3}, stockOVS)
	}},
	{"kernel refuses a non-zero to non-zero VF count", vdpa.CodeSRIOVBusy, "through 0", func(t *testing.T) error {
		k, _ := bootNamed(t, "cx6dx-switchdev")
		h := k.Host(vdpa.Config{})
		p, err := h.Plan(ctx, vdpa.Request{Name: "vm4", PF: pf0, VF: 3}, offloaded(stockOVS), nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Steps = p.Steps[1:] // drop the "through 0" step, as a naive tool would
		_, err = h.Apply(ctx, p, nil)
		return err
	}},
	{"eswitch owned by the DPU", vdpa.CodeEswitchDenied, "DPU", func(t *testing.T) error {
		return planErr(t, "bluefield-dpu", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, Mode: vdpa.ModeDPDKPMD}, stockOVS)
	}},
	{"eswitch change with VFs bound", vdpa.CodeEswitchDenied, "VFs are still bound", func(t *testing.T) error {
		_, h := bootNamed(t, "cx6dx-legacy")
		if err := h.SetNumVFs(ctx, pf0, 2); err != nil {
			t.Fatal(err)
		}
		return h.SetEswitchMode(ctx, pf0, "switchdev")
	}},
	{"mac on a 5.15 kernel", vdpa.CodeAttrUnsupported, ">= 5.16", func(t *testing.T) error {
		return planErr(t, "cx6dx-kernel-5.15", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, MAC: "02:00:00:00:00:01"}, stockOVS)
	}},
	{"max_vqp on a 5.16 kernel", vdpa.CodeAttrUnsupported, ">= 5.17", func(t *testing.T) error {
		return planErr(t, "cx6dx-kernel-5.16", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, MaxVQP: 2}, stockOVS)
	}},
	{"mgmtdev cannot set mtu (EOPNOTSUPP)", vdpa.CodeAttrUnsupported, "does not support setting mtu 9000", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-switchdev", func(f *simhost.Fixture) {
			f.MgmtDevs["pci/0000:65:00.2"]["attrs"] = "mac,max_vqp"
		})
		return planApplyErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 0, MTU: 9000}, stockOVS)
	}},
	{"max_vqp above the device limit", vdpa.CodeMaxVQP, "limit 128", func(t *testing.T) error {
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, MaxVQP: 200}, stockOVS)
	}},
	{"max_vqp above the limit of a mgmtdev created by the plan", vdpa.CodeMaxVQP, "limit 8", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-legacy", func(f *simhost.Fixture) { f.Knobs["default-max-vqs"] = "17" })
		return planApplyErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 0, MaxVQP: 9}, stockOVS)
	}},
	{"name taken on another VF", vdpa.CodeExists, "vdpa dev del vdpa0", func(t *testing.T) error {
		return planErr(t, "cx6dx-inuse", vdpa.Request{Name: "vm1", VDPAName: "vdpa0", PF: pf0, VF: 1}, stockOVS)
	}},
	{"same name, other mac", vdpa.CodeExists, "mac 02:00:00:00:00:aa (want 02:00:00:00:00:bb)", func(t *testing.T) error {
		return planErr(t, "cx6dx-inuse", vdpa.Request{Name: "vdpa0", PF: pf0, VF: 0, MAC: "02:00:00:00:00:bb"}, stockOVS)
	}},
	{"second device on a VF (ENOSPC)", vdpa.CodeMgmtDevFull, "one per VF", func(t *testing.T) error {
		k, h := bootNamed(t, "cx6dx-switchdev")
		p, err := h.Plan(ctx, vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, stockOVS, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Someone creates a device on the VF between plan and apply.
		if err := k.NewDev(ctx, "intruder", vdpa.MgmtDevID{Bus: "pci", Name: "0000:65:00.3"}, vdpa.DevParams{}); err != nil {
			t.Fatal(err)
		}
		_, err = h.Apply(ctx, p, nil)
		return err
	}},
	{"udev never creates the node", vdpa.CodeCharDevTimeout, "udevadm", func(t *testing.T) error {
		f := withFixture(t, "cx6dx-switchdev", func(f *simhost.Fixture) { f.Knobs["udev"] = "off" })
		return planApplyErr(t, f, vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, stockOVS)
	}},
	{"no representor on the host (DPU, eswitch skipped)", vdpa.CodeRepresentorNotFound, "DPU", func(t *testing.T) error {
		return planErr(t, "bluefield-dpu", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, Eswitch: "skip", Mode: vdpa.ModeDPDKPMD}, stockOVS)
	}},
	{"VF has another vdpa device", vdpa.CodeVFInUse, "one per VF", func(t *testing.T) error {
		return planErr(t, "cx6dx-inuse", vdpa.Request{Name: "vm1", PF: pf0, VF: 0}, stockOVS)
	}},
	{"VF used by another OVS interface", vdpa.CodeVFInUse, `interface "other"`, func(t *testing.T) error {
		o := stockOVS
		o.Interfaces = []vdpa.OVSInterface{{Name: "other", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:65:00.0,representor=[0-3]"}}}
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 1, Mode: vdpa.ModeDPDKPMD}, o)
	}},
	{"VF used by the fork's dpdkvdpa port", vdpa.CodeVFInUse, `interface "vdpa9"`, func(t *testing.T) error {
		o := forkOVS
		o.Interfaces = []vdpa.OVSInterface{{Name: "vdpa9", Type: "dpdkvdpa", Options: map[string]string{"vdpa-accelerator-devargs": "0000:65:00.3"}}}
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, o)
	}},
	{"VF passed through to a VM (vfio-pci)", vdpa.CodeVFInUse, "vfio-pci", func(t *testing.T) error {
		_, h := bootNamed(t, "cx6dx-switchdev")
		if err := h.UnbindPCI(ctx, "0000:65:00.3", "mlx5_core"); err != nil {
			t.Fatal(err)
		}
		if err := h.BindPCI(ctx, "0000:65:00.3", "vfio-pci"); err != nil {
			t.Fatal(err)
		}
		_, err := h.Plan(ctx, vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, stockOVS, nil)
		return err
	}},
	{"DPDK mode on a VF with a kernel vDPA device", vdpa.CodeClassConflict, "vdpa dev del vdpa0", func(t *testing.T) error {
		return planErr(t, "cx6dx-inuse", vdpa.Request{Name: "vm1", PF: pf0, VF: 0, Mode: vdpa.ModeDPDKPMD}, stockOVS)
	}},
	{"OVS without DPDK", vdpa.CodeOVSNoDPDK, "dpdk-init=true", func(t *testing.T) error {
		o := stockOVS
		o.DPDKInitialized = false
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, o)
	}},
	{"ovs-fork on stock OVS", vdpa.CodeOVSNoDPDKVDPA, "NVIDIA", func(t *testing.T) error {
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 1, Mode: vdpa.ModeOVSFork}, stockOVS)
	}},
	{"hw-offload turned on (warning)", vdpa.CodeOVSRestartRequired, "restart required", func(t *testing.T) error {
		_, h := bootNamed(t, "cx6dx-switchdev")
		p, err := h.Plan(ctx, vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, stockOVS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !p.OVS.RestartRequired || p.OVS.OtherConfig["hw-offload"] != "true" || len(p.Warnings) != 1 {
			t.Fatalf("plan %+v", p.OVS)
		}
		return &vdpa.Error{Code: p.Warnings[0].Code, Msg: p.Warnings[0].Message}
	}},
	{"bad MAC", vdpa.CodeInvalidRequest, "6-byte", func(t *testing.T) error {
		return planErr(t, "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: pf0, VF: 1, MAC: "02:00:00"}, stockOVS)
	}},
	{"bind to a driver that is not loaded", vdpa.CodeKernel, "is the driver loaded", func(t *testing.T) error {
		_, h := bootNamed(t, "cx6dx-switchdev")
		if err := h.UnbindPCI(ctx, "0000:65:00.3", "mlx5_core"); err != nil {
			t.Fatal(err)
		}
		return h.BindPCI(ctx, "0000:65:00.3", "igb_uio")
	}},
}

// TestErrorCatalogue drives every catalogued error from a fixture and checks its code, that
// errors.Is matches the code, and that the message says what to do.
func TestErrorCatalogue(t *testing.T) {
	covered := map[vdpa.Code]bool{}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(t)
			if err == nil {
				t.Fatalf("no error, want %s", c.code)
			}
			if vdpa.CodeOf(err) != c.code || !errors.Is(err, c.code) {
				t.Fatalf("got %v, want code %s", err, c.code)
			}
			if !strings.Contains(err.Error(), c.hint) {
				t.Errorf("message %q does not say %q", err, c.hint)
			}
			covered[c.code] = true
		})
	}
	for _, code := range vdpa.Codes {
		if !covered[code] {
			t.Errorf("code %s has no test", code)
		}
	}
}

// TestKernelErrnoIsKept: the errno behind a catalogued error stays reachable.
func TestKernelErrnoIsKept(t *testing.T) {
	_, h := bootNamed(t, "bluefield-dpu")
	err := h.SetEswitchMode(ctx, pf0, "switchdev")
	if !errors.Is(err, syscall.EOPNOTSUPP) || !errors.Is(err, vdpa.CodeEswitchDenied) {
		t.Errorf("got %v", err)
	}
}

// TestFailedApplyCanBeTornDown: an apply that fails half way returns what it did, and tearing
// that down restores the host.
func TestFailedApplyCanBeTornDown(t *testing.T) {
	f := withFixture(t, "cx6dx-legacy", func(f *simhost.Fixture) { f.Knobs["udev"] = "off" })
	k, h := boot(t, f)
	before := dump(t, k)
	p, err := h.Plan(ctx, vdpa.Request{Name: "vm1", PF: pf0, VF: 1}, stockOVS, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Apply(ctx, p, nil)
	if vdpa.CodeOf(err) != vdpa.CodeCharDevTimeout || len(st.Done) == 0 {
		t.Fatalf("got %v with %d records", err, len(st.Done))
	}
	if _, err := h.Teardown(ctx, st, vdpa.TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("not restored:\n%s", diffLines(before, after))
	}
}

func TestRequestFromOptions(t *testing.T) {
	r, err := vdpa.RequestFromOptions("vm1", map[string]string{"pf": "0000:65:00.0", "vf": "2",
		"mac": "02:AA:00:00:00:01", "max-vqp": "4", "mode": "kernel", "hw-offload": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if r.VF != 2 || r.MAC != "02:aa:00:00:00:01" || r.MaxVQP != 4 || *r.HWOffload || r.BusDriver != "vhost_vdpa" || r.NumVFs != 3 {
		t.Errorf("got %+v", r)
	}
	for _, opts := range []map[string]string{
		{"pf": "0000:65:00.0", "vf": "two"},
		{"pf": "0000:65:00.0", "max_vqp": "4"},
		{"pf": "0000:65:00.0", "mode": "magic"},
		{"pf": "0000:65:00.0", "adopt": "perhaps"},
		{"vf": "1"},
	} {
		if _, err := vdpa.RequestFromOptions("vm1", opts); vdpa.CodeOf(err) != vdpa.CodeInvalidRequest {
			t.Errorf("%v: got %v", opts, err)
		}
	}
}
