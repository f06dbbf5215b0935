// Package flows is docs/plugins.md's flow programmer: on every bridge it spreads the traffic
// coming in on the port named "uplink" over the bridge's vhost-user ports with a select group.
package flows

import (
	"context"
	"fmt"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Spread is the plugin.
type Spread struct{ sdk.Base }

func (*Spread) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "spread", Version: "0.1.0"}, nil
}

// Flows returns the whole desired set on one bridge; the host adds, changes and removes flows
// and groups so the bridge matches, touching only this plugin's cookies and group ids.
func (p *Spread) Flows(_ context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	req, _ := p.Configured() // the host configures before any capability call
	var uplink int64
	group := api.Group{ID: req.Groups.First, Type: "select", SelectionMethod: "hash"}
	for _, port := range bridge.Ports {
		switch {
		case port.Ofport <= 0:
			continue // not (yet) in the datapath
		case port.Interface == "uplink":
			uplink = port.Ofport
		case port.Type == "dpdkvhostuserclient":
			group.Buckets = append(group.Buckets, api.Bucket{Actions: fmt.Sprintf("output:%d", port.Ofport), Weight: 100})
		}
	}
	if uplink == 0 || len(group.Buckets) == 0 {
		return api.FlowSet{}, nil // nothing to do here: the host removes what we had
	}
	return api.FlowSet{
		Groups: []api.Group{group},
		Flows: []api.Flow{{ // Cookie 0 means the plugin's cookie (ConfigureRequest.Cookies.Value)
			Priority: 100, Match: fmt.Sprintf("in_port=%d", uplink), Actions: fmt.Sprintf("group:%d", group.ID),
		}},
	}, nil
}
