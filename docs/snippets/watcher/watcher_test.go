package watcher

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestSteer(t *testing.T) {
	h := sdktest.NewFakeHost(t, &Steer{})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	changes, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{
		{Kind: api.EventAdded, Owner: api.OwnerForeign, Bridge: "br-int", Port: "vhu1", Interface: "vhu1",
			Type: "dpdkvhostuserclient", ExternalIDs: map[string]string{"iface-id": "vm1-nic0"}},
		{Kind: api.EventChanged, Owner: api.OwnerForeign, Bridge: "br-int", Port: "vhu2", Interface: "vhu2",
			Type: "dpdkvhostuserclient", OtherConfig: map[string]string{"tx-steering": "hash"}},
	}})
	want := []api.InterfaceChange{{Interface: "vhu1", Set: map[string]string{"tx-steering": "hash"}}}
	if err != nil || !reflect.DeepEqual(changes, want) {
		t.Fatalf("changes = %+v, %v; want %+v", changes, err, want)
	}
}
