package vswitchd

import (
	"encoding/json"
	"fmt"

	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// The API object store: the objects created through the API (d.bridges, d.ports), the
// configuration's (d.cfg, d.cfgDes), their version (d.objVer) and the reconciler's view of
// them (extra, extraCache). Its state is still guarded by Daemon.mu, shared with the plugin
// registries of plugins.go and cfgplugins.go; giving it a type and lock of its own is the
// next step of the split.

// apiPort is a port created through the API, as the store keeps it.
type apiPort struct {
	bridge string
	spec   model.Port // the request
	// plugin is the plugin's attachment of a port whose type a plugin provides; nil otherwise.
	plugin *pluginPort
	tagged model.Port // spec (or the plugin's shape) with the API tags: what the reconciler ensures (computed once)
}

func newAPIPort(sp storedPort) apiPort {
	return apiPort{bridge: sp.Bridge, spec: sp.Port, plugin: sp.Plugin, tagged: sp.tagged()}
}

// stored returns the spec kept in p's SpecKey.
func (p apiPort) stored() storedPort {
	return storedPort{Bridge: p.bridge, Port: p.spec, Plugin: p.plugin}
}

// adopt records the API objects found among owned rows (OriginKey "api" with a readable
// SpecKey) that the daemon does not know yet. A row whose spec cannot be read is left to the
// reconciler, which prunes it like any owned row that is not desired.
func (d *Daemon) adopt(owned []ovsdb.OwnedRow) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ports []ovsdb.OwnedRow
	for _, o := range owned {
		if o.Tags[OriginKey] != string(model.OriginAPI) {
			continue
		}
		switch o.Table {
		case "Bridge":
			if _, ok := d.bridges[o.Name]; ok {
				continue
			}
			var b model.Bridge
			if err := json.Unmarshal([]byte(o.Tags[SpecKey]), &b); err != nil || b.Name != o.Name {
				d.log.Warn("API bridge with an unreadable spec; it will be pruned", "bridge", o.Name, "error", err)
				continue
			}
			d.bridges[o.Name] = b
			d.objVer++
		case "Port":
			ports = append(ports, o)
		}
	}
	for _, o := range ports {
		if _, ok := d.ports[o.Name]; ok {
			continue
		}
		var sp storedPort
		if err := json.Unmarshal([]byte(o.Tags[SpecKey]), &sp); err != nil || sp.Port.Name != o.Name {
			d.log.Warn("API port with an unreadable spec; it will be pruned", "port", o.Name, "error", err)
			continue
		}
		d.ports[o.Name] = newAPIPort(sp)
		d.objVer++
	}
}

// extra is the reconciler's Options.Extra: the API objects, after adopting API rows found in
// OVSDB (left by a commit whose outcome was unknown, or by another instance).
func (d *Daemon) extra(owned []ovsdb.OwnedRow) []model.Bridge {
	if owned != nil {
		d.adopt(owned)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extraCache != nil && d.extraVer == d.objVer {
		return d.extraCache // callers only read it
	}
	byBridge := map[string][]model.Port{}
	for _, p := range d.ports {
		byBridge[p.bridge] = append(byBridge[p.bridge], p.tagged)
	}
	out := make([]model.Bridge, 0, len(d.bridges)+len(byBridge))
	for name, b := range d.bridges {
		tb := taggedBridge(b)
		tb.Ports = byBridge[name]
		delete(byBridge, name)
		out = append(out, tb)
	}
	for name, ports := range byBridge {
		out = append(out, model.Bridge{Name: name, Ports: ports})
	}
	d.extraCache, d.extraVer = out, d.objVer
	return out
}

// unheld is the reconciler's Options.Unheld: the bridges holding API ports that neither the
// configuration nor the API desires (the configuration file lost the bridge while the daemon
// was not running: Reload refuses to drop such a bridge). ovsplane leaves such a bridge as it
// is, neither rewritten with an empty spec nor pruned with the API ports; its status says why
// and what to do.
func (d *Daemon) unheld(extra []model.Bridge) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string]string
	for _, b := range extra {
		_, isAPI := d.bridges[b.Name]
		_, isCfg := d.cfgDes.Bridge(b.Name)
		if isAPI || isCfg || len(b.Ports) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[b.Name] = fmt.Sprintf("bridge %q is in neither the configuration file nor the API objects but holds ports created through the API (%s): ovsplane leaves the bridge as it is; add it back to the configuration file and reload, or delete those ports through the API (the bridge is then removed)",
			b.Name, strings.Join(portNames(b.Ports), ", "))
	}
	return out
}

// droppedHoldingLocked returns, for each bridge of the running configuration that next no
// longer lists, the API ports it holds (sorted), as "bridge "B" (ports p1, p2)". Callers hold
// d.mu.
func (d *Daemon) droppedHoldingLocked(next config.DesiredState) []string {
	held := map[string][]string{}
	for name, p := range d.ports {
		_, wasCfg := d.cfgDes.Bridge(p.bridge)
		_, stays := next.Bridge(p.bridge)
		if wasCfg && !stays {
			held[p.bridge] = append(held[p.bridge], name)
		}
	}
	var out []string
	for _, b := range slices.Sorted(maps.Keys(held)) {
		slices.Sort(held[b])
		out = append(out, fmt.Sprintf("bridge %q (ports %s)", b, strings.Join(held[b], ", ")))
	}
	return out
}

func portNames(ports []model.Port) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// taggedBridge returns b with the API tags in its external_ids.
func taggedBridge(b model.Bridge) model.Bridge {
	spec, _ := json.Marshal(b) // plain data: cannot fail
	b.ExternalIDs = withTags(b.ExternalIDs, string(spec))
	return b
}

func withTags(m map[string]string, spec string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out[OriginKey] = string(model.OriginAPI)
	out[SpecKey] = spec
	return out
}

// cfgDesired returns the configuration's desired state. Callers hold d.mu.
func (d *Daemon) cfgDesired() config.DesiredState { return d.cfgDes }

// cfgPortBridgeLocked returns the configured bridge holding port name, or "".
func (d *Daemon) cfgPortBridgeLocked(name string) string {
	for _, b := range d.cfg.Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				return b.Name
			}
		}
	}
	return ""
}

// cfgIfaceOwnerLocked returns the configured port that has interface name.
func (d *Daemon) cfgIfaceOwnerLocked(name string) (string, bool) {
	for _, b := range d.cfg.Bridges {
		for _, p := range b.Ports {
			for _, in := range p.Interfaces {
				if in.Name == name {
					return p.Name, true
				}
			}
		}
	}
	return "", false
}

// conflictLocked refuses a bridge name held by the configuration.
func (d *Daemon) conflictLocked(kind, name, _ string) error {
	for _, b := range d.cfg.Bridges {
		if b.Name == name {
			return fmt.Errorf("%w: %s %q comes from the configuration file; change it there and reload", model.ErrConflict, kind, name)
		}
		for _, p := range b.Ports {
			if p.Name == name {
				return fmt.Errorf("%w: %s %q is the name of a port of the configuration file (bridge %q); pick another name", model.ErrConflict, kind, name, b.Name)
			}
		}
	}
	if _, isPort := d.ports[name]; isPort {
		return fmt.Errorf("%w: %s %q is the name of a port created through the API; pick another name", model.ErrConflict, kind, name)
	}
	return nil
}

// portConflictLocked checks that p may be applied on bridge: the bridge is managed, the port
// is not the configuration's, not on another bridge, and its interfaces are not another
// managed port's.
func (d *Daemon) portConflictLocked(bridge string, p model.Port) error {
	_, apiBridge := d.bridges[bridge]
	_, cfgBridge := d.cfgDesired().Bridge(bridge)
	if !apiBridge && !cfgBridge {
		return fmt.Errorf("%w: bridge %q of port %q is not managed by ovsplane; create it first (ApplyBridge or the configuration file)", model.ErrNotFound, bridge, p.Name)
	}
	if b := d.cfgPortBridgeLocked(p.Name); b != "" {
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); change it there and reload", model.ErrConflict, p.Name, b)
	}
	_, isCfgBr := d.cfgDes.Bridge(p.Name)
	if _, isBr := d.bridges[p.Name]; isBr || isCfgBr {
		return fmt.Errorf("%w: port %q has the name of a bridge; pick another name", model.ErrConflict, p.Name)
	}
	if cur, ok := d.ports[p.Name]; ok && cur.bridge != bridge {
		return fmt.Errorf("%w: port %q is on bridge %q; delete it there first to move it to %q", model.ErrConflict, p.Name, cur.bridge, bridge)
	}
	for _, in := range p.Interfaces {
		if other, ok := d.cfgIfaceOwnerLocked(in.Name); ok {
			return fmt.Errorf("%w: interface %q of port %q belongs to port %q of the configuration file; pick another name", model.ErrConflict, in.Name, p.Name, other)
		}
		if in.Name != p.Name {
			if op, ok := d.ports[in.Name]; ok {
				return fmt.Errorf("%w: interface %q of port %q is the name of port %q on bridge %q; pick another name", model.ErrConflict, in.Name, p.Name, in.Name, op.bridge)
			}
		}
	}
	return nil
}

// settle is the writer's Options.Settle. It records, for each request, what OVSDB holds now:
// an ensured port that exists with the API's tags becomes (or stays) an API object, a deleted
// port that is gone stops being one.
func (d *Daemon) settle(reqs []writer.PortRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range reqs {
		tags, present := d.c.Tags("Port", r.Spec.Name)
		switch {
		case r.Delete && !present:
			delete(d.ports, r.Spec.Name)
			d.objVer++
		case !r.Delete && present && tags[OriginKey] == string(model.OriginAPI) && tags[SpecKey] == r.Spec.ExternalIDs[SpecKey]:
			// The spec key round-trips the API's view of the port exactly.
			var sp storedPort
			if err := unmarshalSpec(tags[SpecKey], &sp); err == nil {
				d.ports[r.Spec.Name] = newAPIPort(sp)
				d.objVer++
			}
		}
	}
}

func unmarshalSpec(s string, v any) error { return json.Unmarshal([]byte(s), v) }
