package vdpa_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

func whyCodes(s vdpa.Support) []vdpa.Code {
	var c []vdpa.Code
	for _, w := range s.Why {
		c = append(c, w.Code)
	}
	return c
}

// TestDetect: the capability report on each host variant says what works and, by code, why not.
func TestDetect(t *testing.T) {
	cases := []struct {
		fixture string
		ovs     vdpa.OVSState
		ok      map[vdpa.Mode]bool
		why     map[vdpa.Mode]vdpa.Code
		check   func(t *testing.T, r *vdpa.Report)
	}{
		{"cx6dx-switchdev", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: true, vdpa.ModeDPDKPMD: true, vdpa.ModeOVSFork: false},
			map[vdpa.Mode]vdpa.Code{vdpa.ModeOVSFork: vdpa.CodeOVSNoDPDKVDPA}, func(t *testing.T, r *vdpa.Report) {
				if len(r.PFs) != 2 || len(r.PFs[0].MgmtDevs) != 2 || r.PFs[0].PF.Eswitch != "switchdev" || r.PFs[0].PF.VFs[1].Representor != "enp101s0f0npf0vf1" {
					t.Errorf("PFs %+v", r.PFs)
				}
				if !r.Kernel.MaxVQP.OK || r.Kernel.Release != "6.1.0-18-amd64" {
					t.Errorf("kernel %+v", r.Kernel)
				}
			}},
		{"cx6dx-switchdev", forkOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: true, vdpa.ModeDPDKPMD: true, vdpa.ModeOVSFork: true}, nil, nil},
		{"cx6dx-inuse", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: true}, nil, func(t *testing.T, r *vdpa.Report) {
			d := r.PFs[0].Devices
			if len(d) != 1 || d[0].Name != "vdpa0" || d[0].CharDev != "/dev/vhost-vdpa-0" || d[0].BusDriver != "vhost_vdpa" || d[0].Config.MaxVQP != 4 {
				t.Errorf("devices %+v", d)
			}
		}},
		{"cx6dx-nomodules", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: false, vdpa.ModeDPDKPMD: true},
			map[vdpa.Mode]vdpa.Code{vdpa.ModeKernel: vdpa.CodeNoNetlink}, nil},
		{"cx6dx-kernel-5.15", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: true}, nil, func(t *testing.T, r *vdpa.Report) {
			if r.Kernel.MACMTU.OK || r.Kernel.MaxVQP.OK {
				t.Errorf("5.15 reported able to set mac/max_vqp: %+v", r.Kernel)
			}
		}},
		{"bluefield-dpu", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: false, vdpa.ModeDPDKPMD: false},
			map[vdpa.Mode]vdpa.Code{vdpa.ModeKernel: vdpa.CodeEswitchDenied}, nil},
		{"cx6dx-switchdev", vdpa.OVSState{}, map[vdpa.Mode]bool{vdpa.ModeKernel: false},
			map[vdpa.Mode]vdpa.Code{vdpa.ModeKernel: vdpa.CodeOVSNoDPDK}, nil},
		{"intel-e810", stockOVS, map[vdpa.Mode]bool{vdpa.ModeKernel: true}, nil, func(t *testing.T, r *vdpa.Report) {
			for _, p := range r.PFs {
				if p.PF.Vendor != vdpa.VendorMellanox {
					t.Errorf("non-mlx5 PF listed: %+v", p.PF)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			k, h := bootNamed(t, c.fixture)
			r, err := h.Detect(ctx, c.ovs)
			if err != nil {
				t.Fatal(err)
			}
			if k.Mutations() != 0 {
				t.Error("Detect changed the host")
			}
			for m, ok := range c.ok {
				if r.Modes[m].OK != ok {
					t.Errorf("mode %s ok=%v, want %v: %+v", m, r.Modes[m].OK, ok, r.Modes[m].Why)
				}
			}
			for m, code := range c.why {
				if !slices.Contains(whyCodes(r.Modes[m]), code) {
					t.Errorf("mode %s: want reason %s, got %+v", m, code, r.Modes[m].Why)
				}
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestDetectNoFamily: when generic netlink has no vdpa family (CTRL_CMD_GETFAMILY answers
// ENOENT) the report names the real cause and its fix. On a kernel new enough for everything
// (6.18) that is the unloaded vdpa module — never "needs kernel >= 5.16" for mac/mtu or max_vqp,
// which cannot be judged without the family; only a kernel older than 5.12 is told to upgrade.
// A family that exists but lacks the attributes (5.15) keeps the version message.
func TestDetectNoFamily(t *testing.T) {
	cases := []struct {
		fixture        string
		netlink        []string // in the VDPA_NO_NETLINK message
		attrCode       vdpa.Code
		attrs, notAttr []string // in / not in the mac/mtu and max_vqp messages
	}{
		{"cx6dx-kernel-6.18-nomodules",
			[]string{"kernel 6.18.44-generic has no vdpa netlink family", "ENOENT", "vdpa module is not loaded", "modprobe vdpa mlx5_vdpa vhost_vdpa"},
			vdpa.CodeNoNetlink, []string{"without the vdpa netlink family", "modprobe vdpa mlx5_vdpa"}, []string{"kernel >=", "upgrade"}},
		{"cx6dx-kernel-5.10",
			[]string{"kernel 5.10.0-28-amd64 has no vdpa netlink family, which arrived in 5.12: upgrade the kernel"},
			vdpa.CodeNoNetlink, []string{"without the vdpa netlink family", "upgrade the kernel"}, []string{"kernel >= 5.1"}},
		{"cx6dx-kernel-5.15", nil, vdpa.CodeAttrUnsupported, []string{"kernel >= 5.1", "release 5.15.0-91-generic", "upgrade the kernel"}, []string{"netlink family"}},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			_, h := bootNamed(t, c.fixture)
			r, err := h.Detect(ctx, stockOVS)
			if err != nil {
				t.Fatal(err)
			}
			k := r.Kernel
			if c.netlink == nil {
				if !k.VDPANetlink.OK || k.Family == nil {
					t.Fatalf("vdpa netlink %+v, family %+v: want present", k.VDPANetlink, k.Family)
				}
			} else {
				if k.VDPANetlink.OK || len(k.VDPANetlink.Why) != 1 || k.VDPANetlink.Why[0].Code != vdpa.CodeNoNetlink {
					t.Fatalf("vdpa netlink %+v: want one VDPA_NO_NETLINK", k.VDPANetlink)
				}
				for _, want := range c.netlink {
					if msg := k.VDPANetlink.Why[0].Message; !strings.Contains(msg, want) {
						t.Errorf("vdpa netlink: %q lacks %q", msg, want)
					}
				}
				if !slices.Contains(whyCodes(r.Modes[vdpa.ModeKernel]), vdpa.CodeNoNetlink) {
					t.Errorf("mode kernel: %+v, want VDPA_NO_NETLINK", r.Modes[vdpa.ModeKernel])
				}
			}
			for name, s := range map[string]vdpa.Support{"mac/mtu": k.MACMTU, "max_vqp": k.MaxVQP} {
				if s.OK || len(s.Why) != 1 || s.Why[0].Code != c.attrCode {
					t.Errorf("%s: %+v, want one %s", name, s, c.attrCode)
					continue
				}
				for _, want := range c.attrs {
					if !strings.Contains(s.Why[0].Message, want) {
						t.Errorf("%s: %q lacks %q", name, s.Why[0].Message, want)
					}
				}
				for _, bad := range c.notAttr {
					if strings.Contains(s.Why[0].Message, bad) {
						t.Errorf("%s: %q says %q", name, s.Why[0].Message, bad)
					}
				}
			}
		})
	}
}
