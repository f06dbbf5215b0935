package ovsdb

import (
	"reflect"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// compactRows is rowReader over the compact replica (ovsdb/internal/replica). Its each
// materialises a fresh model per row: callers may keep them, unlike cacheRows' shared rows.
type compactRows struct{ s *replica.Store }

func (r compactRows) root() *vswitch.OpenvSwitch { return r.s.Root() }

func (r compactRows) byName(table, name string) (string, libmodel.Model) {
	switch table {
	case vswitch.BridgeTable:
		if m, ok := r.s.Bridge(name); ok {
			return m.UUID, m
		}
	case vswitch.PortTable:
		if m, ok := r.s.Port(name); ok {
			return m.UUID, m
		}
	case vswitch.InterfaceTable:
		if m, ok := r.s.Interface(name); ok {
			return m.UUID, m
		}
	}
	return "", nil
}

func (r compactRows) byUUID(table, uuid string) libmodel.Model {
	if m, ok := r.s.ByUUID(table, uuid); ok {
		return m
	}
	return nil
}

func (r compactRows) each(table string, fn func(string, libmodel.Model) bool) {
	r.s.Each(table, func(m libmodel.Model) bool { return fn(modelUUID(m), m) })
}

func (r compactRows) has(table, uuid string) bool { return r.s.Has(table, uuid) }

func (r compactRows) count(table string) int { return r.s.Count(table) }

func (r compactRows) eachState(owner string, fn func(InterfaceState) bool) {
	r.s.EachInterfaceStatus(func(st replica.InterfaceStatus) bool { return fn(stateOfStatus(st, owner)) })
}

func (r compactRows) state(owner, name string) (InterfaceState, bool) {
	st, ok := r.s.InterfaceStatusOf(name)
	if !ok {
		return InterfaceState{}, false
	}
	return stateOfStatus(st, owner), true
}

// stateOfStatus is stateOf for the compact replica's status of a row.
func stateOfStatus(st replica.InterfaceStatus, owner string) InterfaceState {
	return InterfaceState{Name: st.Name, Type: st.Type, Ofport: st.Ofport, Error: st.Error, LinkState: st.LinkState,
		AdminState: st.AdminState, MTU: st.MTU, MAC: st.MAC, Statistics: st.Statistics,
		Owned: st.ExternalIDs.Get(OwnerKey) == owner}
}

func (r compactRows) tags(table, name string) (Tags, bool) {
	t, ok := r.s.Tags(table, name)
	return Tags{r: t}, ok
}

func (r compactRows) eachTagged(fn func(table, name string, tags Tags) bool) {
	r.s.EachOwned(func(table, name string, t replica.Tags) bool { return fn(table, name, Tags{r: t}) })
}

// modelUUID returns the UUID field of a generated vswitch model ("" for anything else).
func modelUUID(m libmodel.Model) string {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return ""
	}
	f := v.Elem().FieldByName("UUID")
	if f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}
