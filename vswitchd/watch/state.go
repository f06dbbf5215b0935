package watch

import (
	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// state is one interface as watchers see it: the event it would be delivered as (Kind unset),
// plus what filters and change checks need. It is immutable once built and shared by every
// plugin's queue.
type state struct {
	ev api.PortEvent
	// ifExt and portExt are the interface's and its port's external_ids without the host's
	// tags (for ExternalIDKeys filters: the event's own may have been cut).
	ifExt, portExt map[string]string
	// rawExt are the interface's external_ids as OVSDB has them, the host's tags included
	// (the record of the keys each plugin set): read only.
	rawExt map[string]string
	// size is an estimate of the event's encoded size, in bytes.
	size int
	// seq orders the states the Dispatcher holds (the order of their last change).
	seq uint64
}

// classifier turns ovsdb views into states: it knows the daemon's owner tag and the key
// naming a port's plugin.
type classifier struct {
	owner     string // ovsdb.Config.Owner: the value of ovsdb.OwnerKey on the daemon's rows
	pluginKey string // the Port external_ids key naming the plugin that attached it
}

// newState builds the state of v. Maps without the host's tags are copies; the event's maps
// are never the cache's own. An event larger than limits.MaxPortBytes is cut to its scalar
// fields (a watcher could not take it in one message); cut tells.
func (c classifier) newState(v ovsdb.InterfaceView) (s *state, cut bool) {
	s = &state{rawExt: v.ExternalIDs, ifExt: stripTags(v.ExternalIDs), portExt: stripTags(v.PortExternalIDs)}
	s.ev = api.PortEvent{Owner: api.OwnerForeign, Bridge: v.Bridge, Port: v.Port, Interface: v.Name, Type: v.Type,
		Options: cloneOrNil(v.Options), OtherConfig: cloneOrNil(v.OtherConfig), ExternalIDs: s.ifExt,
		Ofport: v.Ofport, Error: v.Error}
	switch {
	case v.PortExternalIDs[ovsdb.OwnerKey] == c.owner && v.PortExternalIDs[c.pluginKey] != "":
		s.ev.Owner, s.ev.Plugin = api.OwnerPlugin, v.PortExternalIDs[c.pluginKey]
	case v.PortExternalIDs[ovsdb.OwnerKey] == c.owner || v.ExternalIDs[ovsdb.OwnerKey] == c.owner:
		s.ev.Owner = api.OwnerOvsplane
	}
	s.size = eventSize(&s.ev)
	if s.size > limits.MaxPortBytes {
		s.ev.Options, s.ev.OtherConfig, s.ev.ExternalIDs = nil, nil, nil
		s.size = eventSize(&s.ev)
		cut = true
	}
	return s, cut
}

// cloneOrNil returns a copy of m, nil when m is empty (the cache's rows hold empty maps, which
// a copy would allocate for each interface).
func cloneOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// stripTags returns m without the host's own keys (api.ReservedKeyPrefix: ownership, specs,
// the record of the keys plugins set), nil when nothing is left.
func stripTags(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if strings.HasPrefix(k, api.ReservedKeyPrefix) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m))
		}
		out[k] = v
	}
	return out
}

// eventSize estimates the encoded size of an event: its strings and map entries plus a few
// bytes of framing each.
func eventSize(e *api.PortEvent) int {
	n := 32 + len(e.Plugin) + len(e.Bridge) + len(e.Port) + len(e.Interface) + len(e.Type) + len(e.Error)
	for _, m := range []map[string]string{e.Options, e.OtherConfig, e.ExternalIDs} {
		n += limits.MapBytes(m) + 8*len(m)
	}
	return n
}

// same reports whether two states deliver the same event and filter alike. The host's tags
// count (through rawExt) only as the record of the keys plugins set.
func (s *state) same(o *state) bool {
	a, b := &s.ev, &o.ev
	return a.Owner == b.Owner && a.Plugin == b.Plugin && a.Bridge == b.Bridge && a.Port == b.Port &&
		a.Interface == b.Interface && a.Type == b.Type && a.Ofport == b.Ofport && a.Error == b.Error &&
		maps.Equal(a.Options, b.Options) && maps.Equal(a.OtherConfig, b.OtherConfig) &&
		maps.Equal(s.ifExt, o.ifExt) && maps.Equal(s.portExt, o.portExt) && sameRecords(s.rawExt, o.rawExt)
}

// sameRecords compares the records of plugin keys (ovsdb.InterfaceKeysPrefix) of two
// external_ids.
func sameRecords(a, b map[string]string) bool {
	for _, pair := range [][2]map[string]string{{a, b}, {b, a}} {
		for k, v := range pair[0] {
			if strings.HasPrefix(k, ovsdb.InterfaceKeysPrefix) && pair[1][k] != v {
				return false
			}
		}
	}
	return true
}

// matches reports whether f selects s: every non-empty list of f must hold s's value
// (InterfaceTypes "system" and "" are the same type; ExternalIDKeys: any key on the interface
// or its port).
func matches(f api.WatchFilter, s *state) bool {
	if len(f.InterfaceTypes) > 0 {
		t := s.ev.Type
		if t == "" {
			t = "system"
		}
		if !slices.ContainsFunc(f.InterfaceTypes, func(x string) bool { return x == t || (x == "" && t == "system") }) {
			return false
		}
	}
	if len(f.Bridges) > 0 && !slices.Contains(f.Bridges, s.ev.Bridge) {
		return false
	}
	if len(f.Owners) > 0 && !slices.Contains(f.Owners, s.ev.Owner) {
		return false
	}
	if len(f.ExternalIDKeys) > 0 && !slices.ContainsFunc(f.ExternalIDKeys, func(k string) bool {
		_, onIface := s.ifExt[k]
		_, onPort := s.portExt[k]
		return onIface || onPort
	}) {
		return false
	}
	return true
}

// sameFilter reports whether two filters select the same interfaces (as lists).
func sameFilter(a, b api.WatchFilter) bool {
	return slices.Equal(a.InterfaceTypes, b.InterfaceTypes) && slices.Equal(a.Bridges, b.Bridges) &&
		slices.Equal(a.Owners, b.Owners) && slices.Equal(a.ExternalIDKeys, b.ExternalIDKeys)
}
