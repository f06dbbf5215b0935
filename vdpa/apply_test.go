package vdpa_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

// TestApplyTwiceTeardownRestores: for every mode and starting point, Apply provisions and reports
// the endpoint; planning again finds nothing to do and applying again changes nothing (not one
// kernel mutation, the same state); Teardown restores the fixture exactly.
func TestApplyTwiceTeardownRestores(t *testing.T) {
	cases := append([]planCase{}, planCases...)
	cases = append(cases, planCase{"kernel-udev-slow", "cx6dx-switchdev", vdpa.Request{Name: "slow", PF: "0000:65:00.0", VF: 1}, stockOVS})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := loadFixture(t, c.fixture)
			if c.name == "kernel-udev-slow" {
				f.Knobs["udev-delay"] = "60ms"
			}
			k, h := boot(t, f)
			before := dump(t, k)
			st := applyOK(t, h, c.req, c.ovs, nil)
			checkEndpoint(t, st)

			muts := k.Mutations()
			p2, err := h.Plan(ctx, c.req, c.ovs, st)
			if err != nil {
				t.Fatal(err)
			}
			if len(p2.Steps) != 0 {
				t.Errorf("second plan has steps:\n%s", p2.Text())
			}
			st2, err := h.Apply(ctx, p2, st)
			if err != nil {
				t.Fatal(err)
			}
			if k.Mutations() != muts {
				t.Errorf("second apply made %d kernel changes", k.Mutations()-muts)
			}
			if a, b := js(t, st), js(t, st2); a != b {
				t.Errorf("second apply changed the state:\n%s", diffLines(a, b))
			}

			rep, err := h.Teardown(ctx, st2, vdpa.TeardownOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Kept) != 0 {
				t.Errorf("teardown kept %+v", rep.Kept)
			}
			if len(rep.Undone) != len(st.Done) {
				t.Errorf("undid %d of %d records", len(rep.Undone), len(st.Done))
			}
			if after := dump(t, k); after != before {
				t.Errorf("teardown did not restore the fixture:\n%s", diffLines(before, after))
			}
		})
	}
}

func applyOK(t *testing.T, h *vdpa.Host, req vdpa.Request, ovs vdpa.OVSState, prev *vdpa.State) *vdpa.State {
	t.Helper()
	p, err := h.Plan(ctx, req, ovs, prev)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Apply(ctx, p, prev)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func checkEndpoint(t *testing.T, st *vdpa.State) {
	t.Helper()
	e := st.Endpoint
	switch {
	case st.Request.Mode == vdpa.ModeKernel && st.Request.BusDriver == vdpa.BusVhostVDPA:
		if e.Kind != "vhost-vdpa" || !strings.HasPrefix(e.Path, "/dev/vhost-vdpa-") {
			t.Errorf("endpoint %+v, want /dev/vhost-vdpa-N", e)
		}
	case st.Request.Mode == vdpa.ModeKernel:
		if e.Kind != "netdev" || e.Netdev == "" {
			t.Errorf("endpoint %+v, want a virtio netdev", e)
		}
	default:
		if e.Kind != "vhost-user" || !strings.HasPrefix(e.Path, "/run/ovsplane/vdpa/") {
			t.Errorf("endpoint %+v, want a vhost-user socket", e)
		}
	}
	if st.Representor == "" {
		t.Error("no representor in the state")
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStateSurvivesJSON: the plugin persists State as JSON; teardown from the decoded copy
// works the same.
func TestStateSurvivesJSON(t *testing.T) {
	k, h := bootNamed(t, "cx6dx-legacy")
	before := dump(t, k)
	st := applyOK(t, h, planCases[0].req, stockOVS, nil)
	var back vdpa.State
	if err := json.Unmarshal([]byte(js(t, st)), &back); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Teardown(ctx, &back, vdpa.TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("teardown from JSON did not restore:\n%s", diffLines(before, after))
	}
}

// TestTeardownSharedPF: two ports on one PF; tearing down the one that enabled the VFs and
// switchdev keeps those PF-wide changes while the other port's vdpa device exists, and says why.
func TestTeardownSharedPF(t *testing.T) {
	k, h := bootNamed(t, "cx6dx-legacy")
	st1 := applyOK(t, h, vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 0, NumVFs: 4}, stockOVS, nil)
	st2 := applyOK(t, h, vdpa.Request{Name: "vm2", PF: "0000:65:00.0", VF: 1}, stockOVS, nil)
	for _, s := range st2.Done {
		if s.Scope == vdpa.ScopePF {
			t.Errorf("second port recorded a PF step %+v", s)
		}
	}
	rep, err := h.Teardown(ctx, st1, vdpa.TeardownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kept) == 0 || !strings.Contains(rep.Kept[0].Reason, "vdpa device vm2") {
		t.Fatalf("PF steps not kept for vm2: %+v", rep.Kept)
	}
	if _, err := h.Teardown(ctx, st2, vdpa.TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
	d := dump(t, k)
	if !strings.Contains(d, "eswitch pci/0000:65:00.0 switchdev") || strings.Contains(d, "vdpadev") {
		t.Errorf("after both teardowns want switchdev kept and no vdpa device:\n%s", d)
	}
	// KeepPF keeps them even when nothing else uses the PF.
	k2, h2 := bootNamed(t, "cx6dx-legacy")
	st := applyOK(t, h2, vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 0}, stockOVS, nil)
	rep, err = h2.Teardown(ctx, st, vdpa.TeardownOptions{KeepPF: true})
	if err != nil || len(rep.Kept) == 0 {
		t.Fatalf("KeepPF: %v %+v", err, rep)
	}
	if !strings.Contains(dump(t, k2), "sriov_numvfs 1") {
		t.Error("KeepPF undid the VF count")
	}
}

// TestTeardownLeavesOthersChanges: a record whose object someone else changed since is kept,
// not forced back.
func TestTeardownLeavesOthersChanges(t *testing.T) {
	_, h := bootNamed(t, "cx6dx-switchdev")
	st := applyOK(t, h, vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 1}, stockOVS, nil)
	// The operator deletes and recreates the device by hand on another VF.
	if err := h.DelDevice(ctx, "vm1"); err != nil {
		t.Fatal(err)
	}
	if err := h.AddDevice(ctx, "vm1", vdpa.MgmtDevID{Bus: "pci", Name: "0000:65:00.2"}, vdpa.DevParams{}); err != nil {
		t.Fatal(err)
	}
	rep, err := h.Teardown(ctx, st, vdpa.TeardownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Undone) != 0 || len(rep.Kept) != 1 {
		t.Errorf("want the add record kept, got %+v", rep)
	}
	snap, _ := h.Snapshot(ctx, "")
	if snap.Device("vm1") == nil {
		t.Error("teardown deleted a device it did not create")
	}
}

// TestAdopt: an existing device of the same name, parent and configuration is used without
// ownership by default and owned (deleted at teardown) with Adopt.
func TestAdopt(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		k, h := bootNamed(t, "cx6dx-inuse")
		req := vdpa.Request{Name: "vdpa0", PF: "0000:65:00.0", VF: 0, MAC: "02:00:00:00:00:aa", MaxVQP: 4, Adopt: adopt}
		st := applyOK(t, h, req, stockOVS, nil)
		if st.Endpoint.Path != "/dev/vhost-vdpa-0" {
			t.Errorf("adopt=%v: endpoint %+v", adopt, st.Endpoint)
		}
		if _, err := h.Teardown(ctx, st, vdpa.TeardownOptions{}); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(dump(t, k), "vdpadev vdpa0")
		if has == adopt {
			t.Errorf("adopt=%v: device still there = %v", adopt, has)
		}
	}
}

// TestApplyRefusesOtherPortsState: a state for another port is not merged.
func TestApplyRefusesOtherPortsState(t *testing.T) {
	_, h := bootNamed(t, "cx6dx-switchdev")
	st := applyOK(t, h, vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 1}, stockOVS, nil)
	p, err := h.Plan(ctx, vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 0, Mode: vdpa.ModeDPDKPMD}, stockOVS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Apply(ctx, p, st); vdpa.CodeOf(err) != vdpa.CodeInvalidRequest {
		t.Errorf("got %v", err)
	}
}

// TestWaitCharDevCancellable: the wait for /dev/vhost-vdpa-N ends with the context, long before
// its own bound.
func TestWaitCharDevCancellable(t *testing.T) {
	f := loadFixture(t, "cx6dx-switchdev")
	f.Knobs["udev"] = "off"
	k, err := simkernel.New(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	h := k.Host(vdpa.Config{PollInterval: 5 * time.Millisecond, CharDevTimeout: time.Minute})
	if err := h.AddDevice(ctx, "vm1", vdpa.MgmtDevID{Bus: "pci", Name: "0000:65:00.3"}, vdpa.DevParams{}); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := h.WaitCharDev(c, "vm1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait took %s", d)
	}
}
