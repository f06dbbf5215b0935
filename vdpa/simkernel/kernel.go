// Package simkernel is a simulated Linux kernel for the vdpa library: it implements
// vdpa.FS, vdpa.VDPANetlink and vdpa.Devlink over a fixture tree materialised in a directory, and
// answers the way the real kernel does — the same rules, the same errno values — while mutating
// the tree as the kernel would:
//
//   - sriov_numvfs: ERANGE above sriov_totalvfs, EBUSY from one non-zero count to another,
//     ENOENT without a PF driver; creating VFs makes their directories, physfn/virtfnN and
//     bus links, binds them to mlx5_core when sriov_drivers_autoprobe is 1 and creates their
//     representors in switchdev mode; 0 destroys them (and their vdpa devices).
//   - PCI bind/unbind: ENODEV for an unknown device or a device not bound to that driver, EBUSY
//     when already bound; mlx5_core on a VF creates its netdev and the mlx5_core.vnet.N
//     auxiliary device, which mlx5_vdpa binds (registering the pci/<VF> management device) when
//     loaded and not a stub.
//   - devlink eswitch: EOPNOTSUPP when not host-owned (fixture "unsupported", BlueField DPU
//     mode), EBUSY while VFs are bound, EINVAL for an unknown mode; switchdev creates one
//     representor per VF (phys_port_name pf<N>vf<i>, the uplink's phys_switch_id), legacy
//     removes them.
//   - vdpa netlink: ENOENT without the vdpa module or before 5.12; DEV_NEW fails with ENODEV
//     (no mgmtdev), EOPNOTSUPP (attribute the mgmtdev cannot set), ENOSPC (mlx5: one device per
//     VF), EINVAL (max_vqp 0 or above max_supported_vqs/2), EEXIST (name taken); kernels before
//     5.16/5.17 silently ignore mac/mtu/max_vqp, as the real ones do. A new device autoprobes to
//     the first loaded vdpa bus driver.
//   - vdpa bus bind: vhost_vdpa creates vhost-vdpa-N (lowest free minor) and, through a
//     simulated udev (optionally delayed or off), /dev/vhost-vdpa-N; virtio_vdpa creates a
//     virtioM device on the VF with its netdev.
//
// Dump returns the tree plus the kernel state as a fixture, so tests compare hosts exactly.
//
// The vdpa library's tests run on it, and so does the vdpa plugin's simulate mode
// (plugins/vdpa: a product feature for end-to-end tests on machines without mlx5 NICs), which is
// why it is not named as a test package. It touches nothing outside its directory.
package simkernel

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/internal/sysfs"
	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
)

// Kernel is the simulated kernel. All methods are safe for concurrent use.
type Kernel struct {
	mu      sync.Mutex
	root    *sysfs.Root
	dir     string
	major   int
	eswitch map[string]string
	mgmt    map[string]simhost.Attrs
	devs    map[string]*vdev
	knobs   simhost.Attrs
	nextID  uint32
	muts    int
	timers  map[string]*time.Timer
}

// vdev is a vdpa device the kernel knows.
type vdev struct {
	name, mgmt, parent string
	id                 uint32
	cfg                vdpa.DevConfig
}

// Knobs (fixture "fake" line): udev=on|off, udev-delay=<duration>, vnet=on|off (devlink param
// enable_vnet), mlx5_vdpa=ok|stub, vf-device=<PCI device id of new VFs>, vhost-major=<n>,
// default-max-vqs=<n> for management devices without a mgmtdev line.

// New materialises f into dir (which must be empty or absent) and returns a kernel over it.
func New(dir string, f *simhost.Fixture) (*Kernel, error) {
	if err := f.Materialise(dir); err != nil {
		return nil, err
	}
	k := &Kernel{root: sysfs.New(dir), dir: dir, eswitch: map[string]string{}, mgmt: map[string]simhost.Attrs{},
		devs: map[string]*vdev{}, knobs: simhost.Attrs{}, timers: map[string]*time.Timer{}}
	for h, m := range f.Eswitch {
		k.eswitch[strings.TrimPrefix(h, "pci/")] = m
	}
	for h, a := range f.MgmtDevs {
		k.mgmt[h] = a
	}
	for n, v := range f.Knobs {
		k.knobs[n] = v
	}
	k.major, _ = strconv.Atoi(k.knob("vhost-major", "509"))
	if err := k.loadDevs(f); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Kernel) knob(name, def string) string {
	if v, ok := k.knobs[name]; ok {
		return v
	}
	return def
}

// loadDevs registers the vdpa devices present in the tree, with the fixture's configuration.
func (k *Kernel) loadDevs(f *simhost.Fixture) error {
	names, _ := k.root.ReadDir("sys/bus/vdpa/devices")
	for _, n := range names {
		real, err := k.root.Resolve("sys/bus/vdpa/devices/" + n)
		if err != nil {
			return fmt.Errorf("simkernel: vdpa device %s: %w", n, err)
		}
		parent := path.Base(path.Dir(real))
		a := f.VDPADevs[n]
		d := &vdev{name: n, parent: parent, mgmt: orDefault(a["mgmtdev"], "pci/"+parent), id: k.nextID}
		k.nextID++
		d.cfg.MAC, _ = parseMAC(orDefault(a["mac"], "00:00:00:00:00:00"))
		d.cfg.MTU = uint16(atoi(orDefault(a["mtu"], "1500")))
		d.cfg.MaxVQP = uint16(atoi(orDefault(a["max_vqp"], "1")))
		k.devs[n] = d
	}
	return nil
}

// Dir is the materialised tree's directory.
func (k *Kernel) Dir() string { return k.dir }

// Host returns a vdpa.Host over this kernel; c's FS, VDPA and Devlink are replaced.
func (k *Kernel) Host(c vdpa.Config) *vdpa.Host {
	c.FS, c.VDPA, c.Devlink = k, k, k
	return vdpa.New(c)
}

// Mutations counts the state changes made so far (writes that changed something, device
// creations and deletions, binds, eswitch changes).
func (k *Kernel) Mutations() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.muts
}

// Dump returns the current host as a fixture: the tree, the eswitch modes, the management
// device attributes, the vdpa devices' configuration and the knobs.
func (k *Kernel) Dump() (*simhost.Fixture, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, err := simhost.Dump(k.dir)
	if err != nil {
		return nil, err
	}
	for pf, m := range k.eswitch {
		f.Eswitch["pci/"+pf] = m
	}
	for _, m := range k.mgmtDevs() {
		a := simhost.Attrs{"classes": "net"}
		if m.MaxVQs > 0 {
			a["max_vqs"] = strconv.Itoa(int(m.MaxVQs))
		}
		if v := k.mgmt[m.String()]["attrs"]; v != "" {
			a["attrs"] = v
		}
		f.MgmtDevs[m.String()] = a
	}
	for n, d := range k.devs {
		f.VDPADevs[n] = simhost.Attrs{"mgmtdev": d.mgmt, "mac": d.cfg.MAC.String(),
			"mtu": strconv.Itoa(int(d.cfg.MTU)), "max_vqp": strconv.Itoa(int(d.cfg.MaxVQP))}
	}
	for n, v := range k.knobs {
		f.Knobs[n] = v
	}
	return f, nil
}

// ---- vdpa.FS ----

// ReadFile implements vdpa.FS.
func (k *Kernel) ReadFile(p string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.root.ReadFile(p)
}

// ReadLink implements vdpa.FS.
func (k *Kernel) ReadLink(p string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.root.ReadLink(p)
}

// ReadDir implements vdpa.FS.
func (k *Kernel) ReadDir(p string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.root.ReadDir(p)
}

// Stat implements vdpa.FS; marker files stand for character devices.
func (k *Kernel) Stat(p string) (fs.FileInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fi, err := k.root.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64 {
		return fi, err
	}
	if s, err := k.root.ReadFile(p); err == nil && strings.HasPrefix(s, simhost.CharDevMarker) {
		return charDev{fi}, nil
	}
	return fi, nil
}

type charDev struct{ fs.FileInfo }

func (c charDev) Mode() fs.FileMode { return fs.ModeDevice | fs.ModeCharDevice | 0o600 }

// WriteFile implements vdpa.FS with the kernel's store semantics for the attributes the library
// writes; other existing files are simply overwritten.
func (k *Kernel) WriteFile(p, value string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.root.Stat(p); err != nil {
		return err
	}
	v := strings.TrimSpace(value)
	errno := k.store(p, v)
	if errno != 0 {
		return &fs.PathError{Op: "write", Path: p, Err: errno}
	}
	return nil
}

func (k *Kernel) store(p, v string) syscall.Errno {
	dir, attr := path.Dir(p), path.Base(p)
	switch {
	case attr == "sriov_numvfs":
		return k.setNumVFs(path.Base(dir), v)
	case attr == "sriov_drivers_autoprobe":
		b, ok := parseBool(v)
		if !ok {
			return syscall.EINVAL
		}
		return k.setAttr(p, map[bool]string{true: "1", false: "0"}[b])
	case strings.HasPrefix(dir, "sys/bus/pci/drivers/") && (attr == "bind" || attr == "unbind"):
		if attr == "bind" {
			return k.pciBind(v, path.Base(dir))
		}
		return k.pciUnbind(v, path.Base(dir))
	case strings.HasPrefix(dir, "sys/bus/vdpa/drivers/") && (attr == "bind" || attr == "unbind"):
		if attr == "bind" {
			return k.vdpaBind(v, path.Base(dir))
		}
		return k.vdpaUnbind(v, path.Base(dir))
	}
	return k.setAttr(p, v)
}

func (k *Kernel) setAttr(p, v string) syscall.Errno {
	if cur, _ := k.root.ReadFile(p); cur == v {
		return 0
	}
	if err := k.writeFile(p, v); err != nil {
		return syscall.EIO
	}
	k.muts++
	return 0
}

// ---- tree helpers (callers hold mu) ----

func (k *Kernel) host(p string) string { return filepath.Join(k.dir, filepath.FromSlash(p)) }

func (k *Kernel) exists(p string) bool {
	_, err := os.Lstat(k.host(p))
	return err == nil
}

func (k *Kernel) mkdir(p string) error { return os.MkdirAll(k.host(p), 0o755) }

func (k *Kernel) writeFile(p, v string) error {
	if err := k.mkdir(path.Dir(p)); err != nil {
		return err
	}
	return os.WriteFile(k.host(p), []byte(v+"\n"), 0o644)
}

// link makes p a symbolic link to root-relative target, written relative as sysfs does.
func (k *Kernel) link(p, target string) error {
	if err := k.mkdir(path.Dir(p)); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.FromSlash(path.Dir(p)), filepath.FromSlash(target))
	if err != nil {
		return err
	}
	_ = os.Remove(k.host(p))
	return os.Symlink(filepath.ToSlash(rel), k.host(p))
}

func (k *Kernel) remove(p string) { _ = os.RemoveAll(k.host(p)) }

func (k *Kernel) list(p string) []string {
	n, _ := k.root.ReadDir(p)
	return n
}

func (k *Kernel) read(p string) string {
	s, _ := k.root.ReadFile(p)
	return s
}

func (k *Kernel) linkBase(p string) string {
	t, err := k.root.ReadLink(p)
	if err != nil {
		return ""
	}
	return path.Base(t)
}

// devDir resolves a PCI device's real directory ("" when absent).
func (k *Kernel) devDir(addr string) string {
	r, err := k.root.Resolve("sys/bus/pci/devices/" + addr)
	if err != nil {
		return ""
	}
	return r
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "y", "yes", "on", "true":
		return true, true
	case "0", "n", "no", "off", "false":
		return false, true
	}
	return false, false
}
