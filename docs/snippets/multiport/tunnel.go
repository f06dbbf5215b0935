// Package multiport is docs/plugins.md's multi-port shape: one port of type "patched" becomes a
// bridge of its own and a pair of patch ports joining it to the requested bridge, written,
// tagged and removed as one object.
package multiport

import (
	"context"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Patched is the plugin.
type Patched struct{ sdk.Base }

func (*Patched) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "patched", Version: "0.1.0",
		Types: []api.ObjectType{{Name: "patched", Kind: api.ObjectKindPort, Doc: "a bridge behind patch ports"}}}, nil
}

func (*Patched) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { return nil, nil }

// Attach returns every row of the object: the extra bridge, and two ports (one on the
// requested bridge, Bridge ""; one on the new bridge). The host creates them in one
// transaction, tags them with the plugin and removes them together.
func (*Patched) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	inner := req.Name + "-br"
	near := sdk.SinglePort(req.Name, "patch", map[string]string{"peer": req.Name + "-in"})
	far := sdk.SinglePort(req.Name+"-in", "patch", map[string]string{"peer": req.Name})
	far.Bridge = inner
	return api.Attachment{
		Bridges: []api.OVSBridge{{Name: inner, DatapathType: "netdev"}},
		Ports:   []api.OVSPort{near, far},
		Status:  "behind bridge " + inner,
	}, nil
}
