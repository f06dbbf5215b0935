package simkernel_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

var ctx = context.Background()

const (
	pfDir = "sys/bus/pci/devices/0000:65:00.0"
	vf0   = "0000:65:00.2"
	vf1   = "0000:65:00.3"
)

func boot(t *testing.T, name string) *simkernel.Kernel {
	t.Helper()
	f, err := simhost.Load(filepath.Join("..", "testdata", name+".fixture"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := simkernel.New(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func text(t *testing.T, k *simkernel.Kernel) string {
	t.Helper()
	f, err := k.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(f.Format())
}

// TestErrnos checks each refusal against the errno the real kernel returns.
func TestErrnos(t *testing.T) {
	mgmt := func(vf string) vdpa.MgmtDevID { return vdpa.MgmtDevID{Bus: "pci", Name: vf} }
	cases := []struct {
		name    string
		fixture string
		op      func(k *simkernel.Kernel) error
		want    syscall.Errno
	}{
		{"numvfs above total", "cx6dx-legacy", func(k *simkernel.Kernel) error { return k.WriteFile(pfDir+"/sriov_numvfs", "9") }, syscall.ERANGE},
		{"numvfs non-zero to non-zero", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.WriteFile(pfDir+"/sriov_numvfs", "4") }, syscall.EBUSY},
		{"numvfs not a number", "cx6dx-legacy", func(k *simkernel.Kernel) error { return k.WriteFile(pfDir+"/sriov_numvfs", "two") }, syscall.EINVAL},
		{"numvfs without a PF driver", "cx6dx-legacy", func(k *simkernel.Kernel) error {
			if err := k.WriteFile("sys/bus/pci/drivers/mlx5_core/unbind", "0000:65:00.0"); err != nil {
				return err
			}
			return k.WriteFile(pfDir+"/sriov_numvfs", "2")
		}, syscall.ENOENT},
		{"autoprobe not a bool", "cx6dx-legacy", func(k *simkernel.Kernel) error { return k.WriteFile(pfDir+"/sriov_drivers_autoprobe", "maybe") }, syscall.EINVAL},
		{"bind an already bound VF", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.WriteFile("sys/bus/pci/drivers/vfio-pci/bind", vf0) }, syscall.EBUSY},
		{"bind an unknown device", "cx6dx-switchdev", func(k *simkernel.Kernel) error {
			return k.WriteFile("sys/bus/pci/drivers/mlx5_core/bind", "0000:66:00.0")
		}, syscall.ENODEV},
		{"unbind from a driver it is not bound to", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.WriteFile("sys/bus/pci/drivers/vfio-pci/unbind", vf0) }, syscall.ENODEV},
		{"eswitch with VFs bound", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.SetEswitchMode(ctx, "0000:65:00.0", "legacy") }, syscall.EBUSY},
		{"eswitch bad mode", "cx6dx-legacy", func(k *simkernel.Kernel) error { return k.SetEswitchMode(ctx, "0000:65:00.0", "hybrid") }, syscall.EINVAL},
		{"eswitch on a DPU host", "bluefield-dpu", func(k *simkernel.Kernel) error { _, err := k.EswitchMode(ctx, "0000:65:00.0"); return err }, syscall.EOPNOTSUPP},
		{"eswitch of a VF", "cx6dx-switchdev", func(k *simkernel.Kernel) error { _, err := k.EswitchMode(ctx, vf0); return err }, syscall.EOPNOTSUPP},
		{"devlink of an absent device", "cx6dx-switchdev", func(k *simkernel.Kernel) error { _, err := k.EswitchMode(ctx, "0000:99:00.0"); return err }, syscall.ENODEV},
		{"no vdpa family", "cx6dx-nomodules", func(k *simkernel.Kernel) error { _, err := k.MgmtDevs(ctx); return err }, syscall.ENOENT},
		{"dev add without mgmtdev", "bluefield-dpu", func(k *simkernel.Kernel) error { return k.NewDev(ctx, "v", mgmt(vf0), vdpa.DevParams{}) }, syscall.ENODEV},
		{"dev add, name taken", "cx6dx-inuse", func(k *simkernel.Kernel) error { return k.NewDev(ctx, "vdpa0", mgmt(vf1), vdpa.DevParams{}) }, syscall.EEXIST},
		{"dev add, second on a VF", "cx6dx-inuse", func(k *simkernel.Kernel) error { return k.NewDev(ctx, "v", mgmt(vf0), vdpa.DevParams{}) }, syscall.ENOSPC},
		{"dev add, max_vqp too big", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.NewDev(ctx, "v", mgmt(vf0), vdpa.DevParams{MaxVQP: 129}) }, syscall.EINVAL},
		{"dev del unknown", "cx6dx-switchdev", func(k *simkernel.Kernel) error { return k.DelDev(ctx, "nope") }, syscall.ENODEV},
		{"config get on 5.15", "cx6dx-kernel-5.15", func(k *simkernel.Kernel) error { _, err := k.DevConfig(ctx, "x"); return err }, syscall.EOPNOTSUPP},
		{"vdpa bind already bound", "cx6dx-inuse", func(k *simkernel.Kernel) error { return k.WriteFile("sys/bus/vdpa/drivers/virtio_vdpa/bind", "vdpa0") }, syscall.EBUSY},
		{"vdpa unbind from the other driver", "cx6dx-inuse", func(k *simkernel.Kernel) error {
			return k.WriteFile("sys/bus/vdpa/drivers/virtio_vdpa/unbind", "vdpa0")
		}, syscall.ENODEV},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := boot(t, c.fixture)
			if err := c.op(k); !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestOldKernelIgnoresAttributes: a 5.15 kernel creates the device but drops mac/max_vqp, as
// the real one does (which is why the library checks the family first).
func TestOldKernelIgnoresAttributes(t *testing.T) {
	k := boot(t, "cx6dx-kernel-5.15")
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	if err := k.NewDev(ctx, "v", vdpa.MgmtDevID{Bus: "pci", Name: vf0}, vdpa.DevParams{MAC: mac, MaxVQP: 2}); err != nil {
		t.Fatal(err)
	}
	f, _ := k.Dump()
	if got := f.VDPADevs["v"]["mac"]; got != "00:00:00:00:00:00" {
		t.Errorf("mac %s applied by a 5.15 kernel", got)
	}
	fam, _ := k.Family(ctx)
	if fam.CanSetMACMTU() || fam.HasOp(vdpa.CmdDevConfigGet) {
		t.Errorf("5.15 family %+v", fam)
	}
}

// TestHandWrittenInUseFixture: the hand-written cx6dx-inuse layout is exactly what the fake
// kernel makes from cx6dx-switchdev with 'vdpa dev add', and deleting the device returns to it.
func TestHandWrittenInUseFixture(t *testing.T) {
	base, inuse := boot(t, "cx6dx-switchdev"), boot(t, "cx6dx-inuse")
	mac, _ := net.ParseMAC("02:00:00:00:00:aa")
	if err := base.NewDev(ctx, "vdpa0", vdpa.MgmtDevID{Bus: "pci", Name: vf0}, vdpa.DevParams{MAC: mac, MaxVQP: 4}); err != nil {
		t.Fatal(err)
	}
	if a, b := text(t, base), text(t, inuse); a != b {
		t.Errorf("vdpa dev add on cx6dx-switchdev differs from cx6dx-inuse:\n%s\n---\n%s", a, b)
	}
	if err := inuse.DelDev(ctx, "vdpa0"); err != nil {
		t.Fatal(err)
	}
	if a, b := text(t, inuse), text(t, boot(t, "cx6dx-switchdev")); a != b {
		t.Error("vdpa dev del on cx6dx-inuse does not give cx6dx-switchdev")
	}
}

// TestVFCountRoundTrip: destroying and recreating the VFs gives the same tree (the fixture's
// VFs look exactly like the ones the fake kernel creates).
func TestVFCountRoundTrip(t *testing.T) {
	k := boot(t, "cx6dx-switchdev")
	before := text(t, k)
	for _, v := range []string{"0", "2"} {
		if err := k.WriteFile(pfDir+"/sriov_numvfs", v); err != nil {
			t.Fatal(err)
		}
	}
	if after := text(t, k); after != before {
		t.Error("numvfs 2 -> 0 -> 2 changed the tree")
	}
}

// TestVirtioBinding: binding to virtio_vdpa creates virtioM on the VF with a netdev; unbinding
// removes it and the vhost device with its node is gone.
func TestVirtioBinding(t *testing.T) {
	k := boot(t, "cx6dx-inuse")
	if err := k.WriteFile("sys/bus/vdpa/drivers/vhost_vdpa/unbind", "vdpa0"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Stat("dev/vhost-vdpa-0"); err == nil {
		t.Error("/dev/vhost-vdpa-0 survives the unbind")
	}
	if err := k.WriteFile("sys/bus/vdpa/drivers/virtio_vdpa/bind", "vdpa0"); err != nil {
		t.Fatal(err)
	}
	if n, err := k.ReadDir("sys/bus/pci/devices/" + vf0 + "/virtio0/net"); err != nil || len(n) != 1 {
		t.Errorf("virtio netdev: %v %v", n, err)
	}
	fi, err := boot(t, "cx6dx-inuse").Stat("dev/vhost-vdpa-0")
	if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("/dev/vhost-vdpa-0 of the fixture is not a character device: %v %v", fi, err)
	}
}

// TestFamilyMissing: a kernel without the vdpa module answers every vdpa netlink request as
// generic netlink does for an unregistered family — CTRL_CMD_GETFAMILY "vdpa" fails with a bare
// ENOENT (vishvananda/netlink returns the errno unwrapped; see nlkernel's TestRealKernel) —
// whatever its release; with the module, a 6.18 kernel has the full family.
func TestFamilyMissing(t *testing.T) {
	mgmt := vdpa.MgmtDevID{Bus: "pci", Name: vf0}
	for _, fx := range []string{"cx6dx-kernel-6.18-nomodules", "cx6dx-nomodules", "cx6dx-kernel-5.10"} {
		t.Run(fx, func(t *testing.T) {
			k := boot(t, fx)
			calls := map[string]func() error{
				"Family":    func() error { _, err := k.Family(ctx); return err },
				"MgmtDevs":  func() error { _, err := k.MgmtDevs(ctx); return err },
				"Devs":      func() error { _, err := k.Devs(ctx); return err },
				"DevConfig": func() error { _, err := k.DevConfig(ctx, "vdpa0"); return err },
				"NewDev":    func() error { return k.NewDev(ctx, "v", mgmt, vdpa.DevParams{}) },
				"DelDev":    func() error { return k.DelDev(ctx, "vdpa0") },
			}
			for name, call := range calls {
				if err := call(); err != syscall.ENOENT { // the bare errno, as the real kernel gives it
					t.Errorf("%s: %v, want ENOENT", name, err)
				}
			}
			if k.Mutations() != 0 {
				t.Errorf("%d mutations by refused requests", k.Mutations())
			}
		})
	}
	// The same 6.18 host with the modules loaded: the full family, so the ENOENT above is the
	// missing module's, not the release's.
	f, err := simhost.Parse([]byte("ovsplane-vdpa-fixture 1\ninclude cx6dx-switchdev.fixture\nfile proc/sys/kernel/osrelease 6.18.44-generic\n"),
		filepath.Join("..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := simkernel.New(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	if fam, err := k.Family(ctx); err != nil || !fam.CanSetMaxVQP() {
		t.Errorf("6.18 with the vdpa module: family %+v, %v; want one that sets mac/mtu and max_vqp", fam, err)
	}
}
