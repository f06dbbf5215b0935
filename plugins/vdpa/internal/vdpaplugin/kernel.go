package vdpaplugin

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/ovsplane/ovsplane/internal/sysfs"
	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/nlkernel"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

// Kernel is the machine the plugin provisions: the vdpa library's three kernel interfaces.
type Kernel struct {
	FS      vdpa.FS
	VDPA    vdpa.VDPANetlink
	Devlink vdpa.Devlink
	// Simulated is the fixture file a simulated kernel was built from; "" for real hardware.
	Simulated string
	close     func() error
}

// Close releases what OpenKernel opened (the netlink socket, the simulation's directory).
// Nothing on the machine is undone. Safe to call more than once.
func (k *Kernel) Close() error {
	if k == nil || k.close == nil {
		return nil
	}
	c := k.close
	k.close = nil
	return c()
}

// OpenKernel opens the machine cfg names: with cfg.Simulate, a simulated kernel built from the
// fixture in a fresh temporary directory (removed by Close), logging a warning that no hardware
// is touched; otherwise sysfs below cfg.Root and a generic netlink socket to the running kernel.
func OpenKernel(cfg Config, log *slog.Logger) (*Kernel, error) {
	if cfg.Simulate != "" {
		return openSimulated(cfg.Simulate, log)
	}
	h, err := netlink.NewHandle(syscall.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("open a generic netlink socket: %w", err)
	}
	nl := nlkernel.New(h)
	return &Kernel{FS: sysfs.New(cfg.Root), VDPA: nl, Devlink: nl, close: func() error { h.Close(); return nil }}, nil
}

func openSimulated(file string, log *slog.Logger) (*Kernel, error) {
	f, err := simhost.Load(file)
	if err != nil {
		return nil, fmt.Errorf("simulate: load fixture: %w", err)
	}
	dir, err := os.MkdirTemp("", "ovsplane-vdpa-sim-")
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	k, err := simkernel.New(dir, f)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("simulate: fixture %s: %w", file, err)
	}
	log.Warn("SIMULATION MODE: vdpa ports are provisioned in an in-memory simulated kernel built from a fixture; NO HARDWARE IS TOUCHED and no vDPA device will carry traffic",
		"fixture", file, "tree", dir)
	return &Kernel{FS: k, VDPA: k, Devlink: k, Simulated: file, close: func() error { return os.RemoveAll(dir) }}, nil
}
