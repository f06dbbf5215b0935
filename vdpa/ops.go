package vdpa

import (
	"context"
	"fmt"
	"path"
	"strings"
	"syscall"
)

// The primitive host operations. Each maps the kernel's errno to a catalogued error and names
// the object; none records anything (Apply does).

// writeNumVFs writes sriov_numvfs once.
func (h *Host) writeNumVFs(pf string, n int) error {
	err := h.fs.WriteFile(pciDev(pf)+"/sriov_numvfs", fmt.Sprint(n))
	switch {
	case err == nil:
		return nil
	case isErrno(err, syscall.EBUSY):
		return newErr(CodeSRIOVBusy, pf, err, "the kernel refused sriov_numvfs=%d: %d VFs are enabled and a non-zero count only changes through 0", n, h.numVFs(pf))
	case isErrno(err, syscall.ERANGE, syscall.EINVAL):
		return newErr(CodeSRIOVCap, pf, err, "the kernel refused sriov_numvfs=%d (sriov_totalvfs %s)", n, h.readString(pciDev(pf)+"/sriov_totalvfs"))
	case isErrno(err, syscall.ENOENT, syscall.ENOSYS):
		return newErr(CodePFNotMLX5, pf, err, "cannot enable VFs: the PF has no driver with SR-IOV support bound (expected mlx5_core)")
	}
	return newErr(CodeKernel, pf, err, "writing sriov_numvfs=%d failed", n)
}

func (h *Host) numVFs(pf string) int {
	n, _ := h.readInt(pciDev(pf) + "/sriov_numvfs")
	return n
}

// SetNumVFs makes pf have n VFs, going through 0 as the kernel requires when a different non-zero
// count is enabled. It does not check for consumers; the planner does.
func (h *Host) SetNumVFs(ctx context.Context, pf string, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur := h.numVFs(pf)
	if cur == n {
		return nil
	}
	if cur != 0 && n != 0 {
		if err := h.writeNumVFs(pf, 0); err != nil {
			return err
		}
	}
	return h.writeNumVFs(pf, n)
}

// BindPCI binds a PCI device to a driver (idempotent).
func (h *Host) BindPCI(ctx context.Context, dev, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur := h.linkBase(pciDev(dev) + "/driver")
	if cur == driver {
		return nil
	}
	if cur != "" {
		return newErr(CodeVFInUse, dev, syscall.EBUSY, "%s is bound to %s, not %s: release it first", dev, cur, driver)
	}
	if err := h.fs.WriteFile(pciDrivers+"/"+driver+"/bind", dev); err != nil {
		return newErr(CodeKernel, dev, err, "binding %s to %s failed (is the driver loaded?)", dev, driver)
	}
	return nil
}

// UnbindPCI unbinds a PCI device from driver (idempotent: nothing to do when bound elsewhere or
// not at all).
func (h *Host) UnbindPCI(ctx context.Context, dev, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.linkBase(pciDev(dev)+"/driver") != driver {
		return nil
	}
	if err := h.fs.WriteFile(pciDrivers+"/"+driver+"/unbind", dev); err != nil {
		return newErr(CodeKernel, dev, err, "unbinding %s from %s failed", dev, driver)
	}
	return nil
}

// SetEswitchMode sets the PF's devlink eswitch mode (idempotent), mapping refusals to
// ESWITCH_DENIED with the reason.
func (h *Host) SetEswitchMode(ctx context.Context, pf, mode string) error {
	cur, err := h.devlink.EswitchMode(ctx, pf)
	if err != nil {
		return eswitchReadErr(&PF{Addr: pf, eswitchErr: err})
	}
	if cur == mode {
		return nil
	}
	err = h.devlink.SetEswitchMode(ctx, pf, mode)
	switch {
	case err == nil:
		return nil
	case isErrno(err, syscall.EBUSY):
		return newErr(CodeEswitchDenied, pf, err, "the eswitch of %s is busy: VFs are still bound; unbind them (or enable VFs with sriov_drivers_autoprobe=0) and retry", pf)
	case isErrno(err, syscall.EOPNOTSUPP, syscall.EPERM):
		return eswitchReadErr(&PF{Addr: pf, eswitchErr: err})
	}
	return newErr(CodeEswitchDenied, pf, err, "devlink refused eswitch mode %s", mode)
}

// SetSwitchdev moves the PF's eswitch to switchdev the way the kernel wants it: driver autoprobe
// off, VFs bound to mlx5_core unbound, mode changed, those VFs bound again, autoprobe restored.
// It is for tools and tests; Apply plans the same sequence as separate, recorded steps.
func (h *Host) SetSwitchdev(ctx context.Context, pf string) error {
	if cur, err := h.devlink.EswitchMode(ctx, pf); err == nil && cur == EswitchSwitchdev {
		return nil
	}
	p, err := h.ReadPF(ctx, pf)
	if err != nil {
		return err
	}
	auto := pciDev(pf) + "/sriov_drivers_autoprobe"
	if p.Autoprobe {
		if err := h.fs.WriteFile(auto, "0"); err != nil {
			return newErr(CodeKernel, pf, err, "disabling VF driver autoprobe failed")
		}
		defer func() { _ = h.fs.WriteFile(auto, "1") }()
	}
	var bound []string
	for _, vf := range p.VFs {
		if vf.Driver == DriverMLX5 {
			if err := h.UnbindPCI(ctx, vf.Addr, DriverMLX5); err != nil {
				return err
			}
			bound = append(bound, vf.Addr)
		}
	}
	if err := h.SetEswitchMode(ctx, pf, EswitchSwitchdev); err != nil {
		return err
	}
	for _, a := range bound {
		if err := h.BindPCI(ctx, a, DriverMLX5); err != nil {
			return err
		}
	}
	return nil
}

// AddDevice creates vdpa device name on mgmt with p, mapping the kernel's errno to the catalogue.
func (h *Host) AddDevice(ctx context.Context, name string, mgmt MgmtDevID, p DevParams) error {
	err := h.vdpa.NewDev(ctx, name, mgmt, p)
	switch {
	case err == nil:
		return nil
	case isErrno(err, syscall.EEXIST):
		return newErr(CodeExists, name, err, "a vdpa device named %s already exists: choose another name or delete it ('vdpa dev del %s')", name, name)
	case isErrno(err, syscall.ENOSPC):
		return newErr(CodeMgmtDevFull, mgmt.String(), err, "%s already has a vdpa device (mlx5 allows one per VF): delete it or use another VF", mgmt)
	case isErrno(err, syscall.EINVAL) && p.MaxVQP > 0:
		return newErr(CodeMaxVQP, mgmt.String(), err, "the device refused max_vqp %d: lower max-vqp (see 'vdpa mgmtdev show %s', max_supported_vqs/2)", p.MaxVQP, mgmt)
	case isErrno(err, syscall.EOPNOTSUPP):
		return newErr(CodeAttrUnsupported, mgmt.String(), err, "%s does not support setting%s: drop those options or upgrade the kernel (mac/mtu >= 5.16, max_vqp >= 5.17)", mgmt, (&VDPAParams{MAC: p.MAC.String(), MTU: int(p.MTU), MaxVQP: int(p.MaxVQP)}).cli())
	case isErrno(err, syscall.ENODEV):
		return noMgmtDevErr(mgmt.Name, nil)
	case isErrno(err, syscall.ENOENT):
		return noNetlinkErr(err, h.readString(osRelease))
	}
	return newErr(CodeKernel, name, err, "vdpa dev add failed")
}

// DelDevice deletes a vdpa device (ENODEV, already gone, is success).
func (h *Host) DelDevice(ctx context.Context, name string) error {
	err := h.vdpa.DelDev(ctx, name)
	if err == nil || isErrno(err, syscall.ENODEV) {
		return nil
	}
	if isErrno(err, syscall.ENOENT) {
		return noNetlinkErr(err, h.readString(osRelease))
	}
	return newErr(CodeKernel, name, err, "vdpa dev del failed")
}

// BusDriver returns the vdpa device's bound bus driver ("" when unbound).
func (h *Host) BusDriver(name string) string { return h.linkBase(vdpaDevices + "/" + name + "/driver") }

// BindBus binds a vdpa device to a bus driver (vhost_vdpa or virtio_vdpa).
func (h *Host) BindBus(ctx context.Context, name, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := h.fs.WriteFile(vdpaDrivers+"/"+driver+"/bind", name); err != nil {
		if notExist(err) {
			return newErr(CodeNoBusDriver, driver, err, "vdpa bus driver %s is not loaded: modprobe %s", driver, driver)
		}
		return newErr(CodeKernel, name, err, "binding %s to %s failed", name, driver)
	}
	return nil
}

// UnbindBus unbinds a vdpa device from its bus driver.
func (h *Host) UnbindBus(ctx context.Context, name, driver string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := h.fs.WriteFile(vdpaDrivers+"/"+driver+"/unbind", name); err != nil {
		return newErr(CodeKernel, name, err, "unbinding %s from %s failed", name, driver)
	}
	return nil
}

// vhostChild returns the vhost-vdpa-N child of a vdpa device ("" when none).
func (h *Host) vhostChild(name string) string {
	for _, c := range h.list(vdpaDevices + "/" + name) {
		if strings.HasPrefix(c, vhostVDPAPfx) {
			return c
		}
	}
	return ""
}

// WaitCharDev waits, bounded by the host's CharDevTimeout and ctx, until the vdpa device is bound
// to vhost_vdpa and its /dev/vhost-vdpa-N node exists, and returns the node's path.
func (h *Host) WaitCharDev(ctx context.Context, name string) (string, error) {
	var node string
	ok, err := h.waitFor(ctx, h.charTO, func() bool {
		c := h.vhostChild(name)
		if c != "" && h.isCharDev(devDir+"/"+c) {
			node = "/" + devDir + "/" + c
			return true
		}
		return false
	})
	if err != nil {
		return "", err
	}
	if !ok {
		c := h.vhostChild(name)
		if c == "" {
			return "", newErr(CodeCharDevTimeout, name, nil, "%s has no vhost-vdpa child after %s: is it bound to vhost_vdpa ('ls -l /sys/bus/vdpa/devices/%s/driver')?", name, h.charTO, name)
		}
		return "", newErr(CodeCharDevTimeout, name, nil, "/dev/%s did not appear within %s: udev did not create it; check 'udevadm monitor' or create it from /sys/bus/vdpa/devices/%s/%s/dev", c, h.charTO, name, c)
	}
	return node, nil
}

// virtioNetdev returns the virtio netdev of a vdpa device bound to virtio_vdpa.
func (h *Host) virtioNetdev(name string) string {
	t, err := h.fs.ReadLink(vdpaDevices + "/" + name)
	if err != nil {
		return ""
	}
	parent := path.Base(path.Dir(t))
	for _, c := range h.list(pciDev(parent)) {
		if strings.HasPrefix(c, "virtio") {
			if n := h.list(pciDev(parent) + "/" + c + "/net"); len(n) > 0 {
				return n[0]
			}
		}
	}
	return ""
}
