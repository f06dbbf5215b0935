package dsa

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Result is what Apply did: the plan it carried out, whether it changed anything, and the
// dmadevs now usable.
type Result struct {
	Plan    *Plan   `json:"plan"`
	Changed bool    `json:"changed"`
	WQs     []WQRef `json:"wqs"`
}

// Apply makes req true: it plans, carries out the steps in order and verifies the outcome (the
// device and work queues enabled, /dev/dsa/wqX.Y present; vfio-pci bound). A device already as
// requested is not written to (Changed=false).
//
// The steps are ordered so that stopping at any point (a crash, kill -9) leaves a state a new
// Apply finishes: attributes are written only while the device is disabled and only where they
// differ, the device is enabled after its configuration is complete, and an enabled device whose
// configuration matches only gets its missing work queue binds and node permissions.
//
// On failure the error is an *Error naming the object and the fix, and the returned Result (when
// not nil) says whether something was already changed.
func (h *Host) Apply(ctx context.Context, req Request) (*Result, error) {
	plan, err := h.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &Result{Plan: plan, WQs: plan.WQs}
	for i := range plan.Devices {
		dp := &plan.Devices[i]
		steps := dp.Steps
		if dp.unbind > 0 {
			if err := h.run(ctx, dp.Steps[:dp.unbind], res); err != nil {
				return res, err
			}
			// The unbind reset the configuration: plan the writes against what is there now.
			inv, err := h.Discover(ctx)
			if err != nil {
				return res, err
			}
			dr := req.Devices[i]
			dev, err := findDevice(inv, dr)
			if err != nil {
				return res, err
			}
			again, _, err := h.planIDXD(inv, dev, dr, req)
			if err != nil {
				return res, err
			}
			steps = again.Steps
			dp.Steps = append(dp.Steps[:dp.unbind:dp.unbind], steps...)
			dp.unbind = 0
		}
		if len(steps) == 0 {
			continue
		}
		// The device and its work queues are checked before their nodes' owner changes, so a
		// node that did not appear is reported as the kernel's failure, not as a chown's.
		perms := len(steps)
		for perms > 0 && (steps[perms-1].kind == kindChown || steps[perms-1].kind == kindChmod) {
			perms--
		}
		if err := h.run(ctx, steps[:perms], res); err != nil {
			return res, err
		}
		if err := h.verify(ctx, *dp, plan.WQs); err != nil {
			return res, err
		}
		if err := h.run(ctx, steps[perms:], res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// run carries out steps in order, stopping at the first failure.
func (h *Host) run(ctx context.Context, steps []Step, res *Result) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := h.do(s); err != nil {
			return err
		}
		res.Changed = true
	}
	return nil
}

// do carries out one step, turning the kernel's refusal into the catalogue's code.
func (h *Host) do(s Step) error {
	var err error
	switch s.kind {
	case kindChown:
		err = h.fs.Chown(s.Path, s.uid, s.gid)
	case kindChmod:
		err = h.fs.Chmod(s.Path, nodeMode)
	default:
		err = h.fs.WriteFile(s.Path, s.Value)
	}
	if err == nil {
		h.log.Info("dsa: changed", "op", s.Op, "object", s.Object, "path", s.Path, "value", s.Value)
		return nil
	}
	switch s.kind {
	case kindChown, kindChmod:
		return Errorf(CodePerms, s.Object, err, "cannot %s %s to %s (%s): run the plugin as root, or give the node to ovs-vswitchd's user with a udev rule", s.Op, s.Path, s.Value, s.Reason)
	case kindDriverName:
		return Errorf(CodeDriverName, s.Object, err, "the kernel refused driver_name=user on %s; its work queues cannot be bound to the user driver: update the kernel (idxd driver_name support, 6.7+) or unload the driver that claims it", s.Object)
	case kindSize:
		if errors.Is(err, syscall.EINVAL) {
			return Errorf(CodeWQSize, s.Object, err, "the kernel refused size=%s: the work queues' sizes would exceed max_work_queues_size; lower wqs.size or wqs.count", s.Value)
		}
	case kindBindWQ:
		switch {
		case errors.Is(err, syscall.ENODEV):
			return Errorf(CodeDriverName, s.Object, err, "the kernel refused to bind %s to the user driver (ENODEV): its driver_name does not name the user driver; write driver_name=user (the plugin does when the attribute exists)%s", s.Object, h.cmdStatus(s.Object))
		case errors.Is(err, syscall.EOPNOTSUPP):
			return Errorf(CodeNoSVA, s.Object, err, "the kernel refused to enable user work queue %s (EOPNOTSUPP): user work queues need shared virtual addressing; boot with intel_iommu=on,sm_on%s", s.Object, h.cmdStatus(s.Object))
		}
	case kindUnbind:
		if errors.Is(err, syscall.EBUSY) {
			return Errorf(CodeBusy, s.Object, err, "the kernel refused to disable %s (EBUSY): it is in use; stop its users first", s.Object)
		}
	case kindPCI:
		return Errorf(CodeKernel, s.Object, err, "writing %q to %s failed: check dmesg for the PCI driver's message", s.Value, s.Path)
	}
	return Errorf(CodeKernel, s.Object, err, "writing %q to %s failed%s: check dmesg for idxd's message", s.Value, s.Path, h.cmdStatus(s.Object))
}

// cmdStatus returns ", cmd_status=X" for the device an object belongs to when it is non-zero.
func (h *Host) cmdStatus(object string) string {
	dev, ok := deviceOf(object)
	if !ok {
		return ""
	}
	st, _, err := h.attr(devicesDir+"/"+dev+"/cmd_status", dev)
	if err != nil || st == "" || st == "0" || st == "0x0" {
		return ""
	}
	return fmt.Sprintf(" (%s cmd_status=%s)", dev, st)
}

// deviceOf maps dsaN, wqN.M, engineN.M, groupN.M to dsaN.
func deviceOf(object string) (string, bool) {
	if reDevice.MatchString(object) {
		return object, true
	}
	if m := reSub.FindStringSubmatch(object); m != nil {
		return "dsa" + m[2], true
	}
	return "", false
}

// verify re-reads a device after its steps and checks that the result is usable.
func (h *Host) verify(ctx context.Context, dp DevicePlan, refs []WQRef) error {
	if dp.Action == ActionVFIO {
		if drv := h.linkBase(pciDevices + "/" + dp.Device + "/driver"); drv != DriverVFIO {
			return Errorf(CodeKernel, dp.Device, nil, "after binding, %s is on driver %q, not vfio-pci: check dmesg (IOMMU group shared with another device?)", dp.Device, drv)
		}
		return nil
	}
	base := devicesDir + "/" + dp.Device
	if st, _, err := h.attr(base+"/state", dp.Device); err != nil {
		return err
	} else if st != "enabled" {
		return Errorf(CodeKernel, dp.Device, nil, "%s is %q after binding, not enabled%s: check dmesg for idxd's message", dp.Device, st, h.cmdStatus(dp.Device))
	}
	for _, r := range refs {
		if r.Device != dp.Device {
			continue
		}
		if st, _, err := h.attr(devicesDir+"/"+r.Name+"/state", r.Name); err != nil {
			return err
		} else if st != "enabled" {
			return Errorf(CodeKernel, r.Name, nil, "work queue %s is %q after binding, not enabled%s: check dmesg for idxd's message", r.Name, st, h.cmdStatus(r.Name))
		}
		node := devDSA + "/" + r.Name
		ok, err := h.waitFor(ctx, func() bool { return h.exists(node) })
		if err != nil {
			return err
		}
		if !ok {
			return Errorf(CodeKernel, r.Name, nil, "work queue %s is enabled but /%s did not appear within %s%s: is devtmpfs mounted on /dev?", r.Name, node, h.nodeTO, h.cmdStatus(r.Name))
		}
	}
	return nil
}

// waitFor polls cond until it holds, ctx ends or the node timeout passes.
func (h *Host) waitFor(ctx context.Context, cond func() bool) (bool, error) {
	if cond() {
		return true, nil
	}
	deadline := time.NewTimer(h.nodeTO)
	defer deadline.Stop()
	tick := time.NewTicker(h.pollInt)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return cond(), nil
		case <-tick.C:
			if cond() {
				return true, nil
			}
		}
	}
}

// Reset disables a device: its enabled work queues are unbound from their drivers, then the
// device from idxd; the configuration stays in sysfs and the device stays disabled. A device
// given by PCI address that is on vfio-pci is handed back to idxd (driver_override cleared),
// where it appears disabled. It refuses a device with clients (CodeBusy); a disabled device is
// left as it is.
func (h *Host) Reset(ctx context.Context, device string) error {
	inv, err := h.Discover(ctx)
	if err != nil {
		return err
	}
	dev, err := findDevice(inv, DeviceRequest{Device: device, Driver: DriverIDXD})
	if err != nil {
		return err
	}
	var steps []Step
	if dev.Name == "" {
		steps, err = h.resetPCI(dev)
		if err != nil {
			return err
		}
	} else {
		clients := busyClients(dev)
		if clients > 0 {
			return Errorf(CodeBusy, dev.Name, nil, "%s has %d clients; resetting it would cut them off: stop its users (ovs-vswitchd, other DPDK or kernel users) first", dev.Name, clients)
		}
		compat := !inv.Drivers.IDXD && inv.Drivers.Compat
		if dev.State == "enabled" {
			steps = unbindSteps(dev, compat)
		} else {
			for _, wq := range dev.WQs {
				if wq.State == "enabled" {
					return Errorf(CodeKernel, wq.Name, nil, "work queue %s is enabled on disabled device %s; the kernel should not allow that: check dmesg", wq.Name, dev.Name)
				}
			}
		}
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := h.do(s); err != nil {
			return err
		}
	}
	return nil
}

// resetPCI hands a DSA function that idxd does not own back to idxd.
func (h *Host) resetPCI(dev *Device) ([]Step, error) {
	var steps []Step
	pciDir := pciDevices + "/" + dev.BDF
	if dev.PCIDriver != "" {
		if dev.PCIDriver != DriverVFIO {
			return nil, Errorf(CodeBusy, dev.BDF, nil, "%s is bound to PCI driver %q; this library only hands functions back from vfio-pci", dev.BDF, dev.PCIDriver)
		}
		steps = append(steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDrivers + "/" + DriverVFIO + "/unbind", Value: dev.BDF,
			Reason: "release the function from vfio-pci (the kernel waits until DPDK closes it)", kind: kindPCI})
	}
	if ov, ok, _ := h.attr(pciDir+"/driver_override", dev.BDF); ok && ov != "" && ov != "(null)" {
		steps = append(steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDir + "/driver_override", Value: "\n",
			Reason: "let idxd take the function again", kind: kindPCI})
	}
	if !h.exists(pciDrivers + "/" + DriverIDXD) {
		return nil, Errorf(CodeAbsent, dev.BDF, nil, "the idxd PCI driver is not loaded: modprobe idxd")
	}
	steps = append(steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDrivers + "/" + DriverIDXD + "/bind", Value: dev.BDF,
		Reason: "hand the function back to idxd, where it appears disabled", kind: kindPCI})
	return steps, nil
}
