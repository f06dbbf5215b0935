package vswitchd

import (
	"context"
	"encoding/json"
	"errors"
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
	// Shape is the object's first OVS port (named like the object, on the request's bridge):
	// what the reconciler writes for it.
	Shape model.Port `json:"shape"`
	// More are the object's other OVS ports and Bridges the bridges it created (see
	// shapeOf): written and removed with Shape, in the same transaction.
	More      []placedPort      `json:"more,omitempty"`
	Bridges   []model.Bridge    `json:"bridges,omitempty"`
	Status    string            `json:"status,omitempty"`
	Endpoints map[string]string `json:"endpoints,omitempty"`
	// Jobs are the port's data-path jobs (api.Attachment.Jobs), run while its row exists.
	Jobs []api.Job `json:"jobs,omitempty"`
}

// withShape returns pp with the object's shape sh.
func (pp pluginPort) withShape(sh objectShape) *pluginPort {
	pp.Shape, pp.More, pp.Bridges = sh.first, sh.more, sh.bridges
	return &pp
}

// sameShape reports whether two objects' shapes are the same.
func sameShape(a, b *pluginPort) bool {
	ja, _ := json.Marshal([]any{a.Shape, a.More, a.Bridges}) // plain data: cannot fail
	jb, _ := json.Marshal([]any{b.Shape, b.More, b.Bridges})
	return string(ja) == string(jb)
}

// objectRows returns the rows object owns besides its first port, tagged with the plugin and
// the object: its other ports (with their bridges) and the bridges it created.
func (pp *pluginPort) objectRows(object string) ([]placedPort, []model.Bridge) {
	more := make([]placedPort, 0, len(pp.More))
	for _, mp := range pp.More {
		mp.Port.ExternalIDs = withObject(mp.Port.ExternalIDs, pp.Plugin, object)
		more = append(more, mp)
	}
	bridges := make([]model.Bridge, 0, len(pp.Bridges))
	for _, b := range pp.Bridges {
		b.ExternalIDs = withObject(b.ExternalIDs, pp.Plugin, object)
		bridges = append(bridges, b)
	}
	return more, bridges
}

// withObject returns a copy of m with PluginKey and ObjectKey.
func withObject(m map[string]string, plugin, object string) map[string]string {
	out := make(map[string]string, len(m)+2)
	maps.Copy(out, m)
	out[PluginKey], out[ObjectKey] = plugin, object
	return out
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
	return sp.taggedWith(string(spec))
}

// taggedWith is tagged with spec, the JSON of sp already at hand (a row's stored spec, which
// may be an older but equivalent form), in place of marshalling sp again.
func (sp storedPort) taggedWith(spec string) model.Port {
	p := sp.Port
	if sp.Plugin != nil {
		p = sp.Plugin.Shape
	}
	p.ExternalIDs = withTags(p.ExternalIDs, spec)
	if sp.Plugin != nil {
		p.ExternalIDs[PluginKey], p.ExternalIDs[ObjectKey] = sp.Plugin.Plugin, sp.Port.Name
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
	p.ExternalIDs[PluginKey], p.ExternalIDs[ObjectKey] = sp.Plugin.Plugin, sp.Port.Name
	return p
}

// PluginPorts returns the ports attached through plugin, as the host replays them after the
// plugin (re)starts: each request with the State its last Attach returned. It is the host's
// Options.Owned.
func (d *Daemon) PluginPorts(_ context.Context, plugin string) ([]api.PortRequest, error) {
	return d.att.replayRequests(plugin), nil
}

// PluginReplayed is the host's Options.Replayed: it checks each replay's answer (see
// attacher.replayed).
func (d *Daemon) PluginReplayed(plugin string, results []api.ReplayResult) {
	d.att.replayed(plugin, results)
}

// replayed checks the answers of plugin's replay, objects of both origins. A failed replay is
// logged and the object stays as stored. A refused answer (the host's checks, or a shape
// shapeOf refuses) is logged and queued for Detach with the refused answer's State, which
// detachUnreplayed sends once the plugin runs; the object's rows stay as stored and its status
// is in error until an answer is accepted. An accepted answer with another shape than the
// stored one is logged: the stored shape stays (OVSDB is not changed behind the operator's
// back) until the object is applied again.
func (a *attacher) replayed(plugin string, results []api.ReplayResult) {
	for _, r := range results {
		a.mu.Lock()
		at, ok := a.ports[r.Request.Name]
		var cur attachment
		if ok {
			cur = *at
		}
		a.mu.Unlock()
		if !ok || cur.pp == nil || cur.pp.Plugin != plugin {
			continue
		}
		var refused *api.RefusedAnswerError
		if errors.As(r.Err, &refused) {
			a.queueUnreplayed(plugin, cur, refused.State, r.Err)
			continue
		}
		if r.Err != nil {
			a.log.Error("plugin could not re-attach a port after its restart", "plugin", plugin, "port", r.Request.Name, "error", r.Err)
			continue
		}
		sh, err := shapeOf(cur.bridge, cur.spec, plugin, r.Attachment)
		if err != nil {
			a.queueUnreplayed(plugin, cur, r.Attachment.State, err)
			continue
		}
		a.markRefused(r.Request.Name, plugin, nil)
		if got := cur.pp.withShape(sh); !sameShape(got, cur.pp) {
			a.log.Warn("plugin re-attached an object with another OVS shape; the stored one stays (apply the object again to take the new one)",
				"plugin", plugin, "port", r.Request.Name, "stored", cur.pp.names(), "answered", got.names())
		}
	}
}

// queueUnreplayed records a refused replay answer: logged now, detached by detachUnreplayed.
func (a *attacher) queueUnreplayed(plugin string, cur attachment, state []byte, why error) {
	a.log.Warn("plugin's replay answer refused; what it attached is detached once it runs, the object's rows stay as stored",
		"plugin", plugin, "port", cur.spec.Name, "bridge", cur.bridge, "why", why.Error(), "fields", refusedFields(why))
	a.markRefused(cur.spec.Name, plugin, why)
	pp := &pluginPort{Plugin: plugin, Type: cur.pp.Type, State: state}
	a.mu.Lock()
	a.unreplayed[plugin] = append(a.unreplayed[plugin], attachment{origin: cur.origin, bridge: cur.bridge, spec: cur.spec, pp: pp})
	a.mu.Unlock()
}

// detachUnreplayed detaches the host work of plugin's refused replay answers (see replayed).
func (a *attacher) detachUnreplayed(plugin string) {
	a.mu.Lock()
	todo := a.unreplayed[plugin]
	delete(a.unreplayed, plugin)
	a.mu.Unlock()
	for _, u := range todo {
		a.detach(u.bridge, u.spec, u.pp)
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
		st := unattachedStatus(s.Name, &cur)
		st.Kind = s.Kind
		return st
	}
	pp := cur.pp
	if pp == nil {
		return s
	}
	if cur.refused != "" {
		s.State, s.Ofport = model.StateError, 0
		s.Error = fmt.Sprintf("plugin %q's last answer for this object was refused, and what it attached was detached: %s; its rows stay as stored: fix the plugin (the object is replayed at its next start) or delete the object", pp.Plugin, cur.refused)
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
				d.att.detachUnreplayed(plugin)
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
	// The API objects, and the configuration's ports not attached (whose status only the
	// attacher knows).
	objs := append(d.att.apiObjects(plugin), d.att.configUnattached()...)
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
		ExternalIDs: maps.Clone(spec.ExternalIDs), State: slices.Clone(pp.State), Replay: true}
}
