package ovsdb

import (
	"sync"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// InterfaceView is one cached Interface row with the Port that holds it and that port's
// Bridge: what a watcher of interfaces sees, whoever wrote the rows. Its maps are the cache's
// own (the cache replaces a row on update, it never changes one in place): read only.
type InterfaceView struct {
	Name, Type   string
	Port, Bridge string
	Options      map[string]string
	OtherConfig  map[string]string
	ExternalIDs  map[string]string
	// PortExternalIDs are the external_ids of the port holding the interface.
	PortExternalIDs map[string]string
	// Ofport is 0 while ovs-vswitchd has not assigned one, -1 when it failed to add the
	// interface (Error then says why).
	Ofport int64
	Error  string
}

// InterfaceUpdate is what InterfaceWatch.Collect returns.
type InterfaceUpdate struct {
	// Full is true when Views lists every interface that is on a bridge: any other is gone.
	Full bool
	// Views are the current states of the interfaces that may have changed since the last
	// Collect (of every interface on a bridge when Full), in the order their changes arrived.
	Views []InterfaceView
	// Gone names interfaces that may have changed and are now absent, or on no bridge (an
	// interface whose port or bridge row the cache has not shown yet is listed again when it
	// does). Empty when Full.
	Gone []string
}

// maxDirty bounds the names and row ids an InterfaceWatch remembers between two Collects;
// beyond it the watch forgets them and its next Collect is Full.
const maxDirty = 1 << 16

// InterfaceWatch follows the cached Interface, Port and Bridge rows for a consumer that wants
// the latest state of each interface that changed, not each intermediate state: the cache's
// events only mark interfaces dirty (bounded by maxDirty), and Collect reads their state from
// the cache. Rows a reconnection removed (the cache is refilled without delete events) and
// events the cache dropped under load are caught by a Full Collect, which the watch does by
// itself after a reconnection and the consumer asks for now and then (an audit). Its methods
// are safe for concurrent use.
type InterfaceWatch struct {
	c     *Client
	ready chan struct{} // holds a token while something is dirty

	mu      sync.Mutex
	closed  bool
	paused  bool                // see Pause: events are ignored until the next Collect
	full    bool                // the next Collect lists everything
	names   []string            // changed interfaces, in arrival order
	named   map[string]struct{} // the set of names
	ifUUIDs map[string]struct{} // interfaces of changed ports
	ports   map[string]struct{} // ports added to or removed from a bridge
	// The topology as the events describe it: interface UUID → its port, port UUID → the
	// port and its bridge's name. Rebuilt from the cache by every Full Collect.
	portOf   map[string]*vswitch.Port
	portRows map[string]*vswitch.Port
	bridgeOf map[string]string
}

// WatchInterfaces starts following the cache. The first Collect is Full. Close stops it
// (libovsdb cannot remove a handler: a closed watch's handler returns at once).
func (c *Client) WatchInterfaces() *InterfaceWatch {
	w := &InterfaceWatch{c: c, ready: make(chan struct{}, 1), full: true, named: map[string]struct{}{},
		ifUUIDs: map[string]struct{}{}, ports: map[string]struct{}{}, portOf: map[string]*vswitch.Port{}, portRows: map[string]*vswitch.Port{},
		bridgeOf: map[string]string{}}
	w.ready <- struct{}{}
	c.subscribe(w)
	return w
}

// Ready returns a channel that holds a token while a Collect would return something; Collect
// may also find nothing after it (a row changed back).
func (w *InterfaceWatch) Ready() <-chan struct{} { return w.ready }

// Close stops the watch: its handler ignores every later event.
func (w *InterfaceWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.names, w.named, w.ifUUIDs, w.ports, w.portOf, w.portRows, w.bridgeOf = nil, nil, nil, nil, nil, nil, nil
}

// Pause makes the watch forget the topology and what is dirty, and ignore the cache's events
// until the next Collect, which is Full: for a consumer with nobody to deliver to, which then
// keeps nothing (at 10,000 interfaces the topology holds ~1 MB).
func (w *InterfaceWatch) Pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.paused, w.full = true, true
	w.names = nil
	w.named, w.ifUUIDs, w.ports = map[string]struct{}{}, map[string]struct{}{}, map[string]struct{}{}
	w.portOf, w.portRows, w.bridgeOf = map[string]*vswitch.Port{}, map[string]*vswitch.Port{}, map[string]string{}
}

// wantsEvents reports whether the watch would record an event now (it is neither paused nor
// closed); see eventFilter.
func (w *InterfaceWatch) wantsEvents() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed && !w.paused
}

// OnAdd implements libovsdb's cache.EventHandler.
func (w *InterfaceWatch) OnAdd(table string, m libmodel.Model) { w.event(table, nil, m) }

// OnUpdate implements libovsdb's cache.EventHandler.
func (w *InterfaceWatch) OnUpdate(table string, old, m libmodel.Model) { w.event(table, old, m) }

// OnDelete implements libovsdb's cache.EventHandler.
func (w *InterfaceWatch) OnDelete(table string, old libmodel.Model) { w.event(table, old, nil) }

// event records one cache event. It runs on libovsdb's event goroutine: it must be quick.
func (w *InterfaceWatch) event(table string, old, m libmodel.Model) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.paused {
		return
	}
	switch table {
	case vswitch.InterfaceTable:
		for _, r := range []libmodel.Model{old, m} {
			if ifc, ok := r.(*vswitch.Interface); ok {
				w.markName(ifc.Name)
			}
		}
	case vswitch.PortTable:
		oldP, _ := old.(*vswitch.Port)
		newP, _ := m.(*vswitch.Port)
		w.portEvent(oldP, newP)
	case vswitch.BridgeTable:
		oldB, _ := old.(*vswitch.Bridge)
		newB, _ := m.(*vswitch.Bridge)
		w.bridgeEvent(oldB, newB)
	case vswitch.OpenvSwitchTable:
		if old == nil {
			// The root row is added once per cache fill: at start and after every reconnection,
			// which refills the cache without delete events for the rows that went away.
			w.full = true
		}
	default:
		return
	}
	if len(w.named)+len(w.ifUUIDs)+len(w.ports) > maxDirty {
		w.full = true
	}
	if w.full {
		clear(w.named)
		clear(w.ifUUIDs)
		clear(w.ports)
		w.names = w.names[:0]
	}
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *InterfaceWatch) markName(name string) {
	if _, ok := w.named[name]; !ok {
		w.named[name] = struct{}{}
		w.names = append(w.names, name)
	}
}

// portEvent keeps portOf and marks the port's interfaces, old and new, dirty.
func (w *InterfaceWatch) portEvent(old, m *vswitch.Port) {
	if old != nil {
		delete(w.portRows, old.UUID)
		for _, u := range old.Interfaces {
			w.ifUUIDs[u] = struct{}{}
			if p := w.portOf[u]; p != nil && p.UUID == old.UUID {
				delete(w.portOf, u)
			}
		}
	}
	if m != nil {
		w.portRows[m.UUID] = m
		for _, u := range m.Interfaces {
			w.ifUUIDs[u] = struct{}{}
			w.portOf[u] = m
		}
	}
}

// bridgeEvent keeps bridgeOf and marks the ports that joined or left the bridge dirty.
// It costs O(ports of the bridge) per event, as the cache's own copy of the row does.
func (w *InterfaceWatch) bridgeEvent(old, m *vswitch.Bridge) {
	after := map[string]struct{}{}
	if m != nil {
		for _, p := range m.Ports {
			after[p] = struct{}{}
		}
	}
	before := map[string]struct{}{}
	if old != nil {
		for _, p := range old.Ports {
			before[p] = struct{}{}
			if _, kept := after[p]; kept {
				continue
			}
			w.ports[p] = struct{}{}
			if w.bridgeOf[p] == old.Name {
				delete(w.bridgeOf, p)
			}
		}
	}
	if m == nil {
		return
	}
	for p := range after {
		if _, had := before[p]; !had {
			w.ports[p] = struct{}{}
			w.bridgeOf[p] = m.Name
		}
	}
}

// Collect returns the current state of every interface marked dirty since the last Collect,
// or of every interface when full is true or the watch decided it must (a reconnection, too
// many dirty rows). It reads the cache as it is now, so a view may be newer than the event
// that marked it; every later change marks it again.
func (w *InterfaceWatch) Collect(full bool) InterfaceUpdate {
	r, ok := w.c.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return InterfaceUpdate{}
	}
	if !ok {
		w.full = true
		return InterfaceUpdate{}
	}
	if full || w.full {
		w.full, w.paused = false, false
		clear(w.named)
		clear(w.ifUUIDs)
		clear(w.ports)
		w.names = w.names[:0]
		w.rebuild(r)
		out := InterfaceUpdate{Full: true}
		r.each(vswitch.InterfaceTable, func(uuid string, row libmodel.Model) bool {
			if ifc, ok := row.(*vswitch.Interface); ok {
				if v, ok := w.view(uuid, ifc); ok {
					out.Views = append(out.Views, v)
				}
			}
			return true
		})
		return out
	}
	names := w.names
	for u := range w.ports {
		if p := w.portRows[u]; p != nil {
			for _, ifUUID := range p.Interfaces {
				w.ifUUIDs[ifUUID] = struct{}{}
			}
		}
	}
	for u := range w.ifUUIDs {
		if ifc, ok := r.byUUID(vswitch.InterfaceTable, u).(*vswitch.Interface); ok {
			if _, seen := w.named[ifc.Name]; !seen {
				w.named[ifc.Name] = struct{}{}
				names = append(names, ifc.Name)
			}
		}
	}
	var out InterfaceUpdate
	for _, name := range names {
		uuid, row := r.byName(vswitch.InterfaceTable, name)
		ifc, ok := row.(*vswitch.Interface)
		if !ok {
			out.Gone = append(out.Gone, name)
			continue
		}
		if v, ok := w.view(uuid, ifc); ok {
			out.Views = append(out.Views, v)
		} else {
			out.Gone = append(out.Gone, name)
		}
	}
	w.names = names[:0]
	clear(w.named)
	clear(w.ifUUIDs)
	clear(w.ports)
	return out
}

// rebuild makes the topology that of the Bridge and Port rows r holds.
func (w *InterfaceWatch) rebuild(r rowReader) {
	clear(w.portOf)
	clear(w.portRows)
	clear(w.bridgeOf)
	r.each(vswitch.BridgeTable, func(_ string, row libmodel.Model) bool {
		if br, ok := row.(*vswitch.Bridge); ok {
			for _, p := range br.Ports {
				w.bridgeOf[p] = br.Name
			}
		}
		return true
	})
	r.each(vswitch.PortTable, func(_ string, row libmodel.Model) bool {
		if p, ok := row.(*vswitch.Port); ok {
			w.portRows[p.UUID] = p
			for _, u := range p.Interfaces {
				w.portOf[u] = p
			}
		}
		return true
	})
}

// view builds the view of one interface row; false when it is on no bridge (as far as the
// topology knows).
func (w *InterfaceWatch) view(uuid string, ifc *vswitch.Interface) (InterfaceView, bool) {
	p := w.portOf[uuid]
	if p == nil {
		return InterfaceView{}, false
	}
	br, ok := w.bridgeOf[p.UUID]
	if !ok {
		return InterfaceView{}, false
	}
	v := InterfaceView{Name: ifc.Name, Type: ifc.Type, Port: p.Name, Bridge: br, Options: ifc.Options,
		OtherConfig: ifc.OtherConfig, ExternalIDs: ifc.ExternalIDs, PortExternalIDs: p.ExternalIDs, Error: derefStr(ifc.Error)}
	if ifc.Ofport != nil {
		v.Ofport = int64(*ifc.Ofport)
	}
	return v, true
}
