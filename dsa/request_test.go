package dsa_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
)

func TestNormalizeDefaults(t *testing.T) {
	r := dsa.Request{Devices: []dsa.DeviceRequest{{Device: " dsa0 "}, {Device: "0000:6A:01.0", Driver: "vfio-pci", WQs: dsa.WQRequest{Count: 4}}}}
	if err := r.Normalize(""); err != nil {
		t.Fatal(err)
	}
	d := r.Devices[0]
	want := dsa.WQRequest{Count: 1, Mode: "dedicated", Priority: 10, NamePrefix: "dpdk"}
	if d.Device != "dsa0" || d.Driver != "idxd" || d.WQs != want || d.Engines != 0 {
		t.Errorf("defaults: %+v", d)
	}
	if v := r.Devices[1]; v.Device != "0000:6a:01.0" || v.WQs.Count != 4 {
		t.Errorf("vfio device: %+v", v)
	}
	// Normalize is idempotent.
	again := r
	again.Devices = append([]dsa.DeviceRequest(nil), r.Devices...)
	if err := again.Normalize(""); err != nil || again.Devices[0] != r.Devices[0] {
		t.Errorf("second Normalize changed the request: %+v %v", again.Devices[0], err)
	}
}

func TestNormalizeRejects(t *testing.T) {
	long := strings.Repeat("d", 60)
	cases := []struct {
		name       string
		dev        dsa.DeviceRequest
		filePrefix string
		code       dsa.Code
		field      string
		words      []string
	}{
		{"bad device", dsa.DeviceRequest{Device: "eth0"}, "", dsa.CodeInvalidRequest, "devices[0].dsa", []string{"dsa0", "0000:6a:01.0"}},
		{"bad driver", dsa.DeviceRequest{Device: "dsa0", Driver: "uio"}, "", dsa.CodeInvalidRequest, "devices[0].driver", []string{"idxd", "vfio-pci"}},
		{"vfio by name", dsa.DeviceRequest{Device: "dsa0", Driver: "vfio-pci"}, "", dsa.CodeInvalidRequest, "devices[0].dsa", []string{"PCI address"}},
		{"count", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Count: 257}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.count", []string{"1..256"}},
		{"negative count", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Count: -1}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.count", nil},
		{"priority", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Priority: 16}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.priority", []string{"1..15"}},
		{"size", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Size: -3}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.size", nil},
		{"shared", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Mode: "shared"}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.mode", []string{"dedicated"}},
		{"engines", dsa.DeviceRequest{Device: "dsa0", Engines: -1}, "", dsa.CodeInvalidRequest, "devices[0].engines", nil},
		{"numa", dsa.DeviceRequest{Device: "dsa0", NUMA: new(-2)}, "", dsa.CodeInvalidRequest, "devices[0].numa", nil},
		{"prefix chars", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "dpdk ovs"}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.namePrefix", []string{"letters"}},
		{"prefix length", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "dpdk_" + long}}, "", dsa.CodeInvalidRequest, "devices[0].wqs.namePrefix", []string{"64-byte"}},
		{"prefix ignored", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "ovs"}}, "", dsa.CodeNamePrefix, "devices[0].wqs.namePrefix", []string{"ignored", `"dpdk_"`, `set namePrefix to "dpdk"`}},
		{"prefix not the file prefix", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "ovs"}}, "vhost", dsa.CodeNamePrefix, "devices[0].wqs.namePrefix", []string{"--file-prefix is vhost", `or "vhost"`}},
		{"dpdk without underscore", dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "dpdkovs"}}, "", dsa.CodeNamePrefix, "devices[0].wqs.namePrefix", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := dsa.Request{Devices: []dsa.DeviceRequest{c.dev}}
			e := wantCode(t, r.Normalize(c.filePrefix), c.code)
			if e.Field != c.field {
				t.Errorf("field %q, want %q", e.Field, c.field)
			}
			for _, w := range c.words {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("message %q lacks %q", e.Error(), w)
				}
			}
		})
	}
	r := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}, {Device: "dsa0"}}}
	if e := wantCode(t, r.Normalize(""), dsa.CodeInvalidRequest); !strings.Contains(e.Msg, "twice") {
		t.Errorf("duplicate device: %v", e)
	}
	r = dsa.Request{Devices: make([]dsa.DeviceRequest, 65)}
	wantCode(t, r.Normalize(""), dsa.CodeInvalidRequest)
	r = dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}}, OVSUser: &dsa.Owner{UID: -1}}
	wantCode(t, r.Normalize(""), dsa.CodeInvalidRequest)
}

func TestNormalizeAcceptsDPDKNames(t *testing.T) {
	for _, c := range []struct{ prefix, filePrefix string }{
		{"dpdk", ""}, {"dpdk_ovs", ""}, {"vhost", "vhost"}, {"vhost_a-1", "vhost"}, {"dpdk", "vhost"},
		{"rte", ""}, // DPDK's runtime directory is "rte" without --file-prefix
	} {
		r := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: c.prefix}}}}
		if err := r.Normalize(c.filePrefix); err != nil {
			t.Errorf("prefix %q, file prefix %q: %v", c.prefix, c.filePrefix, err)
		}
	}
	long := "dpdk_" + strings.Repeat("x", 54-5) // 54 bytes: "<prefix>_wq63.255" is 63
	r := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: long}}}}
	if err := r.Normalize(""); err != nil {
		t.Errorf("a %d-byte prefix fits: %v", len(long), err)
	}
	r.Devices[0].WQs.NamePrefix = long + "x"
	wantCode(t, r.Normalize(""), dsa.CodeInvalidRequest)
	if !dsa.DPDKAcceptsName("dpdk_wq0.0", "x") || dsa.DPDKAcceptsName("app1", "") || !dsa.DPDKAcceptsName("x_wq0.0", "x") {
		t.Error("DPDKAcceptsName disagrees with DPDK's rule")
	}
}

// Whatever Normalize accepts is within bounds, named for DPDK, and stays as it is when
// normalized again; whatever it refuses is a catalogued error.
func FuzzNormalize(f *testing.F) {
	f.Add("dsa0", "", 0, 0, 0, "", "")
	f.Add("0000:6a:01.0", "vfio-pci", 4, 3, 32, "dpdk_ovs", "vhost")
	f.Add("dsa1", "idxd", 300, 16, -1, "ovs", "ovs")
	f.Fuzz(func(t *testing.T, device, driver string, count, priority, size int, prefix, filePrefix string) {
		r := dsa.Request{Devices: []dsa.DeviceRequest{{Device: device, Driver: driver,
			WQs: dsa.WQRequest{Count: count, Priority: priority, Size: size, NamePrefix: prefix}}}}
		err := r.Normalize(filePrefix)
		if err != nil {
			if c := dsa.CodeOf(err); c != dsa.CodeInvalidRequest && c != dsa.CodeNamePrefix {
				t.Fatalf("uncatalogued refusal %v", err)
			}
			return
		}
		w := r.Devices[0].WQs
		if w.Count < 1 || w.Count > 256 || w.Priority < 1 || w.Priority > 15 || w.Size < 0 || w.Mode != "dedicated" {
			t.Fatalf("accepted out of bounds: %+v", w)
		}
		if name := w.NamePrefix + "_wq63.255"; len(name) > 63 || !dsa.DPDKAcceptsName(name, filePrefix) {
			t.Fatalf("accepted name %q (file prefix %q)", name, filePrefix)
		}
		again := r
		again.Devices = append([]dsa.DeviceRequest(nil), r.Devices...)
		if err := again.Normalize(filePrefix); err != nil || again.Devices[0] != r.Devices[0] {
			t.Fatalf("not stable: %+v vs %+v (%v)", again.Devices[0], r.Devices[0], err)
		}
	})
}
