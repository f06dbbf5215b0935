package dsa

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// Inventory is what Discover found: whether the dsa bus exists, which of its drivers are
// registered, and every DSA device (idxd-owned ones by their dsaN name, ones bound to another PCI
// driver, such as vfio-pci, by their PCI address only).
type Inventory struct {
	BusPresent bool     `json:"bus_present"`
	Drivers    Drivers  `json:"drivers"`
	Devices    []Device `json:"devices"`
}

// Drivers says which drivers /sys/bus/dsa/drivers has. Compat is the single "dsa" driver of
// kernels before 5.19, which binds both devices and work queues.
type Drivers struct {
	IDXD      bool `json:"idxd"`
	User      bool `json:"user"`
	DMAEngine bool `json:"dmaengine"`
	Compat    bool `json:"compat"`
}

// Device is one DSA instance. Name is "dsaN" while the idxd driver owns the PCI function and ""
// when it is bound elsewhere (vfio-pci); BDF is its PCI address, PCIID "8086:0b25", PCIDriver
// the PCI driver bound to it ("idxd", "vfio-pci" or ""). State is the idxd state
// ("enabled"/"disabled"); the Max* fields are the device's capabilities; Clients counts users of
// the device (open work queues, kernel users). CmdStatus is the last command's status the kernel
// reports (cmd_status), "" or "0" when none failed.
type Device struct {
	Name            string   `json:"name,omitempty"`
	BDF             string   `json:"bdf"`
	PCIID           string   `json:"pci_id"`
	PCIDriver       string   `json:"pci_driver,omitempty"`
	IOMMUGroup      string   `json:"iommu_group,omitempty"`
	State           string   `json:"state,omitempty"`
	NUMA            int      `json:"numa_node"`
	Version         string   `json:"version,omitempty"`
	MaxGroups       int      `json:"max_groups"`
	MaxEngines      int      `json:"max_engines"`
	MaxWQs          int      `json:"max_work_queues"`
	MaxWQSize       int      `json:"max_work_queues_size"`
	MaxBatchSize    int      `json:"max_batch_size"`
	MaxTransferSize uint64   `json:"max_transfer_size"`
	PASIDEnabled    bool     `json:"pasid_enabled"`
	Configurable    bool     `json:"configurable"`
	Clients         int      `json:"clients"`
	CmdStatus       string   `json:"cmd_status,omitempty"`
	Engines         []Engine `json:"engines,omitempty"`
	Groups          []Group  `json:"groups,omitempty"`
	WQs             []WQ     `json:"wqs,omitempty"`
	index           int
}

// Engine is one engine (engineN.M) and the group it is in (-1: none).
type Engine struct {
	Name    string `json:"name"`
	GroupID int    `json:"group_id"`
}

// Group is one group (groupN.M).
type Group struct {
	Name string `json:"name"`
}

// WQ is one work queue (wqN.M): Mode "dedicated"/"shared", Type "user"/"kernel"/"none", WQName
// its name attribute, DriverName its driver_name attribute ("" when the kernel has none), Driver
// the dsa-bus driver bound to it ("user", "dmaengine", "dsa" or ""), State
// "enabled"/"disabled". DevNode is "dev/dsa/wqN.M" when the character device exists, else "".
type WQ struct {
	Name            string `json:"name"`
	Mode            string `json:"mode"`
	Type            string `json:"type"`
	WQName          string `json:"wq_name,omitempty"`
	DriverName      string `json:"driver_name,omitempty"`
	Driver          string `json:"driver,omitempty"`
	State           string `json:"state"`
	Size            int    `json:"size"`
	Priority        int    `json:"priority"`
	GroupID         int    `json:"group_id"`
	MaxBatchSize    int    `json:"max_batch_size"`
	MaxTransferSize uint64 `json:"max_transfer_size"`
	ATSDisable      bool   `json:"ats_disable"`
	Threshold       int    `json:"threshold,omitempty"`
	Clients         int    `json:"clients"`
	DevNode         string `json:"dev_node,omitempty"`
	index           int
	hasDriverName   bool
	hasATSDisable   bool
}

// DSA PCI ids (vendor 8086): 0b25 is Sapphire/Emerald Rapids; 11fb and 1212 are the newer parts
// DPDK's devbind tables list.
var dsaDeviceIDs = [...]string{"0b25", "11fb", "1212"}

// IsDSADeviceID reports whether a PCI vendor and device id ("0x8086", "0x0b25" as sysfs writes
// them, or without the 0x) is a DSA.
func IsDSADeviceID(vendor, device string) bool {
	v := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(vendor), "0x"))
	d := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(device), "0x"))
	if v != "8086" {
		return false
	}
	for _, id := range dsaDeviceIDs {
		if d == id {
			return true
		}
	}
	return false
}

// Limits on what Discover reads; the kernel's own limits are far below them.
const (
	maxDevices     = 64    // dsaN instances
	maxWQsPerDev   = 256   // wqN.M per device
	maxEnginesDev  = 256   // engineN.M per device
	maxGroupsDev   = 256   // groupN.M per device
	maxBusEntries  = 32768 // names in sys/bus/dsa/devices (devices, WQs, engines, groups)
	maxDevEntries  = 2048  // names in one device's directory
	maxPCIEntries  = 16384 // names in sys/bus/pci/devices
	maxAttrBytes   = 4096  // one sysfs attribute (a page)
	maxWQSizeLimit = 1 << 20
)

// Paths, relative to the machine's root.
const (
	busDir     = "sys/bus/dsa"
	devicesDir = "sys/bus/dsa/devices"
	driversDir = "sys/bus/dsa/drivers"
	devDSA     = "dev/dsa"
	pciDevices = "sys/bus/pci/devices"
	pciDrivers = "sys/bus/pci/drivers"
)

var (
	reDevice = regexp.MustCompile(`^dsa([0-9]{1,3})$`)
	reSub    = regexp.MustCompile(`^(wq|engine|group)([0-9]{1,3})\.([0-9]{1,3})$`)
	reBDF    = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// Discover reads the dsa bus and the PCI functions with DSA ids. A machine without
// /sys/bus/dsa is not an error: the inventory says BusPresent=false (its DSA functions, if
// any, are still listed from PCI). Malformed or oversized sysfs content is an error naming the
// object.
func (h *Host) Discover(ctx context.Context) (*Inventory, error) {
	inv := &Inventory{}
	if _, err := h.fs.Stat(busDir); err == nil {
		inv.BusPresent = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("dsa: %s: %w", busDir, err)
	}
	if inv.BusPresent {
		drivers, err := h.listDir(driversDir, 64)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, d := range drivers {
			switch d {
			case "idxd":
				inv.Drivers.IDXD = true
			case "user":
				inv.Drivers.User = true
			case "dmaengine":
				inv.Drivers.DMAEngine = true
			case "dsa":
				inv.Drivers.Compat = true
			}
		}
		names, err := h.listDir(devicesDir, maxBusEntries)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		var devs []string
		for _, name := range names {
			if reDevice.MatchString(name) {
				devs = append(devs, name)
			}
		}
		if len(devs) > maxDevices {
			return nil, fmt.Errorf("dsa: %s: %d DSA devices, more than the %d this library handles", devicesDir, len(devs), maxDevices)
		}
		for _, name := range devs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			idx, _ := strconv.Atoi(reDevice.FindStringSubmatch(name)[1])
			d, err := h.readDevice(name, idx)
			if err != nil {
				return nil, err
			}
			inv.Devices = append(inv.Devices, *d)
		}
	}
	others, err := h.otherPCIDevices(ctx, inv.Devices)
	if err != nil {
		return nil, err
	}
	inv.Devices = append(inv.Devices, others...)
	return inv, nil
}

// otherPCIDevices lists DSA PCI functions that have no dsaN device (bound to vfio-pci, or to no
// driver). A machine without sys/bus/pci/devices has none.
func (h *Host) otherPCIDevices(ctx context.Context, known []Device) ([]Device, error) {
	names, err := h.listDir(pciDevices, maxPCIEntries)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Device
	for _, bdf := range names {
		if !reBDF.MatchString(bdf) || knownBDF(known, bdf) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir := pciDevices + "/" + bdf
		vendor, _, err := h.attr(dir+"/vendor", bdf)
		if err != nil {
			return nil, err
		}
		device, _, err := h.attr(dir+"/device", bdf)
		if err != nil {
			return nil, err
		}
		if !IsDSADeviceID(vendor, device) {
			continue
		}
		if len(out)+len(known) >= maxDevices {
			return nil, fmt.Errorf("dsa: %s: more than %d DSA functions", pciDevices, maxDevices)
		}
		d := Device{BDF: bdf, index: -1}
		if err := h.readPCI(dir, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func knownBDF(devs []Device, bdf string) bool {
	for _, d := range devs {
		if d.BDF == bdf {
			return true
		}
	}
	return false
}

// readPCI fills the PCI facts of d from its PCI function directory.
func (h *Host) readPCI(dir string, d *Device) error {
	obj := d.BDF
	vendor, _, err := h.attr(dir+"/vendor", obj)
	if err != nil {
		return err
	}
	device, _, err := h.attr(dir+"/device", obj)
	if err != nil {
		return err
	}
	d.PCIID = strings.TrimPrefix(vendor, "0x") + ":" + strings.TrimPrefix(device, "0x")
	d.PCIDriver = h.linkBase(dir + "/driver")
	d.IOMMUGroup = h.linkBase(dir + "/iommu_group")
	if d.Name == "" {
		numa, ok, err := h.intAttr(dir+"/numa_node", obj, -1, 1023)
		if err != nil {
			return err
		}
		d.NUMA = -1
		if ok {
			d.NUMA = numa
		}
	}
	return nil
}

// readDevice reads dsaN: its PCI parent, attributes, engines, groups and work queues.
func (h *Host) readDevice(name string, idx int) (*Device, error) {
	base := devicesDir + "/" + name
	d := &Device{Name: name, index: idx}
	target, err := h.fs.ReadLink(base)
	if err != nil {
		return nil, Errorf(CodeKernel, name, err, "%s is not a link to its PCI device; is this a sysfs tree?", base)
	}
	real, err := sysfs.Join(base, target)
	if err != nil {
		return nil, Errorf(CodeKernel, name, err, "%s links outside the machine's root", base)
	}
	parent := path.Dir(real)
	d.BDF = path.Base(parent)
	if !reBDF.MatchString(d.BDF) {
		return nil, Errorf(CodeKernel, name, nil, "%s links to %s, whose parent %q is not a PCI address", base, real, d.BDF)
	}
	if err := h.readPCI(parent, d); err != nil {
		return nil, err
	}
	ints := []struct {
		attr     string
		dst      *int
		min, max int
		required bool
	}{
		{"max_groups", &d.MaxGroups, 0, maxGroupsDev, true},
		{"max_engines", &d.MaxEngines, 0, maxEnginesDev, true},
		{"max_work_queues", &d.MaxWQs, 0, maxWQsPerDev, true},
		{"max_work_queues_size", &d.MaxWQSize, 0, maxWQSizeLimit, true},
		{"max_batch_size", &d.MaxBatchSize, 0, 1 << 30, true},
		{"clients", &d.Clients, 0, 1 << 30, false},
	}
	for _, a := range ints {
		v, ok, err := h.intAttr(base+"/"+a.attr, name, a.min, a.max)
		if err != nil {
			return nil, err
		}
		if !ok && a.required {
			return nil, Errorf(CodeKernel, name, nil, "%s/%s is missing; the idxd driver should provide it", base, a.attr)
		}
		*a.dst = v
	}
	numa, ok, err := h.intAttr(base+"/numa_node", name, -1, 1023)
	if err != nil {
		return nil, err
	}
	if ok {
		d.NUMA = numa
	} else if numa, ok, err = h.intAttr(parent+"/numa_node", name, -1, 1023); err != nil {
		return nil, err
	} else if ok {
		d.NUMA = numa
	} else {
		d.NUMA = -1
	}
	if d.MaxTransferSize, _, err = h.uintAttr(base+"/max_transfer_size", name); err != nil {
		return nil, err
	}
	strs := []struct {
		attr string
		dst  *string
	}{{"state", &d.State}, {"version", &d.Version}, {"cmd_status", &d.CmdStatus}}
	for _, a := range strs {
		if *a.dst, _, err = h.attr(base+"/"+a.attr, name); err != nil {
			return nil, err
		}
	}
	// pasid_enabled appeared in 5.11; older kernels enable user WQs only with SVA anyway, and the
	// bind reports it (EOPNOTSUPP), so a missing attribute is taken as enabled.
	pasid, ok, err := h.intAttr(base+"/pasid_enabled", name, 0, 1)
	if err != nil {
		return nil, err
	}
	d.PASIDEnabled = !ok || pasid == 1
	conf, ok, err := h.intAttr(base+"/configurable", name, 0, 1)
	if err != nil {
		return nil, err
	}
	d.Configurable = !ok || conf == 1

	entries, err := h.listDir(base, maxDevEntries)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		m := reSub.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		if di, _ := strconv.Atoi(m[2]); di != idx {
			continue
		}
		sub, _ := strconv.Atoi(m[3])
		switch m[1] {
		case "engine":
			if len(d.Engines) >= maxEnginesDev {
				return nil, Errorf(CodeKernel, name, nil, "more than %d engines", maxEnginesDev)
			}
			g, _, err := h.intAttr(base+"/"+e+"/group_id", e, -1, maxGroupsDev)
			if err != nil {
				return nil, err
			}
			d.Engines = append(d.Engines, Engine{Name: e, GroupID: g})
		case "group":
			if len(d.Groups) >= maxGroupsDev {
				return nil, Errorf(CodeKernel, name, nil, "more than %d groups", maxGroupsDev)
			}
			d.Groups = append(d.Groups, Group{Name: e})
		case "wq":
			if len(d.WQs) >= maxWQsPerDev {
				return nil, Errorf(CodeKernel, name, nil, "more than %d work queues", maxWQsPerDev)
			}
			wq, err := h.readWQ(base+"/"+e, e, sub)
			if err != nil {
				return nil, err
			}
			d.WQs = append(d.WQs, *wq)
		}
	}
	sortByIndex(d.WQs)
	return d, nil
}

func sortByIndex(wqs []WQ) {
	slices.SortFunc(wqs, func(a, b WQ) int { return a.index - b.index })
}

// readWQ reads one work queue's attributes.
func (h *Host) readWQ(dir, name string, idx int) (*WQ, error) {
	wq := &WQ{Name: name, index: idx}
	var err error
	strs := []struct {
		attr string
		dst  *string
		has  *bool
	}{{"mode", &wq.Mode, nil}, {"type", &wq.Type, nil}, {"name", &wq.WQName, nil},
		{"state", &wq.State, nil}, {"driver_name", &wq.DriverName, &wq.hasDriverName}}
	for _, a := range strs {
		v, ok, err := h.attr(dir+"/"+a.attr, name)
		if err != nil {
			return nil, err
		}
		*a.dst = v
		if a.has != nil {
			*a.has = ok
		}
	}
	ints := []struct {
		attr     string
		dst      *int
		min, max int
	}{
		{"size", &wq.Size, 0, maxWQSizeLimit},
		{"priority", &wq.Priority, 0, 15},
		{"group_id", &wq.GroupID, -1, maxGroupsDev},
		{"max_batch_size", &wq.MaxBatchSize, 0, 1 << 30},
		{"threshold", &wq.Threshold, 0, maxWQSizeLimit},
		{"clients", &wq.Clients, 0, 1 << 30},
	}
	for _, a := range ints {
		if *a.dst, _, err = h.intAttr(dir+"/"+a.attr, name, a.min, a.max); err != nil {
			return nil, err
		}
	}
	if wq.MaxTransferSize, _, err = h.uintAttr(dir+"/max_transfer_size", name); err != nil {
		return nil, err
	}
	ats, ok, err := h.intAttr(dir+"/ats_disable", name, 0, 1)
	if err != nil {
		return nil, err
	}
	wq.ATSDisable, wq.hasATSDisable = ats == 1, ok
	wq.Driver = h.linkBase(dir + "/driver")
	if node := devDSA + "/" + name; h.exists(node) {
		wq.DevNode = node
	}
	return wq, nil
}

// attr reads one attribute: its value without surrounding space, whether it exists, and an error
// naming obj when reading fails otherwise or the value exceeds a page.
func (h *Host) attr(p, obj string) (string, bool, error) {
	s, err := h.fs.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, Errorf(CodeKernel, obj, err, "cannot read %s", p)
	}
	if len(s) > maxAttrBytes {
		return "", false, Errorf(CodeKernel, obj, nil, "%s holds %d bytes, more than a sysfs attribute can (%d)", p, len(s), maxAttrBytes)
	}
	return strings.TrimSpace(s), true, nil
}

// intAttr reads a decimal attribute within [lo, hi]; a missing one is (0, false, nil).
func (h *Host) intAttr(p, obj string, lo, hi int) (int, bool, error) {
	s, ok, err := h.attr(p, obj)
	if err != nil || !ok {
		return 0, ok, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, true, Errorf(CodeKernel, obj, err, "%s: %q is not a number", p, s)
	}
	if v < lo || v > hi {
		return 0, true, Errorf(CodeKernel, obj, nil, "%s: %d is outside [%d, %d]", p, v, lo, hi)
	}
	return v, true, nil
}

// uintAttr reads an unsigned 64-bit attribute (decimal or 0x hex); a missing one is 0.
func (h *Host) uintAttr(p, obj string) (uint64, bool, error) {
	s, ok, err := h.attr(p, obj)
	if err != nil || !ok {
		return 0, ok, err
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, true, Errorf(CodeKernel, obj, err, "%s: %q is not an unsigned number", p, s)
	}
	return v, true, nil
}

// listDir lists a directory, failing when it has more than limit names.
func (h *Host) listDir(p string, limit int) ([]string, error) {
	names, err := h.fs.ReadDir(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("dsa: list %s: %w", p, err)
	}
	if len(names) > limit {
		return nil, fmt.Errorf("dsa: %s has %d entries, more than the %d this library reads", p, len(names), limit)
	}
	return names, nil
}

// linkBase returns the last element of a link's target ("" when p is not a link).
func (h *Host) linkBase(p string) string {
	t, err := h.fs.ReadLink(p)
	if err != nil {
		return ""
	}
	return path.Base(t)
}

func (h *Host) exists(p string) bool {
	_, err := h.fs.Stat(p)
	return err == nil
}
