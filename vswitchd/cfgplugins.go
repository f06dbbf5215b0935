package vswitchd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// cfgPluginPort is a port of the configuration file whose interface type a plugin provides.
// Until its plugin attached it, it is left out of the desired state (so nothing half-made is
// written) and its status says why.
type cfgPluginPort struct {
	bridge string
	spec   model.Port
	pp     *pluginPort // nil until attached
	err    error       // why it is not attached
}

// isPluginTyped reports whether one of p's interfaces has a type that is not an OVS type:
// with plugins configured, config.Config.Validate leaves such types to the plugins.
func isPluginTyped(p model.Port) bool {
	return slices.ContainsFunc(p.Interfaces, func(in model.Interface) bool {
		return !slices.Contains(model.InterfaceTypes, in.Type)
	})
}

// syncCfgPluginsLocked makes d.cfgPlugins follow d.cfgDes: new plugin-typed ports are added
// unattached, removed or changed ones are returned for detaching (their rows leave the
// desired state at once). d.mu must be held.
func (d *Daemon) syncCfgPluginsLocked() (gone []*cfgPluginPort) {
	seen := map[string]bool{}
	for _, b := range d.cfgDes.Bridges {
		for _, p := range b.Ports {
			if !isPluginTyped(p) {
				continue
			}
			seen[p.Name] = true
			cur := d.cfgPlugins[p.Name]
			if cur != nil && cur.bridge == b.Name && samePort(cur.spec, p) {
				continue
			}
			if cur != nil && cur.pp != nil {
				gone = append(gone, cur)
			}
			d.cfgPlugins[p.Name] = &cfgPluginPort{bridge: b.Name, spec: p, err: fmt.Errorf("waiting for the plugin that provides type %q", pluginTypeOf(p))}
		}
	}
	for name, cur := range d.cfgPlugins {
		if !seen[name] {
			delete(d.cfgPlugins, name)
			if cur.pp != nil {
				gone = append(gone, cur)
			}
		}
	}
	return gone
}

func pluginTypeOf(p model.Port) string {
	for _, in := range p.Interfaces {
		if !slices.Contains(model.InterfaceTypes, in.Type) {
			return in.Type
		}
	}
	return ""
}

// adoptCfgPluginsLocked takes, for the configuration's plugin-typed ports not attached yet,
// the attachment a previous run stored in their rows (same request, same bridge), so a
// restarted daemon keeps writing them while the plugins start. d.mu must be held.
func (d *Daemon) adoptCfgPluginsLocked(owned []ovsdb.OwnedRow) {
	for _, o := range owned {
		if o.Table != "Port" || o.Tags[OriginKey] != "" || o.Tags[PluginKey] == "" {
			continue
		}
		cur := d.cfgPlugins[o.Name]
		if cur == nil || cur.pp != nil {
			continue
		}
		var sp storedPort
		if err := json.Unmarshal([]byte(o.Tags[SpecKey]), &sp); err != nil || sp.Plugin == nil ||
			sp.Bridge != cur.bridge || !samePort(sp.Port, cur.spec) {
			continue
		}
		cur.pp, cur.err = sp.Plugin, nil
	}
}

// cfgTagged is the port the reconciler writes for an attached configuration port: the
// plugin's shape, tagged with the plugin and the stored spec (as an API port is, without
// OriginKey).
func (c *cfgPluginPort) tagged() model.Port {
	sp := storedPort{Bridge: c.bridge, Port: c.spec, Plugin: c.pp}
	spec, _ := json.Marshal(sp) // plain data: cannot fail
	p := c.pp.Shape
	p.ExternalIDs = maps.Clone(p.ExternalIDs)
	if p.ExternalIDs == nil {
		p.ExternalIDs = map[string]string{}
	}
	p.ExternalIDs[SpecKey] = string(spec)
	p.ExternalIDs[PluginKey] = c.pp.Plugin
	return p
}

// withCfgPluginsLocked returns des with each plugin-typed port of the configuration replaced
// by its plugin's shape, or left out while it is not attached. d.mu must be held.
func (d *Daemon) withCfgPluginsLocked(des config.DesiredState) config.DesiredState {
	if len(d.cfgPlugins) == 0 {
		return des
	}
	out := des
	out.Bridges = make([]model.Bridge, len(des.Bridges))
	for i, b := range des.Bridges {
		nb := b
		nb.Ports = nil
		for _, p := range b.Ports {
			c, isPlugin := d.cfgPlugins[p.Name]
			switch {
			case !isPlugin:
				nb.Ports = append(nb.Ports, p)
			case c.pp != nil:
				nb.Ports = append(nb.Ports, c.tagged())
			}
		}
		out.Bridges[i] = nb
	}
	return out
}

// attachCfgPlugins attaches, through their plugins, the configuration's plugin-typed ports
// that are not attached yet (replaying the stored state of adopted ones is the host's job),
// detaches gone ones, and updates the desired state. Failures stay in each port's status.
func (d *Daemon) attachCfgPlugins(ctx context.Context, gone []*cfgPluginPort) {
	for _, g := range gone {
		d.detach(g.bridge, g.spec, g.pp)
	}
	if d.opts.Plugins == nil {
		return
	}
	d.mu.Lock()
	var todo []*cfgPluginPort
	for _, name := range slices.Sorted(maps.Keys(d.cfgPlugins)) {
		if c := d.cfgPlugins[name]; c.pp == nil {
			todo = append(todo, &cfgPluginPort{bridge: c.bridge, spec: c.spec})
		}
	}
	d.mu.Unlock()
	changed, failed := false, 0
	for _, c := range todo {
		prov, plugin, typ, ok, err := d.pluginRequest(c.spec)
		switch {
		case err != nil:
			c.err = err
		case !ok:
			c.err = fmt.Errorf("no configured plugin provides type %q (yet); configure it under plugins: or check `vsctl plugin list`", pluginTypeOf(c.spec))
		default:
			c.pp, _, c.err = d.attach(ctx, c.bridge, c.spec, prov, plugin, typ, nil)
		}
		d.mu.Lock()
		cur := d.cfgPlugins[c.spec.Name]
		if cur == nil || cur.bridge != c.bridge || !samePort(cur.spec, c.spec) {
			d.mu.Unlock()
			if c.pp != nil { // the configuration changed meanwhile
				d.detach(c.bridge, c.spec, c.pp)
			}
			continue
		}
		cur.pp, cur.err = c.pp, c.err
		d.mu.Unlock()
		if c.err != nil {
			if failed++; failed <= limits.MaxLoggedObjects {
				d.log.Error("configuration port not attached", "port", c.spec.Name, "bridge", c.bridge, "error", c.err)
			}
		} else {
			changed = true
		}
	}
	if failed > limits.MaxLoggedObjects {
		d.log.Error("configuration ports not attached (summary: the first are logged above, `vsctl status` shows each)",
			"ports", failed, "listed", limits.MaxLoggedObjects)
	}
	if changed || len(gone) > 0 {
		d.rec.Update(d.desired())
	}
}

// cfgPluginPorts returns the attached configuration ports of plugin as replay requests.
// d.mu must be held.
func (d *Daemon) cfgPluginPortsLocked(plugin string) []api.PortRequest {
	var out []api.PortRequest
	for _, name := range slices.Sorted(maps.Keys(d.cfgPlugins)) {
		c := d.cfgPlugins[name]
		if c.pp == nil || c.pp.Plugin != plugin {
			continue
		}
		out = append(out, replayRequest(c.bridge, c.spec, c.pp))
	}
	return out
}
