package vdpa

import (
	"fmt"
	"strconv"
	"strings"
)

// PCI vendor and driver this library manages.
const (
	VendorMellanox = "0x15b3"
	DriverMLX5     = "mlx5_core"
)

// vdpa bus drivers.
const (
	BusVhostVDPA  = "vhost_vdpa"
	BusVirtioVDPA = "virtio_vdpa"
)

// bdf is a parsed PCI address.
type bdf struct {
	domain, bus, dev, fn int
}

// parseBDF accepts "0000:65:00.0" and the short "65:00.0".
func parseBDF(s string) (bdf, error) {
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0000"}, parts...)
	}
	if len(parts) != 3 {
		return bdf{}, fmt.Errorf("%q is not a PCI address (want DDDD:BB:DD.F)", s)
	}
	devfn := strings.Split(parts[2], ".")
	if len(devfn) != 2 {
		return bdf{}, fmt.Errorf("%q is not a PCI address (want DDDD:BB:DD.F)", s)
	}
	var v [4]int
	for i, p := range []string{parts[0], parts[1], devfn[0], devfn[1]} {
		n, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return bdf{}, fmt.Errorf("%q is not a PCI address (want DDDD:BB:DD.F)", s)
		}
		v[i] = int(n)
	}
	b := bdf{v[0], v[1], v[2], v[3]}
	if b.bus > 0xff || b.dev > 0x1f || b.fn > 7 || b.domain > 0xffff {
		return bdf{}, fmt.Errorf("%q is not a PCI address (field out of range)", s)
	}
	return b, nil
}

func (b bdf) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", b.domain, b.bus, b.dev, b.fn)
}

// rid is the routing ID (bus:devfn).
func (b bdf) rid() int { return b.bus<<8 | b.dev<<3 | b.fn }

// VFAddress computes VF index's PCI address from the PF's address and its SR-IOV offset and
// stride (PCIe SR-IOV: VF routing ID = PF routing ID + offset + index*stride).
func VFAddress(pf string, offset, stride, index int) (string, error) {
	b, err := parseBDF(pf)
	if err != nil {
		return "", err
	}
	rid := b.rid() + offset + index*stride
	if rid > 0xffff {
		return "", fmt.Errorf("VF %d of %s: routing ID out of range", index, pf)
	}
	return bdf{domain: b.domain, bus: rid >> 8, dev: (rid >> 3) & 0x1f, fn: rid & 7}.String(), nil
}

// NormalizePCI returns the canonical long form of a PCI address.
func NormalizePCI(s string) (string, error) {
	b, err := parseBDF(s)
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// sysfs locations.
const (
	pciDevices   = "sys/bus/pci/devices"
	pciDrivers   = "sys/bus/pci/drivers"
	vdpaDevices  = "sys/bus/vdpa/devices"
	vdpaDrivers  = "sys/bus/vdpa/drivers"
	classNet     = "sys/class/net"
	sysModule    = "sys/module"
	osRelease    = "proc/sys/kernel/osrelease"
	devDir       = "dev"
	vhostVDPAPfx = "vhost-vdpa-"
)

func pciDev(addr string) string { return pciDevices + "/" + addr }
