package vdpa

import (
	"context"
	"fmt"
	"slices"
)

// Support says whether something works here and, if not, why (each reason a catalogued code
// with what to do).
type Support struct {
	OK  bool      `json:"ok"`
	Why []Warning `json:"why,omitempty"`
}

func (s *Support) no(code Code, msg string) {
	s.OK = false
	s.Why = append(s.Why, Warning{Code: code, Message: msg})
}

func yes() Support { return Support{OK: true} }

// Report is Detect's read-only capability report.
type Report struct {
	Kernel KernelReport     `json:"kernel"`
	PFs    []PFReport       `json:"pfs"`
	OVS    OVSReport        `json:"ovs"`
	Modes  map[Mode]Support `json:"modes"`
}

// KernelReport covers the kernel's vdpa support.
type KernelReport struct {
	Release     string          `json:"release"`
	Modules     map[string]bool `json:"modules"`
	BusDrivers  []string        `json:"bus_drivers"`
	Family      *Family         `json:"family,omitempty"`
	VDPANetlink Support         `json:"vdpa_netlink"`
	MACMTU      Support         `json:"mac_mtu"`
	MaxVQP      Support         `json:"max_vqp"`
}

// PFReport covers one mlx5 PF.
type PFReport struct {
	PF        *PF      `json:"pf"`
	Switchdev Support  `json:"switchdev"`
	MgmtDevs  []string `json:"mgmtdevs,omitempty"`
	Devices   []Device `json:"devices,omitempty"`
}

// OVSReport covers the running Open vSwitch as the caller described it.
type OVSReport struct {
	Known       bool    `json:"known"`
	OVSVersion  string  `json:"ovs_version,omitempty"`
	DPDKVersion string  `json:"dpdk_version,omitempty"`
	DPDK        Support `json:"dpdk"`
	DPDKVDPA    Support `json:"dpdkvdpa"`
	HWOffload   bool    `json:"hw_offload"`
}

// Detect reports what the host and the running OVS support, and why not, without changing
// anything. It fails only when the host cannot be read at all.
func (h *Host) Detect(ctx context.Context, ovs OVSState) (*Report, error) {
	s, err := h.Snapshot(ctx, "")
	if err != nil {
		return nil, err
	}
	r := &Report{Modes: map[Mode]Support{}}
	r.Kernel = kernelReport(s)
	pfs, err := h.PFs(ctx)
	if err != nil {
		return nil, err
	}
	for _, pf := range pfs {
		r.PFs = append(r.PFs, pfReport(pf, s))
	}
	r.OVS = ovsReport(ovs)
	r.Modes = modes(r)
	return r, nil
}

// kernelReport judges the kernel's vdpa support from the family the kernel describes. Without
// the family (VDPA_NO_NETLINK) nothing is known of its attributes: mac/mtu and max_vqp are
// reported missing for that reason, with its fix, never blamed on the release; the version
// message is kept for a family that exists but lacks the attribute.
func kernelReport(s *Snapshot) KernelReport {
	k := KernelReport{Release: s.Release, Modules: s.Modules, BusDrivers: s.BusDrivers, Family: s.Family,
		VDPANetlink: yes(), MACMTU: yes(), MaxVQP: yes()}
	if s.Family == nil {
		e := noNetlinkErr(s.familyErr, s.Release)
		k.VDPANetlink.no(e.Code, e.Error())
		unknown := "unknown without the vdpa netlink family to ask: " + e.Msg
		k.MACMTU.no(e.Code, unknown)
		k.MaxVQP.no(e.Code, unknown)
		return k
	}
	if !s.Family.CanSetMACMTU() {
		k.MACMTU.no(CodeAttrUnsupported, fmt.Sprintf("setting a vdpa device's mac/mtu needs kernel >= 5.16 (release %s: its vdpa family has no DEV_CONFIG_GET or stops at attribute %d): upgrade the kernel or drop mac/mtu",
			s.Release, s.Family.MaxAttr))
	}
	if !s.Family.CanSetMaxVQP() {
		k.MaxVQP.no(CodeAttrUnsupported, fmt.Sprintf("setting max_vqp needs kernel >= 5.17 (release %s: its vdpa family stops at attribute %d): upgrade the kernel or drop max-vqp",
			s.Release, s.Family.MaxAttr))
	}
	return k
}

func pfReport(pf *PF, s *Snapshot) PFReport {
	r := PFReport{PF: pf, Switchdev: yes()}
	if pf.Eswitch != EswitchSwitchdev {
		if err := eswitchReadErr(pf); err != nil {
			e := err.(*Error)
			r.Switchdev.no(e.Code, e.Error())
		}
	}
	if pf.Driver != DriverMLX5 {
		r.Switchdev.no(CodePFNotMLX5, "PF "+pf.Addr+" is bound to "+orDefault(pf.Driver, "no driver")+", not mlx5_core")
	}
	if pf.TotalVFs == 0 {
		r.Switchdev.no(CodeSRIOVCap, "sriov_totalvfs is 0: enable SR-IOV in firmware (mlxconfig SRIOV_EN=1 NUM_OF_VFS=N)")
	}
	for i := range pf.VFs {
		vf := &pf.VFs[i]
		if md := s.mgmtDev(vf.Addr); md != nil {
			vf.MgmtDev = md
			r.MgmtDevs = append(r.MgmtDevs, md.String())
		}
		for _, d := range s.Devices {
			if d.Parent == vf.Addr {
				vf.Devices = append(vf.Devices, d.Name)
				r.Devices = append(r.Devices, d)
			}
		}
	}
	return r
}

func ovsReport(o OVSState) OVSReport {
	r := OVSReport{Known: o.Running, OVSVersion: o.OVSVersion, DPDKVersion: o.DPDKVersion, DPDK: yes(), DPDKVDPA: yes(),
		HWOffload: o.OtherConfig["hw-offload"] == "true"}
	if !o.Running {
		r.DPDK.no(CodeOVSNoDPDK, "ovs-vswitchd is not known to run: no facts about DPDK")
	} else if !o.DPDKInitialized {
		r.DPDK.no(CodeOVSNoDPDK, "ovs-vswitchd runs without DPDK (dpdk_initialized=false): use the DPDK build and other_config:dpdk-init=true")
	}
	if !slices.Contains(o.IfaceTypes, "dpdkvdpa") {
		r.DPDKVDPA.no(CodeOVSNoDPDKVDPA, "'dpdkvdpa' is not in iface_types: this is not NVIDIA's OVS fork")
	}
	return r
}

// modes summarises, per mode, whether some PF on this host can serve it.
func modes(r *Report) map[Mode]Support {
	out := map[Mode]Support{}
	for _, m := range Modes {
		s := yes()
		if len(r.PFs) == 0 {
			s.no(CodePFNotFound, "no NVIDIA/Mellanox SR-IOV PF (vendor 0x15b3) found")
		} else if !slices.ContainsFunc(r.PFs, func(p PFReport) bool { return p.Switchdev.OK }) {
			for _, p := range r.PFs {
				s.Why = append(s.Why, p.Switchdev.Why...)
			}
			s.OK = false
		}
		if !r.OVS.DPDK.OK {
			s.Why = append(s.Why, r.OVS.DPDK.Why...)
			s.OK = false
		}
		switch m {
		case ModeKernel:
			if !r.Kernel.VDPANetlink.OK {
				s.Why = append(s.Why, r.Kernel.VDPANetlink.Why...)
				s.OK = false
			}
			if !slices.Contains(r.Kernel.BusDrivers, BusVhostVDPA) {
				s.no(CodeNoBusDriver, "vhost_vdpa is not loaded: modprobe vhost_vdpa")
			}
			if !r.Kernel.Modules["mlx5_vdpa"] {
				s.no(CodeNoMgmtDev, "mlx5_vdpa is not loaded: modprobe mlx5_vdpa")
			}
		case ModeOVSFork:
			if !r.OVS.DPDKVDPA.OK {
				s.Why = append(s.Why, r.OVS.DPDKVDPA.Why...)
				s.OK = false
			}
		}
		out[m] = s
	}
	return out
}
