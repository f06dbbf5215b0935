package ovsdb

import (
	"github.com/ovn-kubernetes/libovsdb/cache"
	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// rowReader is the client's read side of the monitored tables: the rows as last received from
// the server. Every read answers from that state without I/O and without waiting for the
// connection (during an outage it answers from the last state received). It is the one seam
// between package ovsdb and the replica behind it (libovsdb's cache today); nothing else in the
// package reads the replica (TestCacheReadOnlyThroughRows).
//
// Rows passed to each are the replica's own, shared and never changed by it (an update replaces
// a row; it never edits one in place): callers must not modify them, nor their maps and slices.
// Rows returned by byName and byUUID are copies the caller owns.
type rowReader interface {
	// root returns the Open_vSwitch row (shared, read only), or nil when the table is empty.
	root() *vswitch.OpenvSwitch
	// byName returns a copy of the Bridge, Port or Interface row named name (unique by the
	// schema's index) and its uuid, or nil when there is none or table has no name index.
	byName(table, name string) (uuid string, m libmodel.Model)
	// byUUID returns a copy of row uuid of table, or nil when table does not hold it.
	byUUID(table, uuid string) libmodel.Model
	// each calls fn with every row of table and its uuid, in no particular order, until fn
	// returns false. The rows are shared (read only). fn may read through the same rowReader;
	// each read sees the replica as it is then (a change may land between two of them).
	each(table string, fn func(uuid string, m libmodel.Model) bool)
	// has reports whether table holds row uuid.
	has(table, uuid string) bool
	// count returns the number of rows in table.
	count(table string) int
	// eachState calls fn with the state of every Interface row (InterfaceState, Owned by
	// owner), in no particular order, until fn returns false.
	eachState(owner string, fn func(InterfaceState) bool)
	// state returns the state of the Interface row named name; false when there is none.
	state(owner, name string) (InterfaceState, bool)
	// tags returns the external_ids of the Bridge, Port or Interface row named name; false
	// when there is none.
	tags(table, name string) (Tags, bool)
	// eachTagged calls fn with the table, name and external_ids of every Bridge, Port and
	// Interface row, in no particular order, until fn returns false. fn may read through the
	// same rowReader.
	eachTagged(fn func(table, name string, tags Tags) bool)
}

// read returns the replica's read side, or false when there is none: before the client's
// first connection and after Close.
func (c *Client) read() (rowReader, bool) {
	if c.store != nil {
		return compactRows{s: c.store}, true
	}
	tc := c.lc.Cache()
	if tc == nil {
		return nil, false
	}
	return cacheRows{tc: tc}, true
}

// subscribe registers h for every later change of the replica's rows; false when there is no
// replica (see read). A handler runs on the replica's event goroutine and is never removed.
// A refill of the replica (at start and after every reconnection) adds the Open_vSwitch row
// again, without delete events for rows that went away meanwhile.
func (c *Client) subscribe(h cache.EventHandler) bool {
	if c.store != nil {
		c.mu.Lock()
		c.handlers = append(c.handlers, h)
		c.mu.Unlock()
		return true
	}
	tc := c.lc.Cache()
	if tc == nil {
		return false
	}
	tc.AddEventHandler(h)
	return true
}

// cacheRows is rowReader over libovsdb's cache.
type cacheRows struct{ tc *cache.TableCache }

func (r cacheRows) root() *vswitch.OpenvSwitch {
	var out *vswitch.OpenvSwitch
	r.each(vswitch.OpenvSwitchTable, func(_ string, m libmodel.Model) bool {
		out, _ = m.(*vswitch.OpenvSwitch)
		return out == nil
	})
	return out
}

func (r cacheRows) byName(table, name string) (string, libmodel.Model) {
	var key libmodel.Model
	switch table {
	case vswitch.BridgeTable:
		key = &vswitch.Bridge{Name: name}
	case vswitch.PortTable:
		key = &vswitch.Port{Name: name}
	case vswitch.InterfaceTable:
		key = &vswitch.Interface{Name: name}
	default:
		return "", nil
	}
	t := r.tc.Table(table)
	if t == nil {
		return "", nil
	}
	// RowByModel reads the cache's index as it is; libovsdb's Get would wait for the cache to
	// be consistent, which it is not while the connection is down. It returns a copy.
	uuid, m, err := t.RowByModel(key)
	if err != nil || m == nil {
		return "", nil
	}
	return uuid, m
}

func (r cacheRows) byUUID(table, uuid string) libmodel.Model {
	t := r.tc.Table(table)
	if t == nil {
		return nil
	}
	return t.Row(uuid) // a copy
}

func (r cacheRows) each(table string, fn func(string, libmodel.Model) bool) {
	t := r.tc.Table(table)
	if t == nil {
		return
	}
	for uuid, m := range t.RowsShallow() { // a copy of the table's map; the rows are shared
		if !fn(uuid, m) {
			return
		}
	}
}

func (r cacheRows) has(table, uuid string) bool {
	t := r.tc.Table(table)
	return t != nil && t.HasRow(uuid)
}

func (r cacheRows) eachState(owner string, fn func(InterfaceState) bool) {
	r.each(vswitch.InterfaceTable, func(_ string, row libmodel.Model) bool {
		ifc, ok := row.(*vswitch.Interface)
		return !ok || fn(stateOf(ifc, owner))
	})
}

func (r cacheRows) state(owner, name string) (InterfaceState, bool) {
	_, row := r.byName(vswitch.InterfaceTable, name)
	ifc, ok := row.(*vswitch.Interface)
	if !ok {
		return InterfaceState{}, false
	}
	return stateOf(ifc, owner), true
}

func (r cacheRows) tags(table, name string) (Tags, bool) {
	_, m := r.byName(table, name)
	switch v := m.(type) {
	case *vswitch.Bridge:
		return Tags{m: v.ExternalIDs}, true
	case *vswitch.Port:
		return Tags{m: v.ExternalIDs}, true
	case *vswitch.Interface:
		return Tags{m: v.ExternalIDs}, true
	}
	return Tags{}, false
}

func (r cacheRows) eachTagged(fn func(table, name string, tags Tags) bool) {
	for _, table := range []string{vswitch.BridgeTable, vswitch.PortTable, vswitch.InterfaceTable} {
		stop := false
		r.each(table, func(_ string, row libmodel.Model) bool {
			var name string
			var ext map[string]string
			switch v := row.(type) {
			case *vswitch.Bridge:
				name, ext = v.Name, v.ExternalIDs
			case *vswitch.Port:
				name, ext = v.Name, v.ExternalIDs
			case *vswitch.Interface:
				name, ext = v.Name, v.ExternalIDs
			default:
				return true
			}
			stop = !fn(table, name, Tags{m: ext})
			return !stop
		})
		if stop {
			return
		}
	}
}

func (r cacheRows) count(table string) int {
	t := r.tc.Table(table)
	if t == nil {
		return 0
	}
	return t.Len()
}

// eventFilter is implemented by event handlers that can tell they would ignore every event
// now (a paused or closed InterfaceWatch): the compact replica then builds no rows for them.
type eventFilter interface{ wantsEvents() bool }

// replicaCommitted is the compact replica link's OnCommit: it wakes the client's waiters and
// gives the subscribed handlers libovsdb's events for the rows p changed. A new generation
// (initial) is told as the Open_vSwitch row's add, as libovsdb's refill after a reconnection
// is.
func (c *Client) replicaCommitted(initial bool, p *replica.Pending) {
	c.onChange()
	c.mu.Lock()
	all := c.handlers
	c.mu.Unlock()
	var hs []cache.EventHandler
	for _, h := range all {
		if f, ok := h.(eventFilter); !ok || f.wantsEvents() {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return // no row is built for nobody
	}
	if initial {
		if root := c.store.Root(); root != nil {
			for _, h := range hs {
				h.OnAdd(vswitch.OpenvSwitchTable, libmodel.Clone(root))
			}
		}
		return
	}
	p.EachChange(func(table string, old, new libmodel.Model) {
		for _, h := range hs {
			switch {
			case old == nil:
				h.OnAdd(table, new)
			case new == nil:
				h.OnDelete(table, old)
			default:
				h.OnUpdate(table, old, new)
			}
		}
	})
}
