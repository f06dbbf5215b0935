// Package nlkernel implements the vdpa library's kernel interfaces (vdpa.VDPANetlink and
// vdpa.Devlink) over github.com/vishvananda/netlink: the "vdpa" generic netlink family for
// management and vdpa devices, and devlink for the eswitch mode. It is the production
// counterpart of vdpa/simkernel (the simulated kernel) and holds no state besides the netlink handle it is given.
//
// The netlink calls cannot be interrupted; every method checks ctx before it starts. Kernel
// errors come back as the library returns them: syscall.Errno values, possibly wrapped with the
// kernel's extended ack message, so errors.Is(err, syscall.EEXIST) works.
package nlkernel

import (
	"context"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/ovsplane/ovsplane/internal/sysfs"
	"github.com/ovsplane/ovsplane/vdpa"
)

// Kernel wraps a netlink handle.
type Kernel struct {
	h *netlink.Handle
}

// New returns a Kernel over h (which the caller owns and closes).
func New(h *netlink.Handle) *Kernel { return &Kernel{h: h} }

// Host returns a vdpa.Host over the machine rooted at root ("/" on a host) and this handle.
// c's FS, VDPA and Devlink are replaced; the other settings are kept.
func Host(root string, h *netlink.Handle, c vdpa.Config) *vdpa.Host {
	k := New(h)
	c.FS, c.VDPA, c.Devlink = sysfs.New(root), k, k
	return vdpa.New(c)
}

// Family implements vdpa.VDPANetlink.
func (k *Kernel) Family(ctx context.Context) (vdpa.Family, error) {
	if err := ctx.Err(); err != nil {
		return vdpa.Family{}, err
	}
	f, err := k.h.GenlFamilyGet("vdpa")
	if err != nil {
		return vdpa.Family{}, err
	}
	out := vdpa.Family{Version: f.Version, MaxAttr: f.MaxAttr}
	for _, op := range f.Ops {
		out.Ops = append(out.Ops, int(op.ID))
	}
	return out, nil
}

// MgmtDevs implements vdpa.VDPANetlink.
func (k *Kernel) MgmtDevs(ctx context.Context) ([]vdpa.MgmtDev, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list, err := k.h.VDPAGetMGMTDevList()
	if err != nil {
		return nil, err
	}
	out := make([]vdpa.MgmtDev, 0, len(list))
	for _, m := range list {
		out = append(out, vdpa.MgmtDev{MgmtDevID: vdpa.MgmtDevID{Bus: m.BusName, Name: m.DevName},
			Classes: m.SupportedClasses, MaxVQs: m.MaxVQS})
	}
	return out, nil
}

// Devs implements vdpa.VDPANetlink.
func (k *Kernel) Devs(ctx context.Context) ([]vdpa.KernelDev, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list, err := k.h.VDPAGetDevList()
	if err != nil {
		return nil, err
	}
	out := make([]vdpa.KernelDev, 0, len(list))
	for _, d := range list {
		out = append(out, vdpa.KernelDev{Name: d.Name, ID: d.ID, VendorID: d.VendorID, MaxVQs: d.MaxVQS})
	}
	return out, nil
}

// DevConfig implements vdpa.VDPANetlink.
func (k *Kernel) DevConfig(ctx context.Context, name string) (vdpa.DevConfig, error) {
	if err := ctx.Err(); err != nil {
		return vdpa.DevConfig{}, err
	}
	c, err := k.h.VDPAGetDevConfigByName(name)
	if err != nil {
		return vdpa.DevConfig{}, err
	}
	return vdpa.DevConfig{MAC: c.Net.Cfg.MACAddr, MTU: c.Net.Cfg.MTU, MaxVQP: c.Net.Cfg.MaxVQP}, nil
}

// NewDev implements vdpa.VDPANetlink.
func (k *Kernel) NewDev(ctx context.Context, name string, mgmt vdpa.MgmtDevID, p vdpa.DevParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.h.VDPANewDev(name, mgmt.Bus, mgmt.Name, netlink.VDPANewDevParams{MACAddr: p.MAC, MTU: p.MTU, MaxVQP: p.MaxVQP})
}

// DelDev implements vdpa.VDPANetlink.
func (k *Kernel) DelDev(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.h.VDPADelDev(name)
}

// EswitchMode implements vdpa.Devlink.
func (k *Kernel) EswitchMode(ctx context.Context, pci string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	d, err := k.h.DevLinkGetDeviceByName("pci", pci)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(d.Attrs.Eswitch.Mode), nil
}

// SetEswitchMode implements vdpa.Devlink.
func (k *Kernel) SetEswitchMode(ctx context.Context, pci, mode string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.h.DevLinkSetEswitchMode(&netlink.DevlinkDevice{BusName: "pci", DeviceName: pci}, mode)
}

var (
	_ vdpa.VDPANetlink = (*Kernel)(nil)
	_ vdpa.Devlink     = (*Kernel)(nil)
)
