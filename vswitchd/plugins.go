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

// PluginPorts returns the ports attached through plugin, as the host replays them after the
// plugin (re)starts: each request with the State its last Attach returned. It is the host's
// Options.Owned.
func (d *Daemon) PluginPorts(_ context.Context, plugin string) ([]api.PortRequest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []api.PortRequest
	for _, name := range slices.Sorted(maps.Keys(d.ports)) {
		p := d.ports[name]
		if p.plugin == nil || p.plugin.Plugin != plugin {
			continue
		}
		out = append(out, replayRequest(p.bridge, p.spec, p.plugin))
	}
	return append(out, d.cfgPluginPortsLocked(plugin)...), nil
}

// PluginReplayed is the host's Options.Replayed: it logs the replays that failed or whose OVS
// shape differs from the stored one (the stored shape stays; re-apply the port to take the
// new one).
func (d *Daemon) PluginReplayed(plugin string, results []api.ReplayResult) {
	for _, r := range results {
		if r.Err != nil {
			d.log.Error("plugin could not re-attach a port after its restart", "plugin", plugin, "port", r.Request.Name, "error", r.Err)
			continue
		}
		d.mu.Lock()
		p, ok := d.ports[r.Request.Name]
		d.mu.Unlock()
		if !ok || p.plugin == nil {
			continue
		}
		shape, err := shapeOf(p.bridge, p.spec, plugin, r.Attachment)
		if err != nil || !samePort(shape.Canonical(), p.plugin.Shape) {
			d.log.Warn("plugin re-attached a port with another OVS shape; the stored one stays (apply the port again to change it)", "plugin", plugin, "port", r.Request.Name, "error", err)
		}
	}
}

// sweepOrphans detaches what the plugin says it owns but the Daemon does not know: the host
// work of an Attach whose port was never written (the plugin or the daemon died in between).
// Ports being applied right now are left alone.
func (d *Daemon) sweepOrphans(plugin string) {
	if d.opts.Plugins == nil {
		return
	}
	var prov api.PortProvider
	for _, pi := range d.opts.Plugins.Plugins() {
		if pi.Name != plugin {
			continue
		}
		for _, t := range pi.Types {
			if p, name, ok := d.opts.Plugins.PortProvider(t); ok && name == plugin {
				prov = p
				break
			}
		}
	}
	if prov == nil {
		d.log.Debug("no port provider to sweep orphans of", "plugin", plugin)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
	defer cancel()
	owned, err := prov.List(ctx)
	d.log.Debug("plugin's ports, for orphans", "plugin", plugin, "ports", len(owned), "error", err)
	if err != nil {
		d.log.Warn("could not list a plugin's ports to find orphans", "plugin", plugin, "error", err)
		return
	}
	for _, o := range owned {
		d.mu.Lock()
		p, known := d.ports[o.Name]
		busy := d.attaching[o.Name] > 0
		c, isCfg := d.cfgPlugins[o.Name]
		d.mu.Unlock()
		if busy || (known && p.plugin != nil && p.plugin.Plugin == plugin) || (isCfg && c.pp != nil && c.pp.Plugin == plugin) {
			continue
		}
		req := api.PortRequest{Bridge: o.Bridge, Name: o.Name, Type: o.Type, State: o.State}
		if err := prov.Detach(ctx, req); err != nil {
			d.log.Error("could not detach a plugin's orphaned port", "plugin", plugin, "port", o.Name, "error", err)
			continue
		}
		d.log.Warn("detached a plugin's port that was never written to OVSDB", "plugin", plugin, "port", o.Name, "bridge", o.Bridge)
	}
}

// overlayPlugins returns statuses with their plugin's health: while the plugin of a port is
// failed (circuit breaker open) or refused, the port and its interfaces are in error, naming
// the plugin and why. It asks the host for the plugins' states at most once.
func (d *Daemon) overlayPlugins(statuses []model.Status) []model.Status {
	if d.opts.Plugins == nil || len(statuses) == 0 {
		return statuses
	}
	out := make([]model.Status, len(statuses))
	infos := d.pluginInfos()
	for i, s := range statuses {
		out[i] = d.pluginStatusIn(s, infos)
	}
	return out
}

// pluginInfos returns the plugin host's view of every plugin, read once: callers overriding
// many statuses pass it to pluginStatusIn instead of asking the host per status.
func (d *Daemon) pluginInfos() func() []model.PluginInfo {
	var infos []model.PluginInfo
	read := false
	return func() []model.PluginInfo {
		if !read && d.opts.Plugins != nil {
			infos, read = d.opts.Plugins.Plugins(), true
		}
		return infos
	}
}

// pluginStatusIn is pluginStatus with the plugins' states from infos (read on first use).
func (d *Daemon) pluginStatusIn(s model.Status, infos func() []model.PluginInfo) model.Status {
	if d.opts.Plugins == nil || s.Kind == model.KindBridge {
		return s
	}
	d.mu.Lock()
	var pp *pluginPort
	if p, ok := d.ports[s.Name]; ok {
		pp = p.plugin
	} else if c, ok := d.cfgPlugins[s.Name]; ok {
		if c.pp == nil {
			d.mu.Unlock()
			s.State, s.Ofport, s.Bridge = model.StateError, 0, c.bridge
			s.Error = "not attached: " + c.err.Error()
			return s
		}
		pp = c.pp
	}
	d.mu.Unlock()
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
				d.sweepOrphans(plugin)
				ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
				d.attachCfgPlugins(ctx, nil)
				d.RefreshPluginConfig(ctx)
				cancel()
				d.KickFlows()
			}
		}
	}
	d.mu.Lock()
	var changed []model.Status
	type obj struct {
		kind         model.Kind
		name, bridge string
	}
	var objs []obj
	for name, p := range d.ports {
		if p.plugin != nil && p.plugin.Plugin == plugin {
			objs = append(objs, obj{model.KindPort, name, p.bridge})
			for _, in := range p.plugin.Shape.Interfaces {
				objs = append(objs, obj{model.KindInterface, in.Name, p.bridge})
			}
		}
	}
	d.mu.Unlock()
	if len(objs) == 0 {
		return
	}
	for _, o := range objs {
		changed = append(changed, d.hub.orPending(string(o.kind)+"/"+o.name, o.kind, o.name, o.bridge))
	}
	d.hub.publish(changed)
}

// desired returns the desired state the reconciler works on: the configuration's, with the
// plugins' other_config contribution added (the configuration's own keys win).
func (d *Daemon) desired() config.DesiredState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.withCfgPluginsLocked(d.cfgDes)
	out.OtherConfig = d.globals.withConfig(d.cfgDes.OtherConfig)
	return out
}

// replayRequest is the request that re-attaches a port of plugin type from its stored spec
// and the state its plugin's last Attach returned.
func replayRequest(bridge string, spec model.Port, pp *pluginPort) api.PortRequest {
	return api.PortRequest{Bridge: bridge, Name: spec.Name, Type: pp.Type, Options: maps.Clone(spec.Interfaces[0].Options),
		ExternalIDs: maps.Clone(spec.ExternalIDs), State: slices.Clone(pp.State)}
}
