package vswitchd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// PluginKey is the external_ids key naming, on the Port row of a port whose type a plugin
// provides, the plugin that attached it.
const PluginKey = ovsdb.TagPrefix + "plugin"

// dpdkExtraKey is the other_config key whose plugin fragments are appended to the
// configuration's value instead of conflicting with it (see plugins/host.DPDKExtraKey).
const dpdkExtraKey = "dpdk-extra"

// detachTimeout bounds the Detach the daemon sends after a port's row is gone (or a write
// failed), which must not depend on the caller's context, often already ended by then.
const detachTimeout = 30 * time.Second

// pluginPort is the plugin's side of a port whose interface type a plugin provides: what the
// plugin's last Attach returned. It is stored in the port's SpecKey with the request, so a
// restarted daemon (or a restarted plugin, through the host's replay) gets it back.
type pluginPort struct {
	Plugin string `json:"plugin"`
	Type   string `json:"type"`
	// State is the plugin's opaque state (api.Attachment.State).
	State []byte `json:"state,omitempty"`
	// Shape is the OVS port the plugin asked for: what the reconciler writes.
	Shape     config.Port       `json:"shape"`
	Status    string            `json:"status,omitempty"`
	Endpoints map[string]string `json:"endpoints,omitempty"`
}

// storedPort is the JSON kept in a port's SpecKey: the request as the API received it and, for
// a plugin's port type, the plugin's attachment.
type storedPort struct {
	Bridge string      `json:"bridge"`
	Port   config.Port `json:"port"`
	Plugin *pluginPort `json:"plugin,omitempty"`
}

// tagged returns the port the reconciler ensures for sp: the request, or the plugin's shape,
// with the API tags (and PluginKey) in its external_ids.
func (sp storedPort) tagged() config.Port {
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

// pluginType reports whether t is an interface type a configured plugin provides (and not one
// of OVS's own types, which always win).
func (d *Daemon) pluginType(t string) bool {
	if d.opts.Plugins == nil || slices.Contains(config.InterfaceTypes, t) {
		return false
	}
	_, _, ok := d.opts.Plugins.PortProvider(t)
	return ok
}

// pluginRequest returns the provider, plugin name and plugin type of a port whose interface
// type a plugin provides; ok is false for an ordinary port. A plugin's port has exactly one
// interface, named like the port: ErrInvalid otherwise.
func (d *Daemon) pluginRequest(p config.Port) (prov api.PortProvider, plugin, typ string, ok bool, err error) {
	for _, in := range p.Interfaces {
		if !d.pluginType(in.Type) {
			continue
		}
		prov, plugin, _ = d.opts.Plugins.PortProvider(in.Type)
		if len(p.Interfaces) != 1 || in.Name != p.Name {
			return nil, "", "", false, fmt.Errorf("%w: port %q: type %q is provided by plugin %q, whose ports have exactly one interface named like the port; give port %q a single interface %q",
				ErrInvalid, p.Name, in.Type, plugin, p.Name, p.Name)
		}
		if p.BondMode != "" {
			return nil, "", "", false, fmt.Errorf("%w: port %q: a port of plugin type %q cannot be a bond; remove bond_mode", ErrInvalid, p.Name, in.Type)
		}
		return prov, plugin, in.Type, true, nil
	}
	return nil, "", "", false, nil
}

// attach validates and attaches a port of a plugin's type and returns the plugin's part of
// its stored spec. prev is the port's current stored spec, if any: the same request is a
// replay (the plugin adopts its State), a different one is refused (delete the port first).
// fresh reports whether this call created the plugin's side (so a failed write must detach
// it).
func (d *Daemon) attach(ctx context.Context, bridge string, p config.Port, prov api.PortProvider, plugin, typ string, prev *storedPort) (pp *pluginPort, fresh bool, err error) {
	in := p.Interfaces[0]
	req := api.PortRequest{Bridge: bridge, Name: p.Name, Type: typ, Options: in.Options, ExternalIDs: p.ExternalIDs}
	if prev != nil && prev.Plugin != nil {
		if prev.Plugin.Plugin != plugin || !samePort(prev.Port, p) {
			return nil, false, fmt.Errorf("%w: port %q exists with another %s request (plugin %q); delete it first, then apply the new one",
				ErrConflict, p.Name, prev.Plugin.Type, prev.Plugin.Plugin)
		}
		req.State = prev.Plugin.State
	}
	problems, err := prov.Validate(ctx, req)
	if err != nil {
		return nil, false, pluginError(p.Name, err)
	}
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems))
		for _, pr := range problems {
			msgs = append(msgs, "options:"+strings.TrimPrefix(pr.Field, "options.")+": "+pr.Message)
		}
		return nil, false, fmt.Errorf("%w: port %q (type %q of plugin %q): %s", ErrInvalid, p.Name, typ, plugin, strings.Join(msgs, "; "))
	}
	a, err := prov.Attach(ctx, req)
	fresh = req.State == nil
	if err != nil {
		d.detachRefused(bridge, p, plugin, typ, fresh, err)
		return nil, false, pluginError(p.Name, err)
	}
	shape, err := shapeOf(bridge, p, plugin, a)
	if err == nil {
		err = config.ValidatePort(bridge, shape)
		if err != nil {
			err = fmt.Errorf("%w: plugin %q returned an OVS shape for port %q that ovsplaned cannot write: %w", ErrFailed, plugin, p.Name, err)
		}
	}
	if err != nil {
		if fresh {
			d.detach(bridge, p, &pluginPort{Plugin: plugin, Type: typ, State: a.State})
		}
		return nil, false, err
	}
	return &pluginPort{Plugin: plugin, Type: typ, State: a.State, Shape: canonicalPort(shape), Status: a.Status, Endpoints: a.Endpoints}, fresh, nil
}

// detachRefused detaches a fresh attachment whose answer the host refused (err is an
// *api.RefusedAnswerError: the plugin did its host work, then answered with a shape or state
// that cannot be stored), passing back the refused answer's State, as a shape refused by
// config.ValidatePort is. A replay (not fresh) keeps its host work: OVSDB still holds the
// port. Any other error — the plugin's own, a transport failure, a timeout — detaches nothing.
func (d *Daemon) detachRefused(bridge string, p config.Port, plugin, typ string, fresh bool, err error) {
	var refused *api.RefusedAnswerError
	if !fresh || !errors.As(err, &refused) {
		return
	}
	d.log.Warn("plugin's Attach answer was refused by the host's checks; detaching what it attached",
		"plugin", plugin, "port", p.Name, "bridge", bridge, "fields", refusedFields(refused.Err))
	d.detach(bridge, p, &pluginPort{Plugin: plugin, Type: typ, State: refused.State})
}

// refusedFields lists the fields an answer was refused for (the Problems of its *api.Error).
func refusedFields(err error) []string {
	var e *api.Error
	if !errors.As(err, &e) {
		return nil
	}
	fields := make([]string, 0, len(e.Problems))
	for _, pr := range e.Problems {
		fields = append(fields, pr.Field)
	}
	return fields
}

// detach asks the port's plugin to undo its host work, with its own deadline; failures are
// logged (the plugin's List shows what it still holds).
func (d *Daemon) detach(bridge string, p config.Port, pp *pluginPort) {
	if d.opts.Plugins == nil || pp == nil {
		return
	}
	prov, plugin, ok := d.opts.Plugins.PortProvider(pp.Type)
	if !ok || plugin != pp.Plugin {
		d.log.Error("cannot detach a plugin port: its plugin no longer provides its type", "port", p.Name, "plugin", pp.Plugin, "type", pp.Type)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
	defer cancel()
	var opts map[string]string
	if len(p.Interfaces) > 0 {
		opts = p.Interfaces[0].Options
	}
	req := api.PortRequest{Bridge: bridge, Name: p.Name, Type: pp.Type, Options: opts, ExternalIDs: p.ExternalIDs, State: pp.State}
	if err := prov.Detach(ctx, req); err != nil {
		d.log.Error("plugin could not detach a deleted port; its host resources may remain", "port", p.Name, "plugin", pp.Plugin, "error", err)
	}
}

// shapeOf turns the plugin's attachment into the one config.Port ovsplaned writes, merging in
// what the request sets at the port level (VLAN tag, trunks, vlan_mode, lacp, other_config,
// external_ids) and the interface's MTU and ofport requests when the plugin left them unset.
func shapeOf(bridge string, p config.Port, plugin string, a api.Attachment) (config.Port, error) {
	bad := func(format string, args ...any) (config.Port, error) {
		return config.Port{}, fmt.Errorf("%w: plugin %q: attachment of port %q: %s", ErrFailed, plugin, p.Name, fmt.Sprintf(format, args...))
	}
	if len(a.Ports) != 1 {
		return bad("%d OVS ports; ovsplaned writes exactly one port per plugin port for now", len(a.Ports))
	}
	op := a.Ports[0]
	switch {
	case op.Bridge != "" && op.Bridge != bridge:
		return bad("it is on bridge %q, not the request's %q", op.Bridge, bridge)
	case op.Name != p.Name:
		return bad("it is named %q, not %q like the request", op.Name, p.Name)
	case op.VLANMode != "" || op.LACP != "":
		return bad("vlan_mode and lacp are not supported on plugin ports")
	}
	out := config.Port{Name: op.Name, Tag: op.Tag, Trunks: op.Trunks, BondMode: op.BondMode,
		VLANMode: p.VLANMode, LACP: p.LACP, // the request's: a plugin cannot set them
		OtherConfig: merged(p.OtherConfig, op.OtherConfig), ExternalIDs: merged(p.ExternalIDs, op.ExternalIDs)}
	if out.Tag == nil {
		out.Tag = p.Tag
	}
	if len(out.Trunks) == 0 {
		out.Trunks = p.Trunks
	}
	req := p.Interfaces[0]
	for _, oi := range op.Interfaces {
		in := config.Interface{Name: oi.Name, Type: oi.Type, Options: oi.Options, MTURequest: oi.MTURequest,
			OFPortRequest: oi.OfportRequest, OtherConfig: oi.OtherConfig, ExternalIDs: oi.ExternalIDs}
		if oi.Name == req.Name {
			in.OtherConfig = merged(req.OtherConfig, oi.OtherConfig)
			in.ExternalIDs = merged(req.ExternalIDs, oi.ExternalIDs)
			if in.MTURequest == nil {
				in.MTURequest = req.MTURequest
			}
			if in.OFPortRequest == nil {
				in.OFPortRequest = req.OFPortRequest
			}
		}
		out.Interfaces = append(out.Interfaces, in)
	}
	return out, nil
}

// merged returns base overlaid with over (over wins); nil when both are empty.
func merged(base, over map[string]string) map[string]string {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// pluginError maps an error of a plugin call to the Daemon's error kinds; the message (which
// the host prefixes with the plugin's name and call) is kept.
func pluginError(port string, err error) error {
	var kind error
	switch api.CodeOf(err) {
	case api.InvalidArgument, api.NotFound:
		kind = ErrInvalid
	case api.FailedPrecondition, api.AlreadyExists:
		kind = ErrConflict
	case api.Unavailable, api.DeadlineExceeded:
		kind = ErrUnavailable
	case api.Canceled:
		return fmt.Errorf("port %q: %w", port, err) // context.Canceled for the caller
	default:
		kind = ErrFailed
	}
	msg := err.Error()
	if e, ok := err.(*api.Error); ok && e.Message != "" { // the kind already says the code
		msg = e.Message
	}
	if !strings.Contains(msg, port) {
		msg = fmt.Sprintf("port %q: %s", port, msg)
	}
	return &wrapped{kind: kind, msg: msg, err: err}
}

// wrapped is an error of one of the Daemon's kinds with its own message, wrapping the cause.
type wrapped struct {
	kind error
	msg  string
	err  error
}

func (w *wrapped) Error() string   { return w.kind.Error() + ": " + w.msg }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.err} }

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
func (d *Daemon) PluginReplayed(plugin string, results []ReplayResult) {
	for _, r := range results {
		if r.Err != nil {
			d.log.Error("plugin could not re-attach a port after its restart", "plugin", plugin, "port", r.Port, "error", r.Err)
			continue
		}
		d.mu.Lock()
		p, ok := d.ports[r.Port]
		d.mu.Unlock()
		if !ok || p.plugin == nil {
			continue
		}
		shape, err := shapeOf(p.bridge, p.spec, plugin, r.Attachment)
		if err != nil || !samePort(canonicalPort(shape), p.plugin.Shape) {
			d.log.Warn("plugin re-attached a port with another OVS shape; the stored one stays (apply the port again to change it)", "plugin", plugin, "port", r.Port, "error", err)
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

// ReplayResult is the outcome of a plugin's re-attachment of one of its ports.
type ReplayResult struct {
	Port       string
	Attachment api.Attachment
	Err        error
}

// pluginStatus overrides an object's status with its plugin's health: while the plugin of a
// port is failed (circuit breaker open) or refused, the port and its interfaces are in error,
// naming the plugin and why.
func (d *Daemon) pluginStatus(s reconcile.Status) reconcile.Status {
	return d.pluginStatusIn(s, d.pluginInfos())
}

// pluginInfos returns the plugin host's view of every plugin, read once: callers overriding
// many statuses pass it to pluginStatusIn instead of asking the host per status.
func (d *Daemon) pluginInfos() func() []PluginInfo {
	var infos []PluginInfo
	read := false
	return func() []PluginInfo {
		if !read && d.opts.Plugins != nil {
			infos, read = d.opts.Plugins.Plugins(), true
		}
		return infos
	}
}

// pluginStatusIn is pluginStatus with the plugins' states from infos (read on first use).
func (d *Daemon) pluginStatusIn(s reconcile.Status, infos func() []PluginInfo) reconcile.Status {
	if d.opts.Plugins == nil || s.Kind == reconcile.KindBridge {
		return s
	}
	d.mu.Lock()
	var pp *pluginPort
	if p, ok := d.ports[s.Name]; ok {
		pp = p.plugin
	} else if c, ok := d.cfgPlugins[s.Name]; ok {
		if c.pp == nil {
			d.mu.Unlock()
			s.State, s.Ofport, s.Bridge = reconcile.Error, 0, c.bridge
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
			s.State, s.Ofport = reconcile.Error, 0
			s.Error = fmt.Sprintf("plugin %q, which provides type %q, is %s: %s", pi.Name, pp.Type, pi.State, pi.Reason)
		}
		return s
	}
	s.State, s.Ofport = reconcile.Error, 0
	s.Error = fmt.Sprintf("plugin %q, which attached this port, is no longer configured; add it back or delete the port", pp.Plugin)
	return s
}

// samePort reports whether two canonical ports are the same spec.
func samePort(a, b config.Port) bool {
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
	var changed []reconcile.Status
	type obj struct {
		kind         reconcile.Kind
		name, bridge string
	}
	var objs []obj
	for name, p := range d.ports {
		if p.plugin != nil && p.plugin.Plugin == plugin {
			objs = append(objs, obj{reconcile.KindPort, name, p.bridge})
			for _, in := range p.plugin.Shape.Interfaces {
				objs = append(objs, obj{reconcile.KindInterface, in.Name, p.bridge})
			}
		}
	}
	d.mu.Unlock()
	if len(objs) == 0 {
		return
	}
	for _, o := range objs {
		changed = append(changed, d.status(string(o.kind)+"/"+o.name, o.kind, o.name, o.bridge))
	}
	d.publish(changed)
}

// desired returns the desired state the reconciler works on: the configuration's, with the
// plugins' other_config contribution added (the configuration's own keys win).
func (d *Daemon) desired() config.DesiredState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.withCfgPluginsLocked(d.cfgDes)
	if len(d.pluginOC) > 0 {
		out.OtherConfig = merged(d.pluginOC, d.cfgDes.OtherConfig)
		if v, ok := d.pluginOC[dpdkExtraKey]; ok {
			// The plugins' dpdk-extra already starts with the configuration's own.
			out.OtherConfig[dpdkExtraKey] = v
		}
	}
	return out
}

// RefreshPluginConfig asks the plugins for their other_config contributions again and makes
// the merge part of the desired state; the conflicts are logged and reported by Health. It is
// called after a plugin (re)starts and after a reload.
func (d *Daemon) RefreshPluginConfig(ctx context.Context) {
	if d.opts.Plugins == nil {
		return
	}
	d.mu.Lock()
	own := maps.Clone(d.cfgDes.OtherConfig)
	d.mu.Unlock()
	oc, conflicts := d.opts.Plugins.GlobalConfig(ctx, own)
	msgs := make([]string, 0, len(conflicts))
	for _, c := range conflicts {
		msgs = append(msgs, c.Error())
	}
	d.mu.Lock()
	changed := !maps.Equal(oc, d.pluginOC) || !slices.Equal(msgs, d.pluginConflicts) || !d.pluginOCRead
	d.pluginOCRead = true
	d.pluginOC, d.pluginConflicts = oc, msgs
	d.mu.Unlock()
	if !changed {
		return
	}
	for _, m := range msgs {
		d.log.Error("plugins disagree on a global setting; none of their values is applied", "conflict", m)
	}
	if len(oc) > 0 {
		d.log.Info("plugins' other_config contribution", "keys", slices.Sorted(maps.Keys(oc)))
	}
	d.rec.Update(d.desired())
}

// replayRequest is the request that re-attaches a port of plugin type from its stored spec
// and the state its plugin's last Attach returned.
func replayRequest(bridge string, spec config.Port, pp *pluginPort) api.PortRequest {
	return api.PortRequest{Bridge: bridge, Name: spec.Name, Type: pp.Type, Options: maps.Clone(spec.Interfaces[0].Options),
		ExternalIDs: maps.Clone(spec.ExternalIDs), State: slices.Clone(pp.State)}
}
