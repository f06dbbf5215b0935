package ovsdb

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// QoS rows. A port's QoS is one row of the QoS table referenced from the port's qos column,
// and its queues rows of the Queue table referenced from QoS.queues by queue id. Both tables
// are roots: OVSDB keeps their rows when nothing refers to them any more, so this package
// deletes the rows it created when the port drops its QoS (or a queue) or is deleted, in the
// same transaction that unlinks them. New rows are inserted in the transaction that links
// them: the queues, then the QoS, then the port (or the port's qos column update).
//
// Ownership is per row: the rows this package creates carry the owner tag. A QoS row someone
// else linked to an owned port (ovs-vsctl set Port p0 qos=@q -- --id=@q create QoS …) is never
// modified, unlinked or deleted; a queue someone else put into an owned QoS stays in it, under
// its id. Client.PortQoS reports both so the daemon's status can say which setting is held.

// qosRow encodes q's settings columns (every column but queues and external_ids).
func qosRow(q *model.QoS) libovsdb.Row {
	return libovsdb.Row{"type": q.Type, "other_config": mustMap(q.OtherConfig())}
}

// queueRow encodes qu's settings columns (every column but external_ids).
func queueRow(qu *model.Queue) libovsdb.Row {
	return libovsdb.Row{"other_config": mustMap(qu.OtherConfig()), "dscp": optInt(qu.DSCP)}
}

// queueState is one queue of a QoS row, read from the cache.
type queueState struct {
	uuid  string
	owned bool
	q     model.Queue
	row   libovsdb.Row // its settings columns as read (for guards)
	ext   map[string]string
}

// qosState is a QoS row read from the cache.
type qosState struct {
	uuid   string
	owned  bool
	typ    string
	oc     map[string]string
	ext    map[string]string
	queues map[int]queueState // every queue, by id (those whose row is in the cache)
	refs   map[int]string     // QoS.queues as read
}

// settings returns the QoS the row holds: its type and other_config, with its owned queues.
func (s *qosState) settings() *model.QoS {
	q := model.QoSFromRow(s.typ, s.oc)
	for _, id := range slices.Sorted(maps.Keys(s.queues)) {
		if qs := s.queues[id]; qs.owned {
			q.Queues = append(q.Queues, qs.q)
		}
	}
	return q.Canonical()
}

// foreignQueues returns the ids of queues someone else created, sorted.
func (s *qosState) foreignQueues() []int {
	var out []int
	for id, qs := range s.queues {
		if !qs.owned {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// readQoS reads QoS row uuid and its queues from the cache.
func (c *Client) readQoS(uuid string) (*qosState, bool) {
	rr, ok := c.read()
	if !ok {
		return nil, false
	}
	r, ok := rr.byUUID(vswitch.QoSTable, uuid).(*vswitch.QoS)
	if !ok {
		return nil, false
	}
	s := &qosState{uuid: uuid, owned: ownedBy(r.ExternalIDs, c.owner), typ: r.Type, oc: maps.Clone(r.OtherConfig),
		ext: maps.Clone(r.ExternalIDs), queues: map[int]queueState{}, refs: maps.Clone(r.Queues)}
	for id, qu := range r.Queues {
		q, ok := rr.byUUID(vswitch.QueueTable, qu).(*vswitch.Queue)
		if !ok {
			continue
		}
		m := model.QueueFromRow(id, q.OtherConfig, q.DSCP)
		s.queues[id] = queueState{uuid: qu, owned: ownedBy(q.ExternalIDs, c.owner), q: m, row: queueRow(&m),
			ext: maps.Clone(q.ExternalIDs)}
	}
	return s, true
}

// queueRefs encodes QoS.queues.
func queueRefs(refs map[int]string) libovsdb.OvsMap {
	gm := make(map[any]any, len(refs))
	for id, u := range refs {
		gm[id] = libovsdb.UUID{GoUUID: u}
	}
	return libovsdb.OvsMap{GoMap: gm}
}

// insertQueue emits the insert of a new, tagged queue row and returns its named UUID.
func (p *planner) insertQueue(port string, qu *model.Queue) string {
	u := p.namedUUID("queue")
	row := queueRow(qu)
	row["external_ids"] = mustMap(tagged(nil, p.owner, p.gen))
	p.add(objRef{vswitch.PortTable, port}, insertOp(vswitch.QueueTable, u, row))
	return u
}

// insertQoS emits the inserts of a new, tagged QoS row with its queues and returns the QoS's
// named UUID (to link from the port in the same transaction).
func (p *planner) insertQoS(port string, q *model.QoS) string {
	refs := map[int]string{}
	for i := range q.Queues {
		refs[q.Queues[i].ID] = p.insertQueue(port, &q.Queues[i])
	}
	u := p.namedUUID("qos")
	row := qosRow(q)
	row["queues"] = queueRefs(refs)
	row["external_ids"] = mustMap(tagged(nil, p.owner, p.gen))
	p.add(objRef{vswitch.PortTable, port}, insertOp(vswitch.QoSTable, u, row))
	return u
}

// planPortQoS plans an existing owned port's QoS: it sets row["qos"] when the port's
// reference changes, and emits the inserts, updates and deletes of QoS and queue rows. An owned
// QoS with other settings is updated in place (its owned queues too); an owned QoS no longer
// wanted is unlinked and deleted with its owned queues; a missing one is created and linked in
// the same transaction; a QoS ovsplane did not create is left exactly as it is. It reports
// whether it changed a row in place (the port then takes the generation too).
func (p *planner) planPortQoS(port string, want *model.QoS, cur *vswitch.Port, row libovsdb.Row) (updated bool) {
	if cur.QOS == nil {
		if want != nil {
			u := p.insertQoS(port, want)
			row["qos"] = optUUID(&u)
		}
		return false
	}
	st, ok := p.c.readQoS(*cur.QOS)
	if !ok || !st.owned {
		return false // not in the cache yet (the port guard decides), or someone else's
	}
	if want == nil {
		row["qos"] = optUUID(nil)
		p.dropQoS(port, st)
		return false
	}
	return p.updateQoS(port, st, want)
}

// updateQoS brings owned QoS st to want in place.
func (p *planner) updateQoS(port string, st *qosState, want *model.QoS) bool {
	bref := objRef{vswitch.PortTable, port}
	refs := map[int]string{}
	maps.Copy(refs, st.refs)
	changed := false
	for id, qs := range st.queues {
		if !qs.owned {
			continue // someone else's queue: it keeps its id
		}
		i := slices.IndexFunc(want.Queues, func(q model.Queue) bool { return q.ID == id })
		qref := objRef{vswitch.QueueTable, fmt.Sprintf("%s %d", port, id)}
		if i < 0 {
			delete(refs, id)
			p.guard(qref, qs.uuid, true, existsRow(qs.uuid))
			p.add(bref, deleteOp(vswitch.QueueTable, qs.uuid))
			p.goneUUIDs[qs.uuid] = true
			changed = true
			continue
		}
		w := queueRow(&want.Queues[i])
		if reflect.DeepEqual(qs.row, w) {
			continue
		}
		p.guard(qref, qs.uuid, true, qs.row)
		w["external_ids"] = mustMap(tagged(withoutTags(qs.ext), p.owner, p.gen))
		p.add(bref, updateOp(vswitch.QueueTable, whereUUID(qs.uuid), w))
		changed = true
	}
	for i := range want.Queues {
		id := want.Queues[i].ID
		if _, held := refs[id]; held {
			continue // ours (handled above) or someone else's (reported)
		}
		refs[id] = p.insertQueue(port, &want.Queues[i])
		changed = true
	}
	wantRow := qosRow(want)
	gotRow := qosRow(model.QoSFromRow(st.typ, st.oc))
	settingsChanged := !reflect.DeepEqual(gotRow, wantRow)
	if !settingsChanged && maps.Equal(refs, st.refs) {
		return changed
	}
	ref := objRef{vswitch.QoSTable, port}
	p.guard(ref, st.uuid, true, libovsdb.Row{"type": st.typ, "other_config": mustMap(st.oc), "queues": queueRefs(st.refs)})
	upd := libovsdb.Row{"queues": queueRefs(refs), "external_ids": mustMap(tagged(withoutTags(st.ext), p.owner, p.gen))}
	if settingsChanged {
		maps.Copy(upd, wantRow)
	}
	p.add(bref, updateOp(vswitch.QoSTable, whereUUID(st.uuid), upd))
	return true
}

// dropQoS plans the deletion of owned QoS st and its owned queues (the caller unlinks it from
// the port in the same transaction). Queues someone else created stay.
func (p *planner) dropQoS(port string, st *qosState) {
	bref := objRef{vswitch.PortTable, port}
	p.guard(objRef{vswitch.QoSTable, port}, st.uuid, true, existsRow(st.uuid))
	p.add(bref, deleteOp(vswitch.QoSTable, st.uuid))
	p.goneUUIDs[st.uuid] = true
	for _, id := range slices.Sorted(maps.Keys(st.queues)) {
		qs := st.queues[id]
		if !qs.owned {
			continue
		}
		p.guard(objRef{vswitch.QueueTable, fmt.Sprintf("%s %d", port, id)}, qs.uuid, true, existsRow(qs.uuid))
		p.add(bref, deleteOp(vswitch.QueueTable, qs.uuid))
		p.goneUUIDs[qs.uuid] = true
	}
}

// dropPortQoS plans the deletion of a deleted port's owned QoS (QoS is a root table: it would
// outlive the port otherwise).
func (p *planner) dropPortQoS(port *vswitch.Port) {
	if port.QOS == nil {
		return
	}
	if st, ok := p.c.readQoS(*port.QOS); ok && st.owned {
		p.dropQoS(port.Name, st)
	}
}

// PortQoS is what OVSDB holds for one port's QoS, read from the cache.
type PortQoS struct {
	// QoS is the row's settings with the queues this owner created (nil: no row in the cache).
	QoS    *model.QoS
	Holder ExportHolder
	// ForeignQueues are the ids of queues in an owned QoS that someone else created.
	ForeignQueues []int
}

// PortQoSes returns, by port name, the QoS rows OVSDB holds for each port in the cache that
// has one.
func (c *Client) PortQoSes() map[string]PortQoS {
	r, ok := c.read()
	if !ok {
		return nil
	}
	out := map[string]PortQoS{}
	r.each(vswitch.PortTable, func(_ string, m libmodel.Model) bool {
		pt, ok := m.(*vswitch.Port)
		if !ok || pt.QOS == nil {
			return true
		}
		st, ok := c.readQoS(*pt.QOS)
		if !ok {
			return true
		}
		pq := PortQoS{QoS: st.settings(), Holder: ExportForeign}
		if st.owned {
			pq.Holder, pq.ForeignQueues = ExportOwned, st.foreignQueues()
		}
		out[pt.Name] = pq
		return true
	})
	return out
}

// validatePortObjects checks a port intent's QoS and its interfaces' ingress policing; the
// error matches ErrInvalid and names every problem.
func validatePortObjects(p *model.Port, ifaces []model.Interface) error {
	var probs []string
	for _, fp := range p.CheckBond() {
		probs = append(probs, fp.String())
	}
	if p.QoS != nil {
		for _, fp := range p.QoS.Check() {
			probs = append(probs, "qos."+fp.String())
		}
	}
	for i := range ifaces {
		for _, fp := range ifaces[i].CheckPolicing() {
			probs = append(probs, fmt.Sprintf("interface %q: %s", ifaces[i].Name, fp))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: port %q: %s", ErrInvalid, p.Name, strings.Join(probs, "; "))
	}
	return nil
}
