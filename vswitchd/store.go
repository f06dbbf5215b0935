package vswitchd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// objectStore is the object store: the objects created through the API (bridges without
// ports, and ports), the running configuration (cfg, cfgDes), their version (objVer) and the
// reconciler's view of them (extra, extraCache). It owns them under its own lock, answers the
// conflict checks of the API and of Reload, and settles the batches' outcomes from OVSDB.
//
// Lock order: objectStore.mu, then attacher.mu (see attacher): the store registers an API
// port's plugin attachment with the attacher before the port is visible in the store, and
// removes the port before its attachment.
type objectStore struct {
	log  *slog.Logger
	tags func(table, name string) (ovsdb.Tags, bool) // Client.Tags
	att  *attacher

	mu      sync.Mutex
	cfg     *config.Config
	cfgDes  config.DesiredState     // cfg.Desired()
	bridges map[string]model.Bridge // API bridges (no ports)
	ports   map[string]apiPort      // API ports by name
	// objVer counts the changes of bridges and ports; extraCache is extra's result at
	// extraVer (the status refresh asks for it after every change of OVSDB).
	objVer, extraVer int
	extraCache       []model.Bridge
}

func newObjectStore(log *slog.Logger, tags func(table, name string) (ovsdb.Tags, bool), att *attacher, cfg *config.Config) *objectStore {
	s := &objectStore{log: log, tags: tags, att: att, cfg: cfg, cfgDes: cfg.Desired(),
		bridges: map[string]model.Bridge{}, ports: map[string]apiPort{}}
	att.taken = s.taken
	return s
}

// apiPort is a port created through the API, as the store keeps it: small (a map slot per
// port), with one model.Port per port, not two. Its plugin's attachment, if its type is a
// plugin's, is the attacher's.
type apiPort struct {
	bridge string // the store's own copy of the bridge name, shared by its ports (see bridgeNameLocked)
	// tagged is the request (or the plugin's shape) with the API tags: what the reconciler
	// ensures (computed once): read only. Once extra ran it points into extra's result, so
	// the desired set and the store share one copy. Its SpecKey value is the string the cache
	// holds for the row when the store read the port back from it.
	tagged *model.Port
	// spec is the request when request cannot derive it from tagged (a plugin's port, or a
	// request with an empty non-nil external_ids); nil otherwise.
	spec *model.Port
	obj  *objectRows // a plugin object's other rows; nil: none
}

// objectRows are a plugin object's other ports and the bridges it created, tagged with the
// plugin and the object (computed once).
type objectRows struct {
	more    []placedPort
	created []model.Bridge
}

// more returns the object's other ports (none for a plain port).
func (p apiPort) more() []placedPort {
	if p.obj == nil {
		return nil
	}
	return p.obj.more
}

// created returns the bridges the object created (none for a plain port).
func (p apiPort) created() []model.Bridge {
	if p.obj == nil {
		return nil
	}
	return p.obj.created
}

// request returns the port as the API received it.
func (p apiPort) request() model.Port {
	if p.spec != nil {
		return *p.spec
	}
	req := *p.tagged
	req.ExternalIDs = nil
	for k, v := range p.tagged.ExternalIDs {
		if k == OriginKey || k == SpecKey {
			continue
		}
		if req.ExternalIDs == nil {
			req.ExternalIDs = make(map[string]string, len(p.tagged.ExternalIDs)-2)
		}
		req.ExternalIDs[k] = v
	}
	return req
}

// putPortLocked records an API port read back from its stored spec, its plugin's attachment
// first. stored is the JSON OVSDB holds, which sp was decoded from ("" when unknown): the tagged
// port keeps that string (the cache's, not a second copy) even when it is not the form this
// daemon would write (an older daemon's verbose JSON of the same spec), so adopting a row
// never rewrites it. s.mu must be held.
func (s *objectStore) putPortLocked(sp storedPort, stored string) {
	s.att.register(sp.Port.Name, sp.Bridge, sp.Port, sp.Plugin)
	var tagged model.Port
	if stored != "" {
		tagged = sp.taggedWith(stored) // the row's own string: no marshalling, and no rewrite of an older form
	} else {
		tagged = sp.tagged()
	}
	ap := apiPort{bridge: s.bridgeNameLocked(sp.Bridge), tagged: &tagged}
	_, hasOrigin := sp.Port.ExternalIDs[OriginKey]
	_, hasSpec := sp.Port.ExternalIDs[SpecKey]
	if sp.Plugin != nil || hasOrigin || hasSpec || sp.Port.ExternalIDs != nil && len(sp.Port.ExternalIDs) == 0 {
		req := sp.Port
		ap.spec = &req
	}
	if sp.Plugin != nil {
		var o objectRows
		o.more, o.created = sp.Plugin.objectRows(sp.Port.Name)
		ap.obj = &o
	}
	s.ports[sp.Port.Name] = ap
	s.objVer++
}

// bridgeNameLocked returns name as a string the store already holds (the configuration's or an
// API bridge's name, or another API port's bridge), so that the ports of one bridge share it
// instead of each keeping the copy its spec was decoded into. s.mu must be held.
func (s *objectStore) bridgeNameLocked(name string) string {
	if b, ok := s.cfgDes.Bridge(name); ok {
		return b.Name
	}
	if b, ok := s.bridges[name]; ok {
		return b.Name
	}
	for _, p := range s.ports {
		if p.bridge == name {
			return p.bridge
		}
		break // one look only: the API ports of a bridge the API did not create are rare
	}
	return name
}

// deletePortLocked forgets API port name, then its plugin's attachment, which it returns (nil:
// none). s.mu must be held.
func (s *objectStore) deletePortLocked(name string) *pluginPort {
	delete(s.ports, name)
	s.objVer++
	return s.att.unregister(name)
}

// adopt records the API objects found among owned rows (OriginKey "api" with a readable
// SpecKey) that the daemon does not know yet. A row whose spec cannot be read is left to the
// reconciler, which prunes it like any owned row that is not desired.
func (s *objectStore) adopt(owned []ovsdb.OwnedRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ports []ovsdb.OwnedRow
	for _, o := range owned {
		if o.Tags.Get(OriginKey) != string(model.OriginAPI) {
			continue
		}
		switch o.Table {
		case "Bridge":
			if _, ok := s.bridges[o.Name]; ok {
				continue
			}
			var b model.Bridge
			if err := json.Unmarshal([]byte(o.Tags.Get(SpecKey)), &b); err != nil || b.Name != o.Name {
				s.log.Warn("API bridge with an unreadable spec; it will be pruned", "bridge", o.Name, "error", err)
				continue
			}
			s.bridges[o.Name] = b
			s.objVer++
		case "Port":
			ports = append(ports, o)
		}
	}
	for _, o := range ports {
		if _, ok := s.ports[o.Name]; ok {
			continue
		}
		var sp storedPort
		if err := json.Unmarshal([]byte(o.Tags.Get(SpecKey)), &sp); err != nil || sp.Port.Name != o.Name {
			s.log.Warn("API port with an unreadable spec; it will be pruned", "port", o.Name, "error", err)
			continue
		}
		s.putPortLocked(sp, o.Tags.Get(SpecKey))
	}
}

// extra is the reconciler's Options.Extra: the API objects, after adopting API rows found in
// OVSDB (left by a commit whose outcome was unknown, or by another instance).
func (s *objectStore) extra(owned []ovsdb.OwnedRow) []model.Bridge {
	if owned != nil {
		s.adopt(owned)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extraCache != nil && s.extraVer == s.objVer {
		return s.extraCache // callers only read it
	}
	// Each bridge's ports in a slice of its exact size: the result is kept until the next
	// change (extraCache), so it should not keep append's spare capacity.
	counts := map[string]int{}
	for _, p := range s.ports {
		counts[p.bridge]++
		for _, mp := range p.more() {
			counts[mp.Bridge]++
		}
	}
	byBridge := make(map[string][]model.Port, len(counts))
	for name, n := range counts {
		byBridge[name] = make([]model.Port, 0, n)
	}
	var created []model.Bridge // by plugin objects
	for name, p := range s.ports {
		ports := append(byBridge[p.bridge], *p.tagged)
		byBridge[p.bridge] = ports
		// The slice has its final size (counts): the element stays where it is, and the store
		// keeps it rather than a copy of its own.
		p.tagged = &ports[len(ports)-1]
		s.ports[name] = p
		for _, mp := range p.more() {
			byBridge[mp.Bridge] = append(byBridge[mp.Bridge], mp.Port)
		}
		created = append(created, p.created()...)
	}
	out := make([]model.Bridge, 0, len(s.bridges)+len(byBridge))
	for _, b := range created { // desired whole, with the object's ports on it
		b.Ports = byBridge[b.Name]
		delete(byBridge, b.Name)
		out = append(out, b)
	}
	for name, b := range s.bridges {
		tb := taggedBridge(b)
		tb.Ports = byBridge[name]
		delete(byBridge, name)
		out = append(out, tb)
	}
	for name, ports := range byBridge {
		out = append(out, model.Bridge{Name: name, Ports: ports})
	}
	s.extraCache, s.extraVer = out, s.objVer
	return out
}

// unheld is the reconciler's Options.Unheld: the bridges holding API ports that neither the
// configuration nor the API desires (the configuration file lost the bridge while the daemon
// was not running: Reload refuses to drop such a bridge). ovsplane leaves such a bridge as it
// is, neither rewritten with an empty spec nor pruned with the API ports; its status says why
// and what to do.
func (s *objectStore) unheld(extra []model.Bridge) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[string]string
	for _, b := range extra {
		_, isAPI := s.bridges[b.Name]
		_, isCfg := s.cfgDes.Bridge(b.Name)
		if isAPI || isCfg || len(b.Ports) == 0 || b.ExternalIDs[ObjectKey] != "" { // a plugin object's own bridge is held by it
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[b.Name] = fmt.Sprintf("bridge %q is in neither the configuration file nor the API objects but holds ports created through the API (%s): ovsplane leaves the bridge as it is; add it back to the configuration file and reload, or delete those ports through the API (the bridge is then removed)",
			b.Name, strings.Join(portNames(b.Ports), ", "))
	}
	return out
}

func portNames(ports []model.Port) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// taggedBridge returns b with the API tags in its external_ids.
func taggedBridge(b model.Bridge) model.Bridge {
	spec, _ := json.Marshal(b) // plain data: cannot fail
	b.ExternalIDs = withTags(b.ExternalIDs, string(spec))
	return b
}

func withTags(m map[string]string, spec string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out[OriginKey] = string(model.OriginAPI)
	out[SpecKey] = spec
	return out
}

// configDesired returns the running configuration's desired state.
func (s *objectStore) configDesired() config.DesiredState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfgDes
}

// settle is the writer's Options.Settle. It records, for each request, what OVSDB holds now:
// an ensured port that exists with the API's tags becomes (or stays) an API object, a deleted
// port that is gone stops being one.
func (s *objectStore) settle(reqs []writer.PortRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range reqs {
		tags, present := s.tags("Port", r.Spec.Port.Name)
		switch {
		case r.Delete && !present:
			s.deletePortLocked(r.Spec.Port.Name)
		case !r.Delete && present && tags.Get(OriginKey) == string(model.OriginAPI) && tags.Get(SpecKey) == r.Spec.Port.ExternalIDs[SpecKey]:
			// The spec key round-trips the API's view of the port exactly.
			var sp storedPort
			if err := unmarshalSpec(tags.Get(SpecKey), &sp); err == nil {
				s.putPortLocked(sp, tags.Get(SpecKey))
			}
		}
	}
}

func unmarshalSpec(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// putBridge records API bridge b (committed).
func (s *objectStore) putBridge(b model.Bridge) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bridges[b.Name] = b
	s.objVer++
}

// deleteBridge forgets API bridge name and its API ports (deleted with it, with the other rows
// of their plugin objects: see objectRowsOn), and returns those of a plugin's type, for
// detaching.
func (s *objectStore) deleteBridge(name string) (attached []storedPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bridges, name)
	s.objVer++
	for pn, p := range s.ports {
		if p.bridge == name {
			if pp := s.deletePortLocked(pn); pp != nil {
				attached = append(attached, storedPort{Bridge: p.bridge, Port: p.request(), Plugin: pp})
			}
		}
	}
	return attached
}

// objectsOn returns, as deletion requests, the other rows of the plugin objects whose first
// port is an API port on bridge (deleted with the bridge, in its transaction).
func (s *objectStore) objectsOn(bridge string) []writer.PortRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []writer.PortRequest
	for name, p := range s.ports {
		if p.bridge != bridge || p.obj == nil || len(p.obj.more)+len(p.obj.created) == 0 {
			continue
		}
		r := writer.PortRequest{Delete: true, Spec: ovsdb.PortOn{Bridge: bridge, Port: model.Port{Name: name}}, Bridges: p.obj.created}
		for _, mp := range p.obj.more {
			r.More = append(r.More, ovsdb.PortOn{Bridge: mp.Bridge, Port: model.Port{Name: mp.Port.Name}})
		}
		out = append(out, r)
	}
	return out
}

// bridge returns managed bridge name (the configuration's first), without its ports or status.
func (s *objectStore) bridge(name string) (model.BridgeInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cb, ok := s.cfgDes.Bridge(name); ok {
		cb.Ports = nil
		return model.BridgeInfo{Spec: cb, Origin: model.OriginConfig}, true
	}
	if b, ok := s.bridges[name]; ok {
		return model.BridgeInfo{Spec: b, Origin: model.OriginAPI}, true
	}
	return model.BridgeInfo{}, false
}

// bridgeNames returns the names of the managed bridges, sorted, without duplicates.
func (s *objectStore) bridgeNames() []string {
	s.mu.Lock()
	names := slices.Collect(maps.Keys(s.bridges))
	for _, b := range s.cfgDes.Bridges {
		names = append(names, b.Name)
	}
	s.mu.Unlock()
	slices.Sort(names)
	return slices.Compact(names)
}

// portInfos returns the managed ports of bridge ("" for all) with their plugins' fields, in no
// particular order and without statuses.
func (s *objectStore) portInfos(bridge string) []model.PortInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.PortInfo
	for _, b := range s.cfgDes.Bridges {
		if bridge != "" && b.Name != bridge {
			continue
		}
		for _, p := range b.Ports {
			out = append(out, s.withPluginLocked(model.PortInfo{Bridge: b.Name, Spec: p, Origin: model.OriginConfig}))
		}
	}
	for _, p := range s.ports {
		if bridge == "" || p.bridge == bridge {
			out = append(out, s.withPluginLocked(model.PortInfo{Bridge: p.bridge, Spec: p.request(), Origin: model.OriginAPI}))
		}
	}
	return out
}

// portInfo returns managed port name (the API's first) with its plugin's fields, without
// statuses.
func (s *objectStore) portInfo(name string) (model.PortInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.ports[name]; ok {
		return s.withPluginLocked(model.PortInfo{Bridge: p.bridge, Spec: p.request(), Origin: model.OriginAPI}), true
	}
	for _, b := range s.cfgDes.Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				return s.withPluginLocked(model.PortInfo{Bridge: b.Name, Spec: p, Origin: model.OriginConfig}), true
			}
		}
	}
	return model.PortInfo{}, false
}

// withPluginLocked is withPlugin with its port's attachment.
func (s *objectStore) withPluginLocked(info model.PortInfo) model.PortInfo {
	return withPlugin(info, s.att.pluginOf(info.Spec.Name))
}
