package nlkernel_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/nlkernel"
)

// TestRealKernel runs the production implementation against this machine's kernel, read-only:
// where the vdpa family is missing (CI has no vdpa modules) it must answer ENOENT and Detect
// must say VDPA_NO_NETLINK with the modules to load; where it exists, the dumps must work.
func TestRealKernel(t *testing.T) {
	h, err := netlink.NewHandle(syscall.NETLINK_GENERIC)
	if err != nil {
		t.Skipf("no generic netlink socket here: %v", err)
	}
	defer h.Close()
	ctx := context.Background()
	k := nlkernel.New(h)
	_, ferr := k.Family(ctx)
	host := nlkernel.Host("/", h, vdpa.Config{})
	r, err := host.Detect(ctx, vdpa.OVSState{})
	if err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		if !errors.Is(ferr, syscall.ENOENT) {
			t.Fatalf("vdpa family: %v, want ENOENT when missing", ferr)
		}
		if r.Kernel.VDPANetlink.OK || len(r.Kernel.VDPANetlink.Why) == 0 || r.Kernel.VDPANetlink.Why[0].Code != vdpa.CodeNoNetlink {
			t.Errorf("report %+v", r.Kernel.VDPANetlink)
		}
		if _, err := k.MgmtDevs(ctx); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("MgmtDevs without the family: %v", err)
		}
		t.Logf("no vdpa family here: %s", r.Kernel.VDPANetlink.Why[0].Message)
		return
	}
	if _, err := k.MgmtDevs(ctx); err != nil {
		t.Errorf("MgmtDevs: %v", err)
	}
	if _, err := k.Devs(ctx); err != nil {
		t.Errorf("Devs: %v", err)
	}
	t.Logf("vdpa family present: %+v", r.Kernel.Family)
}

// TestCancelled: a cancelled context stops every call before it reaches the kernel.
func TestCancelled(t *testing.T) {
	k := nlkernel.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.Family(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Family: %v", err)
	}
	if err := k.NewDev(ctx, "x", vdpa.MgmtDevID{}, vdpa.DevParams{}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewDev: %v", err)
	}
	if err := k.SetEswitchMode(ctx, "0000:00:00.0", "switchdev"); !errors.Is(err, context.Canceled) {
		t.Errorf("SetEswitchMode: %v", err)
	}
}
