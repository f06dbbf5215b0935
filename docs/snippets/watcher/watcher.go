// Package watcher is docs/plugins.md's watcher: it asks OVS to steer the transmit queues of
// every vhost-user interface that os-vif (or anyone) plugs for a VM by hash.
package watcher

import (
	"context"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Steer is the plugin. It has no port type: Info, and OnPortEvents for the capability.
type Steer struct{ sdk.Base }

func (*Steer) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "steer", Version: "0.1.0", Watch: api.WatchFilter{
		// Only these interfaces reach OnPortEvents, whoever created them.
		InterfaceTypes: []string{"dpdkvhostuser", "dpdkvhostuserclient"},
		ExternalIDKeys: []string{"iface-id"}, // ports plugged for a VM
	}}, nil
}

// OnPortEvents gets each batch once, in OVSDB order; after a restart the first batches are a
// snapshot (Resync). Changes may name only interfaces of the batch.
func (*Steer) OnPortEvents(_ context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	var changes []api.InterfaceChange
	for _, ev := range batch.Events {
		if ev.Kind == api.EventRemoved || ev.OtherConfig["tx-steering"] == "hash" {
			continue // gone, or already done
		}
		changes = append(changes, api.InterfaceChange{Interface: ev.Interface,
			Set: map[string]string{"tx-steering": "hash"}})
	}
	return changes, nil
}
