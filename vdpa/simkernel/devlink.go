package simkernel

import (
	"context"
	"strings"
	"syscall"
)

// eswitchMode is the PF's mode ("" when devlink has no eswitch for it).
func (k *Kernel) eswitchMode(pf string) string {
	if m, ok := k.eswitch[pf]; ok {
		return m
	}
	dir := k.devDir(pf)
	if dir != "" && k.exists(dir+"/sriov_totalvfs") && !k.exists(dir+"/physfn") && k.linkBase(dir+"/driver") == mlx5 {
		return "legacy"
	}
	return ""
}

// EswitchMode implements vdpa.Devlink.
func (k *Kernel) EswitchMode(ctx context.Context, pci string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.devDir(pci) == "" || k.linkBase(k.devDir(pci)+"/driver") == "" {
		return "", syscall.ENODEV // no devlink instance without a bound driver
	}
	switch m := k.eswitchMode(pci); m {
	case "", "unsupported":
		return "", syscall.EOPNOTSUPP
	default:
		return m, nil
	}
}

// SetEswitchMode implements vdpa.Devlink.
func (k *Kernel) SetEswitchMode(ctx context.Context, pci, mode string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if mode != "legacy" && mode != "switchdev" {
		return syscall.EINVAL
	}
	dir := k.devDir(pci)
	if dir == "" || k.linkBase(dir+"/driver") == "" {
		return syscall.ENODEV
	}
	cur := k.eswitchMode(pci)
	switch {
	case cur == "" || cur == "unsupported":
		return syscall.EOPNOTSUPP
	case cur == mode:
		return nil
	}
	var vfs []int
	for _, name := range k.list(dir) {
		if idx, ok := strings.CutPrefix(name, "virtfn"); ok {
			if k.linkBase(dir+"/"+name+"/driver") != "" {
				return syscall.EBUSY
			}
			vfs = append(vfs, atoi(idx))
		}
	}
	k.eswitch[pci] = mode
	for _, i := range vfs {
		if mode == "switchdev" {
			k.addRep(pci, i)
		} else {
			k.delRep(pci, i)
		}
	}
	k.muts++
	return nil
}
