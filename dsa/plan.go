package dsa

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

// Plan is what Apply would do now, device by device, with the warnings, the dpdk-extra
// arguments the configuration needs (one "-a <BDF>,max_queues=N" per vfio-pci device) and the
// dmadevs DPDK will see.
type Plan struct {
	Devices   []DevicePlan `json:"devices"`
	Warnings  []Warning    `json:"warnings,omitempty"`
	DPDKExtra []string     `json:"dpdk_extra,omitempty"`
	WQs       []WQRef      `json:"wqs,omitempty"`
}

// Device plan actions.
const (
	ActionNone      = "none"      // already as requested: nothing to write
	ActionAdopt     = "adopt"     // an existing configuration DPDK can use is kept as it is
	ActionConfigure = "configure" // idxd writes (configure, or finish an interrupted apply)
	ActionVFIO      = "vfio"      // hand the PCI function to vfio-pci
)

// DevicePlan is one device's part of a plan. Action is one of the Action constants. Steps are
// the changes in order; Reason says why in words.
type DevicePlan struct {
	Device string `json:"device"`
	Action string `json:"action"`
	Steps  []Step `json:"steps,omitempty"`
	Reason string `json:"reason"`
	// unbind is how many leading steps disable an enabled device before a reconfiguration.
	unbind int
}

// Step operations.
const (
	OpWrite = "write" // write Value to the sysfs attribute Path
	OpChown = "chown" // change the owner of device node Path to Value ("uid:gid")
	OpChmod = "chmod" // change the mode of device node Path to Value (octal)
)

// Step is one change: a sysfs write of Value to Path, or a chown/chmod of the device node Path,
// with the object it concerns (dsa0, wq0.1, 0000:6a:01.0) and the reason in words.
type Step struct {
	Op     string `json:"op"`
	Object string `json:"object"`
	Path   string `json:"path"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
	kind   stepKind
	uid    int
	gid    int
}

// stepKind tells Apply how to read a step's failure.
type stepKind int

const (
	kindAttr       stepKind = iota // a device, engine or WQ attribute
	kindSize                       // a WQ size (EINVAL: the size budget)
	kindDriverName                 // driver_name=user
	kindBindDevice                 // dsaN to idxd
	kindBindWQ                     // wqN.M to user
	kindUnbind                     // a dsa-bus unbind
	kindPCI                        // a PCI unbind, driver_override or bind
	kindChown
	kindChmod
)

// WQRef is one DMA device DPDK will create: Name is the dmadev name ("wq0.0" for an idxd work
// queue, "0000:6a:01.0-q0" for a vfio-pci queue), Device the DSA device (dsaN or the PCI
// address), NUMA its node.
type WQRef struct {
	Name   string `json:"name"`
	Device string `json:"device"`
	NUMA   int    `json:"numa"`
}

// nodeMode is the mode given to /dev/dsa/wqX.Y for the OVS user.
const nodeMode fs.FileMode = 0o660

// Plan reads the machine and returns what Apply would do for req, without writing anything.
// req must have been normalized. A request the machine cannot satisfy is an *Error: CodeAbsent
// (no dsa bus, driver or device), CodeBusy (clients, or a different configuration without
// AllowReconfigure), CodeNoSVA, CodeWQSize, CodeInvalidRequest (engines), CodeKernel.
func (h *Host) Plan(ctx context.Context, req Request) (*Plan, error) {
	inv, err := h.Discover(ctx)
	if err != nil {
		return nil, err
	}
	return h.plan(inv, req)
}

func (h *Host) plan(inv *Inventory, req Request) (*Plan, error) {
	p := &Plan{}
	seen := map[string]bool{}
	for _, dr := range req.Devices {
		dev, err := findDevice(inv, dr)
		if err != nil {
			return nil, err
		}
		key := dev.BDF
		if seen[key] {
			e := Errorf(CodeInvalidRequest, dr.Device, nil, "%s (%s) is requested twice, by name and by PCI address: list it once", dev.BDF, dev.Name)
			e.Field = "devices"
			return nil, e
		}
		seen[key] = true
		if dr.NUMA != nil && *dr.NUMA != dev.NUMA {
			where := fmt.Sprintf("is on NUMA node %d", dev.NUMA)
			if dev.NUMA < 0 {
				where = "has no known NUMA node (numa_node=-1)"
			}
			p.Warnings = append(p.Warnings, Warning{Code: CodeNUMA, Object: dr.Device,
				Message: fmt.Sprintf("%s %s, not %d as configured: DMA for PMD threads on node %d may cross sockets; use a device on node %d or correct numa", dr.Device, where, *dr.NUMA, *dr.NUMA, *dr.NUMA)})
		}
		var dp *DevicePlan
		var refs []WQRef
		if dr.Driver == DriverVFIO {
			dp, refs, err = h.planVFIO(dev, dr, req)
			if err == nil {
				var allow string
				if allow, err = AllowArgs(dev.BDF, dr.WQs.Count); err == nil {
					p.DPDKExtra = append(p.DPDKExtra, allow)
				}
			}
		} else {
			dp, refs, err = h.planIDXD(inv, dev, dr, req)
		}
		if err != nil {
			return nil, err
		}
		p.Devices = append(p.Devices, *dp)
		p.WQs = append(p.WQs, refs...)
	}
	return p, nil
}

// findDevice finds the requested device by dsaN name or PCI address.
func findDevice(inv *Inventory, dr DeviceRequest) (*Device, error) {
	for i := range inv.Devices {
		d := &inv.Devices[i]
		if (d.Name != "" && d.Name == dr.Device) || d.BDF == dr.Device {
			return d, nil
		}
	}
	if !inv.BusPresent && dr.Driver == DriverIDXD {
		return nil, Errorf(CodeAbsent, dr.Device, nil, "no /sys/bus/dsa: load the idxd driver (modprobe idxd); DSA needs a 4th-generation Xeon (Sapphire Rapids) or later")
	}
	return nil, Errorf(CodeAbsent, dr.Device, nil, "no DSA device %s on this host; `dsa --detect` lists the devices there are", dr.Device)
}

// target is one work queue as the request wants it.
type target struct {
	name, wqName     string
	size, priority   int
	batch            int
	ats              bool
	mode             string
	cur              *WQ
	attrsOK, enabled bool
}

func (h *Host) planIDXD(inv *Inventory, dev *Device, dr DeviceRequest, req Request) (*DevicePlan, []WQRef, error) {
	if dev.Name == "" {
		return nil, nil, Errorf(CodeBusy, dr.Device, nil, "%s is bound to PCI driver %q, not idxd; reset it to hand it back to idxd (dsa --reset %s), or request driver vfio-pci", dev.BDF, dev.PCIDriver, dev.BDF)
	}
	if !inv.Drivers.Compat && (!inv.Drivers.IDXD || !inv.Drivers.User) {
		return nil, nil, Errorf(CodeAbsent, dev.Name, nil, "the dsa bus lacks the idxd and user drivers (found idxd=%t user=%t): load the idxd driver fully (modprobe idxd); kernels before 5.19 have a single dsa driver instead", inv.Drivers.IDXD, inv.Drivers.User)
	}
	compat := !inv.Drivers.IDXD && inv.Drivers.Compat
	w := dr.WQs
	if w.Count > dev.MaxWQs || w.Count > len(dev.WQs) {
		return nil, nil, Errorf(CodeWQSize, dev.Name, nil, "%d work queues requested; %s has max_work_queues=%d (%d present): lower wqs.count", w.Count, dev.Name, dev.MaxWQs, len(dev.WQs))
	}
	size := w.Size
	if size == 0 {
		size = dev.MaxWQSize / w.Count
		if size == 0 {
			return nil, nil, Errorf(CodeWQSize, dev.Name, nil, "%d work queues cannot share max_work_queues_size=%d: lower wqs.count", w.Count, dev.MaxWQSize)
		}
	}
	if size*w.Count > dev.MaxWQSize {
		return nil, nil, Errorf(CodeWQSize, dev.Name, nil, "%d work queues of size %d need %d descriptors; %s has max_work_queues_size=%d: lower wqs.size or wqs.count (size 0 shares the budget equally)", w.Count, size, size*w.Count, dev.Name, dev.MaxWQSize)
	}
	engines := dr.Engines
	if engines == 0 {
		engines = min(dev.MaxEngines, len(dev.Engines))
	}
	if engines > dev.MaxEngines || engines > len(dev.Engines) || engines < 1 {
		e := Errorf(CodeInvalidRequest, dev.Name, nil, "%d engines requested; %s has max_engines=%d (%d present): lower engines or use 0 for all", engines, dev.Name, dev.MaxEngines, len(dev.Engines))
		e.Field = "engines"
		return nil, nil, e
	}
	if dev.MaxGroups < 1 || len(dev.Groups) < 1 {
		return nil, nil, Errorf(CodeKernel, dev.Name, nil, "%s reports no groups (max_groups=%d); the idxd driver cannot configure it", dev.Name, dev.MaxGroups)
	}
	// The kernel checks max_batch_size rounded up to a power of two against the device's.
	batch := w.MaxBatchSize
	if batch == 0 || batch > dev.MaxBatchSize {
		batch = dev.MaxBatchSize
	} else {
		batch = min(roundPow2(batch), dev.MaxBatchSize)
	}
	targets := make([]target, w.Count)
	allMatch, allEnabled := true, true
	for q := range targets {
		t := &targets[q]
		cur := &dev.WQs[q]
		*t = target{name: cur.Name, wqName: w.NamePrefix + "_" + cur.Name, size: size, priority: w.Priority,
			batch: batch, ats: w.ATSDisable, mode: w.Mode, cur: cur}
		if cur.index != q {
			return nil, nil, Errorf(CodeKernel, dev.Name, nil, "work queues of %s are not numbered from 0 (found %s at position %d)", dev.Name, cur.Name, q)
		}
		t.attrsOK = cur.GroupID == 0 && cur.Type == "user" && cur.Mode == t.mode && cur.WQName == t.wqName &&
			cur.Priority == t.priority && cur.MaxBatchSize == t.batch && cur.Size == t.size &&
			(!cur.hasATSDisable || cur.ATSDisable == t.ats) && (!cur.hasDriverName || cur.DriverName == "user")
		t.enabled = cur.State == "enabled"
		allMatch = allMatch && t.attrsOK
		allEnabled = allEnabled && t.enabled
	}
	enginesOK := true
	for i, e := range dev.Engines {
		want := -1
		if i < engines {
			want = 0
		}
		enginesOK = enginesOK && e.GroupID == want
	}
	enabled := dev.State == "enabled"
	refs := func(ts []target) []WQRef {
		out := make([]WQRef, 0, len(ts))
		for _, t := range ts {
			out = append(out, WQRef{Name: t.name, Device: dev.Name, NUMA: dev.NUMA})
		}
		return out
	}
	dp := &DevicePlan{Device: dev.Name}

	// Already as requested, or an interrupted apply to finish: only binds and permissions left.
	if enabled && allMatch && enginesOK {
		for _, t := range targets {
			if !t.enabled {
				dp.Steps = append(dp.Steps, bindWQStep(dev, t.name, compat))
			}
		}
		binds := len(dp.Steps)
		dp.Steps = append(dp.Steps, h.permSteps(targets, req.OVSUser)...)
		dp.Action, dp.Reason = ActionNone, fmt.Sprintf("%s is enabled with the requested %d work queues", dev.Name, w.Count)
		switch {
		case binds > 0:
			dp.Action = ActionConfigure
			dp.Reason = fmt.Sprintf("%s is configured as requested but %d of its %d work queues are not enabled (an interrupted apply?); enabling them", dev.Name, binds, w.Count)
		case len(dp.Steps) > 0:
			dp.Action = ActionConfigure
			dp.Reason = fmt.Sprintf("%s is enabled with the requested %d work queues; their device nodes get the OVS user's owner and mode", dev.Name, w.Count)
		}
		if !allEnabled && !dev.PASIDEnabled {
			return nil, nil, errNoSVA(dev)
		}
		for _, t := range targets {
			if t.enabled && t.cur.DevNode == "" {
				return nil, nil, Errorf(CodeKernel, t.name, nil, "work queue %s is enabled but /dev/dsa/%s is missing: is devtmpfs mounted on /dev? (a udev rule that removes it?)", t.name, t.name)
			}
		}
		return dp, refs(targets), nil
	}
	// An enabled configuration DPDK can use: adopt it.
	if enabled {
		if usable := adoptable(dev, w, req.FilePrefix); len(usable) >= w.Count {
			ts := make([]target, 0, len(usable))
			for _, wq := range usable {
				ts = append(ts, target{name: wq.Name, cur: wq})
			}
			dp.Action = ActionAdopt
			dp.Reason = fmt.Sprintf("%s is already enabled with %d user work queues DPDK takes (%s); keeping that configuration", dev.Name, len(usable), wqNames(usable))
			dp.Steps = h.permSteps(ts, req.OVSUser)
			return dp, refs(ts), nil
		}
		clients := busyClients(dev)
		if clients > 0 {
			return nil, nil, Errorf(CodeBusy, dev.Name, nil, "%s is enabled with another configuration and has %d clients; reconfiguring it would cut them off: stop its users (close /dev/dsa/wq*, unload kernel users) or pick another device", dev.Name, clients)
		}
		if !req.AllowReconfigure {
			return nil, nil, Errorf(CodeBusy, dev.Name, nil, "%s is enabled with another configuration (%s); refusing to change it: set allowReconfigure: true to let the plugin unbind and reconfigure it, or request what it has", dev.Name, describe(dev))
		}
	}
	if !dev.PASIDEnabled {
		return nil, nil, errNoSVA(dev)
	}
	if !dev.Configurable {
		return nil, nil, Errorf(CodeKernel, dev.Name, nil, "%s is not configurable (configurable=0: its configuration is fixed by the platform) and differs from the request; request what it has or use driver vfio-pci", dev.Name)
	}
	dp.Action = ActionConfigure
	dp.Reason = fmt.Sprintf("%s is disabled; configuring %d dedicated user work queues of size %d on %d engines in group 0", dev.Name, w.Count, size, engines)
	if enabled {
		dp.Reason = fmt.Sprintf("%s is enabled with another configuration and has no clients; allowReconfigure is set, so it is unbound and reconfigured", dev.Name)
		dp.Steps = append(dp.Steps, unbindSteps(dev, compat)...)
		dp.unbind = len(dp.Steps)
	}
	// Unbinding resets the configuration; which attributes then differ is only known after it,
	// so the plan lists every write and Apply re-plans once the device is disabled.
	dp.Steps = append(dp.Steps, configSteps(dev, targets, engines, enabled)...)
	dp.Steps = append(dp.Steps, Step{Op: OpWrite, Object: dev.Name, Path: idxdDriver(compat) + "/bind", Value: dev.Name,
		Reason: "enable the device with this configuration", kind: kindBindDevice})
	for _, t := range targets {
		dp.Steps = append(dp.Steps, bindWQStep(dev, t.name, compat))
	}
	for _, t := range targets {
		t.cur = nil // the node appears with the bind: plan its owner and mode
		dp.Steps = append(dp.Steps, h.permSteps([]target{t}, req.OVSUser)...)
	}
	return dp, refs(targets), nil
}

func roundPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// busyClients is how many users a device has: its clients attribute (which the kernel sums over
// its work queues) or the sum of its work queues' counts, whichever is larger.
func busyClients(dev *Device) int {
	sum := 0
	for _, wq := range dev.WQs {
		sum += wq.Clients
	}
	return max(dev.Clients, sum)
}

func errNoSVA(dev *Device) *Error {
	return Errorf(CodeNoSVA, dev.Name, nil, "%s has pasid_enabled=0: user work queues need shared virtual addressing; boot with intel_iommu=on,sm_on (IOMMU scalable mode) or use driver vfio-pci", dev.Name)
}

// configSteps writes the configuration of a disabled device: sizes that shrink first (the kernel
// checks the sum against max_work_queues_size on every write), then engines, then each work
// queue's attributes, only where they differ — or all of them when all is set (the device is
// still to be unbound, which resets its configuration to the boot defaults).
func configSteps(dev *Device, targets []target, engines int, all bool) []Step {
	var steps []Step
	wqAttr := func(wq *WQ, attr, value, why string, kind stepKind) {
		steps = append(steps, Step{Op: OpWrite, Object: wq.Name, Path: devicesDir + "/" + wq.Name + "/" + attr,
			Value: value, Reason: why, kind: kind})
	}
	for i := range dev.WQs {
		if all {
			break
		}
		wq := &dev.WQs[i]
		want := 0
		if i < len(targets) {
			want = targets[i].size
		}
		if wq.Size > want {
			wqAttr(wq, "size", strconv.Itoa(want), "free descriptors before the work queues grow (the sizes must fit max_work_queues_size)", kindSize)
			wq.Size = want
		}
		// A work queue left in a group would be enabled with the device's default size.
		if i >= len(targets) && wq.GroupID != -1 {
			wqAttr(wq, "group_id", "-1", "the work queue is not requested: take it out of its group", kindAttr)
		}
	}
	for i, e := range dev.Engines {
		want := -1
		if i < engines {
			want = 0
		}
		if e.GroupID != want || all {
			steps = append(steps, Step{Op: OpWrite, Object: e.Name, Path: devicesDir + "/" + dev.Name + "/" + e.Name + "/group_id",
				Value: strconv.Itoa(want), Reason: engineWhy(want), kind: kindAttr})
		}
	}
	for _, t := range targets {
		wq := t.cur
		if wq.GroupID != 0 || all {
			wqAttr(wq, "group_id", "0", "put the work queue in group 0 with the engines", kindAttr)
		}
		if wq.Type != "user" || all {
			wqAttr(wq, "type", "user", "a user work queue is opened by DPDK through /dev/dsa", kindAttr)
		}
		if wq.Mode != t.mode || all {
			wqAttr(wq, "mode", t.mode, "DPDK submits to dedicated work queues", kindAttr)
		}
		if wq.WQName != t.wqName || all {
			wqAttr(wq, "name", t.wqName, "DPDK only takes work queues named dpdk_… or <file-prefix>_…", kindAttr)
		}
		if wq.Priority != t.priority || all {
			wqAttr(wq, "priority", strconv.Itoa(t.priority), "the requested priority", kindAttr)
		}
		if wq.MaxBatchSize != t.batch || all {
			wqAttr(wq, "max_batch_size", strconv.Itoa(t.batch), "the requested batch size, at most the device's", kindAttr)
		}
		if wq.hasATSDisable && (wq.ATSDisable != t.ats || all) {
			wqAttr(wq, "ats_disable", boolAttr(t.ats), "the requested address translation service setting", kindAttr)
		}
		if wq.hasDriverName && (wq.DriverName != "user" || all) {
			wqAttr(wq, "driver_name", "user", "this kernel binds a work queue only to the driver its driver_name names", kindDriverName)
		}
		if wq.Size != t.size || all {
			wqAttr(wq, "size", strconv.Itoa(t.size), "the requested number of descriptors", kindSize)
		}
	}
	return steps
}

func engineWhy(group int) string {
	if group == 0 {
		return "the engine serves group 0's work queues"
	}
	return "the engine is not requested"
}

func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// unbindSteps disables an enabled device: its enabled work queues, then the device.
func unbindSteps(dev *Device, compat bool) []Step {
	var steps []Step
	for _, wq := range dev.WQs {
		if wq.State != "enabled" {
			continue
		}
		drv := wq.Driver
		if drv == "" {
			drv = userDriver(compat)
		} else {
			drv = driversDir + "/" + drv
		}
		steps = append(steps, Step{Op: OpWrite, Object: wq.Name, Path: drv + "/unbind", Value: wq.Name,
			Reason: "disable the work queue before the device", kind: kindUnbind})
	}
	steps = append(steps, Step{Op: OpWrite, Object: dev.Name, Path: idxdDriver(compat) + "/unbind", Value: dev.Name,
		Reason: "disable the device so its configuration can change", kind: kindUnbind})
	return steps
}

func bindWQStep(dev *Device, wq string, compat bool) Step {
	return Step{Op: OpWrite, Object: wq, Path: userDriver(compat) + "/bind", Value: wq,
		Reason: "enable the work queue as a user work queue: /dev/dsa/" + wq + " appears", kind: kindBindWQ}
}

func idxdDriver(compat bool) string {
	if compat {
		return driversDir + "/dsa"
	}
	return driversDir + "/idxd"
}

func userDriver(compat bool) string {
	if compat {
		return driversDir + "/dsa"
	}
	return driversDir + "/user"
}

// permSteps gives the OVS user the targets' device nodes; targets whose node is absent (cur nil
// or no DevNode) get the steps unconditionally, as the node appears during Apply.
func (h *Host) permSteps(targets []target, owner *Owner) []Step {
	if owner == nil {
		return nil
	}
	var steps []Step
	for _, t := range targets {
		node := devDSA + "/" + t.name
		uid, gid, mode, ok := h.nodeOwner(node)
		if t.cur != nil && t.cur.DevNode != "" && ok && uid == owner.UID && gid == owner.GID && mode == nodeMode {
			continue
		}
		who := strconv.Itoa(owner.UID)
		if owner.Name != "" {
			who = owner.Name
		}
		if !ok || uid != owner.UID || gid != owner.GID {
			steps = append(steps, Step{Op: OpChown, Object: t.name, Path: node, Value: fmt.Sprintf("%d:%d", owner.UID, owner.GID),
				Reason: "ovs-vswitchd runs as " + who + " and opens the work queue", kind: kindChown, uid: owner.UID, gid: owner.GID})
		}
		if !ok || mode != nodeMode {
			steps = append(steps, Step{Op: OpChmod, Object: t.name, Path: node, Value: fmt.Sprintf("%04o", nodeMode),
				Reason: "read and write for the owner and group only", kind: kindChmod})
		}
	}
	return steps
}

// nodeOwner returns a node's owner, group and permission bits.
func (h *Host) nodeOwner(p string) (uid, gid int, mode fs.FileMode, ok bool) {
	fi, err := h.fs.Stat(p)
	if err != nil {
		return 0, 0, 0, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, 0, fi.Mode().Perm(), false
	}
	return int(st.Uid), int(st.Gid), fi.Mode().Perm(), true
}

// adoptable returns the enabled dedicated user work queues of dev whose names DPDK takes and,
// when the request names a size, that have it.
func adoptable(dev *Device, w WQRequest, filePrefix string) []*WQ {
	var out []*WQ
	for i := range dev.WQs {
		wq := &dev.WQs[i]
		if wq.State == "enabled" && wq.Type == "user" && wq.Mode == w.Mode && wq.DevNode != "" &&
			DPDKAcceptsName(wq.WQName, filePrefix) && (w.Size == 0 || wq.Size == w.Size) {
			out = append(out, wq)
		}
	}
	return out
}

func wqNames(wqs []*WQ) string {
	names := make([]string, len(wqs))
	for i, wq := range wqs {
		names[i] = wq.Name + "=" + wq.WQName
	}
	return strings.Join(names, ", ")
}

// describe summarises an enabled device's work queues for an error message.
func describe(dev *Device) string {
	var parts []string
	for _, wq := range dev.WQs {
		if wq.State == "enabled" {
			parts = append(parts, fmt.Sprintf("%s type=%s name=%q size=%d", wq.Name, wq.Type, wq.WQName, wq.Size))
		}
	}
	if len(parts) == 0 {
		return "no enabled work queues"
	}
	return strings.Join(parts, "; ")
}

// planVFIO hands the PCI function to vfio-pci: DPDK then configures the work queues itself.
func (h *Host) planVFIO(dev *Device, dr DeviceRequest, req Request) (*DevicePlan, []WQRef, error) {
	refs := make([]WQRef, dr.WQs.Count)
	for i := range refs {
		refs[i] = WQRef{Name: fmt.Sprintf("%s-q%d", dev.BDF, i), Device: dev.BDF, NUMA: dev.NUMA}
	}
	if dev.Name != "" && dr.WQs.Count > dev.MaxWQs {
		return nil, nil, Errorf(CodeWQSize, dev.BDF, nil, "%d queues requested; %s has max_work_queues=%d: lower wqs.count", dr.WQs.Count, dev.Name, dev.MaxWQs)
	}
	dp := &DevicePlan{Device: dev.BDF, Action: ActionNone, Reason: dev.BDF + " is bound to vfio-pci"}
	if dev.PCIDriver == DriverVFIO {
		return dp, refs, nil
	}
	if !h.exists(pciDrivers + "/" + DriverVFIO) {
		return nil, nil, Errorf(CodeAbsent, dev.BDF, nil, "the vfio-pci driver is not loaded: modprobe vfio-pci")
	}
	if dev.IOMMUGroup == "" {
		return nil, nil, Errorf(CodeNoSVA, dev.BDF, nil, "%s has no IOMMU group, so vfio-pci cannot take it: boot with intel_iommu=on", dev.BDF)
	}
	switch dev.PCIDriver {
	case "", DriverIDXD:
	default:
		return nil, nil, Errorf(CodeBusy, dev.BDF, nil, "%s is bound to PCI driver %q; unbind it from that driver first", dev.BDF, dev.PCIDriver)
	}
	if dev.Name != "" {
		clients := busyClients(dev)
		if clients > 0 {
			return nil, nil, Errorf(CodeBusy, dev.BDF, nil, "%s (%s) has %d clients under idxd; handing it to vfio-pci would cut them off: stop its users first", dev.BDF, dev.Name, clients)
		}
		if dev.State == "enabled" && !req.AllowReconfigure {
			return nil, nil, Errorf(CodeBusy, dev.BDF, nil, "%s (%s) is enabled under idxd (%s); refusing to take it away: set allowReconfigure: true to hand it to vfio-pci", dev.BDF, dev.Name, describe(dev))
		}
	}
	dp.Action = ActionVFIO
	dp.Reason = fmt.Sprintf("hand %s to vfio-pci; DPDK configures %d work queues itself (max_queues=%d)", dev.BDF, dr.WQs.Count, dr.WQs.Count)
	pciDir := pciDevices + "/" + dev.BDF
	if dev.PCIDriver != "" {
		dp.Steps = append(dp.Steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDrivers + "/" + dev.PCIDriver + "/unbind", Value: dev.BDF,
			Reason: "release the function from " + dev.PCIDriver, kind: kindPCI})
	}
	if ov, _, _ := h.attr(pciDir+"/driver_override", dev.BDF); ov != DriverVFIO {
		dp.Steps = append(dp.Steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDir + "/driver_override", Value: DriverVFIO,
			Reason: "only vfio-pci may take the function, now and after a rescan", kind: kindPCI})
	}
	dp.Steps = append(dp.Steps, Step{Op: OpWrite, Object: dev.BDF, Path: pciDrivers + "/" + DriverVFIO + "/bind", Value: dev.BDF,
		Reason: "bind the function to vfio-pci for DPDK", kind: kindPCI})
	return dp, refs, nil
}
