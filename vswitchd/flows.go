package vswitchd

import (
	"context"
	"slices"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// Flow syncs: at most one per flowDebounce, and at least every flowResync while any plugin
// programs flows (repairing flows someone else deleted).
const (
	flowDebounce = 200 * time.Millisecond
	flowResync   = 30 * time.Second
)

// KickFlows asks for a sync of the plugins' flows (after a change of ports, ofports or
// plugins). It never blocks.
func (d *Daemon) KickFlows() {
	select {
	case d.flowKick <- struct{}{}:
	default:
	}
}

// flowLoop syncs the plugins' flows on every managed bridge when kicked (debounced), when a
// plugin's FlowSet asked for a refresh, and every flowResync, until ctx ends.
func (d *Daemon) flowLoop(ctx context.Context) {
	timer := time.NewTimer(flowResync)
	defer timer.Stop()
	programmed := false // whether the last sync had plugins' flows to keep or prune
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.flowKick:
		case <-timer.C:
		}
		select { // let a burst of changes settle
		case <-ctx.Done():
			return
		case <-time.After(flowDebounce):
		}
		select {
		case <-d.flowKick:
		default:
		}
		next := flowResync
		if programmed || d.anyFlowPlugin() {
			var refresh time.Duration
			programmed, refresh = d.syncFlows(ctx)
			if refresh > 0 && refresh < next {
				next = refresh
			}
		}
		timer.Reset(next)
	}
}

// anyFlowPlugin reports whether a configured plugin has the flow-program capability.
func (d *Daemon) anyFlowPlugin() bool {
	return slices.ContainsFunc(d.opts.Plugins.Plugins(), func(p PluginInfo) bool {
		return slices.Contains(p.Capabilities, api.CapabilityFlowProgram.String())
	})
}

// syncFlows programs every plugin's flows on every managed bridge and prunes the flows of
// plugins no longer configured. It returns whether any plugin has flows and the shortest
// refresh a plugin asked for.
func (d *Daemon) syncFlows(ctx context.Context) (programmed bool, refresh time.Duration) {
	for _, b := range d.Bridges() {
		facts := api.BridgeFacts{Name: b.Spec.Name, DatapathType: b.Spec.DatapathType, Protocols: b.Spec.Protocols}
		for _, p := range d.Ports(b.Spec.Name) {
			owner, plugin := api.OwnerOvsplane, ""
			if p.Plugin != "" {
				owner, plugin = api.OwnerPlugin, p.Plugin
			}
			for i, st := range p.Interfaces {
				if st.State != reconcile.Ready || st.Ofport <= 0 {
					continue
				}
				typ := ""
				ifaces := p.Spec.Interfaces
				if p.Shape != nil {
					ifaces = p.Shape.Interfaces
				}
				if i < len(ifaces) {
					typ = ifaces[i].Type
				}
				facts.Ports = append(facts.Ports, api.BridgePort{Port: p.Spec.Name, Interface: st.Name, Type: typ,
					Ofport: int64(st.Ofport), Owner: owner, Plugin: plugin, ExternalIDs: p.Spec.ExternalIDs})
			}
		}
		var keep []api.CookieRange
		for _, pf := range d.opts.Plugins.Flows(ctx, facts) {
			keep = append(keep, pf.Cookies)
			if pf.Err != nil {
				d.log.Warn("plugin's flows not updated; its current flows stay", "plugin", pf.Plugin, "bridge", facts.Name, "error", pf.Err)
				programmed = true
				continue
			}
			if len(pf.Set.Flows)+len(pf.Set.Groups) > 0 {
				programmed = true
			}
			if ms := time.Duration(pf.Set.RefreshMillis) * time.Millisecond; ms > 0 && (refresh == 0 || ms < refresh) {
				refresh = ms
			}
			if err := d.opts.OpenFlow.Sync(ctx, facts.Name, pf.Cookies, pf.Groups, pf.Set); err != nil {
				d.log.Error("programming a plugin's flows failed", "plugin", pf.Plugin, "bridge", facts.Name, "error", err)
				continue
			}
			d.log.Debug("plugin's flows programmed", "plugin", pf.Plugin, "bridge", facts.Name, "flows", len(pf.Set.Flows), "groups", len(pf.Set.Groups))
		}
		space := d.opts.Plugins.Cookies()
		if err := d.opts.OpenFlow.PruneForeign(ctx, facts.Name, space.Value, space.Mask, keep); err != nil {
			d.log.Warn("pruning the flows of removed plugins failed", "bridge", facts.Name, "error", err)
		}
	}
	return programmed, refresh
}
