package vethplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Flows returns, for every interface of the bridge that is the host end of one of the plugin's
// pairs and has an ofport, one flow per configured ethertype that drops such frames coming in
// from it:
//
//	cookie=<the host's cookie value>, table=0, priority=100, in_port=<ofport>,dl_type=0x86dd actions=drop
//
// Ownership is decided by the kernel marks (the interface is one of the plugin's host ends),
// not by names the host passes. No configured ethertype, or no such interface: no flows.
func (p *Plugin) Flows(ctx context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	cfg, err := p.config()
	if err != nil {
		return api.FlowSet{}, err
	}
	p.mu.Lock()
	drop, cookie := p.drop, p.cookies.Value
	p.mu.Unlock()
	if len(drop) == 0 {
		return api.FlowSet{}, nil
	}
	states, err := p.kernel().List()
	if err != nil {
		return api.FlowSet{}, apiError("flows on "+bridge.Name, err)
	}
	mine := map[string]bool{}
	for _, st := range states {
		mine[st.Spec.Port] = true
	}
	var flows []api.Flow
	for _, bp := range bridge.Ports {
		if !mine[bp.Interface] || bp.Ofport <= 0 {
			continue
		}
		for _, et := range drop {
			flows = append(flows, api.Flow{
				Cookie:   cookie,
				Priority: uint16(cfg.flowPriority()),
				Match:    fmt.Sprintf("in_port=%d,dl_type=0x%04x", bp.Ofport, et),
				Actions:  "drop",
			})
		}
	}
	slices.SortFunc(flows, func(a, b api.Flow) int { return strings.Compare(a.Match, b.Match) })
	return api.FlowSet{Flows: flows}, ctx.Err()
}
