// Package replay is docs/plugins.md's replay example: each port of type "slot" gets a slot
// number the plugin hands out, and keeps it across restarts of the plugin and the daemon.
package replay

import (
	"context"
	"fmt"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Slots is the plugin.
type Slots struct {
	sdk.Base
	mu   sync.Mutex
	next int // the next free slot; a restarted plugin starts again at 0
}

type state struct {
	Slot int `json:"slot"`
}

func (*Slots) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "slots", Version: "0.1.0",
		Types: []api.ObjectType{{Name: "slot", Kind: api.ObjectKindPort}}}, nil
}

func (*Slots) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { return nil, nil }

// Attach hands out a slot for a new port. On a replay (after a restart, or a retry) it adopts
// the slot it handed out before, which the host stored with the port and passes back in State.
func (p *Slots) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	var st state
	p.mu.Lock()
	defer p.mu.Unlock()
	if ok, err := sdk.DecodeState(req, &st); err != nil {
		return api.Attachment{}, err
	} else if !ok || !req.Replay {
		st.Slot = p.next // a new port
	}
	p.next = max(p.next, st.Slot+1)
	raw, err := sdk.EncodeState(st)
	if err != nil {
		return api.Attachment{}, err
	}
	port := sdk.SinglePort(req.Name, "internal", nil)
	port.ExternalIDs = map[string]string{"slot": fmt.Sprint(st.Slot)}
	return api.Attachment{Ports: []api.OVSPort{port}, State: raw}, nil
}
