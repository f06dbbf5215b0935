package reconcile

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// exportStatuses: ready only for an owned row with exactly the desired settings, pending
// otherwise, error for a foreign row (naming how to release it) or a bridge in error; no status
// for a setting the bridge does not ask for.
func TestExportStatuses(t *testing.T) {
	n := func(v int) *int { return &v }
	nf := &model.NetFlow{Targets: []string{"127.0.0.2:2055", "127.0.0.1:2055"}, EngineID: n(3)}
	b := model.Bridge{Name: "br0", NetFlow: nf, SFlow: &model.SFlow{Targets: []string{"127.0.0.1:6343"}},
		CollectorSets: []model.CollectorSet{{ID: 1, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:4739"}}},
			{ID: 2, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:4739"}}}, {ID: 3, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:4739"}}}}}
	other := *nf.Canonical()
	other.EngineID = n(4)
	have := ovsdb.BridgeExport{NetFlow: nf.Canonical(), NetFlowHolder: ovsdb.ExportOwned,
		SFlow: b.SFlow.Canonical(), SFlowHolder: ovsdb.ExportForeign,
		IPFIX: &model.IPFIX{Targets: []string{"127.0.0.1:1"}}, IPFIXHolder: ovsdb.ExportForeign,
		CollectorSets: map[int]*model.IPFIX{1: b.CollectorSets[0].IPFIX.Canonical(), 2: {Targets: []string{"127.0.0.1:9"}}},
		ForeignSets:   []int{3}}
	got := map[string]model.Status{}
	for _, s := range exportStatuses(b, have, "") {
		got[s.Key()] = s
	}
	want := map[string]model.State{"netflow/br0": model.StateReady, "sflow/br0": model.StateError,
		"collector_set/br0/1": model.StateReady, "collector_set/br0/2": model.StatePending, "collector_set/br0/3": model.StateError}
	if len(got) != len(want) {
		t.Errorf("statuses %v, want keys %v (none for ipfix: not desired)", got, want)
	}
	for k, st := range want {
		if got[k].State != st || got[k].Bridge != "br0" {
			t.Errorf("%s: %+v, want %s on br0", k, got[k], st)
		}
	}
	if e := got["sflow/br0"].Error; !strings.Contains(e, "ovs-vsctl clear Bridge br0 sflow") {
		t.Errorf("foreign sflow error %q lacks the fix", e)
	}
	if e := got["collector_set/br0/3"].Error; !strings.Contains(e, "did not create") {
		t.Errorf("foreign collector set error %q", e)
	}

	have.NetFlow = &other
	for _, s := range exportStatuses(b, have, "") {
		if s.Key() == "netflow/br0" && s.State != model.StatePending {
			t.Errorf("netflow with another engine id: %+v, want pending", s)
		}
	}
	for _, s := range exportStatuses(b, ovsdb.BridgeExport{}, "ovs-vswitchd refused the bridge") {
		if s.State != model.StateError || !strings.Contains(s.Error, "refused the bridge") {
			t.Errorf("%s with its bridge in error: %+v", s.Key(), s)
		}
	}
}
