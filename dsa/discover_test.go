package dsa_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

func TestDiscoverTree(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, sprFiles())
	tree(t, dir, map[string]string{"dev/dsa/wq0.1": ""})
	h := newHost(t, sysfs.New(dir))
	inv, err := h.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !inv.BusPresent || inv.Drivers != (dsa.Drivers{IDXD: true, User: true, DMAEngine: true}) {
		t.Errorf("bus %t drivers %+v", inv.BusPresent, inv.Drivers)
	}
	if len(inv.Devices) != 1 {
		t.Fatalf("devices: %+v", inv.Devices)
	}
	d := inv.Devices[0]
	if d.Name != "dsa0" || d.BDF != "0000:6a:01.0" || d.PCIID != "8086:0b25" || d.PCIDriver != "idxd" ||
		d.IOMMUGroup != "7" || d.State != "disabled" || d.NUMA != 0 || d.Version != "0x100" {
		t.Errorf("identity: %+v", d)
	}
	if d.MaxGroups != 1 || d.MaxEngines != 2 || d.MaxWQs != 4 || d.MaxWQSize != 128 || d.MaxBatchSize != 1024 ||
		d.MaxTransferSize != 2147483648 || !d.PASIDEnabled || !d.Configurable || d.Clients != 0 {
		t.Errorf("capabilities: %+v", d)
	}
	if len(d.Engines) != 2 || d.Engines[1] != (dsa.Engine{Name: "engine0.1", GroupID: -1}) || len(d.Groups) != 1 || d.Groups[0].Name != "group0.0" {
		t.Errorf("engines %+v groups %+v", d.Engines, d.Groups)
	}
	if len(d.WQs) != 4 {
		t.Fatalf("wqs: %+v", d.WQs)
	}
	w := d.WQs[1]
	if w.Name != "wq0.1" || w.Mode != "dedicated" || w.Type != "none" || w.State != "disabled" || w.GroupID != -1 ||
		w.MaxBatchSize != 1024 || w.MaxTransferSize != 2097152 || w.DevNode != "dev/dsa/wq0.1" || d.WQs[0].DevNode != "" {
		t.Errorf("wq0.1: %+v", w)
	}
}

func TestDiscoverNoBus(t *testing.T) {
	dir := t.TempDir()
	h := newHost(t, sysfs.New(dir))
	inv, err := h.Discover(t.Context())
	if err != nil || inv.BusPresent || len(inv.Devices) != 0 {
		t.Fatalf("empty machine: %+v %v", inv, err)
	}
	req := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	_, err = h.Plan(t.Context(), req)
	if e := wantCode(t, err, dsa.CodeAbsent); !strings.Contains(e.Msg, "modprobe idxd") || !strings.Contains(e.Msg, "Xeon") {
		t.Errorf("message: %v", e)
	}
}

// A DSA function on vfio-pci has no dsaN device: Discover lists it from PCI.
func TestDiscoverVFIOFunction(t *testing.T) {
	dir := t.TempDir()
	pci := "sys/devices/pci0000:6a/0000:6a:01.0"
	tree(t, dir, map[string]string{
		pci + "/vendor": "0x8086", pci + "/device": "0x11fb", pci + "/numa_node": "1",
		pci + "/driver":                              "->../../../bus/pci/drivers/vfio-pci",
		"sys/bus/pci/devices/0000:6a:01.0":           "->../../../devices/pci0000:6a/0000:6a:01.0",
		"sys/bus/pci/devices/0000:00:00.0":           "->../../../devices/pci0000:00/0000:00:00.0",
		"sys/devices/pci0000:00/0000:00:00.0/vendor": "0x8086", "sys/devices/pci0000:00/0000:00:00.0/device": "0x09a2",
		"sys/bus/dsa/drivers/idxd/": "",
	})
	h := newHost(t, sysfs.New(dir))
	inv, err := h.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 1 {
		t.Fatalf("devices: %+v", inv.Devices)
	}
	if d := inv.Devices[0]; d.Name != "" || d.BDF != "0000:6a:01.0" || d.PCIID != "8086:11fb" || d.PCIDriver != "vfio-pci" || d.NUMA != 1 {
		t.Errorf("vfio function: %+v", d)
	}
	// Already on vfio-pci: nothing to do, the dpdk-extra argument and the dmadev names.
	req := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0", Driver: "vfio-pci", WQs: dsa.WQRequest{Count: 2}}}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	p, err := h.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Devices[0].Action != dsa.ActionNone || len(p.Devices[0].Steps) != 0 ||
		len(p.DPDKExtra) != 1 || p.DPDKExtra[0] != "-a 0000:6a:01.0,max_queues=2" ||
		len(p.WQs) != 2 || p.WQs[1] != (dsa.WQRef{Name: "0000:6a:01.0-q1", Device: "0000:6a:01.0", NUMA: 1}) {
		t.Errorf("plan: %+v", p)
	}
	// An idxd request for it says how to get it back.
	req = dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0"}}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	_, err = h.Plan(t.Context(), req)
	if e := wantCode(t, err, dsa.CodeBusy); !strings.Contains(e.Msg, "vfio-pci") || !strings.Contains(e.Msg, "reset") {
		t.Errorf("message: %v", e)
	}
}

func TestDiscoverBounds(t *testing.T) {
	pci := "sys/devices/pci0000:6a/0000:6a:01.0"
	cases := []struct {
		name  string
		patch map[string]string
		words []string
	}{
		{"oversized attribute", map[string]string{pci + "/dsa0/max_groups": strings.Repeat("1", 5000)}, []string{"max_groups", "5000 bytes"}},
		{"not a number", map[string]string{pci + "/dsa0/max_work_queues": "many"}, []string{"max_work_queues", "not a number"}},
		{"out of range", map[string]string{pci + "/dsa0/max_work_queues": "100000"}, []string{"max_work_queues", "outside"}},
		{"bad wq priority", map[string]string{pci + "/dsa0/wq0.2/priority": "99"}, []string{"wq0.2", "priority"}},
		{"missing capability", map[string]string{pci + "/dsa0/max_engines": ""}, []string{"max_engines", "missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := sprFiles()
			for k, v := range c.patch {
				if v == "" {
					delete(files, k)
				} else {
					files[k] = v
				}
			}
			tree(t, dir, files)
			_, err := newHost(t, sysfs.New(dir)).Discover(t.Context())
			e := wantCode(t, err, dsa.CodeKernel)
			for _, w := range c.words {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("%q lacks %q", e.Error(), w)
				}
			}
		})
	}
	t.Run("too many devices", func(t *testing.T) {
		dir := t.TempDir()
		files := map[string]string{}
		for i := range 65 {
			files["sys/bus/dsa/devices/dsa"+strconv.Itoa(i)] = "->nowhere"
		}
		tree(t, dir, files)
		_, err := newHost(t, sysfs.New(dir)).Discover(t.Context())
		if err == nil || !strings.Contains(err.Error(), "more than the 64") {
			t.Errorf("65 devices: %v", err)
		}
	})
}

func TestIsDSADeviceID(t *testing.T) {
	for _, c := range []struct {
		v, d string
		want bool
	}{{"0x8086", "0x0b25", true}, {"8086", "11FB", true}, {"0x8086", "0x1212", true}, {"0x8086", "0x0b26", false}, {"0x15b3", "0x0b25", false}} {
		if got := dsa.IsDSADeviceID(c.v, c.d); got != c.want {
			t.Errorf("%s:%s: %t", c.v, c.d, got)
		}
	}
}

// Plan on the hand-written tree lists the writes in the order the ABI needs and changes nothing.
func TestPlanTreeConfigure(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, sprFiles())
	f := wrap(sysfs.New(dir))
	h := newHost(t, f)
	req := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2}}}, OVSUser: &dsa.Owner{UID: 1000, GID: 1000, Name: "openvswitch"}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	p, err := h.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if f.count() != 0 {
		t.Errorf("Plan changed the machine: %v", f.changes)
	}
	dp := p.Devices[0]
	if dp.Action != dsa.ActionConfigure {
		t.Fatalf("action %s: %s", dp.Action, dp.Reason)
	}
	var got []string
	for _, s := range dp.Steps {
		got = append(got, s.Op+" "+strings.TrimPrefix(s.Path, "sys/bus/dsa/")+"="+s.Value)
	}
	want := []string{
		"write devices/dsa0/engine0.0/group_id=0",
		"write devices/dsa0/engine0.1/group_id=0",
		"write devices/wq0.0/group_id=0",
		"write devices/wq0.0/type=user",
		"write devices/wq0.0/name=dpdk_wq0.0",
		"write devices/wq0.0/priority=10",
		"write devices/wq0.0/driver_name=user",
		"write devices/wq0.0/size=64",
		"write devices/wq0.1/group_id=0",
		"write devices/wq0.1/type=user",
		"write devices/wq0.1/name=dpdk_wq0.1",
		"write devices/wq0.1/priority=10",
		"write devices/wq0.1/driver_name=user",
		"write devices/wq0.1/size=64",
		"write drivers/idxd/bind=dsa0",
		"write drivers/user/bind=wq0.0",
		"write drivers/user/bind=wq0.1",
		"chown dev/dsa/wq0.0=1000:1000",
		"chmod dev/dsa/wq0.0=0660",
		"chown dev/dsa/wq0.1=1000:1000",
		"chmod dev/dsa/wq0.1=0660",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range dp.Steps {
		if s.Reason == "" || s.Object == "" {
			t.Errorf("step without object or reason: %+v", s)
		}
	}
	if len(p.WQs) != 2 || p.WQs[0] != (dsa.WQRef{Name: "wq0.0", Device: "dsa0", NUMA: 0}) {
		t.Errorf("wqs: %+v", p.WQs)
	}
}
