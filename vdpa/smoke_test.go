package vdpa_test

import (
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

func TestSmoke(t *testing.T) {
	k, h := bootNamed(t, "cx6dx-legacy")
	before := dump(t, k)
	req := vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 1, MAC: "02:11:22:33:44:55", MTU: 9000, MaxVQP: 4}
	ovs := vdpa.OVSState{Running: true, DPDKInitialized: true}
	p, err := h.Plan(ctx, req, ovs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p.Text())
	st, err := h.Apply(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st.Endpoint)
	p2, err := h.Plan(ctx, req, ovs, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p2.Text())
	rep, err := h.Teardown(ctx, st, vdpa.TeardownOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep.Kept)
	if after := dump(t, k); after != before {
		t.Error(diffLines(before, after))
	}
}
