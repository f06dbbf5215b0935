package vdpa

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
)

// Plan reads the host and returns what Apply would do for req. prev is the port's persisted
// state from an earlier Apply (nil for a new port): it marks which vdpa device is already ours.
// Plan never changes the host.
func (h *Host) Plan(ctx context.Context, req Request, ovs OVSState, prev *State) (*Plan, error) {
	req, err := req.Normalize()
	if err != nil {
		return nil, err
	}
	snap, err := h.Snapshot(ctx, req.PF)
	if err != nil {
		return nil, err
	}
	return BuildPlan(req, snap, ovs, prev)
}

// planner carries one BuildPlan call.
type planner struct {
	req  Request
	snap *Snapshot
	pf   *PF
	vf   *VF // nil when the VF does not exist yet
	ovs  OVSState
	prev *State
	p    *Plan
}

// BuildPlan is Plan without the host reads: a pure function of the request, a snapshot of the
// host, the OVS facts and the previous state. Golden tests call it directly.
func BuildPlan(req Request, snap *Snapshot, ovs OVSState, prev *State) (*Plan, error) {
	req, err := req.Normalize()
	if err != nil {
		return nil, err
	}
	if snap.PF == nil {
		return nil, newErr(CodePFNotFound, req.PF, nil, "snapshot has no PF")
	}
	pl := &planner{req: req, snap: snap, pf: snap.PF, vf: snap.vf(req.VF), ovs: ovs, prev: prev,
		p: &Plan{Request: req, PF: snap.PF.Addr, VFIndex: req.VF}}
	for _, f := range []func() error{pl.checkPF, pl.checkOVS, pl.checkVFUse, pl.checkKernelMode,
		pl.planPF, pl.planVFDriver, pl.planRepresentor, pl.planVDPA} {
		if err := f(); err != nil {
			return nil, err
		}
	}
	pl.planOVS()
	pl.planEndpoint()
	return pl.p, nil
}

func (pl *planner) add(s Step) { pl.p.Steps = append(pl.p.Steps, s) }

func (pl *planner) warn(code Code, format string, args ...any) {
	pl.p.Warnings = append(pl.p.Warnings, Warning{Code: code, Message: fmt.Sprintf(format, args...)})
}

func (pl *planner) checkPF() error {
	pf := pl.pf
	if pf.Vendor != VendorMellanox || pf.Driver != DriverMLX5 {
		return newErr(CodePFNotMLX5, pf.Addr, nil,
			"PF has vendor %s, driver %q; vDPA here needs an NVIDIA/Mellanox ConnectX-6 Dx or BlueField (vendor 0x15b3) bound to mlx5_core",
			pf.Vendor, pf.Driver)
	}
	if pf.TotalVFs == 0 {
		return newErr(CodeSRIOVCap, pf.Addr, nil,
			"sriov_totalvfs is 0: enable SR-IOV in firmware (mlxconfig -d %s set SRIOV_EN=1 NUM_OF_VFS=8) and reboot", pf.Addr)
	}
	if pl.req.NumVFs > pf.TotalVFs {
		return newErr(CodeSRIOVCap, pf.Addr, nil,
			"requested %d VFs (vf %d) > sriov_totalvfs %d: use a lower VF index or raise NUM_OF_VFS with mlxconfig and reboot",
			pl.req.NumVFs, pl.req.VF, pf.TotalVFs)
	}
	if pl.vf != nil {
		pl.p.VF = pl.vf.Addr
		return nil
	}
	addr, err := VFAddress(pf.Addr, pf.Offset, pf.Stride, pl.req.VF)
	if err != nil || pf.Stride == 0 && pl.req.VF > 0 {
		return newErr(CodeSRIOVCap, pf.Addr, err, "cannot compute VF %d's address (sriov_offset %d, sriov_stride %d)",
			pl.req.VF, pf.Offset, pf.Stride)
	}
	pl.p.VF = addr
	return nil
}

func (pl *planner) checkOVS() error {
	o := pl.ovs
	if pl.req.Mode == ModeOVSFork && !slices.Contains(o.IfaceTypes, "dpdkvdpa") {
		return newErr(CodeOVSNoDPDKVDPA, pl.req.Name, nil,
			"mode ovs-fork needs NVIDIA's OVS (MLNX_OFED/DOCA): 'dpdkvdpa' is not in Open_vSwitch:iface_types of the running ovs-vswitchd; use mode kernel or dpdk-pmd with upstream OVS")
	}
	if !o.Running {
		pl.p.Notes = append(pl.p.Notes, "OVS facts unknown (ovs-vswitchd not reported running): DPDK and hw-offload not checked")
		return nil
	}
	if !o.DPDKInitialized {
		return newErr(CodeOVSNoDPDK, pl.req.Name, nil,
			"ovs-vswitchd runs without DPDK (dpdk_initialized=false): install the DPDK build (openvswitch-switch-dpdk), set other_config:dpdk-init=true and restart it; the VF representor is a type=dpdk port")
	}
	return nil
}

// checkVFUse refuses a VF that someone else uses.
func (pl *planner) checkVFUse() error {
	for _, i := range pl.ovs.Interfaces {
		if i.Name != pl.req.Name && i.usesVF(pl.pf.Addr, pl.p.VF, pl.req.VF) {
			return newErr(CodeVFInUse, pl.p.VF, nil,
				"VF %d of %s is already used by OVS interface %q (type %s): pick another VF or delete that interface", pl.req.VF, pl.pf.Addr, i.Name, i.Type)
		}
	}
	vf := pl.vf
	if vf == nil {
		return nil
	}
	if vf.Driver != "" && vf.Driver != DriverMLX5 {
		return newErr(CodeVFInUse, vf.Addr, nil,
			"VF %d is bound to %s (a VM or another user has it): pick another VF or release it", vf.Index, vf.Driver)
	}
	for _, name := range vf.Devices {
		switch {
		case pl.req.Mode != ModeKernel && pl.owns(name):
			return newErr(CodeClassConflict, vf.Addr, nil,
				"VF %d has this port's kernel vDPA device %s: the DPDK mlx5 vdpa class cannot probe it too; tear the port down before changing its mode", vf.Index, name)
		case pl.req.Mode != ModeKernel:
			return newErr(CodeClassConflict, vf.Addr, nil,
				"VF %d has kernel vDPA device %s: mode %s needs the VF without one ('vdpa dev del %s' if it is unused)", vf.Index, name, pl.req.Mode, name)
		case name != pl.req.VDPAName:
			return newErr(CodeVFInUse, vf.Addr, nil,
				"VF %d already has vDPA device %s (mlx5 allows one per VF): pick another VF or delete it", vf.Index, name)
		}
	}
	return nil
}

// owns reports whether prev records creating or adopting vdpa device name.
func (pl *planner) owns(name string) bool {
	if pl.prev == nil {
		return false
	}
	for _, s := range pl.prev.Done {
		if (s.Op == OpVDPAAdd || s.Op == OpVDPAAdopt) && s.Object == name {
			return true
		}
	}
	return false
}

// checkKernelMode checks the kernel's vdpa support for mode kernel.
func (pl *planner) checkKernelMode() error {
	if pl.req.Mode != ModeKernel {
		return nil
	}
	s := pl.snap
	if s.Family == nil {
		return noNetlinkErr(s.familyErr, s.Release)
	}
	if (pl.req.MAC != "" || pl.req.MTU != 0) && !s.Family.CanSetMACMTU() {
		return newErr(CodeAttrUnsupported, pl.req.VDPAName, nil,
			"kernel %s cannot set a vdpa device's mac/mtu (needs >= 5.16; it would silently ignore them): upgrade the kernel or drop mac/mtu", s.Release)
	}
	if pl.req.MaxVQP != 0 && !s.Family.CanSetMaxVQP() {
		return newErr(CodeAttrUnsupported, pl.req.VDPAName, nil,
			"kernel %s cannot set max_vqp (needs >= 5.17 and iproute2 >= 5.18): upgrade the kernel or drop max-vqp", s.Release)
	}
	if !slices.Contains(s.BusDrivers, pl.req.BusDriver) {
		return newErr(CodeNoBusDriver, pl.req.BusDriver, nil,
			"vdpa bus driver %s is not loaded: modprobe %s", pl.req.BusDriver, pl.req.BusDriver)
	}
	vf := pl.vf
	if vf == nil || vf.Driver != DriverMLX5 {
		return nil // the mgmtdev appears once the VF exists on mlx5_core; Apply waits for it
	}
	if vf.MgmtDev == nil {
		return noMgmtDevErr(vf.Addr, s)
	}
	if lim := vf.MgmtDev.MaxVQP(); pl.req.MaxVQP > 0 && lim > 0 && pl.req.MaxVQP > lim {
		return maxVQPErr(vf.Addr, pl.req.MaxVQP, vf.MgmtDev.MaxVQs)
	}
	return nil
}

func noMgmtDevErr(vf string, s *Snapshot) *Error {
	hint := "check that mlx5_vdpa is loaded ('modprobe mlx5_vdpa') and the VF is bound to mlx5_core"
	if s != nil && s.Modules["mlx5_vdpa"] {
		hint = "mlx5_vdpa is loaded but registered no management device for this VF: it may be a stub (DOCA-Host/inbox builds on BlueField DPU mode), or devlink param enable_vnet is false ('devlink dev param set pci/" + vf + " name enable_vnet value true cmode driverinit' then 'devlink dev reload pci/" + vf + "')"
	}
	return newErr(CodeNoMgmtDev, "pci/"+vf, nil, "no vdpa management device pci/%s: %s", vf, hint)
}

func maxVQPErr(vf string, want int, maxVQs uint32) *Error {
	return newErr(CodeMaxVQP, "pci/"+vf, nil,
		"max_vqp %d exceeds the device limit %d (max_supported_vqs %d / 2): lower max-vqp", want, maxVQs/2, maxVQs)
}

// pfConsumers lists what would break if the PF's VFs were destroyed or unbound.
func pfConsumers(pf *PF, ovs []OVSInterface, except string) []string {
	var out []string
	for _, vf := range pf.VFs {
		for _, d := range vf.Devices {
			out = append(out, "vdpa device "+d)
		}
		if vf.Driver != "" && vf.Driver != DriverMLX5 {
			out = append(out, fmt.Sprintf("VF %d bound to %s", vf.Index, vf.Driver))
		}
		for _, i := range ovs {
			if i.Name != except && i.usesVF(pf.Addr, vf.Addr, vf.Index) {
				out = append(out, "OVS interface "+i.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// planPF plans the PF-wide work: VF count and eswitch mode, with the autoprobe dance.
func (pl *planner) planPF() error {
	pf, req := pl.pf, pl.req
	attr := pciDev(pf.Addr)
	needVFs := pf.NumVFs < req.NumVFs
	needSwitchdev := req.Eswitch == EswitchSwitchdev && pf.Eswitch != EswitchSwitchdev
	if needSwitchdev {
		if err := eswitchReadErr(pf); err != nil {
			return err
		}
	}
	if (needVFs && pf.NumVFs > 0) || (needSwitchdev && len(pf.VFs) > 0) {
		if c := pfConsumers(pf, pl.ovs.Interfaces, req.Name); len(c) > 0 {
			what := fmt.Sprintf("sriov_numvfs=%d must become %d", pf.NumVFs, req.NumVFs)
			if !needVFs {
				what = "the eswitch must move to switchdev, which unbinds every VF"
			}
			return newErr(CodeSRIOVBusy, pf.Addr, nil, "%s but the VFs are in use by %s; refusing to reset: free them or use a VF index below %d",
				what, strings.Join(c, ", "), pf.NumVFs)
		}
	}
	if needVFs && pf.NumVFs > 0 {
		pl.add(Step{Op: OpSetAttr, Scope: ScopePF, Object: attr + "/sriov_numvfs", From: fmt.Sprint(pf.NumVFs), To: "0",
			What: fmt.Sprintf("disable the %d VFs of %s", pf.NumVFs, pf.Addr),
			Why:  fmt.Sprintf("the kernel only changes a non-zero VF count through 0 and VF %d needs %d VFs", req.VF, req.NumVFs)})
	}
	dance := needSwitchdev && needVFs && pf.Autoprobe
	if dance {
		pl.add(Step{Op: OpSetAttr, Scope: ScopePF, Object: attr + "/sriov_drivers_autoprobe", From: "1", To: "0",
			What: "stop new VFs from binding to a driver", Why: "VFs must be unbound while the eswitch changes mode"})
	}
	if needVFs {
		pl.add(Step{Op: OpSetAttr, Scope: ScopePF, Object: attr + "/sriov_numvfs", From: "0", To: fmt.Sprint(req.NumVFs),
			What: fmt.Sprintf("enable %d VFs on %s", req.NumVFs, pf.Addr), Why: fmt.Sprintf("VF %d must exist", req.VF)})
	}
	if !needSwitchdev {
		return nil
	}
	vfs := pl.vfsToRebind(needVFs)
	for _, a := range vfs {
		if !needVFs {
			pl.add(Step{Op: OpPCIUnbind, Scope: ScopePF, Object: a, Driver: DriverMLX5,
				What: "unbind VF " + a + " from mlx5_core", Why: "the eswitch mode only changes with the VFs unbound"})
		}
	}
	pl.add(Step{Op: OpEswitch, Scope: ScopePF, Object: pf.Addr, From: orDefault(pf.Eswitch, eswitchLegacy), To: EswitchSwitchdev,
		What: "devlink dev eswitch set pci/" + pf.Addr + " mode switchdev",
		Why:  "VF representors (and so OVS hardware offload) exist only in switchdev mode"})
	for _, a := range vfs {
		pl.add(Step{Op: OpPCIBind, Scope: ScopePF, Object: a, Driver: DriverMLX5,
			What: "bind VF " + a + " to mlx5_core", Why: "the VF's vdpa management device and netdev come from mlx5_core"})
	}
	if dance {
		pl.add(Step{Op: OpSetAttr, Scope: ScopePF, Object: attr + "/sriov_drivers_autoprobe", From: "0", To: "1",
			What: "restore driver autoprobe for VFs", Why: "leave the PF as it was found"})
	}
	return nil
}

// vfsToRebind lists the VFs to (un)bind around the eswitch change: all new ones when this plan
// creates them with autoprobe off, else the ones bound to mlx5_core now.
func (pl *planner) vfsToRebind(created bool) []string {
	var out []string
	if created {
		if !pl.pf.Autoprobe {
			return nil // left unbound, as the host's autoprobe policy says; planVFDriver binds ours
		}
		for i := 0; i < pl.req.NumVFs; i++ {
			a, _ := VFAddress(pl.pf.Addr, pl.pf.Offset, pl.pf.Stride, i)
			out = append(out, a)
		}
		return out
	}
	for _, vf := range pl.pf.VFs {
		if vf.Driver == DriverMLX5 {
			out = append(out, vf.Addr)
		}
	}
	return out
}

func eswitchReadErr(pf *PF) error {
	err := pf.eswitchErr
	if err == nil && pf.EswitchError == "" {
		return nil
	}
	if isErrno(err, syscall.EOPNOTSUPP, syscall.EPERM) {
		return newErr(CodeEswitchDenied, pf.Addr, err,
			"the eswitch of %s is not host-owned (BlueField in DPU mode?): configure representors and vDPA on the DPU's Arm, or set eswitch: skip", pf.Addr)
	}
	return newErr(CodeEswitchDenied, pf.Addr, err, "cannot read the eswitch mode of %s through devlink: is devlink available (kernel with CONFIG_NET_DEVLINK)?", pf.Addr)
}

// planVFDriver binds the port's VF to mlx5_core when it exists unbound (or will: autoprobe off).
func (pl *planner) planVFDriver() error {
	if pl.vf != nil && pl.vf.Driver == DriverMLX5 {
		return nil
	}
	for _, s := range pl.p.Steps {
		if s.Op == OpPCIBind && s.Object == pl.p.VF {
			return nil
		}
	}
	if pl.vf == nil && pl.pf.Autoprobe {
		return nil
	}
	pl.add(Step{Op: OpPCIBind, Scope: ScopePort, Object: pl.p.VF, Driver: DriverMLX5,
		What: "bind VF " + pl.p.VF + " to mlx5_core", Why: "vDPA (kernel or DPDK, bifurcated) runs on a VF bound to mlx5_core"})
	return nil
}

func (pl *planner) planRepresentor() error {
	if pl.vf != nil && pl.vf.Representor != "" {
		pl.p.Representor = pl.vf.Representor
		return nil
	}
	changing := len(pl.p.Steps) > 0
	if !changing || (pl.req.Eswitch == EswitchSkip && pl.pf.Eswitch != EswitchSwitchdev) {
		return representorErr(pl.pf, pl.req.VF)
	}
	pl.add(Step{Op: OpWaitRepresentor, Scope: ScopePort, Object: pl.p.VF,
		What: fmt.Sprintf("wait for the representor of VF %d (phys_port_name pf%dvf%d)", pl.req.VF, pl.pf.PFNum, pl.req.VF),
		Why:  "OVS attaches the representor"})
	return nil
}

func representorErr(pf *PF, vf int) *Error {
	hint := "is the eswitch in switchdev mode ('devlink dev eswitch show pci/" + pf.Addr + "')?"
	if pf.Eswitch == EswitchSwitchdev {
		hint = "the eswitch is in switchdev mode, yet no netdev has phys_switch_id " + pf.SwitchID + " and phys_port_name pf" + fmt.Sprint(pf.PFNum) + "vf" + fmt.Sprint(vf) + "; check 'ip -d link' and dmesg"
	} else if pf.eswitchErr != nil {
		hint = "the eswitch is not host-owned (BlueField DPU mode): representors live on the DPU's Arm"
	}
	return newErr(CodeRepresentorNotFound, pf.Addr, nil, "no representor for VF %d: %s", vf, hint)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// planVDPA plans the kernel vdpa device, its bus driver and the wait for its endpoint.
func (pl *planner) planVDPA() error {
	req := pl.req
	if req.Mode != ModeKernel {
		return nil
	}
	name := req.VDPAName
	params := &VDPAParams{MgmtDev: "pci/" + pl.p.VF, MAC: req.MAC, MTU: req.MTU, MaxVQP: req.MaxVQP}
	if d := pl.snap.Device(name); d != nil {
		if err := pl.checkExisting(d); err != nil {
			return err
		}
		if req.Adopt && !pl.owns(name) {
			pl.add(Step{Op: OpVDPAAdopt, Scope: ScopePort, Object: name, VDPA: params,
				What: "adopt existing vdpa device " + name, Why: "adopt was asked: teardown will delete it"})
		} else if !pl.owns(name) {
			pl.p.Notes = append(pl.p.Notes, "vdpa device "+name+" exists with the requested parent and configuration; used as is and not owned (teardown leaves it; set adopt to own it)")
		}
	} else {
		pl.add(Step{Op: OpVDPAAdd, Scope: ScopePort, Object: name, VDPA: params,
			What: fmt.Sprintf("vdpa dev add name %s mgmtdev pci/%s%s", name, pl.p.VF, params.cli()),
			Why:  "the guest's virtio rings are served by the VF through kernel vDPA"})
	}
	if d := pl.snap.Device(name); d == nil || d.BusDriver != req.BusDriver {
		pl.add(Step{Op: OpVDPABusDriver, Scope: ScopePort, Object: name, To: req.BusDriver,
			What: "bind " + name + " to " + req.BusDriver, Why: busWhy(req.BusDriver)})
	}
	if req.BusDriver == BusVhostVDPA {
		if d := pl.snap.Device(name); d == nil || d.CharDev == "" || len(pl.p.Steps) > 0 {
			pl.add(Step{Op: OpWaitCharDev, Scope: ScopePort, Object: name,
				What: "wait for /dev/vhost-vdpa-N of " + name, Why: "QEMU opens the character device (udev creates it)"})
		}
	} else if d := pl.snap.Device(name); d == nil || d.Netdev == "" || len(pl.p.Steps) > 0 {
		pl.add(Step{Op: OpWaitNetdev, Scope: ScopePort, Object: name,
			What: "wait for the virtio netdev of " + name, Why: "the host uses the virtio-net interface"})
	}
	return nil
}

func busWhy(drv string) string {
	if drv == BusVhostVDPA {
		return "vhost_vdpa exposes /dev/vhost-vdpa-N for a VM"
	}
	return "virtio_vdpa gives the host a virtio-net interface (containers, bare metal)"
}

func (p *VDPAParams) cli() string {
	var b strings.Builder
	if p.MAC != "" {
		b.WriteString(" mac " + p.MAC)
	}
	if p.MTU != 0 {
		fmt.Fprintf(&b, " mtu %d", p.MTU)
	}
	if p.MaxVQP != 0 {
		fmt.Fprintf(&b, " max_vqp %d", p.MaxVQP)
	}
	return b.String()
}

// checkExisting accepts an existing device of the port's name only with the same parent and the
// requested configuration.
func (pl *planner) checkExisting(d *Device) error {
	if d.Parent != pl.p.VF {
		return newErr(CodeExists, d.Name, syscall.EEXIST,
			"a vdpa device named %s already exists on %s, not on VF %s: choose another vdpa name or delete it ('vdpa dev del %s')", d.Name, d.Parent, pl.p.VF, d.Name)
	}
	if diff := configDiff(d.Config, pl.req); diff != "" {
		return newErr(CodeExists, d.Name, syscall.EEXIST,
			"vdpa device %s exists on VF %s with %s: delete the port (or 'vdpa dev del %s') and apply again", d.Name, pl.p.VF, diff, d.Name)
	}
	return nil
}

// configDiff describes how a device's configuration differs from the request ("" if it does not;
// unknown configuration does not differ).
func configDiff(c *DevConfig, req Request) string {
	if c == nil {
		return ""
	}
	var d []string
	if req.MAC != "" && c.MAC.String() != req.MAC {
		d = append(d, fmt.Sprintf("mac %s (want %s)", c.MAC, req.MAC))
	}
	if req.MTU != 0 && int(c.MTU) != req.MTU {
		d = append(d, fmt.Sprintf("mtu %d (want %d)", c.MTU, req.MTU))
	}
	if req.MaxVQP != 0 && int(c.MaxVQP) != req.MaxVQP {
		d = append(d, fmt.Sprintf("max_vqp %d (want %d)", c.MaxVQP, req.MaxVQP))
	}
	return strings.Join(d, ", ")
}
