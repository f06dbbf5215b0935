package vswitchd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// The object store's checks: the conflicts an API change or a reload must not create between
// the API's objects and the configuration's. They read the store under its lock.

// droppedHoldingLocked returns, for each bridge of the running configuration that next no
// longer lists, the API ports it holds (sorted), as "bridge "B" (ports p1, p2)". Callers hold
// s.mu.
func (s *objectStore) droppedHoldingLocked(next config.DesiredState) []string {
	held := map[string][]string{}
	for name, p := range s.ports {
		_, wasCfg := s.cfgDes.Bridge(p.bridge)
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

// cfgPortBridgeLocked returns the configured bridge holding port name, or "".
func (s *objectStore) cfgPortBridgeLocked(name string) string {
	for _, b := range s.cfg.Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				return b.Name
			}
		}
	}
	return ""
}

// cfgIfaceOwnerLocked returns the configured port that has interface name.
func (s *objectStore) cfgIfaceOwnerLocked(name string) (string, bool) {
	for _, b := range s.cfg.Bridges {
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
func (s *objectStore) conflictLocked(kind, name, _ string) error {
	for _, b := range s.cfg.Bridges {
		if b.Name == name {
			return fmt.Errorf("%w: %s %q comes from the configuration file; change it there and reload", model.ErrConflict, kind, name)
		}
		for _, p := range b.Ports {
			if p.Name == name {
				return fmt.Errorf("%w: %s %q is the name of a port of the configuration file (bridge %q); pick another name", model.ErrConflict, kind, name, b.Name)
			}
		}
	}
	if _, isPort := s.ports[name]; isPort {
		return fmt.Errorf("%w: %s %q is the name of a port created through the API; pick another name", model.ErrConflict, kind, name)
	}
	if _, holder := s.att.holderOf([]string{"bridge/" + name, "port/" + name, "interface/" + name}, ""); holder != "" {
		return fmt.Errorf("%w: %s %q is the name of a row of %s; pick another name", model.ErrConflict, kind, name, holder)
	}
	return nil
}

// portConflictLocked checks that p may be applied on bridge: the bridge is managed, the port
// is not the configuration's, not on another bridge, and its interfaces are not another
// managed port's.
func (s *objectStore) portConflictLocked(bridge string, p model.Port) error {
	_, apiBridge := s.bridges[bridge]
	_, cfgBridge := s.cfgDes.Bridge(bridge)
	if !apiBridge && !cfgBridge {
		return fmt.Errorf("%w: bridge %q of port %q is not managed by ovsplane; create it first (ApplyBridge or the configuration file)", model.ErrNotFound, bridge, p.Name)
	}
	if b := s.cfgPortBridgeLocked(p.Name); b != "" {
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); change it there and reload", model.ErrConflict, p.Name, b)
	}
	_, isCfgBr := s.cfgDes.Bridge(p.Name)
	if _, isBr := s.bridges[p.Name]; isBr || isCfgBr {
		return fmt.Errorf("%w: port %q has the name of a bridge; pick another name", model.ErrConflict, p.Name)
	}
	if cur, ok := s.ports[p.Name]; ok && cur.bridge != bridge {
		return fmt.Errorf("%w: port %q is on bridge %q; delete it there first to move it to %q", model.ErrConflict, p.Name, cur.bridge, bridge)
	}
	keys := []string{"port/" + p.Name, "bridge/" + p.Name}
	for _, in := range p.Interfaces {
		keys = append(keys, "interface/"+in.Name)
	}
	if k, holder := s.att.holderOf(keys, p.Name); holder != "" {
		return fmt.Errorf("%w: port %q: %s is a row of %s; pick another name", model.ErrConflict, p.Name, k, holder)
	}
	for _, in := range p.Interfaces {
		if other, ok := s.cfgIfaceOwnerLocked(in.Name); ok {
			return fmt.Errorf("%w: interface %q of port %q belongs to port %q of the configuration file; pick another name", model.ErrConflict, in.Name, p.Name, other)
		}
		if in.Name != p.Name {
			if op, ok := s.ports[in.Name]; ok {
				return fmt.Errorf("%w: interface %q of port %q is the name of port %q on bridge %q; pick another name", model.ErrConflict, in.Name, p.Name, in.Name, op.bridge)
			}
		}
	}
	return nil
}

// checkPort runs the conflict checks of applying p on bridge (see portConflictLocked) and
// returns the port's current stored spec, if it is an API port, with its plugin's attachment.
func (s *objectStore) checkPort(bridge string, p model.Port) (prev *storedPort, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.portConflictLocked(bridge, p); err != nil {
		return nil, err
	}
	if cur, ok := s.ports[p.Name]; ok {
		prev = &storedPort{Bridge: cur.bridge, Port: cur.request(), Plugin: s.att.pluginOf(p.Name)}
	}
	return prev, nil
}

// deletablePort returns API port name with its plugin's attachment; cfgBridge is the bridge
// of the configuration's port of that name ("" if none).
func (s *objectStore) deletablePort(name string) (p storedPort, isAPI bool, cfgBridge string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, isAPI := s.ports[name]
	if isAPI {
		p = storedPort{Bridge: cur.bridge, Port: cur.request(), Plugin: s.att.pluginOf(name)}
	}
	return p, isAPI, s.cfgPortBridgeLocked(name)
}

// conflict refuses a bridge name held by the configuration or by an API port.
func (s *objectStore) conflict(kind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflictLocked(kind, name, "")
}

// reload makes cfg the running configuration unless it claims API objects (clashes) or drops
// a bridge holding API ports (held); the attacher follows it in the same step and returns the
// configuration's plugin ports that must be detached.
func (s *objectStore) reload(cfg *config.Config) (clashes, held []string, gone []attachment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range cfg.Bridges {
		if _, ok := s.bridges[b.Name]; ok {
			clashes = append(clashes, fmt.Sprintf("bridge %q", b.Name))
		}
		for _, p := range b.Ports {
			if _, ok := s.ports[p.Name]; ok {
				clashes = append(clashes, fmt.Sprintf("port %q", p.Name))
			}
		}
	}
	next := cfg.Desired()
	held = s.droppedHoldingLocked(next)
	if len(clashes) > 0 || len(held) > 0 {
		return clashes, held, nil
	}
	s.cfg, s.cfgDes = cfg, next
	return nil, nil, s.att.syncConfig(next)
}

// taken is the attacher's check of a plugin object's shape (attacher.taken): none of the rows
// the object adds beside its first port — its other ports and their interfaces, the bridges it
// creates — may have the name of a row another managed object holds: a bridge or port of the
// configuration file or of the API (with their interfaces), or another plugin object's row. The
// error (model.ErrConflict) names the row, its holder and the fix. An object of one port costs
// nothing here: its port passed the checks of its own door.
func (s *objectStore) taken(bridge, object string, pp *pluginPort) error {
	if len(pp.More) == 0 && len(pp.Bridges) == 0 {
		return nil
	}
	keys := pp.names()
	s.mu.Lock()
	held := s.heldLocked(object)
	s.mu.Unlock()
	for _, k := range keys {
		if holder, ok := held[k]; ok {
			return takenErr(pp.Plugin, object, k, holder)
		}
	}
	if k, holder := s.att.holderOf(keys, object); holder != "" {
		return takenErr(pp.Plugin, object, k, holder)
	}
	return nil
}

func takenErr(plugin, object, key, holder string) error {
	return fmt.Errorf("%w: plugin %q: object %q: its shape names %s, which is %s; the plugin must pick names no other object holds",
		model.ErrConflict, plugin, object, key, holder)
}

// heldLocked returns the rows ("kind/name") the configuration's and the API's objects hold,
// except object's own, with their holders. Callers hold s.mu.
func (s *objectStore) heldLocked(object string) map[string]string {
	held := map[string]string{}
	bridge := func(name, holder string) {
		for _, k := range []string{"bridge/", "port/", "interface/"} { // a bridge has its local port and interface
			held[k+name] = holder
		}
	}
	port := func(p model.Port, holder string) {
		held["port/"+p.Name] = holder
		for _, in := range p.Interfaces {
			held["interface/"+in.Name] = holder
		}
	}
	for _, b := range s.cfgDes.Bridges {
		bridge(b.Name, fmt.Sprintf("bridge %q of the configuration file", b.Name))
		for _, p := range b.Ports {
			if p.Name != object {
				port(p, fmt.Sprintf("port %q of the configuration file", p.Name))
			}
		}
	}
	for name := range s.bridges {
		bridge(name, fmt.Sprintf("bridge %q created through the API", name))
	}
	for name, p := range s.ports {
		if name != object {
			port(p.request(), fmt.Sprintf("port %q created through the API", name))
		}
	}
	return held
}
