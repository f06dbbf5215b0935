package accelconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/accelconfig"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// configuredTree writes a 4th-gen Xeon DSA (dsa0 at 0000:6a:01.0, NUMA 0, two engines, four
// work queues) the way the kernel shows it once configured and enabled with two dedicated user
// work queues of size 32 named name(q), both engines in group 0, /dev/dsa/wq0.0 and wq0.1
// present.
func configuredTree(t *testing.T, name func(q int) string) string {
	t.Helper()
	dir := t.TempDir()
	pci := "sys/devices/pci0000:6a/0000:6a:01.0"
	d := pci + "/dsa0"
	files := map[string]string{
		pci + "/vendor": "0x8086", pci + "/device": "0x0b25", pci + "/numa_node": "0",
		pci + "/driver":                    "->../../../bus/pci/drivers/idxd",
		"sys/bus/pci/drivers/idxd/":        "",
		"sys/bus/pci/devices/0000:6a:01.0": "->../../../devices/pci0000:6a/0000:6a:01.0",
		d + "/version":                     "0x100", d + "/max_groups": "1", d + "/max_engines": "2",
		d + "/max_work_queues": "4", d + "/max_work_queues_size": "128", d + "/max_batch_size": "1024",
		d + "/max_transfer_size": "2147483648", d + "/numa_node": "0", d + "/pasid_enabled": "1",
		d + "/state": "enabled", d + "/configurable": "1", d + "/clients": "0", d + "/cmd_status": "0",
		d + "/group0.0/":                     "",
		d + "/engine0.0/group_id":            "0",
		d + "/engine0.1/group_id":            "0",
		"sys/bus/dsa/devices/dsa0":           "->../../../devices/pci0000:6a/0000:6a:01.0/dsa0",
		"sys/bus/dsa/drivers/idxd/bind":      "",
		"sys/bus/dsa/drivers/user/bind":      "",
		"sys/bus/dsa/drivers/dmaengine/bind": "",
		"dev/dsa/wq0.0":                      "",
		"dev/dsa/wq0.1":                      "",
	}
	for q := range 4 {
		w := d + "/wq0." + string(rune('0'+q))
		attrs := map[string]string{"mode": "dedicated", "type": "none", "name": "", "driver_name": "",
			"state": "disabled", "size": "0", "priority": "0", "group_id": "-1", "max_batch_size": "1024",
			"max_transfer_size": "2097152", "ats_disable": "0", "threshold": "0", "clients": "0"}
		if q < 2 {
			for k, v := range map[string]string{"type": "user", "name": name(q), "driver_name": "user",
				"state": "enabled", "size": "32", "priority": "10", "group_id": "0"} {
				attrs[k] = v
			}
		}
		for k, v := range attrs {
			files[w+"/"+k] = v
		}
		files["sys/bus/dsa/devices/wq0."+string(rune('0'+q))] = "->../../../devices/pci0000:6a/0000:6a:01.0/dsa0/wq0." + string(rune('0'+q))
	}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(c, "->"):
			err := os.Symlink(c[2:], full)
			if err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(p, "/"):
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(c+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// adopt exports the host's configuration as accel-config JSON, reads it back, turns it into
// a request and plans it.
func adopt(t *testing.T, dir string) (dsa.Request, *dsa.Plan) {
	t.Helper()
	h, err := dsa.New(dsa.Config{FS: sysfs.New(dir)})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := h.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	data, err := accelconfig.Marshal(accelconfig.FromInventory(inv))
	if err != nil {
		t.Fatal(err)
	}
	c, err := accelconfig.Parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	req, err := accelconfig.ToRequest(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	p, err := h.Plan(t.Context(), req)
	if err != nil {
		t.Fatalf("Plan(%+v): %v\n%s", req, err, data)
	}
	return req, p
}

// TestAdoptIsANoOp: a host set up the way the dsa library sets one up, exported and adopted
// through accel-config's format, plans to nothing: action none, no step, the same two WQs.
func TestAdoptIsANoOp(t *testing.T) {
	dir := configuredTree(t, func(q int) string { return "dpdk_wq0." + string(rune('0'+q)) })
	req, p := adopt(t, dir)
	w := req.Devices[0].WQs
	if len(req.Devices) != 1 || req.Devices[0].Device != "dsa0" || w.Count != 2 || w.Size != 32 || w.Priority != 10 ||
		w.MaxBatchSize != 1024 || w.NamePrefix != "dpdk" || req.Devices[0].Engines != 2 {
		t.Errorf("request %+v", req)
	}
	if dp := p.Devices[0]; dp.Action != dsa.ActionNone || len(dp.Steps) != 0 {
		t.Errorf("plan %s with %d steps: %s %+v", dp.Action, len(dp.Steps), dp.Reason, dp.Steps)
	}
	if len(p.WQs) != 2 || p.WQs[1] != (dsa.WQRef{Name: "wq0.1", Device: "dsa0", NUMA: 0}) {
		t.Errorf("plan WQs %+v", p.WQs)
	}
}

// TestAdoptForeignNames: work queues another tool named dpdk_… (not the library's
// <prefix>_wqN.M) are adopted as they are, without a write.
func TestAdoptForeignNames(t *testing.T) {
	dir := configuredTree(t, func(q int) string { return "dpdk_ovs" + string(rune('a'+q)) })
	req, p := adopt(t, dir)
	if w := req.Devices[0].WQs; w.Count != 2 || w.Size != 32 || w.NamePrefix != "dpdk" {
		t.Errorf("request %+v", w)
	}
	if dp := p.Devices[0]; dp.Action != dsa.ActionAdopt || len(dp.Steps) != 0 {
		t.Errorf("plan %s with %d steps: %s", dp.Action, len(dp.Steps), dp.Reason)
	}
}

// TestAdoptRefusesNamesDPDKIgnores: accel-config's own profile names (app1…) are not taken by
// DPDK; the plan says the device is in another configuration instead of adopting it.
func TestAdoptRefusesNamesDPDKIgnores(t *testing.T) {
	dir := configuredTree(t, func(q int) string { return "app" + string(rune('1'+q)) })
	h, err := dsa.New(dsa.Config{FS: sysfs.New(dir)})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := h.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	req, err := accelconfig.ToRequest(accelconfig.FromInventory(inv))
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	if p, err := h.Plan(t.Context(), req); !errors.Is(err, dsa.CodeBusy) {
		t.Errorf("Plan = %+v, %v; want DSA_BUSY (another configuration, no allowReconfigure)", p, err)
	}
}

func TestToRequestFiles(t *testing.T) {
	read := func(name string) accelconfig.Config {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := accelconfig.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	req, err := accelconfig.ToRequest(read("list_two_devices.conf"))
	if err != nil || len(req.Devices) != 1 {
		t.Fatalf("ToRequest = %+v, %v", req, err)
	}
	want := dsa.DeviceRequest{Device: "dsa0", Driver: dsa.DriverIDXD, Engines: 4, WQs: dsa.WQRequest{Count: 1,
		Mode: dsa.ModeDedicated, Size: 128, Priority: 10, MaxBatchSize: 1024, NamePrefix: "ovs1"}}
	if got := req.Devices[0]; got.Device != want.Device || got.Driver != want.Driver || got.Engines != want.Engines || got.WQs != want.WQs || got.NUMA != nil {
		t.Errorf("list_two_devices: %+v, want %+v (iax1 left out)", got, want)
	}
	if err := req.Normalize("ovs1"); err != nil {
		t.Errorf("the request does not normalize with --file-prefix ovs1: %v", err)
	}
	// The app profile: one dedicated user WQ (named app…, so only countable) and one shared.
	req, err = accelconfig.ToRequest(read("app_profile_trailing_commas.conf"))
	if err != nil || req.Devices[0].WQs.Count != 1 || req.Devices[0].WQs.Size != 64 || req.Devices[0].WQs.NamePrefix != "" || req.Devices[0].Engines != 0 {
		t.Errorf("app profile: %+v, %v", req, err)
	}

	// A device without DPDK work queues is left out of the request.
	c, err := accelconfig.Parse([]byte(`[{"dev":"dsa0","groups":[{"dev":"group0.0"}]},{"dev":"dsa2","groups":[{"dev":"group2.0","grouped_workqueues":[{"dev":"wq2.0","mode":"dedicated","type":"user"}]}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if req, err := accelconfig.ToRequest(c); err != nil || len(req.Devices) != 1 || req.Devices[0].Device != "dsa2" {
		t.Errorf("dsa0 unconfigured, dsa2 with one WQ: %+v, %v", req, err)
	}
	for _, tc := range []struct{ conf, obj, want string }{
		{`[{"dev":"iax1"}]`, "accel-config", "no DSA device"},
		{`[{"dev":"dsa0"},{"dev":"dsa1","groups":[{"dev":"group1.0"}]}]`, "dsa0,dsa1", "no dedicated user work queue"},
		{`[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":[{"dev":"wq0.0","mode":"shared","type":"user"},{"dev":"wq0.1","mode":"dedicated","type":"kernel"}]}]}]`, "dsa0", "no dedicated user work queue"},
	} {
		c, err := accelconfig.Parse([]byte(tc.conf))
		if err != nil {
			t.Fatal(err)
		}
		_, err = accelconfig.ToRequest(c)
		var e *dsa.Error
		if !errors.As(err, &e) || e.Code != dsa.CodeInvalidRequest || e.Object != tc.obj || !strings.Contains(e.Msg, tc.want) {
			t.Errorf("ToRequest(%s) = %v", tc.conf, err)
		}
	}
}

// TestFromInventoryLeavesOut: a device handed to vfio-pci (no dsaN name) and unconfigured
// work queues are not exported; a nil inventory exports nothing.
func TestFromInventoryLeavesOut(t *testing.T) {
	inv := &dsa.Inventory{Devices: []dsa.Device{
		{BDF: "0000:6a:01.0", PCIDriver: "vfio-pci"},
		{Name: "dsa2", NUMA: 1, State: "disabled", Groups: []dsa.Group{{Name: "group2.0"}},
			Engines: []dsa.Engine{{Name: "engine2.0", GroupID: -1}},
			WQs:     []dsa.WQ{{Name: "wq2.0", GroupID: -1}, {Name: "wq2.1", GroupID: 0, Mode: "dedicated", Type: "user", WQName: "dpdk_wq2.1", ATSDisable: true}}},
	}}
	c := accelconfig.FromInventory(inv)
	if len(c.Devices) != 1 || c.Devices[0].Dev != "dsa2" || *c.Devices[0].NUMANode != 1 || len(c.Devices[0].Groups) != 1 {
		t.Fatalf("FromInventory = %+v", c)
	}
	g := c.Devices[0].Groups[0]
	if len(g.WQs) != 1 || g.WQs[0].Dev != "wq2.1" || g.WQs[0].Name != "dpdk_wq2.1" || *g.WQs[0].ATSDisable != 1 || len(g.Engines) != 0 {
		t.Errorf("group %+v", g)
	}
	if c := accelconfig.FromInventory(nil); len(c.Devices) != 0 {
		t.Errorf("FromInventory(nil) = %+v", c)
	}
}

// TestAdoptAppliedOnSimulator: on the simulated kernel (simidxd, every variant that can be
// provisioned), a configuration the dsa library applied, exported through accel-config's format
// and adopted, plans to nothing; Apply of it changes nothing.
func TestAdoptAppliedOnSimulator(t *testing.T) {
	for _, v := range []simidxd.Variant{simidxd.SPR, simidxd.OldKernel, simidxd.TwoNUMA} {
		dir := t.TempDir()
		if err := simidxd.Write(dir, v); err != nil {
			t.Fatal(err)
		}
		sim, err := simidxd.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		h, err := dsa.New(dsa.Config{FS: sim})
		if err != nil {
			t.Fatal(err)
		}
		first := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2, ATSDisable: true}}}}
		if err := first.Normalize(""); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Apply(t.Context(), first); err != nil {
			t.Fatalf("%s: Apply: %v", v, err)
		}
		inv, err := h.Discover(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		data, err := accelconfig.Marshal(accelconfig.FromInventory(inv))
		if err != nil {
			t.Fatal(err)
		}
		c, err := accelconfig.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		req, err := accelconfig.ToRequest(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := req.Normalize(""); err != nil {
			t.Fatal(err)
		}
		if len(req.Devices) != 1 || req.Devices[0].WQs.Count != 2 || !req.Devices[0].WQs.ATSDisable && v != simidxd.OldKernel {
			t.Errorf("%s: request %+v", v, req)
		}
		p, err := h.Plan(t.Context(), req)
		if err != nil {
			t.Fatalf("%s: Plan: %v\n%s", v, err, data)
		}
		if dp := p.Devices[0]; dp.Action != dsa.ActionNone || len(dp.Steps) != 0 {
			t.Errorf("%s: plan %s with %d steps: %s", v, dp.Action, len(dp.Steps), dp.Reason)
		}
		res, err := h.Apply(t.Context(), req)
		if err != nil || res.Changed {
			t.Errorf("%s: Apply of the adopted request: changed %v, %v", v, res != nil && res.Changed, err)
		}
	}
}
