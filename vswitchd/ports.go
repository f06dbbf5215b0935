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
	if err := desired.ValidatePortWith(bridge, p, d.pluginType); err != nil {
		return model.PortInfo{}, fmt.Errorf("%w: %w", model.ErrInvalid, err)
	}
	p = p.Canonical()
	prov, plugin, typ, isPlugin, err := d.pluginRequest(p)
	if err != nil {
		return model.PortInfo{}, err
	}
	d.mu.Lock()
	err = d.portConflictLocked(bridge, p)
	var prev *storedPort
	if cur, ok := d.ports[p.Name]; ok {
		sp := cur.stored()
		prev = &sp
	}
	d.mu.Unlock()
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
		announced = d.w.Announce()
		defer announced.Cancel() // no-op once submitted
		d.mu.Lock()
		d.attaching[p.Name]++
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			if d.attaching[p.Name]--; d.attaching[p.Name] <= 0 {
				delete(d.attaching, p.Name)
			}
			d.mu.Unlock()
		}()
		if sp.Plugin, fresh, err = d.attach(ctx, bridge, p, prov, plugin, typ, prev); err != nil {
			return model.PortInfo{}, err
		}
	}
	res, err := d.w.EnsurePort(ctx, announced, bridge, sp.tagged())
	if err != nil && !errors.Is(err, ovsdb.ErrVswitchd) {
		if fresh && !unknownOutcome(err) { // certainly not written: undo the plugin's work
			d.detach(bridge, p, sp.Plugin)
		}
		return model.PortInfo{}, classify("port", p.Name, err)
	}
	// The batch's own view of the interfaces (what ovs-vswitchd acknowledged), not the
	// reconciler's statuses, which follow OVSDB asynchronously.
	info := model.PortInfo{Bridge: bridge, Spec: p, Origin: model.OriginAPI,
		Status: model.Status{Kind: model.KindPort, Name: p.Name, Bridge: bridge, State: model.StateReady}}
	d.fillPlugin(&info, sp.Plugin)
	for _, st := range res.Interfaces {
		s := model.Status{Kind: model.KindInterface, Name: st.Name, Bridge: bridge, State: model.StatePending}
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
	d.mu.Lock()
	p, isAPI := d.ports[name]
	cfgBridge := d.cfgPortBridgeLocked(name)
	d.mu.Unlock()
	switch {
	case cfgBridge != "":
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); remove it there and reload", model.ErrConflict, name, cfgBridge)
	case !isAPI:
		return fmt.Errorf("%w: port %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "port", name); err != nil {
		return err
	}
	if err := d.w.DeletePort(ctx, p.bridge, name); err != nil {
		return classify("port", name, err)
	}
	if p.plugin != nil {
		d.detach(p.bridge, p.spec, p.plugin)
	}
	return nil
}

// Port returns one managed port (ErrNotFound when it is not).
func (d *Daemon) Port(name string) (model.PortInfo, error) {
	d.mu.Lock()
	info, ok := d.portLocked(name)
	d.mu.Unlock()
	if !ok {
		return model.PortInfo{}, fmt.Errorf("%w: port %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	d.fillPortStatus(&info)
	return info, nil
}

// Ports returns the managed ports of bridge ("" for all), sorted by name.
func (d *Daemon) Ports(bridge string) []model.PortInfo {
	d.mu.Lock()
	var out []model.PortInfo
	for _, b := range d.cfgDesired().Bridges {
		if bridge != "" && b.Name != bridge {
			continue
		}
		for _, p := range b.Ports {
			info := model.PortInfo{Bridge: b.Name, Spec: p, Origin: model.OriginConfig}
			if c := d.cfgPlugins[p.Name]; c != nil {
				d.fillPlugin(&info, c.pp)
			}
			out = append(out, info)
		}
	}
	for _, p := range d.ports {
		if bridge == "" || p.bridge == bridge {
			info := model.PortInfo{Bridge: p.bridge, Spec: p.spec, Origin: model.OriginAPI}
			d.fillPlugin(&info, p.plugin)
			out = append(out, info)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b model.PortInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	for i := range out {
		d.fillPortStatus(&out[i])
	}
	return out
}

func (d *Daemon) portLocked(name string) (model.PortInfo, bool) {
	if p, ok := d.ports[name]; ok {
		info := model.PortInfo{Bridge: p.bridge, Spec: p.spec, Origin: model.OriginAPI}
		d.fillPlugin(&info, p.plugin)
		return info, true
	}
	for _, b := range d.cfgDesired().Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				info := model.PortInfo{Bridge: b.Name, Spec: p, Origin: model.OriginConfig}
				if c := d.cfgPlugins[p.Name]; c != nil {
					d.fillPlugin(&info, c.pp)
				}
				return info, true
			}
		}
	}
	return model.PortInfo{}, false
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
}

// fillPlugin sets the plugin fields of info from pp (nil: not a plugin's port).
func (d *Daemon) fillPlugin(info *model.PortInfo, pp *pluginPort) {
	if pp == nil {
		return
	}
	shape := pp.Shape
	info.Plugin, info.PluginStatus, info.Endpoints, info.Shape = pp.Plugin, pp.Status, maps.Clone(pp.Endpoints), &shape
}

// managed reports whether key names an object the Daemon manages (whatever its status).
func (d *Daemon) managed(key string) bool {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case "bridge":
		_, err := d.Bridge(name)
		return err == nil
	case "port":
		d.mu.Lock()
		defer d.mu.Unlock()
		_, ok := d.portLocked(name)
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
	return false
}
