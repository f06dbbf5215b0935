package vswitchd

import (
	"context"
	"encoding/json"
	"fmt"

	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// PluginKey is the external_ids key naming, on the Port row of a port whose type a plugin
// provides, the plugin that attached it.
const PluginKey = ovsdb.TagPrefix + "plugin"

// pluginPort is the plugin's side of a port whose interface type a plugin provides: what the
// plugin's last Attach returned. It is stored in the port's SpecKey with the request, so a
// restarted daemon (or a restarted plugin, through the host's replay) gets it back.
type pluginPort struct {
	Plugin string `json:"plugin"`
	Type   string `json:"type"`
	// State is the plugin's opaque state (api.Attachment.State).
	State []byte `json:"state,omitempty"`
	// Shape is the OVS port the plugin asked for: what the reconciler writes.
	Shape     model.Port        `json:"shape"`
	Status    string            `json:"status,omitempty"`
	Endpoints map[string]string `json:"endpoints,omitempty"`
	// Jobs are the port's data-path jobs (api.Attachment.Jobs), run while its row exists.
	Jobs []api.Job `json:"jobs,omitempty"`
}

// storedPort is the JSON kept in a port's SpecKey: the request as the API received it and, for
// a plugin's port type, the plugin's attachment.
type storedPort struct {
	Bridge string      `json:"bridge"`
	Port   model.Port  `json:"port"`
	Plugin *pluginPort `json:"plugin,omitempty"`
}

// tagged returns the port the reconciler ensures for sp: the request, or the plugin's shape,
// with the API tags (and PluginKey) in its external_ids.
func (sp storedPort) tagged() model.Port {
	spec, _ := json.Marshal(sp) // plain data: cannot fail
	p := sp.Port
	if sp.Plugin != nil {
		p = sp.Plugin.Shape
	}
	p.ExternalIDs = withTags(p.ExternalIDs, string(spec))
	if sp.Plugin != nil {
		p.ExternalIDs[PluginKey] = sp.Plugin.Plugin
	}
	return p
}

// configTagged is the port the reconciler writes for an attached configuration port: the
// plugin's shape, tagged with the plugin and the stored spec (as an API port is, without
// OriginKey).
func (sp storedPort) configTagged() model.Port {
	spec, _ := json.Marshal(sp) // plain data: cannot fail
	p := sp.Plugin.Shape
	p.ExternalIDs = maps.Clone(p.ExternalIDs)
	if p.ExternalIDs == nil {
		p.ExternalIDs = map[string]string{}
	}
	p.ExternalIDs[SpecKey] = string(spec)
	p.ExternalIDs[PluginKey] = sp.Plugin.Plugin
	return p
}

// PluginPorts returns the ports attached through plugin, as the host replays them after the
// plugin (re)starts: each request with the State its last Attach returned. It is the host's
// Options.Owned.
func (d *Daemon) PluginPorts(_ context.Context, plugin string) ([]api.PortRequest, error) {
	return d.att.replayRequests(plugin), nil
}

// PluginReplayed is the host's Options.Replayed: it logs the replays that failed or whose OVS
// shape differs from the stored one (the stored shape stays; re-apply the port to take the
// new one).
func (d *Daemon) PluginReplayed(plugin string, results []api.ReplayResult) {
	d.att.replayed(plugin, results)
}

// replayed: see Daemon.PluginReplayed. Ports of both origins are checked.
func (a *attacher) replayed(plugin string, results []api.ReplayResult) {
	for _, r := range results {
		if r.Err != nil {
			a.log.Error("plugin could not re-attach a port after its restart", "plugin", plugin, "port", r.Request.Name, "error", r.Err)
			continue
		}
		a.mu.Lock()
		at, ok := a.ports[r.Request.Name]
		var cur attachment
		if ok {
			cur = *at
		}
		a.mu.Unlock()
		if !ok || cur.pp == nil {
			continue
		}
		shape, err := shapeOf(cur.bridge, cur.spec, plugin, r.Attachment)
		if err != nil || !samePort(shape.Canonical(), cur.pp.Shape) {
			a.log.Warn("plugin re-attached a port with another OVS shape; the stored one stays (apply the port again to change it)", "plugin", plugin, "port", r.Request.Name, "error", err)
		}
	}
}

// sweepOrphans detaches what the plugin says it owns but the Daemon does not know: the host
// work of an Attach whose port was never written (the plugin or the daemon died in between).
// Ports being applied right now are left alone.
func (a *attacher) sweepOrphans(plugin string) {
	if a.plugins == nil {
		return
	}
	var prov api.PortProvider
	for _, pi := range a.plugins.Plugins() {
		if pi.Name != plugin {
			continue
		}
		for _, t := range pi.Types {
			if p, name, ok := a.plugins.PortProvider(t); ok && name == plugin {
				prov = p
				break
			}
		}
	}
	if prov == nil {
		a.log.Debug("no port provider to sweep orphans of", "plugin", plugin)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
	defer cancel()
	owned, err := prov.List(ctx)
	a.log.Debug("plugin's ports, for orphans", "plugin", plugin, "ports", len(owned), "error", err)
	if err != nil {
		a.log.Warn("could not list a plugin's ports to find orphans", "plugin", plugin, "error", err)
		return
	}
	for _, o := range owned {
		a.mu.Lock()
		at := a.ports[o.Name]
		known := at != nil && at.pp != nil && at.pp.Plugin == plugin
		busy := a.attaching[o.Name] > 0
		a.mu.Unlock()
		if busy || known {
			continue
		}
		req := api.PortRequest{Bridge: o.Bridge, Name: o.Name, Type: o.Type, State: o.State}
		if err := prov.Detach(ctx, req); err != nil {
			a.log.Error("could not detach a plugin's orphaned port", "plugin", plugin, "port", o.Name, "error", err)
			continue
		}
		a.log.Warn("detached a plugin's port that was never written to OVSDB", "plugin", plugin, "port", o.Name, "bridge", o.Bridge)
	}
}

// overlay returns statuses with their plugin's health: while the plugin of a port is failed
// (circuit breaker open) or refused, the port and its interfaces are in error, naming the
// plugin and why; a configuration port its plugin has not attached is in error saying why. It
// asks the host for the plugins' states at most once.
func (a *attacher) overlay(statuses []model.Status) []model.Status {
	if a.plugins == nil || len(statuses) == 0 {
		return statuses
	}
	out := make([]model.Status, len(statuses))
	var infos []model.PluginInfo
	read := false
	for i, s := range statuses {
		out[i] = a.statusIn(s, func() []model.PluginInfo {
			if !read {
				infos, read = a.plugins.Plugins(), true
			}
			return infos
		})
	}
	return out
}

// statusIn is s with the health of its port's plugin, the plugins' states read from infos.
func (a *attacher) statusIn(s model.Status, infos func() []model.PluginInfo) model.Status {
	if s.Kind == model.KindBridge {
		return s
	}
	a.mu.Lock()
	var cur attachment
	if at := a.ports[s.Name]; at != nil {
		cur = *at
	}
	a.mu.Unlock()
	if cur.origin == model.OriginConfig && cur.pp == nil {
		s.State, s.Ofport, s.Bridge = model.StateError, 0, cur.bridge
		s.Error = "not attached: " + cur.err.Error()
		return s
	}
	pp := cur.pp
	if pp == nil {
		return s
	}
	for _, pi := range infos() {
		if pi.Name != pp.Plugin {
			continue
		}
		if pi.State == "failed" || pi.State == "refused" {
			s.State, s.Ofport = model.StateError, 0
			s.Error = fmt.Sprintf("plugin %q, which provides type %q, is %s: %s", pi.Name, pp.Type, pi.State, pi.Reason)
		}
		return s
	}
	s.State, s.Ofport = model.StateError, 0
	s.Error = fmt.Sprintf("plugin %q, which attached this port, is no longer configured; add it back or delete the port", pp.Plugin)
	return s
}

// samePort reports whether two canonical ports are the same spec.
func samePort(a, b model.Port) bool {
	ja, _ := json.Marshal(a) // plain data: cannot fail; maps marshal sorted
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// PluginChanged tells the Daemon that a plugin's state changed (the host's Options.OnChange):
// the statuses of the plugin's ports are published again, with the plugin's health, and when
// the plugin is now running (a start or restart, after the replay of its ports), what it
// holds but OVSDB does not is detached (see sweepOrphans) and the plugins' other_config
// contributions are read again (see RefreshPluginConfig). It calls the plugin: run it in its
// own goroutine.
func (d *Daemon) PluginChanged(plugin string) {
	if d.opts.Plugins != nil {
		for _, pi := range d.opts.Plugins.Plugins() {
			if pi.Name == plugin && pi.State == "running" {
				d.att.sweepOrphans(plugin)
				ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
				if d.att.attachConfig(ctx, nil) {
					d.rec.Update(d.desired())
				}
				d.RefreshPluginConfig(ctx)
				cancel()
				d.KickFlows()
			}
		}
	}
	d.kickJobs()
	// The API ports only, as before the registries merged (see attacher.apiObjects).
	objs := d.att.apiObjects(plugin)
	if len(objs) == 0 {
		return
	}
	changed := make([]model.Status, 0, len(objs))
	for _, o := range objs {
		changed = append(changed, d.hub.orPending(string(o.Kind)+"/"+o.Name, o.Kind, o.Name, o.Bridge))
	}
	d.hub.publish(changed)
}

// desired returns the desired state the reconciler works on: the configuration's, with the
// plugins' other_config contribution added (the configuration's own keys win).
func (d *Daemon) desired() config.DesiredState {
	des := d.store.configDesired()
	out := d.att.withConfigShapes(des)
	out.OtherConfig = d.globals.withConfig(des.OtherConfig)
	return out
}

// replayRequest is the request that re-attaches a port of plugin type from its stored spec
// and the state its plugin's last Attach returned.
func replayRequest(bridge string, spec model.Port, pp *pluginPort) api.PortRequest {
	return api.PortRequest{Bridge: bridge, Name: spec.Name, Type: pp.Type, Options: maps.Clone(spec.Interfaces[0].Options),
		ExternalIDs: maps.Clone(spec.ExternalIDs), State: slices.Clone(pp.State)}
}
