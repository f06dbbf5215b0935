package reconcile_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// TestConflictIsolatedToItsObject: a configured port whose name a foreign port holds (on a
// foreign bridge) reports ErrNotOwned as its own status, while the pass still creates the other
// objects and repairs drift of an unrelated owned port; the foreign rows stay untouched.
func TestConflictIsolatedToItsObject(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	other := foreignBr9(t, e, "p9")
	r, _ := start(t, e, c, desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{tapPort("p1", nil), tapPort("p2", nil), tapPort("p9", nil)}},
		model.Bridge{Name: "br1", DatapathType: "netdev", Ports: []model.Port{tapPort("q1", nil)}}))
	// Everything but p9 is created by the same passes that refuse p9.
	want := `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]; p2 owner=ovsplane [p2map[dpdk-devargs:net_tap_p2]]
br1 owner=ovsplane: br1 owner=ovsplane [br1]; q1 owner=ovsplane [q1map[dpdk-devargs:net_tap_q1]]
br9 owner=someone-else: br9 owner=someone-else [br9]; p9 owner=someone-else [p9]`
	waitDump(t, e, want)
	for _, k := range []string{"interface/p1", "interface/p2", "interface/q1", "bridge/br0", "bridge/br1"} {
		waitState(t, r, k, model.StateReady)
	}
	for _, k := range []string{"port/p9", "interface/p9"} {
		s := waitState(t, r, k, model.StateError)
		for _, part := range []string{`port "p9" refused`, ovsdb.ErrNotOwned.Error(), "someone-else", "pick another name"} {
			if !strings.Contains(s.Error, part) {
				t.Errorf("%s error %q does not contain %q", k, s.Error, part)
			}
		}
	}
	if err := r.LastError(); err == nil || !strings.Contains(err.Error(), `port "p9"`) {
		t.Errorf("LastError = %v, want the refusal of port p9", err)
	}

	// Drift of an unrelated owned port is repaired while the conflict stays.
	vandal := e.client(t, "", false)
	if _, err := vandal.NewTxn(99).DeletePort("br0", "p2").Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDump(t, e, want)
	waitState(t, r, "interface/p2", model.StateReady)
	if s, _ := statusOf(r, "port/p9"); s.State != model.StateError {
		t.Errorf("port/p9 %+v, want still in error", s)
	}

	// Once the foreign port is gone, p9 is created.
	if _, err := other.NewTxn(2).DeletePort("br9", "p9").Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, "interface/p9", model.StateReady)
	waitState(t, r, "port/p9", model.StateReady)
}

// TestConflictingBridgeIsolated: a configured bridge whose name a foreign bridge holds is
// refused with its ports, each reporting why, while another configured bridge is created.
func TestConflictingBridgeIsolated(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	foreignBr9(t, e)
	r, _ := start(t, e, c, desired(
		model.Bridge{Name: "br9", DatapathType: "netdev", Ports: []model.Port{tapPort("p9", nil), tapPort("p10", nil)}},
		model.Bridge{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p1", nil)}}))
	waitState(t, r, "interface/p1", model.StateReady)
	waitState(t, r, "bridge/br0", model.StateReady)
	if s := waitState(t, r, "bridge/br9", model.StateError); !strings.Contains(s.Error, `bridge "br9" refused`) ||
		!strings.Contains(s.Error, "owned by someone-else") {
		t.Errorf("bridge/br9 error %q, want its refusal naming the owner", s.Error)
	}
	for _, k := range []string{"port/p9", "port/p10", "interface/p10"} {
		if s := waitState(t, r, k, model.StateError); !strings.Contains(s.Error, `port "`) || !strings.Contains(s.Error, `"br9"`) {
			t.Errorf("%s error %q, want its refusal naming bridge br9", k, s.Error)
		}
	}
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]
br9 owner=someone-else: br9 owner=someone-else [br9]`)
}
