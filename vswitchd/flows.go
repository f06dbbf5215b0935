package vswitchd

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Flow syncs: at most one per flowDebounce, and at least every flowResync while any plugin
// programs flows (repairing flows someone else deleted).
const (
	flowDebounce = 200 * time.Millisecond
	flowResync   = 30 * time.Second
)

// flowSyncer keeps the plugins' flow programs on the managed bridges. It owns the request
// for a sync (kick) and the sync loop; it reads the managed bridges and ports through the
// Daemon's views and writes flows only through OpenFlow, never OVSDB.
type flowSyncer struct {
	plugins Plugins
	of      OpenFlow
	log     *slog.Logger
	bridges func() []model.BridgeInfo            // the managed bridges (Daemon.Bridges)
	ports   func(bridge string) []model.PortInfo // their ports with statuses (Daemon.Ports)
	kick    chan struct{}                        // a sync is wanted (capacity 1)
}

func newFlowSyncer(plugins Plugins, of OpenFlow, log *slog.Logger, bridges func() []model.BridgeInfo, ports func(string) []model.PortInfo) *flowSyncer {
	return &flowSyncer{plugins: plugins, of: of, log: log, bridges: bridges, ports: ports, kick: make(chan struct{}, 1)}
}

// Kick asks for a sync (after a change of ports, ofports or plugins). It never blocks; kicks
// before run starts are kept (one).
func (f *flowSyncer) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// run syncs the plugins' flows on every managed bridge when kicked (debounced), when a
// plugin's FlowSet asked for a refresh, and every flowResync, until ctx ends.
func (f *flowSyncer) run(ctx context.Context) {
	timer := time.NewTimer(flowResync)
	defer timer.Stop()
	programmed := false // whether the last sync had plugins' flows to keep or prune
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		case <-timer.C:
		}
		select { // let a burst of changes settle
		case <-ctx.Done():
			return
		case <-time.After(flowDebounce):
		}
		select {
		case <-f.kick:
		default:
		}
		next := flowResync
		if programmed || f.anyFlowPlugin() {
			var refresh time.Duration
			programmed, refresh = f.sync(ctx)
			if refresh > 0 && refresh < next {
				next = refresh
			}
		}
		timer.Reset(next)
	}
}

// anyFlowPlugin reports whether a configured plugin has the flow-program capability.
func (f *flowSyncer) anyFlowPlugin() bool {
	return slices.ContainsFunc(f.plugins.Plugins(), func(p model.PluginInfo) bool {
		return slices.Contains(p.Capabilities, api.CapabilityFlowProgram.String())
	})
}

// sync programs every plugin's flows on every managed bridge and prunes the flows of
// plugins no longer configured. It returns whether any plugin has flows and the shortest
// refresh a plugin asked for.
func (f *flowSyncer) sync(ctx context.Context) (programmed bool, refresh time.Duration) {
	for _, b := range f.bridges() {
		facts := api.BridgeFacts{Name: b.Spec.Name, DatapathType: b.Spec.DatapathType, Protocols: b.Spec.Protocols}
		for _, p := range f.ports(b.Spec.Name) {
			owner, plugin := api.OwnerOvsplane, ""
			if p.Plugin != "" {
				owner, plugin = api.OwnerPlugin, p.Plugin
			}
			for i, st := range p.Interfaces {
				if st.State != model.StateReady || st.Ofport <= 0 {
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
		for _, pf := range f.plugins.Flows(ctx, facts) {
			keep = append(keep, pf.Cookies)
			if pf.Err != nil {
				f.log.Warn("plugin's flows not updated; its current flows stay", "plugin", pf.Plugin, "bridge", facts.Name, "error", pf.Err)
				programmed = true
				continue
			}
			if len(pf.Set.Flows)+len(pf.Set.Groups) > 0 {
				programmed = true
			}
			if ms := time.Duration(pf.Set.RefreshMillis) * time.Millisecond; ms > 0 && (refresh == 0 || ms < refresh) {
				refresh = ms
			}
			if err := f.of.Sync(ctx, facts.Name, pf.Cookies, pf.Groups, pf.Set); err != nil {
				f.log.Error("programming a plugin's flows failed", "plugin", pf.Plugin, "bridge", facts.Name, "error", err)
				continue
			}
			f.log.Debug("plugin's flows programmed", "plugin", pf.Plugin, "bridge", facts.Name, "flows", len(pf.Set.Flows), "groups", len(pf.Set.Groups))
		}
		space := f.plugins.Cookies()
		if err := f.of.PruneForeign(ctx, facts.Name, space.Value, space.Mask, keep); err != nil {
			f.log.Warn("pruning the flows of removed plugins failed", "bridge", facts.Name, "error", err)
		}
	}
	return programmed, refresh
}
