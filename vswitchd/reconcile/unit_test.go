package reconcile_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// unitPort is tapPort tagged as a row of unit u.
func unitPort(name, u string) model.Port {
	p := tapPort(name, nil)
	p.ExternalIDs = map[string]string{reconcile.UnitKey: u}
	return p
}

// TestUnitWrittenOrLeftOutWhole: rows sharing a UnitKey value — ports on two bridges and a
// bridge — are one unit. When OVSDB refuses one of them (a foreign port holds its name), the
// whole unit is left out of the pass, every row reporting why and the unit's port (named like
// the unit) in error, while the rest is written; once the conflict is gone the unit is written
// whole and its port is ready when all its rows are; dropped from the desired state, it is
// pruned whole.
func TestUnitWrittenOrLeftOutWhole(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	other := foreignBr9(t, e, "u1-x")
	ub := model.Bridge{Name: "u1-br", DatapathType: "netdev", ExternalIDs: map[string]string{reconcile.UnitKey: "u1"},
		Ports: []model.Port{unitPort("u1-t", "u1")}}
	br0 := model.Bridge{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p1", nil), unitPort("u1", "u1"), unitPort("u1-x", "u1")}}
	r, _ := start(t, e, c, desired(br0, ub))
	waitState(t, r, "interface/p1", model.StateReady)
	s := waitState(t, r, "port/u1", model.StateError)
	if !strings.Contains(s.Error, ovsdb.ErrNotOwned.Error()) || !strings.Contains(s.Error, "u1-x") {
		t.Errorf("port/u1: %q, want the refusal of u1-x", s.Error)
	}
	for _, k := range []string{"port/u1-t", "bridge/u1-br"} {
		waitState(t, r, k, model.StateError)
	}
	dumped, err := dump(e.Ctx, e.Raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"u1 ", "u1-t", "u1-br"} {
		if strings.Contains(dumped, n) {
			t.Errorf("a row of the refused unit was written (%q):\n%s", n, dumped)
		}
	}

	// The conflict goes: the unit is written whole, its port ready with all its rows.
	if _, err := other.NewTxn(2).DeletePort("br9", "u1-x").Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r, "port/u1", model.StateReady)
	for _, k := range []string{"interface/u1-x", "interface/u1-t", "bridge/u1-br"} {
		waitState(t, r, k, model.StateReady)
	}

	// Dropped: pruned whole, the bridge with it.
	r.Update(desired(model.Bridge{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p1", nil)}}))
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]
br9 owner=someone-else: br9 owner=someone-else [br9]`)
}
