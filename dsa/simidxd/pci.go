package simidxd

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// idxdIDs is the idxd PCI driver's ID table as "vendor device" (DSA SPR/EMR, DSA GNR, DSA DMR).
func idxdIDs() []string { return []string{"8086 0b25", "8086 11fb", "8086 1212"} }

// pciID is a device's "vendor device" in new_id's notation ("8086 0b25").
func pciID(d *devSpec) string {
	return strings.TrimPrefix(d.Vendor, "0x") + " " + strings.TrimPrefix(d.Device, "0x")
}

// newIDs are the IDs written to a PCI driver's new_id, kept in the state directory (new_id is
// write-only in sysfs).
func (s *Sim) newIDs(drv string) []string {
	return strings.Fields(s.read(stateDir + "/new_id." + drv))
}

func (s *Sim) pciDriver(d *devSpec) string { return s.linkBase(d.pciDir() + "/driver") }

// pciMatches is pci_bus_match: a set driver_override names the only driver that may bind;
// otherwise the driver's static IDs (idxd) or dynamic IDs (new_id) decide.
func (s *Sim) pciMatches(d *devSpec, drv string) bool {
	if ov := s.read(d.pciDir() + "/driver_override"); ov != unsetOverr {
		return ov == drv
	}
	id := pciID(d)
	if drv == idxdDriver && slices.Contains(idxdIDs(), id) {
		return true
	}
	return slices.Contains(s.newIDs(drv), strings.ReplaceAll(id, " ", ","))
}

// pciBind is /sys/bus/pci/drivers/<drv>/bind.
func (s *Sim) pciBind(drv, bdf string) syscall.Errno {
	d := s.byBDF(bdf)
	if d == nil || !s.exists("sys/bus/pci/drivers/"+drv) || !s.pciMatches(d, drv) {
		return syscall.ENODEV
	}
	if s.pciDriver(d) != "" {
		return syscall.EBUSY
	}
	if s.pciAttach(d, drv) != nil {
		return syscall.EIO
	}
	return 0
}

// pciAttach binds d to drv and runs the driver's probe: idxd registers dsaN on the dsa bus,
// vfio-pci creates the IOMMU group's /dev/vfio node.
func (s *Sim) pciAttach(d *devSpec, drv string) error {
	switch drv {
	case idxdDriver:
		if err := s.layoutDSA(d); err != nil {
			return err
		}
	case vfioDriver:
		if err := s.put("dev/vfio/"+strconv.Itoa(d.IOMMUGroup), "", 0o600); err != nil {
			return err
		}
	}
	if err := s.link(d.pciDir()+"/driver", "sys/bus/pci/drivers/"+drv); err != nil {
		return err
	}
	return s.link("sys/bus/pci/drivers/"+drv+"/"+d.BDF, d.pciDir())
}

// pciUnbind is /sys/bus/pci/drivers/<drv>/unbind. Unbinding idxd removes dsaN and everything
// below it; the simulator refuses it with EBUSY while the device has clients.
func (s *Sim) pciUnbind(drv, bdf string) syscall.Errno {
	d := s.byBDF(bdf)
	if d == nil || s.pciDriver(d) != drv {
		return syscall.ENODEV
	}
	switch drv {
	case idxdDriver:
		if atoi(s.read(d.dir()+"/clients")) > 0 {
			return syscall.EBUSY
		}
		if s.detachDSA(d) != nil {
			return syscall.EIO
		}
	case vfioDriver:
		if s.remove("dev/vfio/"+strconv.Itoa(d.IOMMUGroup)) != nil {
			return syscall.EIO
		}
	}
	if s.remove(d.pciDir()+"/driver") != nil || s.remove("sys/bus/pci/drivers/"+drv+"/"+d.BDF) != nil {
		return syscall.EIO
	}
	return 0
}

// detachDSA is the idxd PCI driver's remove: dsaN, its WQs, engines and groups leave the dsa
// bus (with their driver links and /dev/dsa nodes).
func (s *Sim) detachDSA(d *devSpec) error {
	names := []string{d.name()}
	for _, k := range []struct {
		kind string
		n    int
	}{{"wq", d.MaxWQs}, {"engine", d.MaxEngines}, {"group", d.MaxGroups}} {
		for i := range k.n {
			names = append(names, d.sub(k.kind, i))
		}
	}
	drivers, _ := filepath.Glob(s.host("sys/bus/dsa/drivers/*"))
	for _, n := range names {
		if err := s.remove("sys/bus/dsa/devices/" + n); err != nil {
			return err
		}
		if strings.HasPrefix(n, "wq") {
			if err := s.remove("dev/dsa/" + n); err != nil {
				return err
			}
		}
		for _, drv := range drivers {
			if err := s.remove("sys/bus/dsa/drivers/" + filepath.Base(drv) + "/" + n); err != nil {
				return err
			}
		}
	}
	return s.remove(d.dir())
}

// pciNewID is new_id_store: "vendor device [subvendor subdevice class class_mask driver_data]"
// in hex; the new ID binds matching unbound devices at once (driver_attach).
func (s *Sim) pciNewID(drv, arg string) syscall.Errno {
	f := strings.Fields(arg)
	if len(f) < 2 || len(f) > 7 {
		return syscall.EINVAL
	}
	var id [2]uint64
	for i := range id {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(f[i]), "0x"), 16, 32)
		if err != nil {
			return syscall.EINVAL
		}
		id[i] = n
	}
	key := fmt.Sprintf("%04x,%04x", id[0], id[1])
	ids := s.newIDs(drv)
	if slices.Contains(ids, key) {
		return syscall.EEXIST
	}
	ids = append(ids, key)
	if s.set(stateDir+"/new_id."+drv, strings.Join(ids, "\n")) != nil {
		return syscall.EIO
	}
	for i := range s.spec.Devices {
		d := &s.spec.Devices[i]
		if s.pciDriver(d) == "" && s.pciMatches(d, drv) {
			if s.pciAttach(d, drv) != nil {
				return syscall.EIO
			}
		}
	}
	return 0
}

// setOverride is driver_override_store (driver_set_override): the value up to the first newline;
// empty clears it; PAGE_SIZE-1 bytes or more is EINVAL.
func (s *Sim) setOverride(d *devSpec, value string) syscall.Errno {
	if len(value) >= maxWrite-1 {
		return syscall.EINVAL
	}
	v, _, _ := strings.Cut(value, "\n")
	if v == "" {
		v = unsetOverr
	}
	return s.setErr(d.pciDir()+"/driver_override", v)
}
