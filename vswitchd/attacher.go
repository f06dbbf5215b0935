package vswitchd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// attacher is the one plugin-port attacher, for both origins: it owns the registry of the
// ports whose interface type a plugin provides — those created through the API and those of
// the configuration file, one entry per port name with its origin — and the counts of the
// ApplyPort calls between a plugin's Attach and the end of their write. It calls the plugins
// (attach, detach, replay, orphan sweep) and never OVSDB.
//
// Lock order: objectStore.mu, then attacher.mu. The store registers an API port's attachment
// (under its own lock) before the port becomes visible in the store, and removes the port
// before the attachment; the attacher never calls the store. No lock is held while a plugin
// is called.
type attacher struct {
	plugins Plugins // nil: no plugins
	log     *slog.Logger

	mu    sync.Mutex
	ports map[string]*attachment // by port name
	// attaching counts, per port name, the ApplyPort calls between a plugin's Attach and the
	// end of their write, whose host work must not be swept as orphaned.
	attaching map[string]int
	// reserved holds the rows ("kind/name") of objects of several rows between their claim
	// and the end of their write (see claim), by the object claiming them.
	reserved map[string]string
	// unreplayed holds, per plugin, the objects whose replay answer was refused, detached once
	// the plugin runs (the host's replay happens before it may be called).
	unreplayed map[string][]attachment

	// taken, set by the object store, refuses a shape naming a row another managed object
	// holds; lookup (the client's Interface, set by New) finds rows someone else created.
	taken  func(bridge, object string, pp *pluginPort) error
	lookup func(name string) (ovsdb.InterfaceState, error)
}

// attachment is a port of a plugin's type as the attacher holds it.
type attachment struct {
	origin model.Origin
	bridge string
	spec   model.Port  // the request as the API received it, or the configuration's port
	pp     *pluginPort // what the plugin's last Attach returned; nil while a configuration port is not attached
	err    error       // configuration ports: why pp is nil
	// refused says why the plugin's last answer for this attached object (a replay) was
	// refused and detached: the object is in error until an answer is accepted.
	refused string
}

func newAttacher(plugins Plugins, log *slog.Logger) *attacher {
	return &attacher{plugins: plugins, log: log, ports: map[string]*attachment{}, attaching: map[string]int{},
		unreplayed: map[string][]attachment{}, reserved: map[string]string{}}
}

// register records the attachment of an API port (pp nil: the port is not a plugin's, and an
// API entry of that name goes).
func (a *attacher) register(name, bridge string, spec model.Port, pp *pluginPort) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if pp == nil {
		if cur := a.ports[name]; cur != nil && cur.origin == model.OriginAPI {
			delete(a.ports, name)
		}
		return
	}
	a.ports[name] = &attachment{origin: model.OriginAPI, bridge: bridge, spec: spec, pp: pp}
}

// unregister removes the API port name and returns its plugin's attachment (nil if none).
func (a *attacher) unregister(name string) *pluginPort {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.ports[name]
	if cur == nil || cur.origin != model.OriginAPI {
		return nil
	}
	delete(a.ports, name)
	return cur.pp
}

// pluginOf returns the plugin's attachment of port name, whatever its origin (nil: none).
func (a *attacher) pluginOf(name string) *pluginPort {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.ports[name]; cur != nil {
		return cur.pp
	}
	return nil
}

// begin counts an ApplyPort call of port name that is about to call its plugin's Attach;
// the returned end, called once its write is over, uncounts it.
func (a *attacher) begin(name string) (end func()) {
	a.mu.Lock()
	a.attaching[name]++
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.attaching[name]--; a.attaching[name] <= 0 {
			delete(a.attaching, name)
		}
		a.releaseLocked(name)
	}
}

// replayRequests returns the attached ports of plugin, both origins, sorted by name, each
// with the State its last Attach returned (the host's replay after the plugin (re)starts).
func (a *attacher) replayRequests(plugin string) []api.PortRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []api.PortRequest
	for _, name := range slices.Sorted(maps.Keys(a.ports)) {
		if at := a.ports[name]; at.pp != nil && at.pp.Plugin == plugin {
			out = append(out, replayRequest(at.bridge, at.spec, at.pp))
		}
	}
	return out
}

// apiObjects returns the status keys of plugin's API ports and their interfaces, with their
// bridges (the statuses to publish again when the plugin's state changes).
func (a *attacher) apiObjects(plugin string) []model.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []model.Status
	for name, at := range a.ports {
		if at.origin != model.OriginAPI || at.pp == nil || at.pp.Plugin != plugin {
			continue
		}
		out = append(out, objectStatuses(name, at.bridge, at.pp)...)
	}
	return out
}

// ---- the configuration's ports ----

// syncConfig makes the configuration's entries follow des: new plugin-typed ports are added
// unattached, removed or changed ones are returned for detaching (their rows leave the
// desired state at once). An API port of the same name keeps its entry.
func (a *attacher) syncConfig(des config.DesiredState) (gone []attachment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	for _, b := range des.Bridges {
		for _, p := range b.Ports {
			if !isPluginTyped(p) {
				continue
			}
			seen[p.Name] = true
			cur := a.ports[p.Name]
			if cur != nil && (cur.origin == model.OriginAPI || cur.bridge == b.Name && samePort(cur.spec, p)) {
				continue
			}
			if cur != nil && cur.pp != nil {
				gone = append(gone, *cur)
			}
			a.ports[p.Name] = &attachment{origin: model.OriginConfig, bridge: b.Name, spec: p,
				err: fmt.Errorf("waiting for the plugin that provides type %q", pluginTypeOf(p))}
		}
	}
	for name, cur := range a.ports {
		if cur.origin == model.OriginConfig && !seen[name] {
			delete(a.ports, name)
			if cur.pp != nil {
				gone = append(gone, *cur)
			}
		}
	}
	return gone
}

// adoptConfig takes, for the configuration's plugin-typed ports not attached yet, the
// attachment a previous run stored in their rows (same request, same bridge), so a restarted
// daemon keeps writing them while the plugins start.
func (a *attacher) adoptConfig(owned []ovsdb.OwnedRow) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range owned {
		if o.Table != "Port" || o.Tags.Get(OriginKey) != "" || o.Tags.Get(PluginKey) == "" {
			continue
		}
		cur := a.ports[o.Name]
		if cur == nil || cur.origin != model.OriginConfig || cur.pp != nil {
			continue
		}
		var sp storedPort
		if err := json.Unmarshal([]byte(o.Tags.Get(SpecKey)), &sp); err != nil || sp.Plugin == nil ||
			sp.Bridge != cur.bridge || !samePort(sp.Port, cur.spec) {
			continue
		}
		cur.pp, cur.err = sp.Plugin, nil
	}
}

// withConfigShapes returns des with each plugin-typed port of the configuration replaced by
// its plugin's shape, or left out while it is not attached.
func (a *attacher) withConfigShapes(des config.DesiredState) config.DesiredState {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := des
	out.Bridges = make([]model.Bridge, len(des.Bridges))
	more := map[string][]model.Port{} // the objects' other ports, by bridge
	var created []model.Bridge        // the bridges the objects created
	for i, b := range des.Bridges {
		nb := b
		nb.Ports = nil
		for _, p := range b.Ports {
			at := a.ports[p.Name]
			switch {
			case at == nil || at.origin != model.OriginConfig:
				nb.Ports = append(nb.Ports, p)
			case at.pp != nil:
				nb.Ports = append(nb.Ports, storedPort{Bridge: at.bridge, Port: at.spec, Plugin: at.pp}.configTagged())
				ports, bridges := at.pp.objectRows(p.Name)
				for _, mp := range ports {
					more[mp.Bridge] = append(more[mp.Bridge], mp.Port)
				}
				created = append(created, bridges...)
			}
		}
		out.Bridges[i] = nb
	}
	for i := range out.Bridges {
		out.Bridges[i].Ports = append(out.Bridges[i].Ports, more[out.Bridges[i].Name]...)
	}
	for _, b := range created {
		b.Ports = more[b.Name]
		out.Bridges = append(out.Bridges, b)
	}
	return out
}

// attachConfig attaches, through their plugins, the configuration's plugin-typed ports that
// are not attached yet (replaying the stored state of adopted ones is the host's job) and
// detaches gone ones. It reports whether the desired state changed. Failures stay in each
// port's status.
func (a *attacher) attachConfig(ctx context.Context, gone []attachment) (changed bool) {
	for _, g := range gone {
		a.detach(g.bridge, g.spec, g.pp)
	}
	if a.plugins == nil {
		return len(gone) > 0
	}
	a.mu.Lock()
	var todo []*attachment
	for _, name := range slices.Sorted(maps.Keys(a.ports)) {
		if at := a.ports[name]; at.origin == model.OriginConfig && at.pp == nil {
			todo = append(todo, &attachment{origin: model.OriginConfig, bridge: at.bridge, spec: at.spec})
		}
	}
	a.mu.Unlock()
	failed := 0
	for _, c := range todo {
		prov, plugin, typ, ok, err := a.request(c.spec)
		switch {
		case err != nil:
			c.err = err
		case !ok:
			c.err = fmt.Errorf("no configured plugin provides type %q (yet); configure it under plugins: or check `vsctl plugin list`", pluginTypeOf(c.spec))
		default:
			c.pp, _, c.err = a.attach(ctx, c.bridge, c.spec, prov, plugin, typ, nil, nil)
		}
		a.mu.Lock()
		a.releaseLocked(c.spec.Name) // registered below, or detached
		cur := a.ports[c.spec.Name]
		if cur == nil || cur.origin != model.OriginConfig || cur.bridge != c.bridge || !samePort(cur.spec, c.spec) {
			a.mu.Unlock()
			if c.pp != nil { // the configuration changed meanwhile
				a.detach(c.bridge, c.spec, c.pp)
			}
			continue
		}
		cur.pp, cur.err = c.pp, c.err
		a.mu.Unlock()
		if c.err != nil {
			if failed++; failed <= limits.MaxLoggedObjects {
				a.log.Error("configuration port not attached", "port", c.spec.Name, "bridge", c.bridge, "error", c.err)
			}
		} else {
			changed = true
		}
	}
	if failed > limits.MaxLoggedObjects {
		a.log.Error("configuration ports not attached (summary: the first are logged above, `vsctl status` shows each)",
			"ports", failed, "listed", limits.MaxLoggedObjects)
	}
	return changed || len(gone) > 0
}

// isPluginTyped reports whether one of p's interfaces has a type that is not an OVS type:
// with plugins configured, config.Config.Validate leaves such types to the plugins.
func isPluginTyped(p model.Port) bool { return pluginTypeOf(p) != "" }

func pluginTypeOf(p model.Port) string {
	for _, in := range p.Interfaces {
		if !slices.Contains(model.InterfaceTypes, in.Type) {
			return in.Type
		}
	}
	return ""
}
