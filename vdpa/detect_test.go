package vdpa_test

import (
	"slices"
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
