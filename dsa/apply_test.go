package dsa_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// simHost lays out a simulated host of variant v and returns the simulator, a recording wrapper
// over it and a Host using the wrapper.
func simHost(t *testing.T, v simidxd.Variant) (*simidxd.Sim, *recFS, *dsa.Host) {
	t.Helper()
	dir := t.TempDir()
	if err := simidxd.Write(dir, v); err != nil {
		t.Fatal(err)
	}
	sim, err := simidxd.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := wrap(sim)
	return sim, f, newHost(t, f)
}

func listing(t *testing.T, sim *simidxd.Sim) string {
	t.Helper()
	l, err := sim.Listing()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func request(t *testing.T, filePrefix string, r dsa.Request) dsa.Request {
	t.Helper()
	if err := r.Normalize(filePrefix); err != nil {
		t.Fatal(err)
	}
	return r
}

// ovsOwner is an account other than the test's, so that a chown is visible.
func ovsOwner() *dsa.Owner { return &dsa.Owner{UID: 4242, GID: 4343, Name: "openvswitch"} }

func twoWQs() dsa.Request {
	return dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2}}}, OVSUser: ovsOwner()}
}

func readAttr(t *testing.T, f dsa.FS, p string) string {
	t.Helper()
	v, err := f.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(v)
}

// checkProvisioned asserts what DPDK needs of dsa0's first n work queues.
func checkProvisioned(t *testing.T, sim *simidxd.Sim, n, priority int, prefix string, owner *dsa.Owner) {
	t.Helper()
	if st := readAttr(t, sim, "sys/bus/dsa/devices/dsa0/state"); st != "enabled" {
		t.Errorf("dsa0 state %s", st)
	}
	for q := range n {
		wq := "wq0." + string(rune('0'+q))
		base := "sys/bus/dsa/devices/" + wq + "/"
		for attr, want := range map[string]string{"state": "enabled", "type": "user", "mode": "dedicated",
			"name": prefix + "_" + wq, "group_id": "0", "priority": strconv.Itoa(priority)} {
			if got := readAttr(t, sim, base+attr); got != want {
				t.Errorf("%s/%s = %q, want %q", wq, attr, got, want)
			}
		}
		fi, err := sim.Stat("dev/dsa/" + wq)
		if err != nil {
			t.Errorf("%s: no device node: %v", wq, err)
			continue
		}
		if owner != nil {
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != owner.UID || int(st.Gid) != owner.GID || fi.Mode().Perm() != 0o660 {
				t.Errorf("%s: owner %d:%d mode %v", wq, st.Uid, st.Gid, fi.Mode().Perm())
			}
		}
	}
}

func TestApplyIdempotent(t *testing.T) {
	for _, v := range []simidxd.Variant{simidxd.SPR, simidxd.OldKernel} {
		t.Run(string(v), func(t *testing.T) {
			sim, f, h := simHost(t, v)
			req := request(t, "", twoWQs())
			res, err := h.Apply(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || len(res.WQs) != 2 || res.WQs[1] != (dsa.WQRef{Name: "wq0.1", Device: "dsa0", NUMA: 0}) {
				t.Errorf("first apply: changed %t wqs %+v", res.Changed, res.WQs)
			}
			checkProvisioned(t, sim, 2, 10, "dpdk", req.OVSUser)
			if got := readAttr(t, sim, "sys/bus/dsa/devices/wq0.0/size"); got != "64" {
				t.Errorf("size %s, want an equal share of 128", got)
			}
			if got := readAttr(t, sim, "sys/bus/dsa/devices/wq0.2/state"); got != "disabled" {
				t.Errorf("wq0.2 state %s", got)
			}
			before, n := listing(t, sim), f.count()
			res, err = h.Apply(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Changed || f.count() != n || res.Plan.Devices[0].Action != dsa.ActionNone || len(res.WQs) != 2 {
				t.Errorf("second apply: changed %t, %d new writes, action %s", res.Changed, f.count()-n, res.Plan.Devices[0].Action)
			}
			if after := listing(t, sim); after != before {
				t.Errorf("second apply changed the tree")
			}
		})
	}
}

func TestBusyRefusalTouchesNothing(t *testing.T) {
	sim, f, h := simHost(t, simidxd.Busy)
	before := listing(t, sim)
	for _, allow := range []bool{false, true} {
		req := twoWQs()
		req.AllowReconfigure = allow
		_, err := h.Apply(t.Context(), request(t, "", req))
		if e := wantCode(t, err, dsa.CodeBusy); !strings.Contains(e.Msg, "2 clients") {
			t.Errorf("message: %v", e)
		}
		if _, err := h.Plan(t.Context(), request(t, "", req)); dsa.CodeOf(err) != dsa.CodeBusy {
			t.Errorf("plan: %v", err)
		}
	}
	wantCode(t, h.Reset(t.Context(), "dsa0"), dsa.CodeBusy)
	vfio := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0", Driver: "vfio-pci"}}, AllowReconfigure: true}
	_, err := h.Apply(t.Context(), request(t, "", vfio))
	wantCode(t, err, dsa.CodeBusy)
	if f.count() != 0 || listing(t, sim) != before {
		t.Errorf("a refused request changed the machine: %v", f.changes)
	}
}

func TestApplyResetApplyConverges(t *testing.T) {
	for _, v := range []simidxd.Variant{simidxd.SPR, simidxd.OldKernel} {
		t.Run(string(v), func(t *testing.T) { applyResetApply(t, v) })
	}
}

func applyResetApply(t *testing.T, v simidxd.Variant) {
	sim, f, h := simHost(t, v)
	req := request(t, "", twoWQs())
	if _, err := h.Apply(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	provisioned := listing(t, sim)
	if err := h.Reset(t.Context(), "dsa0"); err != nil {
		t.Fatal(err)
	}
	if st := readAttr(t, sim, "sys/bus/dsa/devices/dsa0/state"); st != "disabled" {
		t.Errorf("after reset: %s", st)
	}
	if _, err := sim.Stat("dev/dsa/wq0.0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after reset the node is still there: %v", err)
	}
	n := f.count()
	if err := h.Reset(t.Context(), "dsa0"); err != nil || f.count() != n {
		t.Errorf("resetting a disabled device: %v, %d writes", err, f.count()-n)
	}
	if _, err := h.Apply(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := listing(t, sim); got != provisioned {
		t.Errorf("apply, reset, apply differs from apply:\n%s", diffLines(provisioned, got))
	}
}

// A crash after any number of changes, followed by a fresh Apply, ends in the same tree as an
// uninterrupted Apply: from a disabled device, when reconfiguring an enabled one, and when
// handing a device to vfio-pci.
func TestCrashMidApplyConverges(t *testing.T) {
	one := request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 1}}}, OVSUser: ovsOwner()})
	cases := []struct {
		name  string
		setup *dsa.Request // applied without crashing first
		req   dsa.Request
	}{
		{"configure", nil, request(t, "", twoWQs())},
		{"reconfigure", &one, request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2, Priority: 7}}},
			OVSUser: ovsOwner(), AllowReconfigure: true})},
		{"vfio", nil, request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0", Driver: "vfio-pci", WQs: dsa.WQRequest{Count: 4}}}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The starting tree is made once and copied for every crash point.
			template, _, h := simHost(t, simidxd.SPR)
			if c.setup != nil {
				if _, err := h.Apply(t.Context(), *c.setup); err != nil {
					t.Fatal(err)
				}
			}
			start := func(t *testing.T) (*simidxd.Sim, *recFS, *dsa.Host) {
				dir := t.TempDir()
				copyTree(t, template.Dir(), dir)
				sim, err := simidxd.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				f := wrap(sim)
				return sim, f, newHost(t, f)
			}
			sim, f, h := start(t)
			if _, err := h.Apply(t.Context(), c.req); err != nil {
				t.Fatal(err)
			}
			if c.req.Devices[0].Driver == dsa.DriverVFIO {
				if drv, _ := sim.ReadLink("sys/bus/pci/devices/0000:6a:01.0/driver"); !strings.HasSuffix(drv, "/vfio-pci") {
					t.Fatalf("driver %q", drv)
				}
			} else {
				checkProvisioned(t, sim, 2, c.req.Devices[0].WQs.Priority, "dpdk", c.req.OVSUser)
			}
			want, total := listing(t, sim), f.count()
			if total < 3 {
				t.Fatalf("only %d changes: %v", total, f.changes)
			}
			for k := range total {
				t.Run("after"+strconv.Itoa(k), func(t *testing.T) {
					t.Parallel() // each crash point has its own tree
					sim, f, h := start(t)
					f.after = k
					if _, err := h.Apply(t.Context(), c.req); !errors.Is(err, errCrash) {
						t.Fatalf("crash after %d changes: %v", k, err)
					}
					f.after = -1
					if _, err := h.Apply(t.Context(), c.req); err != nil {
						t.Fatalf("re-run after a crash after %d changes (%v): %v", k, f.changes, err)
					}
					if got := listing(t, sim); got != want {
						t.Fatalf("re-run after a crash after %d changes differs:\n%s", k, diffLines(want, got))
					}
				})
			}
		})
	}
}

// copyTree copies a simulated host: directories, files with their modes and owners, links.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case fi.IsDir():
			if err := os.MkdirAll(out, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(out, b, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(out, fi.Mode().Perm()); err != nil {
				return err
			}
		}
		st := fi.Sys().(*syscall.Stat_t)
		return os.Lchown(out, int(st.Uid), int(st.Gid))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReconfigure(t *testing.T) {
	sim, f, h := simHost(t, simidxd.SPR)
	if _, err := h.Apply(t.Context(), request(t, "", twoWQs())); err != nil {
		t.Fatal(err)
	}
	four := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 4}}}, OVSUser: ovsOwner()}
	n, before := f.count(), listing(t, sim)
	_, err := h.Apply(t.Context(), request(t, "", four))
	if e := wantCode(t, err, dsa.CodeBusy); !strings.Contains(e.Msg, "allowReconfigure") {
		t.Errorf("message: %v", e)
	}
	if f.count() != n || listing(t, sim) != before {
		t.Error("refused reconfiguration changed the machine")
	}
	four.AllowReconfigure = true
	p, err := h.Plan(t.Context(), request(t, "", four))
	if err != nil {
		t.Fatal(err)
	}
	if dp := p.Devices[0]; dp.Action != dsa.ActionConfigure || dp.Steps[0].Path != "sys/bus/dsa/drivers/user/unbind" {
		t.Errorf("plan: %+v", dp)
	}
	if _, err := h.Apply(t.Context(), request(t, "", four)); err != nil {
		t.Fatal(err)
	}
	checkProvisioned(t, sim, 4, 10, "dpdk", four.OVSUser)
	// The same as provisioning a fresh host.
	fresh, _, fh := simHost(t, simidxd.SPR)
	if _, err := fh.Apply(t.Context(), request(t, "", four)); err != nil {
		t.Fatal(err)
	}
	if a, b := listing(t, sim), listing(t, fresh); a != b {
		t.Errorf("reconfigured host differs from a fresh one:\n%s", diffLines(b, a))
	}
}

func TestAdopt(t *testing.T) {
	sim, f, h := simHost(t, simidxd.SPR)
	mine := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2, NamePrefix: "dpdk_ovs"}}}}
	if _, err := h.Apply(t.Context(), request(t, "", mine)); err != nil {
		t.Fatal(err)
	}
	n, before := f.count(), listing(t, sim)
	res, err := h.Apply(t.Context(), request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}}}))
	if err != nil {
		t.Fatal(err)
	}
	dp := res.Plan.Devices[0]
	if dp.Action != dsa.ActionAdopt || res.Changed || f.count() != n || listing(t, sim) != before {
		t.Errorf("adopt: %+v changed %t", dp, res.Changed)
	}
	if len(res.WQs) != 2 || res.WQs[0].Name != "wq0.0" || res.WQs[1].Name != "wq0.1" || !strings.Contains(dp.Reason, "dpdk_ovs_wq0.1") {
		t.Errorf("adopted wqs %+v, reason %q", res.WQs, dp.Reason)
	}
	// Names DPDK ignores are not adopted.
	_, err = h.Plan(t.Context(), request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 3}}}}))
	wantCode(t, err, dsa.CodeBusy)
}

func TestVFIO(t *testing.T) {
	sim, f, h := simHost(t, simidxd.SPR)
	req := request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0", Driver: "vfio-pci", WQs: dsa.WQRequest{Count: 4}}}})
	p, err := h.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range p.Devices[0].Steps {
		paths = append(paths, s.Path+"="+s.Value)
	}
	want := "sys/bus/pci/drivers/idxd/unbind=0000:6a:01.0 sys/bus/pci/devices/0000:6a:01.0/driver_override=vfio-pci sys/bus/pci/drivers/vfio-pci/bind=0000:6a:01.0"
	if p.Devices[0].Action != dsa.ActionVFIO || strings.Join(paths, " ") != want {
		t.Errorf("plan %s: %s", p.Devices[0].Action, strings.Join(paths, " "))
	}
	if len(p.DPDKExtra) != 1 || p.DPDKExtra[0] != "-a 0000:6a:01.0,max_queues=4" || len(p.WQs) != 4 || p.WQs[3].Name != "0000:6a:01.0-q3" {
		t.Errorf("dpdk-extra %v wqs %+v", p.DPDKExtra, p.WQs)
	}
	if _, err := h.Apply(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if drv, _ := sim.ReadLink("sys/bus/pci/devices/0000:6a:01.0/driver"); !strings.HasSuffix(drv, "/vfio-pci") {
		t.Errorf("driver %q", drv)
	}
	n := f.count()
	res, err := h.Apply(t.Context(), req)
	if err != nil || res.Changed || f.count() != n || res.Plan.DPDKExtra[0] != "-a 0000:6a:01.0,max_queues=4" {
		t.Errorf("second apply: %+v %v", res, err)
	}
	// Reset hands the function back to idxd, disabled.
	if err := h.Reset(t.Context(), "0000:6a:01.0"); err != nil {
		t.Fatal(err)
	}
	if st := readAttr(t, sim, "sys/bus/dsa/devices/dsa0/state"); st != "disabled" {
		t.Errorf("after reset: %s", st)
	}
	// Provisioned with idxd, the device is only taken with allowReconfigure.
	if _, err := h.Apply(t.Context(), request(t, "", twoWQs())); err != nil {
		t.Fatal(err)
	}
	_, err = h.Apply(t.Context(), req)
	if e := wantCode(t, err, dsa.CodeBusy); !strings.Contains(e.Msg, "allowReconfigure") {
		t.Errorf("message: %v", e)
	}
}

func TestSameDeviceTwice(t *testing.T) {
	_, f, h := simHost(t, simidxd.SPR)
	req := request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}, {Device: "0000:6a:01.0"}}})
	_, err := h.Apply(t.Context(), req)
	if e := wantCode(t, err, dsa.CodeInvalidRequest); !strings.Contains(e.Msg, "twice") || f.count() != 0 {
		t.Errorf("%v, %d changes", e, f.count())
	}
}

func TestVFIODriverAbsent(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, sprFiles())
	h := newHost(t, sysfs.New(dir))
	_, err := h.Plan(t.Context(), request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "0000:6a:01.0", Driver: "vfio-pci"}}}))
	if e := wantCode(t, err, dsa.CodeAbsent); !strings.Contains(e.Msg, "modprobe vfio-pci") {
		t.Errorf("message: %v", e)
	}
}

// diffLines shows the lines only in a and only in b.
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// Nodes whose owner is wrong are the only thing fixed on an otherwise matching device.
func TestPermissionsOnly(t *testing.T) {
	sim, f, h := simHost(t, simidxd.SPR)
	req := twoWQs()
	req.OVSUser = nil
	if _, err := h.Apply(t.Context(), request(t, "", req)); err != nil {
		t.Fatal(err)
	}
	req.OVSUser = ovsOwner()
	n := f.count()
	p, err := h.Plan(t.Context(), request(t, "", req))
	if err != nil {
		t.Fatal(err)
	}
	dp := p.Devices[0]
	if f.count() != n || dp.Action != dsa.ActionConfigure || len(dp.Steps) != 4 {
		t.Fatalf("plan: %+v", dp)
	}
	for _, s := range dp.Steps {
		if s.Op != dsa.OpChown && s.Op != dsa.OpChmod {
			t.Errorf("step %+v is not a permission change", s)
		}
	}
	if _, err := h.Apply(t.Context(), request(t, "", req)); err != nil {
		t.Fatal(err)
	}
	checkProvisioned(t, sim, 2, 10, "dpdk", req.OVSUser)
	if f.count() != n+4 {
		t.Errorf("%d changes, want 4: %v", f.count()-n, f.changes[n:])
	}
}

func TestDiscoverTwoNUMA(t *testing.T) {
	_, f, h := simHost(t, simidxd.TwoNUMA)
	inv, err := h.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 2 {
		t.Fatalf("devices %+v", inv.Devices)
	}
	for i, want := range []struct {
		name, bdf string
		numa      int
	}{{"dsa0", "0000:6a:01.0", 0}, {"dsa2", "0000:e7:01.0", 1}} {
		d := inv.Devices[i]
		if d.Name != want.name || d.BDF != want.bdf || d.NUMA != want.numa || d.PCIID != "8086:0b25" || d.PCIDriver != "idxd" ||
			len(d.WQs) != 8 || len(d.Engines) != 4 || len(d.Groups) != 4 || d.MaxWQSize != 128 {
			t.Errorf("device %d: %+v", i, d)
		}
	}
	// Both devices, one plan: work queues of each on its own node.
	req := request(t, "", dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0"}, {Device: "dsa2"}}})
	res, err := h.Apply(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []dsa.WQRef{{Name: "wq0.0", Device: "dsa0", NUMA: 0}, {Name: "wq2.0", Device: "dsa2", NUMA: 1}}
	if len(res.WQs) != 2 || res.WQs[0] != want[0] || res.WQs[1] != want[1] || len(res.Plan.Warnings) != 0 {
		t.Errorf("wqs %+v warnings %+v", res.WQs, res.Plan.Warnings)
	}
	n := f.count()
	if res, err := h.Apply(t.Context(), req); err != nil || res.Changed || f.count() != n {
		t.Errorf("second apply: %v", err)
	}
}
