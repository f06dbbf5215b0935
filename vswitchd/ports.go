package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// ---- ports ----

// ApplyPort creates or updates a port through the API on a managed bridge and waits until
// ovs-vswitchd applied it. Concurrent calls share OVSDB transactions (package batch). An
// interface ovs-vswitchd refused is not an error of the call: the port is written, and its
// status is model.StateError with ovs-vswitchd's message.
func (d *Daemon) ApplyPort(ctx context.Context, bridge string, p model.Port) (model.PortInfo, error) {
	if err := desired.ValidatePortWith(bridge, p, d.att.pluginType); err != nil {
		return model.PortInfo{}, fmt.Errorf("%w: %w", model.ErrInvalid, err)
	}
	p = p.Canonical()
	prov, plugin, typ, isPlugin, err := d.att.request(p)
	if err != nil {
		return model.PortInfo{}, err
	}
	prev, err := d.store.checkPort(bridge, p)
	if err != nil {
		return model.PortInfo{}, err
	}
	if prev != nil && prev.Plugin != nil && !isPlugin {
		return model.PortInfo{}, fmt.Errorf("%w: port %q was attached by plugin %q (type %q); delete it first, then apply the new one",
			model.ErrConflict, p.Name, prev.Plugin.Plugin, prev.Plugin.Type)
	}
	if err := d.awaitOVSDB(ctx, "port", p.Name); err != nil {
		return model.PortInfo{}, err
	}
	sp := storedPort{Bridge: bridge, Port: p}
	fresh := false
	var announced *writer.Announcement
	if isPlugin {
		// The plugin's work comes before the port reaches the batcher: announce it so its
		// batch waits for it instead of leaving without it (splitting the cohort).
		// A failed or cancelled plugin call withdraws it at once (before any clean-up), so it
		// never holds a batch.
		announced = d.w.Announce(ctx)
		defer announced.Cancel() // no-op once submitted
		defer d.att.begin(p.Name)()
		if sp.Plugin, fresh, err = d.att.attach(ctx, bridge, p, prov, plugin, typ, prev, announced.Cancel); err != nil {
			return model.PortInfo{}, err
		}
	}
	var res writer.PortResult
	if sp.Plugin != nil && (len(sp.Plugin.More) > 0 || len(sp.Plugin.Bridges) > 0 || prev != nil && prev.Plugin != nil && !sameShape(prev.Plugin, sp.Plugin)) {
		more, bridges := sp.Plugin.objectRows(p.Name)
		o := writer.Object{Bridge: bridge, First: sp.tagged(), More: portsOn(more), Bridges: bridges}
		if prev != nil && prev.Plugin != nil { // re-applied: what the previous shape had and this one has not goes with it
			o.Drop, o.DropBridges = dropped(prev.Plugin, sp.Plugin)
		}
		res, err = d.w.EnsureObject(ctx, announced, o)
	} else {
		res, err = d.w.EnsurePort(ctx, announced, bridge, sp.tagged())
	}
	if err != nil && !errors.Is(err, ovsdb.ErrVswitchd) {
		if fresh && !unknownOutcome(err) { // certainly not written: undo the plugin's work
			d.att.detach(bridge, p, sp.Plugin)
		}
		return model.PortInfo{}, classify("port", p.Name, err)
	}
	// The batch's own view of the interfaces (what ovs-vswitchd acknowledged), not the
	// reconciler's statuses, which follow OVSDB asynchronously.
	info := model.PortInfo{Bridge: bridge, Spec: p, Origin: model.OriginAPI,
		Status: model.Status{Kind: model.KindPort, Name: p.Name, Bridge: bridge, State: model.StateReady}}
	info = withPlugin(info, sp.Plugin)
	onBridge := ifaceBridges(sp.Plugin)
	for _, st := range res.Interfaces {
		on := onBridge[st.Name]
		if on == "" {
			on = bridge
		}
		s := model.Status{Kind: model.KindInterface, Name: st.Name, Bridge: on, State: model.StatePending}
		switch {
		case st.Error != "":
			s.State, s.Error = model.StateError, st.Error
		case st.Ofport > 0:
			s.State, s.Ofport = model.StateReady, st.Ofport
		case st.Ofport < 0:
			s.State, s.Error = model.StateError, "ovs-vswitchd could not set it up (ofport -1)"
		}
		switch {
		case s.State == model.StateError && info.Status.State != model.StateError:
			info.Status.State, info.Status.Error = model.StateError, s.Error
		case s.State == model.StatePending && info.Status.State == model.StateReady:
			info.Status.State = model.StatePending
		}
		info.Interfaces = append(info.Interfaces, s)
	}
	return info, nil
}

// DeletePort deletes a port created through the API.
func (d *Daemon) DeletePort(ctx context.Context, name string) error {
	p, isAPI, cfgBridge := d.store.deletablePort(name)
	switch {
	case cfgBridge != "":
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); remove it there and reload", model.ErrConflict, name, cfgBridge)
	case !isAPI:
		return fmt.Errorf("%w: port %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "port", name); err != nil {
		return err
	}
	var more []ovsdb.PortOn
	var bridges []string
	if p.Plugin != nil { // the object's other rows go in the same transaction
		for _, mp := range p.Plugin.More {
			more = append(more, ovsdb.PortOn{Bridge: mp.Bridge, Port: mp.Port})
		}
		for _, b := range p.Plugin.Bridges {
			bridges = append(bridges, b.Name)
		}
	}
	if err := d.w.DeleteObject(ctx, p.Bridge, name, more, bridges); err != nil {
		return classify("port", name, err)
	}
	if p.Plugin != nil {
		d.att.detach(p.Bridge, p.Port, p.Plugin)
	}
	return nil
}

// Port returns one managed port (ErrNotFound when it is not).
func (d *Daemon) Port(name string) (model.PortInfo, error) {
	info, ok := d.store.portInfo(name)
	if !ok {
		return model.PortInfo{}, fmt.Errorf("%w: port %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	d.fillPortStatus(&info)
	return info, nil
}

// Ports returns the managed ports of bridge ("" for all), sorted by name.
func (d *Daemon) Ports(bridge string) []model.PortInfo {
	out := d.store.portInfos(bridge)
	slices.SortFunc(out, func(a, b model.PortInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	for i := range out {
		d.fillPortStatus(&out[i])
	}
	return out
}

func (d *Daemon) fillPortStatus(info *model.PortInfo) {
	info.Status = d.hub.orPending("port/"+info.Spec.Name, model.KindPort, info.Spec.Name, info.Bridge)
	info.Interfaces = info.Interfaces[:0]
	ifaces := info.Spec.Interfaces
	if info.Shape != nil {
		ifaces = info.Shape.Interfaces
	}
	for _, in := range ifaces {
		info.Interfaces = append(info.Interfaces,
			d.hub.orPending("interface/"+in.Name, model.KindInterface, in.Name, info.Bridge))
	}
	if pp := d.att.pluginOf(info.Spec.Name); pp != nil { // a plugin object's other ports
		for _, mp := range pp.More {
			for _, in := range mp.Port.Interfaces {
				info.Interfaces = append(info.Interfaces,
					d.hub.orPending("interface/"+in.Name, model.KindInterface, in.Name, mp.Bridge))
			}
		}
	}
}

// ifaceBridges returns the bridge of each interface of a plugin object's other ports; nil pp:
// none (callers fall back to the request's bridge).
func ifaceBridges(pp *pluginPort) map[string]string {
	out := map[string]string{}
	if pp == nil {
		return out
	}
	for _, mp := range pp.More {
		for _, in := range mp.Port.Interfaces {
			out[in.Name] = mp.Bridge
		}
	}
	return out
}

// dropped returns the other ports and the bridges old has and cur has not.
func dropped(old, cur *pluginPort) (ports []ovsdb.PortOn, bridges []string) {
	keep := map[string]bool{}
	for _, k := range cur.names() {
		keep[k] = true
	}
	for _, mp := range old.More {
		if !keep["port/"+mp.Port.Name] {
			ports = append(ports, ovsdb.PortOn{Bridge: mp.Bridge, Port: model.Port{Name: mp.Port.Name}})
		}
	}
	for _, b := range old.Bridges {
		if !keep["bridge/"+b.Name] {
			bridges = append(bridges, b.Name)
		}
	}
	return ports, bridges
}

// portsOn converts an object's placed ports to the writer's intents.
func portsOn(ps []placedPort) []ovsdb.PortOn {
	out := make([]ovsdb.PortOn, 0, len(ps))
	for _, mp := range ps {
		out = append(out, writer.PortSpec(mp.Bridge, mp.Port))
	}
	return out
}

// withPlugin returns info with the plugin fields of pp (nil: not a plugin's port).
func withPlugin(info model.PortInfo, pp *pluginPort) model.PortInfo {
	if pp == nil {
		return info
	}
	shape := pp.Shape
	info.Plugin, info.PluginStatus, info.Endpoints, info.Shape = pp.Plugin, pp.Status, maps.Clone(pp.Endpoints), &shape
	return info
}

// managed reports whether key names an object the Daemon manages (whatever its status).
func (d *Daemon) managed(key string) bool {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case "bridge":
		_, err := d.Bridge(name)
		return err == nil
	case "port":
		_, ok := d.store.portInfo(name)
		return ok
	case "interface":
		for _, p := range d.Ports("") {
			ifaces := p.Spec.Interfaces
			if p.Shape != nil {
				ifaces = p.Shape.Interfaces
			}
			if slices.ContainsFunc(ifaces, func(in model.Interface) bool { return in.Name == name }) {
				return true
			}
		}
	}
	// The other rows of a plugin object.
	_, held := d.att.holderOf([]string{key}, "")
	return held != ""
}
