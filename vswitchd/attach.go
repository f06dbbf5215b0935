package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// detachTimeout bounds the Detach the daemon sends after a port's row is gone (or a write
// failed), which must not depend on the caller's context, often already ended by then.
const detachTimeout = 30 * time.Second

// pluginType reports whether t is an interface type a configured plugin provides (and not one
// of OVS's own types, which always win).
func (a *attacher) pluginType(t string) bool {
	if a.plugins == nil || slices.Contains(model.InterfaceTypes, t) {
		return false
	}
	_, _, ok := a.plugins.PortProvider(t)
	return ok
}

// request returns the provider, plugin name and plugin type of a port whose interface
// type a plugin provides; ok is false for an ordinary port. A plugin's port has exactly one
// interface, named like the port: ErrInvalid otherwise.
func (a *attacher) request(p model.Port) (prov api.PortProvider, plugin, typ string, ok bool, err error) {
	for _, in := range p.Interfaces {
		if !a.pluginType(in.Type) {
			continue
		}
		prov, plugin, _ = a.plugins.PortProvider(in.Type)
		if len(p.Interfaces) != 1 || in.Name != p.Name {
			return nil, "", "", false, fmt.Errorf("%w: port %q: type %q is provided by plugin %q, whose ports have exactly one interface named like the port; give port %q a single interface %q",
				model.ErrInvalid, p.Name, in.Type, plugin, p.Name, p.Name)
		}
		if p.BondMode != "" {
			return nil, "", "", false, fmt.Errorf("%w: port %q: a port of plugin type %q cannot be a bond; remove bond_mode", model.ErrInvalid, p.Name, in.Type)
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
func (a *attacher) attach(ctx context.Context, bridge string, p model.Port, prov api.PortProvider, plugin, typ string, prev *storedPort) (pp *pluginPort, fresh bool, err error) {
	in := p.Interfaces[0]
	req := api.PortRequest{Bridge: bridge, Name: p.Name, Type: typ, Options: in.Options, ExternalIDs: p.ExternalIDs}
	if prev != nil && prev.Plugin != nil {
		if prev.Plugin.Plugin != plugin || !samePort(prev.Port, p) {
			return nil, false, fmt.Errorf("%w: port %q exists with another %s request (plugin %q); delete it first, then apply the new one",
				model.ErrConflict, p.Name, prev.Plugin.Type, prev.Plugin.Plugin)
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
		return nil, false, fmt.Errorf("%w: port %q (type %q of plugin %q): %s", model.ErrInvalid, p.Name, typ, plugin, strings.Join(msgs, "; "))
	}
	att, err := prov.Attach(ctx, req)
	fresh = req.State == nil
	if err != nil {
		a.detachRefused(bridge, p, plugin, typ, fresh, err)
		return nil, false, pluginError(p.Name, err)
	}
	shape, err := shapeOf(bridge, p, plugin, att)
	if err == nil {
		err = desired.ValidatePort(bridge, shape)
		if err != nil {
			err = fmt.Errorf("%w: plugin %q returned an OVS shape for port %q that ovsplaned cannot write: %w", model.ErrFailed, plugin, p.Name, err)
		}
	}
	if err == nil {
		err = checkPortJobs(plugin, p.Name, att.Jobs)
	}
	if err != nil {
		if fresh {
			a.detach(bridge, p, &pluginPort{Plugin: plugin, Type: typ, State: att.State})
		}
		return nil, false, err
	}
	return &pluginPort{Plugin: plugin, Type: typ, State: att.State, Shape: shape.Canonical(), Status: att.Status, Endpoints: att.Endpoints, Jobs: att.Jobs}, fresh, nil
}

// detachRefused detaches a fresh attachment whose answer the host refused (err is an
// *api.RefusedAnswerError: the plugin did its host work, then answered with a shape or state
// that cannot be stored), passing back the refused answer's State, as a shape refused by
// desired.ValidatePort is. A replay (not fresh) keeps its host work: OVSDB still holds the
// port. Any other error — the plugin's own, a transport failure, a timeout — detaches nothing.
func (a *attacher) detachRefused(bridge string, p model.Port, plugin, typ string, fresh bool, err error) {
	var refused *api.RefusedAnswerError
	if !fresh || !errors.As(err, &refused) {
		return
	}
	a.log.Warn("plugin's Attach answer was refused by the host's checks; detaching what it attached",
		"plugin", plugin, "port", p.Name, "bridge", bridge, "fields", refusedFields(refused.Err))
	a.detach(bridge, p, &pluginPort{Plugin: plugin, Type: typ, State: refused.State})
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
func (a *attacher) detach(bridge string, p model.Port, pp *pluginPort) {
	if a.plugins == nil || pp == nil {
		return
	}
	prov, plugin, ok := a.plugins.PortProvider(pp.Type)
	if !ok || plugin != pp.Plugin {
		a.log.Error("cannot detach a plugin port: its plugin no longer provides its type", "port", p.Name, "plugin", pp.Plugin, "type", pp.Type)
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
		a.log.Error("plugin could not detach a deleted port; its host resources may remain", "port", p.Name, "plugin", pp.Plugin, "error", err)
	}
}

// shapeOf turns the plugin's attachment into the one model.Port ovsplaned writes, merging in
// what the request sets at the port level (VLAN tag, trunks, vlan_mode, lacp, other_config,
// external_ids) and the interface's MTU and ofport requests when the plugin left them unset.
func shapeOf(bridge string, p model.Port, plugin string, a api.Attachment) (model.Port, error) {
	bad := func(format string, args ...any) (model.Port, error) {
		return model.Port{}, fmt.Errorf("%w: plugin %q: attachment of port %q: %s", model.ErrFailed, plugin, p.Name, fmt.Sprintf(format, args...))
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
	out := model.Port{Name: op.Name, Tag: op.Tag, Trunks: op.Trunks, BondMode: op.BondMode,
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
		in := model.Interface{Name: oi.Name, Type: oi.Type, Options: oi.Options, MTURequest: oi.MTURequest,
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
		kind = model.ErrInvalid
	case api.FailedPrecondition, api.AlreadyExists:
		kind = model.ErrConflict
	case api.Unavailable, api.DeadlineExceeded:
		kind = model.ErrUnavailable
	case api.Canceled:
		return fmt.Errorf("port %q: %w", port, err) // context.Canceled for the caller
	default:
		kind = model.ErrFailed
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

func (w *wrapped) Error() string { return w.kind.Error() + ": " + w.msg }

func (w *wrapped) Unwrap() []error { return []error{w.kind, w.err} }
