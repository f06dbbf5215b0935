package vdpa

import (
	"context"
	"io/fs"
	"net"
	"slices"
)

// FS is the rooted file access the library needs. Paths are slash-separated and relative to the
// machine's root ("sys/bus/pci/devices/0000:65:00.0/sriov_numvfs"). internal/sysfs.Root implements it
// over a directory; vdpa/simkernel implements it over a fixture tree and gives writes the
// kernel's semantics. ReadFile trims the trailing newline. WriteFile writes an existing attribute
// in one write, returning the kernel's errno.
type FS interface {
	ReadFile(p string) (string, error)
	ReadLink(p string) (string, error)
	ReadDir(p string) ([]string, error)
	Stat(p string) (fs.FileInfo, error)
	WriteFile(p, value string) error
}

// VDPANetlink is the kernel's "vdpa" generic netlink family as this library uses it. A missing
// family is reported as syscall.ENOENT by every method; kernel refusals come back as
// syscall.Errno values (EEXIST, ENODEV, EINVAL, EOPNOTSUPP, ENOSPC...), possibly wrapped.
type VDPANetlink interface {
	// Family describes the family: its command IDs and highest attribute, which tell the kernel's
	// vdpa feature level without guessing from the release string.
	Family(ctx context.Context) (Family, error)
	// MgmtDevs dumps the management devices.
	MgmtDevs(ctx context.Context) ([]MgmtDev, error)
	// Devs dumps the vdpa devices.
	Devs(ctx context.Context) ([]KernelDev, error)
	// DevConfig returns one device's net configuration (kernel >= 5.16).
	DevConfig(ctx context.Context, name string) (DevConfig, error)
	// NewDev creates a device on a management device (VDPA_CMD_DEV_NEW).
	NewDev(ctx context.Context, name string, mgmt MgmtDevID, p DevParams) error
	// DelDev deletes a device (VDPA_CMD_DEV_DEL).
	DelDev(ctx context.Context, name string) error
}

// Devlink is the part of devlink this library uses. ENOENT means no devlink family; ENODEV an
// unknown device; EOPNOTSUPP/EPERM an eswitch the host does not own.
type Devlink interface {
	// EswitchMode returns "legacy" or "switchdev" for a PCI device ("0000:65:00.0").
	EswitchMode(ctx context.Context, pci string) (string, error)
	// SetEswitchMode changes it.
	SetEswitchMode(ctx context.Context, pci, mode string) error
}

// vdpa generic netlink command IDs (include/uapi/linux/vdpa.h).
const (
	CmdMgmtDevGet   = 2
	CmdDevNew       = 3
	CmdDevDel       = 4
	CmdDevGet       = 5
	CmdDevConfigGet = 6 // kernel 5.16: mac/mtu on add arrived with it
	CmdDevVStatsGet = 7
)

// vdpa netlink attribute IDs this library reasons about.
const (
	AttrDevNetCfgMACAddr = 10
	AttrDevNetCfgMaxVQP  = 12
	AttrDevNetCfgMTU     = 13
	AttrDevMgmtDevMaxVQs = 15 // kernel 5.17: max_vqp on add arrived with it
)

// Family is the vdpa generic netlink family's description.
type Family struct {
	Version uint32 `json:"version"`
	MaxAttr uint32 `json:"max_attr"`
	Ops     []int  `json:"ops"`
}

// HasOp reports whether the family implements a command.
func (f Family) HasOp(cmd int) bool { return slices.Contains(f.Ops, cmd) }

// CanSetMACMTU reports whether DEV_NEW honours mac and mtu (kernel >= 5.16). Older kernels accept
// the attributes and silently ignore them, which is why this is checked before creating.
func (f Family) CanSetMACMTU() bool { return f.HasOp(CmdDevConfigGet) && f.MaxAttr >= AttrDevNetCfgMTU }

// CanSetMaxVQP reports whether DEV_NEW honours max_vqp (kernel >= 5.17).
func (f Family) CanSetMaxVQP() bool { return f.CanSetMACMTU() && f.MaxAttr >= AttrDevMgmtDevMaxVQs }

// MgmtDevID names a management device: bus "pci" and the VF's address for mlx5 VFs.
type MgmtDevID struct {
	Bus  string `json:"bus"`
	Name string `json:"name"`
}

// String returns "bus/name" (or just name for bus-less devices such as vdpasim_net).
func (m MgmtDevID) String() string {
	if m.Bus == "" {
		return m.Name
	}
	return m.Bus + "/" + m.Name
}

// MgmtDev is a vdpa management device.
type MgmtDev struct {
	MgmtDevID
	// Classes is the supported virtio class bitmap (bit 1: net).
	Classes uint64 `json:"classes"`
	// MaxVQs is max_supported_vqs (0 when the kernel does not report it, before 5.17).
	MaxVQs uint32 `json:"max_vqs"`
}

// MaxVQP is the largest max_vqp the device accepts (mlx5: max_vqs/2), 0 when unknown.
func (m MgmtDev) MaxVQP() int { return int(m.MaxVQs / 2) }

// KernelDev is a vdpa device as netlink reports it.
type KernelDev struct {
	Name     string `json:"name"`
	ID       uint32 `json:"id"`
	VendorID uint32 `json:"vendor_id"`
	MaxVQs   uint32 `json:"max_vqs"`
}

// DevConfig is a device's net configuration.
type DevConfig struct {
	MAC    net.HardwareAddr `json:"mac,omitempty"`
	MTU    uint16           `json:"mtu,omitempty"`
	MaxVQP uint16           `json:"max_vqp,omitempty"`
}

// DevParams are the optional attributes of VDPA_CMD_DEV_NEW; zero values are not sent.
type DevParams struct {
	MAC    net.HardwareAddr
	MTU    uint16
	MaxVQP uint16
}
