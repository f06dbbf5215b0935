package simkernel

import (
	"context"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
)

// release returns the kernel's major and minor from proc/sys/kernel/osrelease (6.1 if absent).
func (k *Kernel) release() (int, int) {
	r := k.read("proc/sys/kernel/osrelease")
	var maj, min int
	if _, err := fmt.Sscanf(r, "%d.%d", &maj, &min); err != nil {
		return 6, 1
	}
	return maj, min
}

func (k *Kernel) atLeast(maj, min int) bool {
	a, b := k.release()
	return a > maj || a == maj && b >= min
}

// family returns the vdpa family as the running release would describe it, or ENOENT.
func (k *Kernel) family() (vdpa.Family, error) {
	if !k.exists("sys/module/vdpa") || !k.atLeast(5, 12) {
		return vdpa.Family{}, syscall.ENOENT
	}
	f := vdpa.Family{Version: 1, MaxAttr: 8, Ops: []int{1, 2, 3, 4, 5}}
	switch {
	case k.atLeast(6, 0):
		f.MaxAttr = 20
	case k.atLeast(5, 19):
		f.MaxAttr = 19
	case k.atLeast(5, 17):
		f.MaxAttr = 16
	case k.atLeast(5, 16):
		f.MaxAttr = 13
	case k.atLeast(5, 15):
		f.MaxAttr = 9
	}
	if k.atLeast(5, 16) {
		f.Ops = append(f.Ops, vdpa.CmdDevConfigGet)
	}
	if k.atLeast(5, 19) {
		f.Ops = append(f.Ops, vdpa.CmdDevVStatsGet)
	}
	return f, nil
}

// Family implements vdpa.VDPANetlink.
func (k *Kernel) Family(ctx context.Context) (vdpa.Family, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.family()
}

// mgmtDevs lists the registered management devices: VFs whose mlx5_core.vnet auxiliary device
// is bound to mlx5_vdpa.
func (k *Kernel) mgmtDevs() []vdpa.MgmtDev {
	var out []vdpa.MgmtDev
	for _, addr := range k.list("sys/bus/pci/devices") {
		dir := k.devDir(addr)
		for _, c := range k.list(dir) {
			if !strings.HasPrefix(c, "mlx5_core.vnet.") || k.linkBase(dir+"/"+c+"/driver") == "" {
				continue
			}
			a := k.mgmt["pci/"+addr]
			m := vdpa.MgmtDev{MgmtDevID: vdpa.MgmtDevID{Bus: "pci", Name: addr}, Classes: 1 << 1}
			if k.atLeast(5, 17) {
				m.MaxVQs = uint32(atoi(orDefault(a["max_vqs"], k.knob("default-max-vqs", "257"))))
			}
			out = append(out, m)
		}
	}
	return out
}

// MgmtDevs implements vdpa.VDPANetlink.
func (k *Kernel) MgmtDevs(ctx context.Context) ([]vdpa.MgmtDev, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.family(); err != nil {
		return nil, err
	}
	return k.mgmtDevs(), nil
}

// Devs implements vdpa.VDPANetlink.
func (k *Kernel) Devs(ctx context.Context) ([]vdpa.KernelDev, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.family(); err != nil {
		return nil, err
	}
	var out []vdpa.KernelDev
	for _, d := range k.devs {
		out = append(out, vdpa.KernelDev{Name: d.name, ID: d.id, VendorID: 0x15b3, MaxVQs: uint32(2*d.cfg.MaxVQP + 1)})
	}
	slices.SortFunc(out, func(a, b vdpa.KernelDev) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DevConfig implements vdpa.VDPANetlink.
func (k *Kernel) DevConfig(ctx context.Context, name string) (vdpa.DevConfig, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, err := k.family()
	if err != nil {
		return vdpa.DevConfig{}, err
	}
	if !f.HasOp(vdpa.CmdDevConfigGet) {
		return vdpa.DevConfig{}, syscall.EOPNOTSUPP
	}
	d, ok := k.devs[name]
	if !ok {
		return vdpa.DevConfig{}, syscall.ENODEV
	}
	return d.cfg, nil
}

// NewDev implements vdpa.VDPANetlink with the vdpa core's and mlx5_vdpa's checks, in their order.
func (k *Kernel) NewDev(ctx context.Context, name string, mgmt vdpa.MgmtDevID, p vdpa.DevParams) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.family(); err != nil {
		return err
	}
	if name == "" || mgmt.Name == "" {
		return syscall.EINVAL
	}
	// Kernels before 5.16 do not parse the net attributes; 5.16 does not parse max_vqp.
	if !k.atLeast(5, 16) {
		p = vdpa.DevParams{}
	} else if !k.atLeast(5, 17) {
		p.MaxVQP = 0
	}
	i := slices.IndexFunc(k.mgmtDevs(), func(m vdpa.MgmtDev) bool { return m.MgmtDevID == mgmt })
	if i < 0 {
		return syscall.ENODEV
	}
	md := k.mgmtDevs()[i]
	if e := k.checkAttrs(mgmt, p); e != 0 {
		return e
	}
	for _, d := range k.devs {
		if d.mgmt == mgmt.String() {
			return syscall.ENOSPC // mlx5_vdpa: one device per management device
		}
	}
	if p.MaxVQP > 0 && md.MaxVQs > 0 && uint32(p.MaxVQP) > md.MaxVQs/2 {
		return syscall.EINVAL
	}
	if _, ok := k.devs[name]; ok || k.exists("sys/bus/vdpa/devices/"+name) {
		return syscall.EEXIST
	}
	return k.createDev(name, mgmt, p)
}

// checkAttrs is the core's config_attr_mask check: EOPNOTSUPP for attributes the management
// device cannot set (fixture: mgmtdev ... attrs=mac,mtu,max_vqp; default all).
func (k *Kernel) checkAttrs(mgmt vdpa.MgmtDevID, p vdpa.DevParams) syscall.Errno {
	allowed := strings.Split(orDefault(k.mgmt[mgmt.String()]["attrs"], "mac,mtu,max_vqp"), ",")
	for attr, set := range map[string]bool{"mac": len(p.MAC) > 0, "mtu": p.MTU > 0, "max_vqp": p.MaxVQP > 0} {
		if set && !slices.Contains(allowed, attr) {
			return syscall.EOPNOTSUPP
		}
	}
	return 0
}

func (k *Kernel) createDev(name string, mgmt vdpa.MgmtDevID, p vdpa.DevParams) error {
	parent := mgmt.Name
	dir := k.devDir(parent) + "/" + name
	if err := k.mkdir(dir); err != nil {
		return syscall.EIO
	}
	if err := k.link("sys/bus/vdpa/devices/"+name, dir); err != nil {
		return syscall.EIO
	}
	d := &vdev{name: name, mgmt: mgmt.String(), parent: parent, id: k.nextID,
		cfg: vdpa.DevConfig{MAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}, MTU: 1500, MaxVQP: 1}}
	k.nextID++
	if len(p.MAC) > 0 {
		d.cfg.MAC = p.MAC
	}
	if p.MTU > 0 {
		d.cfg.MTU = p.MTU
	}
	if p.MaxVQP > 0 {
		d.cfg.MaxVQP = p.MaxVQP
	}
	k.devs[name] = d
	k.muts++
	if k.read("sys/bus/vdpa/drivers_autoprobe") != "0" {
		if drv := k.list("sys/bus/vdpa/drivers"); len(drv) > 0 {
			k.vdpaBind(name, drv[0])
		}
	}
	return nil
}

// DelDev implements vdpa.VDPANetlink.
func (k *Kernel) DelDev(ctx context.Context, name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.family(); err != nil {
		return err
	}
	d, ok := k.devs[name]
	if !ok {
		return syscall.ENODEV
	}
	k.delDev(d)
	return nil
}

func (k *Kernel) delDev(d *vdev) {
	if drv := k.linkBase("sys/bus/vdpa/devices/" + d.name + "/driver"); drv != "" {
		k.vdpaUnbind(d.name, drv)
	}
	if dir, err := k.root.Resolve("sys/bus/vdpa/devices/" + d.name); err == nil {
		k.remove(dir)
	}
	k.remove("sys/bus/vdpa/devices/" + d.name)
	delete(k.devs, d.name)
	k.muts++
}

// vdpaBind is the vdpa bus's bind_store.
func (k *Kernel) vdpaBind(name, drv string) syscall.Errno {
	dir, err := k.root.Resolve("sys/bus/vdpa/devices/" + name)
	if err != nil {
		dir = ""
	}
	if errno := k.bindDriver("vdpa", name, dir, drv); errno != 0 {
		return errno
	}
	switch drv {
	case vdpa.BusVhostVDPA:
		k.probeVhost(name, dir)
	case vdpa.BusVirtioVDPA:
		k.probeVirtio(name, path.Dir(dir))
	}
	return 0
}

// probeVhost creates vhost-vdpa-N (lowest free minor) and, via udev, /dev/vhost-vdpa-N.
func (k *Kernel) probeVhost(name, dir string) {
	m := lowestFree(k.list("sys/class/vhost-vdpa"), "vhost-vdpa-")
	child := "vhost-vdpa-" + strconv.Itoa(m)
	_ = k.writeFile(dir+"/"+child+"/dev", fmt.Sprintf("%d:%d", k.major, m))
	_ = k.link("sys/class/vhost-vdpa/"+child, dir+"/"+child)
	if k.knob("udev", "on") != "on" {
		return
	}
	node := "dev/" + child
	content := fmt.Sprintf("%d:%d", k.major, m)
	delay, _ := time.ParseDuration(k.knob("udev-delay", "0s"))
	if delay <= 0 {
		_ = k.writeFile(node, markerFor(content))
		return
	}
	k.timers[node] = time.AfterFunc(delay, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if _, ok := k.timers[node]; ok {
			delete(k.timers, node)
			_ = k.writeFile(node, markerFor(content))
		}
	})
}

func markerFor(mm string) string { return simhost.CharDevMarker + mm }

// probeVirtio creates virtioM (lowest free index) on the DMA device (the VF) with a netdev.
func (k *Kernel) probeVirtio(name, parentDir string) {
	used := map[int]bool{}
	for _, n := range k.list("sys/bus/virtio/devices") {
		used[atoi(strings.TrimPrefix(n, "virtio"))] = true
	}
	m := 0
	for used[m] {
		m++
	}
	v := fmt.Sprintf("%s/virtio%d", parentDir, m)
	nd := fmt.Sprintf("eth-vdpa%d", m)
	_ = k.writeFile(v+"/net/"+nd+"/address", "00:00:00:00:00:00")
	_ = k.link(fmt.Sprintf("sys/bus/virtio/devices/virtio%d", m), v)
	_ = k.link("sys/class/net/"+nd, v+"/net/"+nd)
}

// vdpaUnbind is the vdpa bus's unbind_store.
func (k *Kernel) vdpaUnbind(name, drv string) syscall.Errno {
	dir, err := k.root.Resolve("sys/bus/vdpa/devices/" + name)
	if err != nil || k.linkBase(dir+"/driver") != drv {
		return syscall.ENODEV
	}
	for _, c := range k.list(dir) {
		if strings.HasPrefix(c, "vhost-vdpa-") {
			if t, ok := k.timers["dev/"+c]; ok {
				t.Stop()
				delete(k.timers, "dev/"+c)
			}
			k.remove("dev/" + c)
			k.remove("sys/class/vhost-vdpa/" + c)
			k.remove(dir + "/" + c)
		}
	}
	if drv == vdpa.BusVirtioVDPA {
		parent := path.Dir(dir)
		for _, c := range k.list(parent) {
			if strings.HasPrefix(c, "virtio") {
				for _, nd := range k.list(parent + "/" + c + "/net") {
					k.remove("sys/class/net/" + nd)
				}
				k.remove("sys/bus/virtio/devices/" + c)
				k.remove(parent + "/" + c)
			}
		}
	}
	k.remove(dir + "/driver")
	k.remove("sys/bus/vdpa/drivers/" + drv + "/" + name)
	k.muts++
	return 0
}

func parseMAC(s string) (net.HardwareAddr, error) { return net.ParseMAC(s) }
