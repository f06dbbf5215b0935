package simkernel

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/ovsplane/ovsplane/vdpa"
)

const mlx5 = "mlx5_core"

var reUplink = regexp.MustCompile(`^p(\d+)$`)

// setNumVFs is sriov_numvfs_store.
func (k *Kernel) setNumVFs(pf, v string) syscall.Errno {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return syscall.EINVAL
	}
	dir := k.devDir(pf)
	if dir == "" {
		return syscall.ENODEV
	}
	cur := atoi(k.read(dir + "/sriov_numvfs"))
	if n == cur {
		return 0
	}
	if k.linkBase(dir+"/driver") == "" {
		return syscall.ENOENT // "no driver bound to device; cannot configure SR-IOV"
	}
	if n > atoi(k.read(dir+"/sriov_totalvfs")) {
		return syscall.ERANGE
	}
	if cur != 0 && n != 0 {
		return syscall.EBUSY // "%d VFs already enabled. Disable before enabling %d VFs"
	}
	if n == 0 {
		k.destroyVFs(pf, dir)
	} else if e := k.createVFs(pf, dir, n); e != 0 {
		return e
	}
	if err := k.writeFile(dir+"/sriov_numvfs", strconv.Itoa(n)); err != nil {
		return syscall.EIO
	}
	k.muts++
	return 0
}

func (k *Kernel) createVFs(pf, dir string, n int) syscall.Errno {
	offset, stride := atoi(k.read(dir+"/sriov_offset")), atoi(k.read(dir+"/sriov_stride"))
	auto := k.read(dir+"/sriov_drivers_autoprobe") != "0"
	for i := 0; i < n; i++ {
		addr, err := vdpa.VFAddress(pf, offset, stride, i)
		if err != nil {
			return syscall.EINVAL
		}
		vf := path.Dir(dir) + "/" + addr
		for attr, val := range map[string]string{"vendor": k.read(dir + "/vendor"), "device": k.knob("vf-device", "0x101e"),
			"class": "0x020000", "numa_node": orDefault(k.read(dir+"/numa_node"), "-1")} {
			if err := k.writeFile(vf+"/"+attr, val); err != nil {
				return syscall.EIO
			}
		}
		if k.link(vf+"/physfn", dir) != nil || k.link(dir+"/virtfn"+strconv.Itoa(i), vf) != nil ||
			k.link("sys/bus/pci/devices/"+addr, vf) != nil {
			return syscall.EIO
		}
		if auto && k.exists("sys/bus/pci/drivers/"+mlx5) {
			if e := k.pciBind(addr, mlx5); e != 0 {
				return e
			}
		}
		if k.eswitchMode(pf) == "switchdev" {
			k.addRep(pf, i)
		}
	}
	return 0
}

func (k *Kernel) destroyVFs(pf, dir string) {
	for _, name := range k.list(dir) {
		idx, ok := strings.CutPrefix(name, "virtfn")
		if !ok {
			continue
		}
		addr := k.linkBase(dir + "/" + name)
		if drv := k.linkBase("sys/bus/pci/devices/" + addr + "/driver"); drv != "" {
			k.pciUnbind(addr, drv)
		}
		k.delRep(pf, atoi(idx))
		k.remove(k.devDir(addr))
		k.remove("sys/bus/pci/devices/" + addr)
		k.remove(dir + "/" + name)
	}
}

// pciBind is a driver's bind_store.
func (k *Kernel) pciBind(addr, drv string) syscall.Errno {
	dir := k.devDir(addr)
	if errno := k.bindDriver("pci", addr, dir, drv); errno != 0 {
		return errno
	}
	if drv == mlx5 && k.exists(dir+"/physfn") {
		k.probeVF(addr, dir)
	}
	return 0
}

// bindDriver is the part of a bus's bind_store before the driver's probe: device dev of bus
// (its directory dir, "" when there is none) and driver drv link to each other.
func (k *Kernel) bindDriver(bus, dev, dir, drv string) syscall.Errno {
	drvDir := "sys/bus/" + bus + "/drivers/" + drv
	if dir == "" || !k.exists(drvDir) {
		return syscall.ENODEV
	}
	if k.linkBase(dir+"/driver") != "" {
		return syscall.EBUSY
	}
	if k.link(dir+"/driver", drvDir) != nil || k.link(drvDir+"/"+dev, dir) != nil {
		return syscall.EIO
	}
	k.muts++
	return 0
}

// probeVF is mlx5_core's probe of a VF: its netdev and the vnet auxiliary device, which
// mlx5_vdpa binds when loaded (registering the management device).
func (k *Kernel) probeVF(addr, dir string) {
	pfDir := path.Dir(dir) + "/" + k.linkBase(dir+"/physfn")
	prefix, _ := k.uplinkPrefix(pfDir)
	idx := k.vfIndex(pfDir, addr)
	nd := fmt.Sprintf("%sv%d", prefix, idx)
	_ = k.writeFile(dir+"/net/"+nd+"/address", "00:00:00:00:00:00")
	_ = k.link("sys/class/net/"+nd, dir+"/net/"+nd)
	if k.knob("vnet", "on") != "on" {
		return
	}
	aux := dir + "/mlx5_core.vnet." + strconv.Itoa(k.freeIndex("mlx5_core.vnet."))
	_ = k.mkdir(aux)
	_ = k.link("sys/bus/auxiliary/devices/"+path.Base(aux), aux)
	if k.exists("sys/module/mlx5_vdpa") && k.knob("mlx5_vdpa", "ok") != "stub" {
		_ = k.link(aux+"/driver", "sys/bus/auxiliary/drivers/mlx5_vdpa.vnet_driver")
	}
}

// freeIndex returns the lowest N for which no auxiliary device prefix+N exists.
func (k *Kernel) freeIndex(prefix string) int {
	return lowestFree(k.list("sys/bus/auxiliary/devices"), prefix)
}

// lowestFree returns the lowest N for which no name in names is prefix+N.
func lowestFree(names []string, prefix string) int {
	used := map[int]bool{}
	for _, n := range names {
		if s, ok := strings.CutPrefix(n, prefix); ok {
			used[atoi(s)] = true
		}
	}
	i := 0
	for used[i] {
		i++
	}
	return i
}

// pciUnbind is a driver's unbind_store; removing mlx5_core from a VF removes its netdev, its
// auxiliary device and with it the management device and its vdpa devices.
func (k *Kernel) pciUnbind(addr, drv string) syscall.Errno {
	dir := k.devDir(addr)
	if dir == "" || k.linkBase(dir+"/driver") != drv {
		return syscall.ENODEV
	}
	if drv == mlx5 {
		for _, d := range k.devs {
			if d.parent == addr {
				k.delDev(d)
			}
		}
		for _, nd := range k.list(dir + "/net") {
			k.remove("sys/class/net/" + nd)
		}
		k.remove(dir + "/net")
		for _, c := range k.list(dir) {
			if strings.HasPrefix(c, "mlx5_core.") {
				k.remove("sys/bus/auxiliary/devices/" + c)
				k.remove(dir + "/" + c)
			}
		}
	}
	k.remove(dir + "/driver")
	k.remove("sys/bus/pci/drivers/" + drv + "/" + addr)
	k.muts++
	return 0
}

func (k *Kernel) vfIndex(pfDir, addr string) int {
	for _, name := range k.list(pfDir) {
		if idx, ok := strings.CutPrefix(name, "virtfn"); ok && k.linkBase(pfDir+"/"+name) == addr {
			return atoi(idx)
		}
	}
	return -1
}

// uplinkPrefix returns the uplink netdev's name without its "np<N>" suffix and the PF number.
func (k *Kernel) uplinkPrefix(pfDir string) (string, int) {
	for _, nd := range k.list(pfDir + "/net") {
		if m := reUplink.FindStringSubmatch(k.read(pfDir + "/net/" + nd + "/phys_port_name")); m != nil {
			return strings.TrimSuffix(nd, "np"+m[1]), atoi(m[1])
		}
	}
	return "eth-" + strings.NewReplacer(":", "", ".", "").Replace(path.Base(pfDir)), 0
}

func (k *Kernel) uplinkSwitchID(pfDir string) string {
	for _, nd := range k.list(pfDir + "/net") {
		if reUplink.MatchString(k.read(pfDir + "/net/" + nd + "/phys_port_name")) {
			return k.read(pfDir + "/net/" + nd + "/phys_switch_id")
		}
	}
	return ""
}

func (k *Kernel) repName(pfDir string, i int) string {
	prefix, n := k.uplinkPrefix(pfDir)
	return fmt.Sprintf("%snpf%dvf%d", prefix, n, i)
}

func (k *Kernel) addRep(pf string, i int) {
	pfDir := k.devDir(pf)
	name := k.repName(pfDir, i)
	_, n := k.uplinkPrefix(pfDir)
	_ = k.writeFile(pfDir+"/net/"+name+"/phys_port_name", fmt.Sprintf("pf%dvf%d", n, i))
	_ = k.writeFile(pfDir+"/net/"+name+"/phys_switch_id", k.uplinkSwitchID(pfDir))
	_ = k.link("sys/class/net/"+name, pfDir+"/net/"+name)
}

func (k *Kernel) delRep(pf string, i int) {
	pfDir := k.devDir(pf)
	name := k.repName(pfDir, i)
	k.remove(pfDir + "/net/" + name)
	k.remove("sys/class/net/" + name)
}
