package ovsdb_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func intp(v int) *int { return &v }

// netflowOf returns the NetFlow row bridge refers to (nil when none), as the foreign client sees
// it once cond accepts it.
func netflowOf(t *testing.T, e *env, bridge string, cond func(*vswitch.NetFlow) string) *vswitch.NetFlow {
	t.Helper()
	var out *vswitch.NetFlow
	eventually(t, func() string {
		b := &vswitch.Bridge{Name: bridge}
		if err := e.foreign.Get(ctxT(t), b); err != nil {
			return err.Error()
		}
		out = nil
		if b.Netflow != nil {
			out = &vswitch.NetFlow{UUID: *b.Netflow}
			if err := e.foreign.Get(ctxT(t), out); err != nil {
				return fmt.Sprintf("netflow %s: %v", *b.Netflow, err)
			}
		}
		return cond(out)
	})
	return out
}

// rowsIn counts the rows of table m's table the foreign client sees.
func rowsIn[T any](t *testing.T, e *env) int {
	t.Helper()
	var rows []T
	if err := e.foreign.List(ctxT(t), &rows); err != nil {
		t.Fatalf("List: %v", err)
	}
	return len(rows)
}

// TestBridgeExports: a bridge's NetFlow, IPFIX and sFlow rows are created with the bridge (one
// transaction), tagged, updated in place, unlinked (and garbage collected by OVSDB) when no
// longer wanted; a NetFlow row someone else set is never touched; collector sets follow their
// ids; bad settings are refused before anything is sent.
func TestBridgeExports(t *testing.T) {
	e := newEnv(t)
	nf := &model.NetFlow{Targets: []string{"127.0.0.1:2055"}, ActiveTimeout: 30, EngineType: intp(7), EngineID: intp(9)}
	br := model.Bridge{Name: "br0", NetFlow: nf,
		IPFIX:         &model.IPFIX{Targets: []string{"[::1]:4739"}, Sampling: intp(64), OtherConfig: map[string]string{"enable-tunnel-sampling": "false"}},
		SFlow:         &model.SFlow{Targets: []string{"127.0.0.1:6343"}, Agent: "lo", Sampling: intp(100)},
		CollectorSets: []model.CollectorSet{{ID: 5, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:4740"}, CacheMaxFlows: intp(3)}}}}
	ensure := func(b model.Bridge) *ovsdb.Result {
		t.Helper()
		return commit(t, e.c.NewTxn(1).EnsureBridge(b, nil))
	}
	ensure(br)
	got := netflowOf(t, e, "br0", func(n *vswitch.NetFlow) string {
		if n == nil {
			return "no netflow yet"
		}
		return ""
	})
	if got.ActiveTimeout != 30 || *got.EngineType != 7 || *got.EngineID != 9 || got.ExternalIDs[ovsdb.OwnerKey] != ovsdb.DefaultOwner {
		t.Errorf("netflow row %+v, want active_timeout 30, engine 7/9, owned", got)
	}
	b := getBridge(t, e, "br0")
	if b.IPFIX == nil || b.Sflow == nil {
		t.Fatalf("bridge ipfix %v sflow %v, want both set", b.IPFIX, b.Sflow)
	}
	if n := rowsIn[vswitch.FlowSampleCollectorSet](t, e); n != 1 {
		t.Errorf("%d collector sets, want 1", n)
	}
	if res := ensure(br); res.Ops != 0 {
		t.Errorf("ensuring the same exports again sent %d operations, want none", res.Ops)
	}
	exp := e.c.BridgeExports()["br0"]
	if exp.NetFlowHolder != ovsdb.ExportOwned || exp.NetFlow.ActiveTimeout != 30 || exp.CollectorSets[5] == nil {
		t.Errorf("BridgeExports: %+v", exp)
	}

	// A change updates the same row; a collector set's change gets a new IPFIX row.
	br.NetFlow = &model.NetFlow{Targets: []string{"127.0.0.1:2056"}, ActiveTimeout: -1, AddIDToInterface: true}
	br.CollectorSets[0].IPFIX.CacheMaxFlows = intp(4)
	commit(t, e.c.NewTxn(2).EnsureBridge(br, nil))
	upd := netflowOf(t, e, "br0", func(n *vswitch.NetFlow) string {
		if n == nil || n.ActiveTimeout != -1 {
			return fmt.Sprintf("netflow %+v, want active_timeout -1", n)
		}
		return ""
	})
	if upd.UUID != got.UUID || upd.EngineID != nil || !upd.AddIDToInterface || strings.Join(upd.Targets, ",") != "127.0.0.1:2056" {
		t.Errorf("updated netflow %+v (was %s), want the same row with the new settings", upd, got.UUID)
	}
	// The bridge takes the generation of its export's change (the daemon's generations come
	// from bridges, ports and interfaces).
	if g, bg := upd.ExternalIDs[ovsdb.GenerationKey], getBridge(t, e, "br0").ExternalIDs[ovsdb.GenerationKey]; g != "2" || bg != "2" {
		t.Errorf("generation of the updated netflow %s, of its bridge %s; want 2 and 2", g, bg)
	}

	// Dropped from the intent: unlinked, and OVSDB deletes the rows.
	br.NetFlow, br.IPFIX, br.SFlow, br.CollectorSets = nil, nil, nil, nil
	ensure(br)
	netflowOf(t, e, "br0", func(n *vswitch.NetFlow) string {
		if n != nil {
			return "netflow still set"
		}
		return ""
	})
	eventually(t, func() string {
		if n := rowsIn[vswitch.NetFlow](t, e) + rowsIn[vswitch.IPFIX](t, e) + rowsIn[vswitch.SFlow](t, e) + rowsIn[vswitch.FlowSampleCollectorSet](t, e); n != 0 {
			return fmt.Sprintf("%d export rows left, want 0 (netflow %d ipfix %d sflow %d sets %d)", n, rowsIn[vswitch.NetFlow](t, e), rowsIn[vswitch.IPFIX](t, e), rowsIn[vswitch.SFlow](t, e), rowsIn[vswitch.FlowSampleCollectorSet](t, e))
		}
		return ""
	})

	// Someone sets a NetFlow of their own on the owned bridge: the intent never replaces it.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		row := &vswitch.NetFlow{UUID: "fnf", Targets: []string{"192.0.2.1:9995"}}
		ops, err := e.foreign.Create(row)
		if err != nil {
			return nil, err
		}
		bb := getBridge(t, e, "br0")
		fnf := "fnf"
		bb.Netflow = &fnf
		upd, err := e.foreign.Where(bb).Update(bb, &bb.Netflow)
		return append(ops, upd...), err
	})
	foreign := netflowOf(t, e, "br0", func(n *vswitch.NetFlow) string {
		if n == nil {
			return "foreign netflow not visible"
		}
		return ""
	})
	eventually(t, func() string {
		if h := e.c.BridgeExports()["br0"].NetFlowHolder; h != ovsdb.ExportForeign {
			return fmt.Sprintf("holder %q, want foreign", h)
		}
		return ""
	})
	br.NetFlow = nf
	ensure(br)
	ensure(model.Bridge{Name: "br0"})
	after := netflowOf(t, e, "br0", func(*vswitch.NetFlow) string { return "" })
	if after == nil || after.UUID != foreign.UUID || after.ExternalIDs[ovsdb.OwnerKey] != "" || strings.Join(after.Targets, ",") != "192.0.2.1:9995" {
		t.Errorf("foreign netflow became %+v, want it untouched", after)
	}

	// A foreign collector set blocks the bridge's deletion, like a foreign port.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		bb := getBridge(t, e, "br0")
		return e.foreign.Create(&vswitch.FlowSampleCollectorSet{ID: 1, Bridge: bb.UUID})
	})
	eventually(t, func() string {
		if ids := e.c.BridgeExports()["br0"].ForeignSets; len(ids) != 1 {
			return fmt.Sprintf("foreign sets %v", ids)
		}
		return ""
	})
	_, err := e.c.NewTxn(1).DeleteBridge("br0").Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrNotOwned) || !strings.Contains(err.Error(), "collector set 1") {
		t.Errorf("DeleteBridge with a foreign collector set: %v, want ErrNotOwned naming it", err)
	}

	// Bad settings are refused before anything is sent, naming the key.
	for _, bad := range []model.Bridge{
		{Name: "br0", NetFlow: &model.NetFlow{Targets: []string{"collector:2055"}}},
		{Name: "br0", NetFlow: &model.NetFlow{Targets: []string{"127.0.0.1:2055"}, ActiveTimeout: -2}},
		{Name: "br0", IPFIX: &model.IPFIX{Targets: []string{"127.0.0.1:0"}}},
		{Name: "br0", SFlow: &model.SFlow{}},
		{Name: "br0", CollectorSets: []model.CollectorSet{{ID: 1, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:1"}, Sampling: intp(2)}}}},
		{Name: "br0", CollectorSets: []model.CollectorSet{{ID: 1, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:1"}, ObsPointID: intp(2)}}}},
	} {
		_, err := e.c.NewTxn(1).EnsureBridge(bad, nil).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), `bridge "br0"`) {
			t.Errorf("EnsureBridge(%+v): %v, want ErrInvalid naming the bridge", bad, err)
		}
	}
}

// TestNewBridgeWithExportsInOneTxn: a new bridge and its export rows are one transaction with
// no create-then-set (the non-root rows would be garbage collected otherwise).
func TestNewBridgeWithExportsInOneTxn(t *testing.T) {
	e := newEnv(t)
	res := commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br1",
		NetFlow: &model.NetFlow{Targets: []string{"127.0.0.1:2055"}}}, nil))
	if res.Ops == 0 {
		t.Fatal("no operations")
	}
	b := getBridge(t, e, "br1")
	if b.Netflow == nil {
		t.Fatal("new bridge has no netflow")
	}
	var m libmodel.Model = &vswitch.NetFlow{UUID: *b.Netflow}
	if err := e.foreign.Get(ctxT(t), m); err != nil {
		t.Fatalf("netflow row: %v", err)
	}
}
