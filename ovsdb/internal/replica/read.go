package replica

import (
	"iter"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Root returns the Open_vSwitch row, shared with the store: the caller must not modify it.
// nil when the store holds none.
func (s *Store) Root() *vswitch.OpenvSwitch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.cur.small[vswitch.OpenvSwitchTable] {
		return m.(*vswitch.OpenvSwitch)
	}
	return nil
}

// Bridge returns a fresh copy of the Bridge row named name.
func (s *Store) Bridge(name string) (*vswitch.Bridge, bool) {
	s.mu.RLock()
	b := s.cur.brName[name]
	s.mu.RUnlock()
	if b == nil {
		return nil, false
	}
	return b.model(), true
}

// Port returns a fresh copy of the Port row named name.
func (s *Store) Port(name string) (*vswitch.Port, bool) {
	s.mu.RLock()
	p := s.cur.portName[name]
	s.mu.RUnlock()
	if p == nil {
		return nil, false
	}
	v := p.vals()
	return v.model(p.id), true
}

// Interface returns a fresh copy of the Interface row named name.
func (s *Store) Interface(name string) (*vswitch.Interface, bool) {
	s.mu.RLock()
	r := s.cur.ifName[name]
	s.mu.RUnlock()
	if r == nil {
		return nil, false
	}
	return s.ifaceModel(r), true
}

func (s *Store) ifaceModel(r *ifaceRow) *vswitch.Interface {
	v := r.vals()
	return v.model(r.id)
}

func (b *bridgeRow) model() *vswitch.Bridge {
	m := b.m.CloneModel().(*vswitch.Bridge)
	m.Ports = uuidStrings(b.ports)
	return m
}

// ByUUID returns a fresh copy of the row of table with the given uuid (a *vswitch.X).
func (s *Store) ByUUID(table, uuid string) (model.Model, bool) {
	id, ok := ParseUUID(uuid)
	if !ok {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch table {
	case vswitch.InterfaceTable:
		if r := s.cur.ifaces[id]; r != nil {
			return s.ifaceModel(r), true
		}
	case vswitch.PortTable:
		if r := s.cur.ports[id]; r != nil {
			v := r.vals()
			return v.model(id), true
		}
	case vswitch.BridgeTable:
		if r := s.cur.bridges[id]; r != nil {
			return r.model(), true
		}
	default:
		if m := s.cur.small[table][id]; m != nil {
			return model.Clone(m), true
		}
	}
	return nil, false
}

// Has reports whether table holds a row with the given uuid.
func (s *Store) Has(table, uuid string) bool {
	id, ok := ParseUUID(uuid)
	if !ok {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ti := s.tables[table]
	return ti != nil && s.cur.has(ti, id)
}

// Count returns the number of rows of table.
func (s *Store) Count(table string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch table {
	case vswitch.InterfaceTable:
		return len(s.cur.ifaces)
	case vswitch.PortTable:
		return len(s.cur.ports)
	case vswitch.BridgeTable:
		return len(s.cur.bridges)
	}
	return len(s.cur.small[table])
}

// Each calls fn with a fresh copy of each row of table, in no particular order, until fn
// returns false. It iterates over the rows the table held when it was called; fn may call
// the store.
func (s *Store) Each(table string, fn func(model.Model) bool) {
	var rows []func() model.Model
	s.mu.RLock()
	switch table {
	case vswitch.InterfaceTable:
		rows = make([]func() model.Model, 0, len(s.cur.ifaces))
		for _, r := range s.cur.ifaces {
			rows = append(rows, func() model.Model { return s.ifaceModel(r) })
		}
	case vswitch.PortTable:
		rows = make([]func() model.Model, 0, len(s.cur.ports))
		for _, r := range s.cur.ports {
			rows = append(rows, func() model.Model { v := r.vals(); return v.model(r.id) })
		}
	case vswitch.BridgeTable:
		for _, r := range s.cur.bridges {
			rows = append(rows, func() model.Model { return r.model() })
		}
	default:
		for _, m := range s.cur.small[table] {
			rows = append(rows, func() model.Model { return model.Clone(m) })
		}
	}
	s.mu.RUnlock()
	for _, row := range rows {
		if !fn(row()) {
			return
		}
	}
}

// Tags is a read-only view of a row's external_ids, shared with the store (rows never
// change, so a view stays valid and unchanged). The zero Tags is empty.
type Tags struct {
	p []string // sorted pairs
}

// Get returns the value of key, "" if absent.
func (t Tags) Get(key string) string {
	v, _ := lookupPair(t.p, key)
	return v
}

// Lookup returns the value of key and whether it is present.
func (t Tags) Lookup(key string) (string, bool) { return lookupPair(t.p, key) }

// Len returns the number of pairs.
func (t Tags) Len() int { return len(t.p) / 2 }

// All yields the pairs in key order.
func (t Tags) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i < len(t.p); i += 2 {
			if !yield(t.p[i], t.p[i+1]) {
				return
			}
		}
	}
}

// Tags returns the external_ids of the Bridge, Port or Interface row named name.
func (s *Store) Tags(table, name string) (Tags, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch table {
	case vswitch.BridgeTable:
		if b := s.cur.brName[name]; b != nil {
			return Tags{b.ext}, true
		}
	case vswitch.PortTable:
		if p := s.cur.portName[name]; p != nil {
			return Tags{p.maps[p.ocEnd:]}, true
		}
	case vswitch.InterfaceTable:
		if r := s.cur.ifName[name]; r != nil {
			return Tags{r.section(2)}, true
		}
	}
	return Tags{}, false
}

// EachOwned calls fn with the table, name and external_ids of every Bridge, Port and
// Interface row, tables in that order, rows in no particular order, until fn returns false. It
// iterates over the rows held when it was called; fn may call the store.
func (s *Store) EachOwned(fn func(table, name string, tags Tags) bool) {
	type owned struct {
		table, name string
		tags        Tags
	}
	s.mu.RLock()
	rows := make([]owned, 0, len(s.cur.bridges)+len(s.cur.ports)+len(s.cur.ifaces))
	for _, b := range s.cur.bridges {
		rows = append(rows, owned{vswitch.BridgeTable, b.m.Name, Tags{b.ext}})
	}
	for _, p := range s.cur.ports {
		rows = append(rows, owned{vswitch.PortTable, p.name, Tags{p.maps[p.ocEnd:]}})
	}
	for _, r := range s.cur.ifaces {
		rows = append(rows, owned{vswitch.InterfaceTable, r.name, Tags{r.section(2)}})
	}
	s.mu.RUnlock()
	for _, o := range rows {
		if !fn(o.table, o.name, o.tags) {
			return
		}
	}
}
