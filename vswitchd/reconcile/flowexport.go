package reconcile

import (
	"fmt"
	"reflect"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// Flow export statuses. Each flow export setting a desired bridge has (netflow, ipfix, sflow,
// every collector set) gets a status of its own, named like the bridge ("BRIDGE/ID" for a
// collector set): ready when OVSDB holds an owned row with exactly the desired settings,
// pending until then, error when the bridge's row for that setting was created by someone else
// (ovs-vsctl set Bridge … netflow=@nf): the daemon never overwrites or unlinks a row it did not
// create, so the message names the row's holder and how to release it. A refused bridge, a
// failed pass and a lost OVSDB connection put its export statuses in error like its
// interfaces'.

// exportStatuses returns the statuses of b's flow export settings; have is what OVSDB holds for
// b, bridgeErr the bridge's error (if its status is an error).
func exportStatuses(b model.Bridge, have ovsdb.BridgeExport, bridgeErr string) []model.Status {
	var out []model.Status
	one := func(kind model.Kind, name, col string, want, got any, holder ovsdb.ExportHolder) {
		s := model.Status{Kind: kind, Name: name, Bridge: b.Name, State: model.StatePending}
		switch {
		case holder == ovsdb.ExportForeign:
			s.State, s.Error = model.StateError, fmt.Sprintf(
				"bridge %q already has a %s setting ovsplane did not create (ovs-vsctl or another controller); ovsplane leaves it alone: remove it (ovs-vsctl clear Bridge %s %s) or drop %s from the bridge's configuration",
				b.Name, col, b.Name, col, col)
		case bridgeErr != "":
			s.State, s.Error = model.StateError, "its bridge is in error: "+bridgeErr
		case holder == ovsdb.ExportOwned && reflect.DeepEqual(want, got):
			s.State = model.StateReady
		}
		out = append(out, s)
	}
	if b.NetFlow != nil {
		one(model.KindNetFlow, b.Name, "netflow", b.NetFlow.Canonical(), have.NetFlow, have.NetFlowHolder)
	}
	if b.IPFIX != nil {
		one(model.KindIPFIX, b.Name, "ipfix", b.IPFIX.Canonical(), have.IPFIX, have.IPFIXHolder)
	}
	if b.SFlow != nil {
		one(model.KindSFlow, b.Name, "sflow", b.SFlow.Canonical(), have.SFlow, have.SFlowHolder)
	}
	for _, cs := range b.CollectorSets {
		name := fmt.Sprintf("%s/%d", b.Name, cs.ID)
		s := model.Status{Kind: model.KindCollectorSet, Name: name, Bridge: b.Name, State: model.StatePending}
		got, owned := have.CollectorSets[cs.ID]
		switch {
		case containsInt(have.ForeignSets, cs.ID):
			s.State, s.Error = model.StateError, fmt.Sprintf(
				"bridge %q already has IPFIX collector set %d, which ovsplane did not create; ovsplane leaves it alone: destroy it (ovs-vsctl destroy Flow_Sample_Collector_Set …) or pick another id",
				b.Name, cs.ID)
		case bridgeErr != "":
			s.State, s.Error = model.StateError, "its bridge is in error: "+bridgeErr
		case owned && reflect.DeepEqual(cs.IPFIX.Canonical(), got):
			s.State = model.StateReady
		}
		out = append(out, s)
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// bridgeExports reads what OVSDB holds for every bridge's flow export, when the client can
// tell (the OVSDB client can; test fakes may not).
func (r *Reconciler) bridgeExports() map[string]ovsdb.BridgeExport {
	if be, ok := r.c.(interface {
		BridgeExports() map[string]ovsdb.BridgeExport
	}); ok {
		return be.BridgeExports()
	}
	return nil
}
