package vswitchd

import (
	"fmt"

	"github.com/ovsplane/ovsplane/model"
)

// The attacher's bookkeeping of plugin objects: which object holds (or is claiming) a row, the
// refusal of an object's replay, and the statuses of an object's rows and of the
// configuration's ports not attached.

// markRefused records why the answer to a replay of plugin's object was refused (see
// attachment.refused); nil clears it.
func (a *attacher) markRefused(object, plugin string, why error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.ports[object]; cur != nil && cur.pp != nil && cur.pp.Plugin == plugin {
		cur.refused = ""
		if why != nil {
			cur.refused = why.Error()
		}
	}
}

// holderOf returns the first of keys ("kind/name") that a row of an attached object of several
// rows holds, other than object, and that holder ("the plugin object …"); "" when none does.
// Objects of one port are left to the callers' own checks of port names (their rows' names are
// not even computed).
func (a *attacher) holderOf(keys []string, object string) (key, holder string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, k := range keys {
		if o, ok := a.reserved[k]; ok && o != object {
			return k, fmt.Sprintf("the plugin object %q, being attached", o)
		}
	}
	for name, at := range a.ports {
		if name == object || at.pp == nil || len(at.pp.More) == 0 && len(at.pp.Bridges) == 0 {
			continue
		}
		for _, k := range at.pp.names() {
			if want[k] {
				return k, fmt.Sprintf("the plugin object %q (plugin %q)", name, at.pp.Plugin)
			}
		}
	}
	return "", ""
}

// reserve records that object claims keys (its rows), unless another object reserved one of
// them first: that key and its holder are returned then, and nothing is reserved.
func (a *attacher) reserve(object string, keys []string) (key, holder string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		if o, ok := a.reserved[k]; ok && o != object {
			return k, fmt.Sprintf("the plugin object %q, being attached", o)
		}
	}
	for _, k := range keys {
		a.reserved[k] = object
	}
	return "", ""
}

// releaseLocked drops object's reservations. a.mu must be held.
func (a *attacher) releaseLocked(object string) {
	for k, o := range a.reserved {
		if o == object {
			delete(a.reserved, k)
		}
	}
}

// objectStatuses returns the status keys of object's rows, pending: its ports and their
// interfaces, and its bridges.
func objectStatuses(object, bridge string, pp *pluginPort) []model.Status {
	var out []model.Status
	add := func(on string, p model.Port) {
		out = append(out, model.Status{Kind: model.KindPort, Name: p.Name, Bridge: on})
		for _, in := range p.Interfaces {
			out = append(out, model.Status{Kind: model.KindInterface, Name: in.Name, Bridge: on})
		}
	}
	first := pp.Shape
	first.Name = object
	add(bridge, first)
	for _, mp := range pp.More {
		add(mp.Bridge, mp.Port)
	}
	for _, b := range pp.Bridges {
		out = append(out, model.Status{Kind: model.KindBridge, Name: b.Name})
	}
	return out
}

// configUnattached returns the statuses of the configuration's plugin-typed ports that are
// not attached (error, `not attached: <why>`), which the reconciler does not know: they are
// left out of the desired state.
func (a *attacher) configUnattached() []model.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []model.Status
	for name, at := range a.ports {
		if at.origin == model.OriginConfig && at.pp == nil {
			out = append(out, unattachedStatus(name, at))
		}
	}
	return out
}

// unattachedStatus is the status of a configuration port its plugin has not attached.
func unattachedStatus(name string, at *attachment) model.Status {
	why := "waiting for its plugin"
	if at.err != nil {
		why = at.err.Error()
	}
	return model.Status{Kind: model.KindPort, Name: name, Bridge: at.bridge, State: model.StateError, Error: "not attached: " + why}
}
