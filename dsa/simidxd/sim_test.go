package simidxd_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/dsa/simidxd"
)

// TestVariants lays out and opens every variant and checks what distinguishes it.
func TestVariants(t *testing.T) {
	if got := simidxd.Variants(); len(got) != 6 || got[0] != simidxd.SPR {
		t.Fatalf("Variants() = %v", got)
	}
	for _, v := range simidxd.Variants() {
		t.Run(string(v), func(t *testing.T) {
			s := boot(t, v)
			if s.Variant() != v {
				t.Errorf("Variant() = %q", s.Variant())
			}
			d := devs + "dsa0/"
			for attr, val := range map[string]string{"max_groups": "4", "max_engines": "4", "max_work_queues": "8",
				"max_batch_size": "1024", "max_transfer_size": "2097152", "configurable": "1", "numa_node": "0",
				"cmd_status": "0", "version": "0x100"} {
				want(t, s, d+attr, val)
			}
			want(t, s, pciDev+"/vendor", "0x8086")
			want(t, s, pciDev+"/device", "0x0b25")
			want(t, s, pciDev+"/driver_override", "(null)")
			if l, err := s.ReadLink(pciDev + "/driver"); err != nil || l != "../../../bus/pci/drivers/idxd" {
				t.Errorf("PCI driver link %q %v", l, err)
			}
			if l, err := s.ReadLink(pciDev + "/iommu_group"); err != nil || l != "../../../kernel/iommu_groups/1" {
				t.Errorf("iommu_group link %q %v", l, err)
			}
			names, err := s.ReadDir(devs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names, "wq0.7") || !slices.Contains(names, "engine0.3") || !slices.Contains(names, "group0.3") {
				t.Errorf("dsa bus devices %v", names)
			}
			for _, f := range []string{"bind", "unbind", "new_id"} {
				for _, drv := range []string{"idxd", "vfio-pci"} {
					if !exists(s, "sys/bus/pci/drivers/"+drv+"/"+f) {
						t.Errorf("missing PCI driver file %s/%s", drv, f)
					}
				}
			}
			if fi, err := s.Stat("dev/dsa"); err != nil || !fi.IsDir() {
				t.Errorf("dev/dsa: %v %v", fi, err)
			}
			drvs, _ := s.ReadDir("sys/bus/dsa/drivers")
			wantDrvs := []string{"dmaengine", "idxd", "user"}
			if v == simidxd.OldKernel {
				wantDrvs = []string{"dsa"}
			}
			if !slices.Equal(drvs, wantDrvs) {
				t.Errorf("dsa drivers %v, want %v", drvs, wantDrvs)
			}
			if _, err := s.Stat(devs + "wq0.0/driver_name"); (err == nil) == (v == simidxd.OldKernel) {
				t.Errorf("driver_name attribute presence: %v", err)
			}
			wantPASID, wantSize, wantState, wantClients := "1", "128", "disabled", "0"
			switch v {
			case simidxd.NoPASID:
				wantPASID = "0"
			case simidxd.SmallWQBudget:
				wantSize = "16"
			case simidxd.Busy:
				wantState, wantClients = "enabled", "2"
				want(t, s, devs+"wq0.0/state", "enabled")
				want(t, s, devs+"wq0.0/clients", "2")
				want(t, s, devs+"wq0.1/type", "kernel")
				want(t, s, devs+"wq0.1/state", "enabled")
				if !exists(s, "dev/dsa/wq0.0") || exists(s, "dev/dsa/wq0.1") {
					t.Error("busy: want dev/dsa/wq0.0 only")
				}
			case simidxd.TwoNUMA:
				want(t, s, devs+"dsa2/numa_node", "1")
				want(t, s, "sys/bus/pci/devices/0000:e7:01.0/numa_node", "1")
				if l, err := s.ReadLink(devs + "dsa2"); err != nil || l != "../../../devices/pci0000:e7/0000:e7:01.0/dsa2" {
					t.Errorf("dsa2 link %q %v", l, err)
				}
				if !slices.Contains(names, "wq2.7") {
					t.Errorf("dsa2's WQs missing: %v", names)
				}
			}
			want(t, s, d+"pasid_enabled", wantPASID)
			want(t, s, d+"max_work_queues_size", wantSize)
			want(t, s, d+"state", wantState)
			want(t, s, d+"clients", wantClients)
		})
	}
}

func TestParseVariant(t *testing.T) {
	if v, err := simidxd.ParseVariant(""); err != nil || v != simidxd.SPR {
		t.Errorf(`ParseVariant("") = %q %v`, v, err)
	}
	if _, err := simidxd.ParseVariant("icelake"); err == nil || !strings.Contains(err.Error(), "two-numa") {
		t.Errorf("unknown variant: %v", err)
	}
	if err := simidxd.Write(t.TempDir(), "icelake"); err == nil {
		t.Error("Write accepted an unknown variant")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := simidxd.Write(dir, simidxd.SPR); err == nil {
		t.Error("Write accepted a non-empty directory")
	}
	if _, err := simidxd.Open(t.TempDir()); err == nil {
		t.Error("Open accepted a directory without a simulated host")
	}
}

// TestGoldenSPR compares the spr variant's whole tree with testdata/spr.listing.
func TestGoldenSPR(t *testing.T) {
	s := boot(t, simidxd.SPR)
	l, err := s.Listing()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "spr.listing", l)
}

// TestConfigErrnos checks each configuration store's refusals against the kernel's errno.
func TestConfigErrnos(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name    string
		variant simidxd.Variant
		setup   []string
		path    string
		value   string
		want    syscall.Errno
	}{
		{"size while the device is enabled", simidxd.Busy, nil, devs + "wq0.2/size", "8", syscall.EPERM},
		{"group_id of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/group_id", "1", syscall.EPERM},
		{"mode of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/mode", "shared", syscall.EPERM},
		{"type of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/type", "kernel", syscall.EPERM},
		{"name of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/name", "dpdk_x", syscall.EPERM},
		{"priority of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/priority", "5", syscall.EPERM},
		{"driver_name of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/driver_name", "user", syscall.EPERM},
		{"max_batch_size of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/max_batch_size", "64", syscall.EPERM},
		{"max_transfer_size of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/max_transfer_size", "4096", syscall.EPERM},
		{"ats_disable of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/ats_disable", "1", syscall.EPERM},
		{"block_on_fault of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/block_on_fault", "1", syscall.ENXIO},
		{"threshold of an enabled WQ", simidxd.Busy, nil, devs + "wq0.0/threshold", "8", syscall.ENXIO},
		{"read_buffer_limit while enabled", simidxd.Busy, nil, devs + "dsa0/read_buffer_limit", "8", syscall.EPERM},
		{"group attribute while enabled", simidxd.Busy, nil, devs + "group0.1/read_buffers_reserved", "8", syscall.EPERM},
		{"priority 16", simidxd.SPR, nil, devs + "wq0.0/priority", "16", syscall.EINVAL},
		{"priority not a number", simidxd.SPR, nil, devs + "wq0.0/priority", "high", syscall.EINVAL},
		{"priority negative", simidxd.SPR, nil, devs + "wq0.0/priority", "-1", syscall.EINVAL},
		{"size over the budget", simidxd.SPR, []string{devs + "wq0.0/size=100"}, devs + "wq0.1/size", "29", syscall.EINVAL},
		{"size over a small budget", simidxd.SmallWQBudget, nil, devs + "wq0.0/size", "17", syscall.EINVAL},
		{"size not a number", simidxd.SPR, nil, devs + "wq0.0/size", "big", syscall.EINVAL},
		{"max_batch_size over the device's", simidxd.SPR, nil, devs + "wq0.0/max_batch_size", "2048", syscall.EINVAL},
		{"max_batch_size rounded up over the device's", simidxd.SPR, nil, devs + "wq0.0/max_batch_size", "1025", syscall.EINVAL},
		{"max_batch_size 0", simidxd.SPR, nil, devs + "wq0.0/max_batch_size", "0", syscall.EINVAL},
		{"max_transfer_size over the device's", simidxd.SPR, nil, devs + "wq0.0/max_transfer_size", "4194304", syscall.EINVAL},
		{"name too long", simidxd.SPR, nil, devs + "wq0.0/name", long(1025), syscall.EINVAL},
		{"name empty", simidxd.SPR, nil, devs + "wq0.0/name", "", syscall.EINVAL},
		{"driver_name too long", simidxd.SPR, nil, devs + "wq0.0/driver_name", long(129), syscall.EINVAL},
		{"type unknown", simidxd.SPR, nil, devs + "wq0.0/type", "mdev", syscall.EINVAL},
		{"mode unknown", simidxd.SPR, nil, devs + "wq0.0/mode", "exclusive", syscall.EINVAL},
		{"wq group_id above max_groups-1", simidxd.SPR, nil, devs + "wq0.0/group_id", "4", syscall.EINVAL},
		{"wq group_id below -1", simidxd.SPR, nil, devs + "wq0.0/group_id", "-2", syscall.EINVAL},
		{"engine group_id above max_groups-1", simidxd.SPR, nil, devs + "engine0.0/group_id", "4", syscall.EINVAL},
		{"engine group_id not a number", simidxd.SPR, nil, devs + "engine0.0/group_id", "zero", syscall.EINVAL},
		{"threshold of a dedicated WQ", simidxd.SPR, []string{devs + "wq0.0/size=16", devs + "wq0.0/mode=dedicated"}, devs + "wq0.0/threshold", "8", syscall.EINVAL},
		{"threshold above size", simidxd.SPR, []string{devs + "wq0.0/size=16"}, devs + "wq0.0/threshold", "17", syscall.EINVAL},
		{"threshold 0", simidxd.SPR, []string{devs + "wq0.0/size=16"}, devs + "wq0.0/threshold", "0", syscall.EINVAL},
		{"block_on_fault not a bool", simidxd.SPR, nil, devs + "wq0.0/block_on_fault", "maybe", syscall.EINVAL},
		{"enqcmds_retries of a dedicated WQ", simidxd.SPR, []string{devs + "wq0.0/mode=dedicated"}, devs + "wq0.0/enqcmds_retries", "4", syscall.EOPNOTSUPP},
		{"traffic class on a version 1 device", simidxd.SPR, nil, devs + "group0.0/traffic_class_a", "2", syscall.EPERM},
		{"read-only attribute", simidxd.SPR, nil, devs + "dsa0/state", "enabled", syscall.EACCES},
		{"read-only WQ attribute", simidxd.SPR, nil, devs + "wq0.0/clients", "1", syscall.EACCES},
		{"missing attribute", simidxd.SPR, nil, devs + "dsa0/no_such_attr", "1", syscall.ENOENT},
		{"missing attribute on the old kernel", simidxd.OldKernel, nil, devs + "wq0.0/driver_name", "user", syscall.ENOENT},
		{"value longer than a page", simidxd.SPR, nil, devs + "wq0.0/name", long(5000), syscall.EINVAL},
	}
	// A refused write changes nothing, so cases with the same variant and setup share a host and
	// each checks that the whole tree is as it was.
	hosts := map[string]*simidxd.Sim{}
	outer := t // owns the shared hosts' directories
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := string(c.variant) + "|" + strings.Join(c.setup, "|")
			s := hosts[key]
			if s == nil {
				s = boot(outer, c.variant)
				do(t, s, c.setup...)
				hosts[key] = s
			}
			before, err := s.Listing()
			if err != nil {
				t.Fatal(err)
			}
			wantErrno(t, c.path+"="+c.value, s.WriteFile(c.path, c.value), c.want)
			if after, err := s.Listing(); err != nil || after != before {
				t.Errorf("the refused write changed the tree (%v)", err)
			}
		})
	}
}

// TestConfigStores checks accepted values as the kernel stores them.
func TestConfigStores(t *testing.T) {
	s := boot(t, simidxd.SPR)
	do(t, s,
		devs+"wq0.0/name=  dpdk_a \n",
		devs+"wq0.0/max_batch_size=100\n",
		devs+"wq0.0/max_transfer_size=0x1000",
		devs+"wq0.0/block_on_fault=on",
		devs+"wq0.0/priority=0",
		devs+"wq0.0/size=16",
		devs+"wq0.0/threshold=8",
		devs+"wq0.0/enqcmds_retries=100",
		devs+"engine0.1/group_id=2",
		devs+"wq0.3/group_id=2",
	)
	want(t, s, devs+"wq0.0/name", "dpdk_a")
	want(t, s, devs+"wq0.0/max_batch_size", "128") // rounded up to a power of two
	want(t, s, devs+"wq0.0/max_transfer_size", "4096")
	want(t, s, devs+"wq0.0/block_on_fault", "1")
	want(t, s, devs+"wq0.0/threshold", "8")
	want(t, s, devs+"wq0.0/enqcmds_retries", "64") // clamped
	want(t, s, devs+"group0.2/engines", "engine0.1")
	want(t, s, devs+"group0.2/work_queues", "wq0.3")
	want(t, s, devs+"group0.0/engines", "")
	// Choosing dedicated clears the threshold; changing the type clears the name.
	do(t, s, devs+"wq0.0/mode=dedicated", devs+"wq0.0/type=user")
	want(t, s, devs+"wq0.0/threshold", "0")
	want(t, s, devs+"wq0.0/name", "")
	// The size budget counts the other WQs only: a WQ may be resized within it.
	do(t, s, devs+"wq0.0/size=128", devs+"wq0.0/size=100", devs+"wq0.1/size=28")
	// The kernel accepts an engine's group_id while the device is enabled.
	b := boot(t, simidxd.Busy)
	do(t, b, devs+"engine0.1/group_id=0")
	want(t, b, devs+"group0.0/engines", "engine0.0 engine0.1")
}

// TestCmdStatusAndDeviceBindErrnos checks idxd/bind's configuration checks and cmd_status.
func TestCmdStatusAndDeviceBindErrnos(t *testing.T) {
	cases := []struct {
		name    string
		variant simidxd.Variant
		setup   []string
		status  string
	}{
		{"nothing configured", simidxd.SPR, nil, "0x800d0000"},
		{"no engine", simidxd.SPR, []string{devs + "wq0.0/group_id=0", devs + "wq0.0/size=8"}, "0"},
		{"group without engine", simidxd.SPR, []string{devs + "engine0.0/group_id=0", devs + "wq0.0/group_id=1", devs + "wq0.0/mode=dedicated"}, "0x15"},
		{"shared WQ without PASID", simidxd.NoPASID, []string{devs + "engine0.0/group_id=0", devs + "wq0.0/group_id=0"}, "0x800c0000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := boot(t, c.variant)
			do(t, s, c.setup...)
			wantErrno(t, "idxd/bind", s.WriteFile(drivers+"idxd/bind", "dsa0"), syscall.ENXIO)
			want(t, s, devs+"dsa0/state", "disabled")
			want(t, s, devs+"dsa0/cmd_status", c.status)
			if exists(s, devs+"dsa0/driver") {
				t.Error("a failed probe left a driver link")
			}
			do(t, s, devs+"dsa0/cmd_status=1")
			want(t, s, devs+"dsa0/cmd_status", "0")
		})
	}
	s := boot(t, simidxd.SPR)
	for _, c := range []struct{ drv, dev string }{{"idxd", "wq0.0"}, {"idxd", "dsa9"}, {"idxd", "engine0.0"}, {"user", "dsa0"}, {"nosuch", "dsa0"}} {
		err := s.WriteFile(drivers+c.drv+"/bind", c.dev)
		if c.drv == "nosuch" {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("bind through a missing driver: %v", err)
			}
			continue
		}
		wantErrno(t, c.drv+" bind "+c.dev, err, syscall.ENODEV)
	}
	wantErrno(t, "unbind of an unbound device", s.WriteFile(drivers+"idxd/unbind", "dsa0"), syscall.ENODEV)
	b := boot(t, simidxd.Busy)
	wantErrno(t, "bind of a bound device", b.WriteFile(drivers+"idxd/bind", "dsa0"), syscall.EBUSY)
	wantErrno(t, "bind of a bound WQ", b.WriteFile(drivers+"user/bind", "wq0.0"), syscall.EBUSY)
	wantErrno(t, "unbind from the wrong driver", b.WriteFile(drivers+"dmaengine/unbind", "wq0.0"), syscall.ENODEV)
}

// TestWQBindErrnos checks user/bind's refusals, the cmd_status they set and what they undo.
func TestWQBindErrnos(t *testing.T) {
	cases := []struct {
		name    string
		variant simidxd.Variant
		enable  bool     // configure and bind dsa0 first
		setup   []string // after configuring, before binding dsa0
		want    syscall.Errno
		status  string
		typ     string // wq0.0's type afterwards
	}{
		{"device not enabled", simidxd.SPR, false, nil, syscall.ENXIO, "0", "user"},
		{"no driver_name", simidxd.SPR, true, nil, syscall.ENODEV, "0x80200000", "user"},
		{"driver_name of another driver", simidxd.SPR, true, []string{devs + "wq0.0/driver_name=dmaengine"}, syscall.ENODEV, "0x80200000", "user"},
		{"no PASID", simidxd.NoPASID, true, []string{devs + "wq0.0/driver_name=user"}, syscall.EOPNOTSUPP, "0x80110000", "user"},
		{"no name", simidxd.SPR, true, []string{devs + "wq0.0/driver_name=user", devs + "wq0.1/group_id=0", devs + "wq0.1/mode=dedicated", devs + "wq0.0/type=none", devs + "wq0.0/type=user"}, syscall.ENXIO, "0x80040000", "none"},
		{"no group", simidxd.SPR, true, []string{devs + "wq0.0/driver_name=user", devs + "wq0.1/group_id=0", devs + "wq0.1/mode=dedicated", devs + "wq0.0/group_id=-1"}, syscall.ENXIO, "0x80030000", "none"},
		{"shared with threshold 0", simidxd.SPR, true, []string{devs + "wq0.0/driver_name=user", devs + "wq0.0/mode=shared"}, syscall.ENXIO, "0x80060000", "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := boot(t, c.variant)
			configure(t, s)
			do(t, s, c.setup...)
			if c.enable {
				do(t, s, drivers+"idxd/bind=dsa0")
			}
			wantErrno(t, "user/bind wq0.0", s.WriteFile(drivers+"user/bind", "wq0.0"), c.want)
			want(t, s, devs+"dsa0/cmd_status", c.status)
			want(t, s, devs+"wq0.0/state", "disabled")
			want(t, s, devs+"wq0.0/type", c.typ)
			if exists(s, "dev/dsa/wq0.0") || exists(s, devs+"wq0.0/driver") {
				t.Error("a failed WQ probe left a node or a driver link")
			}
			if _, err := s.ReadFile(devs + "wq0.0/cdev_minor"); !errors.Is(err, syscall.ENXIO) {
				t.Errorf("cdev_minor of a disabled WQ: %v, want ENXIO", err)
			}
		})
	}
	o := boot(t, simidxd.OldKernel)
	configure(t, o)
	wantErrno(t, "old kernel: WQ before device", o.WriteFile(drivers+"dsa/bind", "wq0.0"), syscall.EPERM)
	do(t, o, drivers+"dsa/bind=dsa0")
	do(t, o, devs+"wq0.1/group_id=0", devs+"wq0.1/mode=dedicated")
	wantErrno(t, "old kernel: WQ without a name", o.WriteFile(drivers+"dsa/bind", "wq0.1"), syscall.EINVAL)
}

// TestBindSequence is the DPDK sequence end to end: configure, bind the device, bind the WQ,
// give the node to the OVS user, then unbind both.
func TestBindSequence(t *testing.T) {
	s := boot(t, simidxd.SPR)
	configure(t, s)
	do(t, s, devs+"wq0.0/driver_name=user", drivers+"idxd/bind=dsa0\n")
	want(t, s, devs+"dsa0/state", "enabled")
	if l, err := s.ReadLink(devs + "dsa0/driver"); err != nil || !strings.HasSuffix(l, "bus/dsa/drivers/idxd") {
		t.Errorf("dsa0 driver link %q %v", l, err)
	}
	do(t, s, drivers+"user/bind=wq0.0\n")
	want(t, s, devs+"wq0.0/state", "enabled")
	want(t, s, devs+"wq0.0/cdev_minor", "0")
	want(t, s, devs+"dsa0/cmd_status", "0")
	fi, err := s.Stat("dev/dsa/wq0.0")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeCharDevice == 0 || fi.Mode().Perm() != 0o600 || fi.Size() != 4096 {
		t.Errorf("dev/dsa/wq0.0: mode %v size %d, want a 0600 char device of 4096 bytes", fi.Mode(), fi.Size())
	}
	if names, _ := s.ReadDir("dev/dsa"); !slices.Equal(names, []string{"wq0.0"}) {
		t.Errorf("dev/dsa = %v", names)
	}
	if err := s.Chmod("dev/dsa/wq0.0", 0o660); err != nil {
		t.Fatal(err)
	}
	if err := s.Chown("dev/dsa/wq0.0", os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if fi, _ := s.Stat("dev/dsa/wq0.0"); fi.Mode().Perm() != 0o660 {
		t.Errorf("after chmod: %v", fi.Mode())
	}
	wantErrno(t, "chmod outside dev", s.Chmod(devs+"wq0.0/size", 0o666), syscall.EPERM)
	wantErrno(t, "chown outside dev", s.Chown("sys/bus/dsa/drivers/user/bind", 0, 0), syscall.EPERM)

	// A second WQ gets the next minor; the sizes cannot change while the device is enabled.
	do(t, s, devs+"wq0.1/group_id=0", devs+"wq0.1/mode=dedicated", devs+"wq0.1/name=dpdk_wq0.1",
		devs+"wq0.1/driver_name=user", drivers+"user/bind=wq0.1")
	want(t, s, devs+"wq0.1/size", "16") // a typed WQ of size 0 gets the kernel's default at enable
	want(t, s, devs+"wq0.1/cdev_minor", "1")

	do(t, s, drivers+"user/unbind=wq0.0")
	want(t, s, devs+"wq0.0/state", "disabled")
	want(t, s, devs+"wq0.0/type", "none")
	want(t, s, devs+"wq0.0/name", "")
	want(t, s, devs+"wq0.0/size", "32")
	want(t, s, devs+"wq0.0/group_id", "0")
	want(t, s, devs+"wq0.0/driver_name", "user")
	if exists(s, "dev/dsa/wq0.0") || exists(s, drivers+"user/wq0.0") {
		t.Error("unbind left the node or the driver's link")
	}
	do(t, s, drivers+"idxd/unbind=dsa0")
	want(t, s, devs+"dsa0/state", "disabled")
	want(t, s, devs+"wq0.1/state", "disabled")
	want(t, s, devs+"wq0.1/size", "0")
	want(t, s, devs+"wq0.1/group_id", "-1")
	want(t, s, devs+"engine0.0/group_id", "-1")
	want(t, s, devs+"group0.0/work_queues", "")
	if names, _ := s.ReadDir("dev/dsa"); len(names) != 0 {
		t.Errorf("dev/dsa after idxd/unbind: %v", names)
	}
}

// TestKernelWQAndOldKernel binds a kernel WQ to dmaengine and a user WQ on the old kernel.
func TestKernelWQAndOldKernel(t *testing.T) {
	s := boot(t, simidxd.SPR)
	configure(t, s)
	do(t, s, devs+"wq0.0/driver_name=dmaengine", drivers+"idxd/bind=dsa0", drivers+"dmaengine/bind=wq0.0")
	want(t, s, devs+"wq0.0/type", "kernel")
	want(t, s, devs+"wq0.0/state", "enabled")
	if exists(s, "dev/dsa/wq0.0") {
		t.Error("a kernel WQ got a /dev/dsa node")
	}

	o := boot(t, simidxd.OldKernel)
	configure(t, o)
	do(t, o, drivers+"dsa/bind=dsa0", drivers+"dsa/bind=wq0.0")
	want(t, o, devs+"wq0.0/state", "enabled")
	if !exists(o, "dev/dsa/wq0.0") {
		t.Error("old kernel: no /dev/dsa/wq0.0")
	}
	do(t, o, drivers+"dsa/unbind=wq0.0", drivers+"dsa/unbind=dsa0")
	want(t, o, devs+"dsa0/state", "disabled")
}

// TestClients checks the simulator's refusal to disable what processes hold open.
func TestClients(t *testing.T) {
	s := boot(t, simidxd.Busy)
	wantErrno(t, "user/unbind with clients", s.WriteFile(drivers+"user/unbind", "wq0.0"), syscall.EBUSY)
	wantErrno(t, "idxd/unbind with clients", s.WriteFile(drivers+"idxd/unbind", "dsa0"), syscall.EBUSY)
	wantErrno(t, "PCI unbind with clients", s.WriteFile("sys/bus/pci/drivers/idxd/unbind", bdf), syscall.EBUSY)
	want(t, s, devs+"wq0.0/state", "enabled")
	if err := s.SetClients("wq0.0", 0); err != nil {
		t.Fatal(err)
	}
	want(t, s, devs+"dsa0/clients", "0")
	do(t, s, drivers+"idxd/unbind=dsa0")
	want(t, s, devs+"wq0.1/state", "disabled")
	if err := s.SetClients("wq0.0", 1); err == nil {
		t.Error("SetClients on a disabled WQ")
	}
	if err := s.SetClients("wq0.0", -1); err == nil {
		t.Error("SetClients with a negative count")
	}
	if err := s.SetClients("dsa7", 1); err == nil {
		t.Error("SetClients on a missing device")
	}
	b := boot(t, simidxd.Busy)
	if err := b.SetClients("dsa0", 5); err != nil {
		t.Fatal(err)
	}
	want(t, b, devs+"dsa0/clients", "5")
	want(t, b, devs+"wq0.0/clients", "5")
}

// TestPCI moves the device to vfio-pci and back.
func TestPCI(t *testing.T) {
	s := boot(t, simidxd.SPR)
	configure(t, s)
	pci := "sys/bus/pci/drivers/"
	wantErrno(t, "vfio-pci bind while idxd holds it", s.WriteFile(pci+"vfio-pci/bind", bdf), syscall.ENODEV)
	do(t, s, pci+"idxd/unbind="+bdf)
	for _, p := range []string{pciDev + "/driver", devs + "dsa0", devs + "wq0.0", devs + "engine0.0", devs + "group0.0", pciDev + "/dsa0", pci + "idxd/" + bdf} {
		if exists(s, p) {
			t.Errorf("%s still exists after the PCI unbind", p)
		}
	}
	wantErrno(t, "vfio-pci bind without override or ID", s.WriteFile(pci+"vfio-pci/bind", bdf), syscall.ENODEV)
	wantErrno(t, "unbind of an unbound device", s.WriteFile(pci+"idxd/unbind", bdf), syscall.ENODEV)
	wantErrno(t, "bind of an unknown device", s.WriteFile(pci+"idxd/bind", "0000:00:00.0"), syscall.ENODEV)
	do(t, s, pciDev+"/driver_override=vfio-pci\n")
	want(t, s, pciDev+"/driver_override", "vfio-pci")
	wantErrno(t, "idxd bind against the override", s.WriteFile(pci+"idxd/bind", bdf), syscall.ENODEV)
	do(t, s, pci+"vfio-pci/bind="+bdf)
	if l, err := s.ReadLink(pciDev + "/driver"); err != nil || l != "../../../bus/pci/drivers/vfio-pci" {
		t.Errorf("driver link %q %v", l, err)
	}
	if fi, err := s.Stat("dev/vfio/1"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("dev/vfio/1: %v %v", fi, err)
	}
	wantErrno(t, "second bind", s.WriteFile(pci+"vfio-pci/bind", bdf), syscall.EBUSY)
	do(t, s, pci+"vfio-pci/unbind="+bdf, pciDev+"/driver_override=\n")
	want(t, s, pciDev+"/driver_override", "(null)")
	if exists(s, "dev/vfio/1") {
		t.Error("dev/vfio/1 outlived the vfio-pci unbind")
	}
	do(t, s, pci+"idxd/bind="+bdf)
	want(t, s, devs+"dsa0/state", "disabled")
	want(t, s, devs+"wq0.0/size", "0") // the configuration did not survive
	want(t, s, devs+"engine0.0/group_id", "-1")
	wantErrno(t, "override of a page", s.WriteFile(pciDev+"/driver_override", strings.Repeat("x", 4095)), syscall.EINVAL)

	// new_id binds every matching unbound device at once.
	do(t, s, pci+"idxd/unbind="+bdf)
	wantErrno(t, "bad new_id", s.WriteFile(pci+"vfio-pci/new_id", "zz"), syscall.EINVAL)
	do(t, s, pci+"vfio-pci/new_id=8086 0b25")
	if l, _ := s.ReadLink(pciDev + "/driver"); !strings.HasSuffix(l, "vfio-pci") {
		t.Errorf("new_id did not bind: driver %q", l)
	}
	wantErrno(t, "new_id twice", s.WriteFile(pci+"vfio-pci/new_id", "8086 0b25"), syscall.EEXIST)
	if _, err := s.ReadFile(pci + "vfio-pci/bind"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("reading a write-only attribute: %v", err)
	}
}

// TestSharedState runs two simulators on one directory: one sees the other's writes, and
// concurrent writers through both never overrun the WQ size budget.
func TestSharedState(t *testing.T) {
	a := boot(t, simidxd.SPR)
	b, err := simidxd.Open(a.Dir())
	if err != nil {
		t.Fatal(err)
	}
	configure(t, a)
	do(t, b, devs+"wq0.0/driver_name=user", drivers+"idxd/bind=dsa0")
	want(t, a, devs+"dsa0/state", "enabled")
	do(t, a, drivers+"user/bind=wq0.0")
	want(t, b, devs+"wq0.0/state", "enabled")
	do(t, b, drivers+"idxd/unbind=dsa0")

	// Eight writers ask for 20 entries each of a 128-entry budget: exactly six may succeed.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sim := a
			if i%2 == 1 {
				sim = b
			}
			errs[i] = sim.WriteFile(devs+"wq0."+strconv.Itoa(i)+"/size", "20")
		}()
	}
	wg.Wait()
	ok, total := 0, 0
	for i, err := range errs {
		if err == nil {
			ok++
		} else {
			wantErrno(t, "concurrent size", err, syscall.EINVAL)
		}
		total += mustAtoi(t, read(t, a, devs+"wq0."+strconv.Itoa(i)+"/size"))
	}
	if ok != 6 || total != 120 {
		t.Errorf("%d writes succeeded for a total of %d, want 6 and 120", ok, total)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPathSafety checks that no path leaves the root.
func TestPathSafety(t *testing.T) {
	s := boot(t, simidxd.SPR)
	for _, p := range []string{"/etc/passwd", "../x", "sys/../../x"} {
		if _, err := s.ReadFile(p); err == nil {
			t.Errorf("ReadFile(%q) succeeded", p)
		}
		if err := s.WriteFile(p, "1"); err == nil {
			t.Errorf("WriteFile(%q) succeeded", p)
		}
		if err := s.Chmod(p, 0o600); err == nil {
			t.Errorf("Chmod(%q) succeeded", p)
		}
		if _, err := s.Stat(p); err == nil {
			t.Errorf("Stat(%q) succeeded", p)
		}
	}
	if err := s.Chmod("dev/../sys/bus/dsa/drivers/idxd/bind", 0o666); err == nil {
		t.Error("Chmod through dev/.. succeeded")
	}
}
