package vswitchd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// A plugin object is one port of a plugin's type as the request names it; its plugin's
// Attach may answer with several OVS ports and the bridges they need. Everything an object
// owns is written and removed in one OVSDB transaction, and every row of it carries PluginKey
// (the plugin) and ObjectKey (the object), so a restarted daemon knows it and the reconciler
// treats it as one unit (reconcile.UnitKey).

// The bounds of an object's shape (docs/plugins.md, contract reference): a plugin asking for
// more is refused and detached.
const (
	MaxObjectPorts   = 16 // OVS ports of one object, its first included
	MaxObjectBridges = 4  // bridges one object creates (Attachment.Bridges)
)

// ObjectKey is the external_ids key naming, on every Port and Bridge row a plugin object owns,
// the object (the name of the request's port). It is the reconciler's unit key.
const ObjectKey = reconcile.UnitKey

// placedPort is one OVS port of an object with the bridge that holds it.
type placedPort struct {
	Bridge string     `json:"bridge"`
	Port   model.Port `json:"port"`
}

// objectShape is what ovsplaned writes for one object: its first port (named like the
// object, on the request's bridge), its other ports and the bridges it creates.
type objectShape struct {
	first   model.Port
	more    []placedPort
	bridges []model.Bridge
}

// shapeOf turns the plugin's attachment into the object's shape, merging into its first port
// what the request sets at the port level (VLAN tag, trunks, vlan_mode, lacp, other_config,
// external_ids) and the interface's MTU and ofport requests when the plugin left them unset;
// its other ports are the plugin's as they are. It refuses (model.ErrFailed, naming the
// plugin, the object and the fix) a shape ovsplaned does not write: more than MaxObjectPorts
// ports or MaxObjectBridges bridges; a first port not named like the request or on another
// bridge; a port on a bridge that is neither the request's nor one of Attachment.Bridges;
// vlan_mode or lacp set by the plugin; a bridge named like the request's bridge, like a port or
// twice, or with reserved external_ids; an interface named like another port or a bridge of
// the object; and anything the configuration file's checks refuse (desired.Validator).
func shapeOf(bridge string, p model.Port, plugin string, a api.Attachment) (objectShape, error) {
	bad := func(format string, args ...any) (objectShape, error) {
		return objectShape{}, fmt.Errorf("%w: plugin %q: attachment of port %q: %s", model.ErrFailed, plugin, p.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case len(a.Ports) == 0:
		return bad("no OVS port")
	case len(a.Ports) > MaxObjectPorts:
		return bad("%d OVS ports, more than %d per object; split it into several objects", len(a.Ports), MaxObjectPorts)
	case len(a.Bridges) > MaxObjectBridges:
		return bad("%d bridges, more than %d per object", len(a.Bridges), MaxObjectBridges)
	}
	var sh objectShape
	names := map[string]string{bridge: "the request's bridge"} // bridge and port names of the object
	owned := map[string]bool{}
	for i, b := range a.Bridges {
		if what, dup := names[b.Name]; dup {
			return bad("bridges[%d] %q has the name of %s", i, b.Name, what)
		}
		for k := range b.ExternalIDs {
			if strings.HasPrefix(k, api.ReservedKeyPrefix) {
				return bad("bridges[%d] %q: external_ids key %q is reserved for the host", i, b.Name, k)
			}
		}
		names[b.Name], owned[b.Name] = fmt.Sprintf("bridge %q of the object", b.Name), true
		sh.bridges = append(sh.bridges, model.Bridge{Name: b.Name, DatapathType: b.DatapathType, Protocols: b.Protocols,
			OtherConfig: b.OtherConfig, ExternalIDs: b.ExternalIDs}.Canonical())
	}
	for i, op := range a.Ports {
		on := op.Bridge
		if on == "" {
			on = bridge
		}
		switch {
		case i == 0 && op.Name != p.Name:
			return bad("its first port is named %q, not %q like the request (the first port carries the object's name)", op.Name, p.Name)
		case i == 0 && on != bridge:
			return bad("its first port is on bridge %q, not the request's %q", on, bridge)
		case on != bridge && !owned[on]:
			return bad("ports[%d] %q is on bridge %q, which is neither the request's %q nor one of the attachment's bridges", i, op.Name, on, bridge)
		case op.VLANMode != "" || op.LACP != "":
			return bad("ports[%d] %q: vlan_mode and lacp are not supported on plugin ports", i, op.Name)
		}
		if what, dup := names[op.Name]; dup {
			return bad("ports[%d] %q has the name of %s", i, op.Name, what)
		}
		names[op.Name] = fmt.Sprintf("port %q of the object", op.Name)
		if i == 0 {
			sh.first = firstPort(p, op)
			continue
		}
		sh.more = append(sh.more, placedPort{Bridge: on, Port: convertPort(op).Canonical()})
	}
	for _, pp := range append([]placedPort{{Bridge: bridge, Port: sh.first}}, sh.more...) {
		for _, in := range pp.Port.Interfaces {
			if what, taken := names[in.Name]; taken && in.Name != pp.Port.Name {
				return bad("interface %q of port %q has the name of %s", in.Name, pp.Port.Name, what)
			}
		}
	}
	if err := validShape(bridge, sh); err != nil {
		return bad("ovsplaned cannot write it: %v", err)
	}
	sh.first = sh.first.Canonical()
	return sh, nil
}

// validShape runs the configuration file's checks on the object's rows, as bridges.
func validShape(bridge string, sh objectShape) error {
	byBridge := map[string][]model.Port{bridge: {sh.first}}
	for _, mp := range sh.more {
		byBridge[mp.Bridge] = append(byBridge[mp.Bridge], mp.Port)
	}
	bs := []model.Bridge{{Name: bridge, Ports: byBridge[bridge]}}
	for _, b := range sh.bridges {
		b.Ports = byBridge[b.Name]
		bs = append(bs, b)
	}
	v := &desired.Validator{}
	v.Desired(nil, bs)
	return v.Err()
}

// firstPort is the object's first port: the plugin's op with the request's port-level
// settings merged in (the plugin's win; vlan_mode and lacp are the request's).
func firstPort(p model.Port, op api.OVSPort) model.Port {
	out := convertPort(op)
	out.VLANMode, out.LACP = p.VLANMode, p.LACP
	out.OtherConfig, out.ExternalIDs = merged(p.OtherConfig, op.OtherConfig), merged(p.ExternalIDs, op.ExternalIDs)
	if out.Tag == nil {
		out.Tag = p.Tag
	}
	if len(out.Trunks) == 0 {
		out.Trunks = p.Trunks
	}
	req := p.Interfaces[0]
	for i, in := range out.Interfaces {
		if in.Name != req.Name {
			continue
		}
		in.OtherConfig = merged(req.OtherConfig, in.OtherConfig)
		in.ExternalIDs = merged(req.ExternalIDs, in.ExternalIDs)
		if in.MTURequest == nil {
			in.MTURequest = req.MTURequest
		}
		if in.OFPortRequest == nil {
			in.OFPortRequest = req.OFPortRequest
		}
		out.Interfaces[i] = in
	}
	return out
}

// convertPort is the plugin's OVS port as a model.Port (vlan_mode and lacp left out).
func convertPort(op api.OVSPort) model.Port {
	out := model.Port{Name: op.Name, Tag: op.Tag, Trunks: op.Trunks, BondMode: op.BondMode,
		OtherConfig: op.OtherConfig, ExternalIDs: op.ExternalIDs}
	for _, oi := range op.Interfaces {
		out.Interfaces = append(out.Interfaces, model.Interface{Name: oi.Name, Type: oi.Type, Options: oi.Options,
			MTURequest: oi.MTURequest, OFPortRequest: oi.OfportRequest, OtherConfig: oi.OtherConfig, ExternalIDs: oi.ExternalIDs})
	}
	return out
}

// names returns every port, interface and bridge name the object's shape holds, as
// "kind/name" keys.
func (pp *pluginPort) names() []string {
	var out []string
	add := func(p model.Port) {
		out = append(out, "port/"+p.Name)
		for _, in := range p.Interfaces {
			out = append(out, "interface/"+in.Name)
		}
	}
	add(pp.Shape)
	for _, mp := range pp.More {
		add(mp.Port)
	}
	for _, b := range pp.Bridges {
		out = append(out, "bridge/"+b.Name, "interface/"+b.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
