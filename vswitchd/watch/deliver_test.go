package watch

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// The host's refusal of an answer (api.ValidateChanges, wrapped as plugins/host wraps errors)
// is told apart from a plugin's failure to handle the batch.
func TestRefusedAnswer(t *testing.T) {
	b := api.PortEventBatch{Events: []api.PortEvent{{Kind: api.EventAdded, Interface: "a"}}}
	refusal := api.ValidateChanges(b, []api.InterfaceChange{{Interface: "elsewhere", Set: map[string]string{"k": "v"}}})
	if refusal == nil {
		t.Fatal("ValidateChanges accepted a change of an interface outside the batch")
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("plugin %q: %s: %w", "p", "OnPortEvents", refusal), true},
		{fmt.Errorf("plugin %q: %s: %w", "p", "OnPortEvents", api.Errorf(api.Internal, "boom")), false},
		{&api.Error{Code: api.DeadlineExceeded, Message: "interface changes: no"}, false},
		{errors.New("interface changes: not an api.Error"), false},
		{nil, false},
	} {
		if got := refusedAnswer(tc.err); got != tc.want {
			t.Errorf("refusedAnswer(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The classifier: owners from the daemon's tags, the host's keys stripped, filters.
func TestClassifyAndFilter(t *testing.T) {
	c := classifier{owner: "ovsplane", pluginKey: "ovsplane-plugin"}
	mk := func(ifExt, portExt map[string]string, typ, br string) *state {
		s, _ := c.newState(viewOf("i", typ, br, ifExt, portExt))
		return s
	}
	foreign := mk(map[string]string{"iface-id": "x"}, nil, "dpdkvhostuserclient", "br-int")
	own := mk(map[string]string{"ovsplane-owner": "ovsplane", "ovsplane-generation": "3"}, map[string]string{"ovsplane-owner": "ovsplane"}, "", "br0")
	plug := mk(nil, map[string]string{"ovsplane-owner": "ovsplane", "ovsplane-plugin": "vdpa", "role": "uplink"}, "dpdk", "br0")
	other := mk(map[string]string{"ovsplane-owner": "someone"}, map[string]string{"ovsplane-owner": "someone", "ovsplane-plugin": "x"}, "", "br0")
	if foreign.ev.Owner != api.OwnerForeign || own.ev.Owner != api.OwnerOvsplane || plug.ev.Owner != api.OwnerPlugin ||
		plug.ev.Plugin != "vdpa" || other.ev.Owner != api.OwnerForeign {
		t.Fatalf("owners: %v %v %v/%s %v", foreign.ev.Owner, own.ev.Owner, plug.ev.Owner, plug.ev.Plugin, other.ev.Owner)
	}
	if len(own.ev.ExternalIDs) != 0 || foreign.ev.ExternalIDs["iface-id"] != "x" {
		t.Errorf("external_ids delivered: own %v, foreign %v", own.ev.ExternalIDs, foreign.ev.ExternalIDs)
	}
	for _, tc := range []struct {
		f    api.WatchFilter
		s    *state
		want bool
	}{
		{api.WatchFilter{}, foreign, true},
		{api.WatchFilter{InterfaceTypes: []string{"dpdkvhostuser", "dpdkvhostuserclient"}}, foreign, true},
		{api.WatchFilter{InterfaceTypes: []string{"dpdkvhostuser"}}, foreign, false},
		{api.WatchFilter{InterfaceTypes: []string{"system"}}, own, true},
		{api.WatchFilter{Bridges: []string{"br0"}}, foreign, false},
		{api.WatchFilter{Owners: []api.PortOwner{api.OwnerPlugin}}, plug, true},
		{api.WatchFilter{Owners: []api.PortOwner{api.OwnerPlugin}}, own, false},
		{api.WatchFilter{ExternalIDKeys: []string{"iface-id"}}, foreign, true},
		{api.WatchFilter{ExternalIDKeys: []string{"role"}}, plug, true}, // on the port
		{api.WatchFilter{ExternalIDKeys: []string{"ovsplane-owner"}}, own, false},
		{api.WatchFilter{Bridges: []string{"br0"}, ExternalIDKeys: []string{"iface-id"}}, own, false},
	} {
		if got := matches(tc.f, tc.s); got != tc.want {
			t.Errorf("matches(%+v, %s owner %v) = %v, want %v", tc.f, tc.s.ev.Type, tc.s.ev.Owner, got, tc.want)
		}
	}
	// A change of the host's generation tag alone is not a change; a change of a plugin's
	// record of keys is.
	again := mk(map[string]string{"ovsplane-owner": "ovsplane", "ovsplane-generation": "4"}, map[string]string{"ovsplane-owner": "ovsplane"}, "", "br0")
	recorded := mk(map[string]string{"ovsplane-owner": "ovsplane", "ovsplane-other-config-dsa": "k"}, map[string]string{"ovsplane-owner": "ovsplane"}, "", "br0")
	if !own.same(again) || own.same(recorded) {
		t.Errorf("same: generation only %v (want true), record %v (want false)", own.same(again), own.same(recorded))
	}
}

func viewOf(name, typ, br string, ifExt, portExt map[string]string) ovsdb.InterfaceView {
	return ovsdb.InterfaceView{Name: name, Type: typ, Port: name, Bridge: br, ExternalIDs: ifExt, PortExternalIDs: portExt}
}
