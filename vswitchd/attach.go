package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"maps"
	"slices"
	"strings"
	"time"

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
// its stored spec: the plugin object, with its shape (see shapeOf). prev is the port's current
// stored spec, if any: the same request is a replay (the plugin adopts its State, Replay set),
// a different one is refused (delete the port first). fresh reports whether this call created
// the plugin's side (so a failed write must detach it). Every answer refused — by the host's
// checks, by shapeOf, or because the shape names rows another object or someone else holds —
// is detached at once with the refused answer's State and logged (see refuse). failed, if not
// nil, is called before that clean-up (it withdraws the port's announcement to the batcher; an
// error returned without clean-up leaves that to the caller).
func (a *attacher) attach(ctx context.Context, bridge string, p model.Port, prov api.PortProvider, plugin, typ string, prev *storedPort, failed func()) (pp *pluginPort, fresh bool, err error) {
	in := p.Interfaces[0]
	req := api.PortRequest{Bridge: bridge, Name: p.Name, Type: typ, Options: in.Options, ExternalIDs: p.ExternalIDs}
	if prev != nil && prev.Plugin != nil {
		if prev.Plugin.Plugin != plugin || !samePort(prev.Port, p) {
			return nil, false, fmt.Errorf("%w: port %q exists with another %s request (plugin %q); delete it first, then apply the new one",
				model.ErrConflict, p.Name, prev.Plugin.Type, prev.Plugin.Plugin)
		}
		req.State, req.Replay = prev.Plugin.State, true
	}
	t0 := time.Now()
	problems, err := prov.Validate(ctx, req)
	a.log.Debug("plugin call", "call", "validate", "plugin", plugin, "port", p.Name, "took", time.Since(t0), "error", err)
	if err != nil {
		return nil, false, pluginError(p.Name, err)
	}
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems))
		for _, pr := range problems {
			field := pr.Field // options.mtu is the user's options:mtu; name and type stay as they are
			if key, ok := strings.CutPrefix(field, "options."); ok {
				field = "options:" + key
			}
			msgs = append(msgs, field+": "+pr.Message)
		}
		return nil, false, fmt.Errorf("%w: port %q (type %q of plugin %q): %s", model.ErrInvalid, p.Name, typ, plugin, strings.Join(msgs, "; "))
	}
	t0 = time.Now()
	att, err := prov.Attach(ctx, req)
	a.log.Debug("plugin call", "call", "attach", "plugin", plugin, "port", p.Name, "took", time.Since(t0), "error", err)
	fresh = req.State == nil
	if err != nil {
		var refused *api.RefusedAnswerError
		if errors.As(err, &refused) { // the plugin did its host work, then answered what cannot be stored
			if failed != nil {
				failed()
			}
			a.refuse(bridge, p, plugin, typ, refused.State, req.Replay, err)
		}
		return nil, false, pluginError(p.Name, err)
	}
	pp = &pluginPort{Plugin: plugin, Type: typ, State: att.State, Status: att.Status, Endpoints: att.Endpoints}
	sh, err := shapeOf(bridge, p, plugin, att)
	if err == nil {
		pp = pp.withShape(sh)
		err = a.claim(bridge, p.Name, pp)
	}
	if err == nil {
		err = checkPortJobs(plugin, p.Name, att.Jobs)
	}
	if err != nil {
		if failed != nil {
			failed()
		}
		a.refuse(bridge, p, plugin, typ, att.State, req.Replay, err)
		return nil, false, err
	}
	pp.Jobs = att.Jobs
	return pp, fresh, nil
}

// refuse detaches the host work of an Attach answer that was refused (why), passing back the
// refused answer's State, and logs it for the operator naming the plugin, the port and why.
// A refused replay (the object's rows stay in OVSDB as stored) also puts the object in error
// until its plugin answers it again acceptably.
func (a *attacher) refuse(bridge string, p model.Port, plugin, typ string, state []byte, replay bool, why error) {
	a.log.Warn("plugin's Attach answer refused; detaching what it attached",
		"plugin", plugin, "port", p.Name, "bridge", bridge, "replay", replay, "why", why.Error(), "fields", refusedFields(why))
	if replay {
		a.markRefused(p.Name, plugin, why)
	}
	a.detach(bridge, p, &pluginPort{Plugin: plugin, Type: typ, State: state})
}

// claim refuses an object's shape that names a row ovsplane must not write: one another
// managed object holds (Options taken, the object store's check), or an interface, port or
// bridge someone else created (its interface found in OVSDB without ovsplane's owner tag).
func (a *attacher) claim(bridge, object string, pp *pluginPort) error {
	if a.taken != nil {
		if err := a.taken(bridge, object, pp); err != nil {
			return err
		}
	}
	if a.lookup != nil {
		if err := a.notForeign(object, pp); err != nil {
			return err
		}
	}
	if len(pp.More) == 0 && len(pp.Bridges) == 0 {
		return nil
	}
	// Reserved until the end of the write (attacher.begin's end, or attachConfig), so two
	// objects being attached at once cannot both take a name.
	if k, holder := a.reserve(object, pp.names()); holder != "" {
		return fmt.Errorf("%w: plugin %q: object %q: its shape names %s, which is %s; the plugin must pick names no other object holds",
			model.ErrConflict, pp.Plugin, object, k, holder)
	}
	return nil
}

// notForeign refuses a shape naming an interface (of a port, or a bridge's own) that exists
// in OVSDB without ovsplane's owner tag.
func (a *attacher) notForeign(object string, pp *pluginPort) error {
	for _, k := range pp.names() {
		name, ok := strings.CutPrefix(k, "interface/")
		if !ok {
			continue
		}
		if st, err := a.lookup(name); err == nil && !st.Owned {
			return fmt.Errorf("%w: plugin %q: object %q: its shape names %q, which exists in OVSDB and was not created by ovsplane (a port, interface or bridge of someone else); ovsplane never changes such rows: the plugin must pick another name, or remove that row by hand",
				model.ErrConflict, pp.Plugin, object, name)
		}
	}
	return nil
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
	t0 := time.Now()
	err := prov.Detach(ctx, req)
	a.log.Debug("plugin call", "call", "detach", "plugin", pp.Plugin, "port", p.Name, "took", time.Since(t0), "error", err)
	if err != nil {
		a.log.Error("plugin could not detach a deleted port; its host resources may remain", "port", p.Name, "plugin", pp.Plugin, "error", err)
	}
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
