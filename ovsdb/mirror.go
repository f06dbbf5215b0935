package ovsdb

import (
	"maps"
	"reflect"
	"slices"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Mirror rows. A bridge's mirrors are rows of the Mirror table referenced (strongly) from the
// bridge's mirrors column; the table is not a root, so a row is created in the transaction that
// links it and removing it means unlinking it (OVSDB deletes it). A mirror names ports by UUID,
// weakly: a deleted port drops out of it, and the next pass puts it back once the port exists.
//
// Mirrors are planned when the transaction's other intents are (finish): the ports they name
// may be created by the same transaction. A port that does not exist on the bridge (yet) is
// left out of the row, so the mirror stays pending. The rows this package creates carry the
// owner tag; a mirror someone else created on an owned bridge is never modified or unlinked,
// even when a desired mirror has its name (Client.BridgeMirrors reports it).

// mirrorPlan is a bridge whose mirrors finish plans: cur is nil for a bridge created in this
// transaction.
type mirrorPlan struct {
	name string
	spec *model.Bridge
	cur  *vswitch.Bridge
}

// bridgePorts returns the UUIDs of the ports bridge b will hold after this transaction, by name.
func (p *planner) bridgePorts(b *bridgeState, cur *vswitch.Bridge) map[string]string {
	out := map[string]string{}
	var uuids []string
	if cur != nil {
		uuids = append(uuids, cur.Ports...)
	}
	uuids = append(uuids, b.add...)
	for _, u := range uuids {
		if p.goneUUIDs[u] || slices.Contains(b.del, u) {
			continue
		}
		if name, ok := p.newPortNames[u]; ok {
			out[name] = u
			continue
		}
		pt := &vswitch.Port{}
		if p.rowByUUID(vswitch.PortTable, u, pt) {
			out[pt.Name] = u
		}
	}
	return out
}

// mirrorRow encodes m's columns but external_ids, with its ports as UUIDs from ports (names
// not there are left out).
func mirrorRow(m *model.Mirror, ports map[string]string) libovsdb.Row {
	uuids := func(names []string) libovsdb.OvsSet {
		var us []string
		for _, n := range names {
			if u, ok := ports[n]; ok {
				us = append(us, u)
			}
		}
		return uuidSet(us)
	}
	var out *string
	if u, ok := ports[m.OutputPort]; ok && m.OutputPort != "" {
		out = &u
	}
	return libovsdb.Row{"name": m.Name, "select_all": m.SelectAll, "select_src_port": uuids(m.SelectSrcPorts),
		"select_dst_port": uuids(m.SelectDstPorts), "select_vlan": intSet(m.SelectVLANs),
		"output_port": optUUID(out), "output_vlan": optInt(m.OutputVLAN), "snaplen": optInt(m.Snaplen)}
}

// mirrorModel reads Mirror row r with its ports named from names (port UUID → name; a port
// not there is left out).
func mirrorModel(r *vswitch.Mirror, names map[string]string) model.Mirror {
	named := func(us []string) []string {
		var out []string
		for _, u := range us {
			if n, ok := names[u]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	m := model.Mirror{Name: r.Name, SelectAll: r.SelectAll, SelectSrcPorts: named(r.SelectSrcPort),
		SelectDstPorts: named(r.SelectDstPort), SelectVLANs: r.SelectVLAN, OutputVLAN: r.OutputVLAN, Snaplen: r.Snaplen}
	if r.OutputPort != nil {
		m.OutputPort = names[*r.OutputPort]
	}
	return m.Canonical()
}

// curMirrorRow encodes a Mirror row as read, like mirrorRow.
func curMirrorRow(r *vswitch.Mirror) libovsdb.Row {
	return libovsdb.Row{"name": r.Name, "select_all": r.SelectAll, "select_src_port": uuidSet(r.SelectSrcPort),
		"select_dst_port": uuidSet(r.SelectDstPort), "select_vlan": intSet(r.SelectVLAN),
		"output_port": optUUID(r.OutputPort), "output_vlan": optInt(r.OutputVLAN), "snaplen": optInt(r.Snaplen)}
}

// sameRow compares two encoded rows, sets as sets.
func sameRow(a, b libovsdb.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		as, aok := av.(libovsdb.OvsSet)
		bs, bok := bv.(libovsdb.OvsSet)
		if aok && bok {
			if !sameSet(as.GoSet, bs.GoSet) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(av, bv) {
			return false
		}
	}
	return true
}

func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y any) bool { return reflect.DeepEqual(x, y) }) {
			return false
		}
	}
	return true
}

// insertMirror emits the insert of a new, tagged mirror row and returns its named UUID.
func (p *planner) insertMirror(bridge string, want libovsdb.Row) string {
	u := p.namedUUID("mirror")
	row := maps.Clone(want)
	row["external_ids"] = mustMap(tagged(nil, p.owner, p.gen))
	p.add(objRef{vswitch.BridgeTable, bridge}, insertOp(vswitch.MirrorTable, u, row))
	return u
}

// planMirrorsNew plans the mirrors of a bridge created in this transaction and returns their
// named UUIDs for its mirrors column.
func (p *planner) planMirrorsNew(name string, b *bridgeState) []string {
	ports := p.bridgePorts(b, nil)
	var out []string
	for _, m := range b.created.Mirrors {
		out = append(out, p.insertMirror(name, mirrorRow(&m, ports)))
	}
	return out
}

// planMirrors plans an existing owned bridge's mirrors: an owned mirror with other settings is
// updated in place, one no longer wanted is unlinked (OVSDB deletes it), a missing one is
// created and linked; a mirror someone else created is left as it is.
func (p *planner) planMirrors(mp mirrorPlan) {
	b := p.bridges[mp.name]
	if b == nil || b.deleted || b.created != nil {
		return
	}
	ports := p.bridgePorts(b, mp.cur)
	want := map[string]*model.Mirror{}
	for i := range mp.spec.Mirrors {
		want[mp.spec.Mirrors[i].Name] = &mp.spec.Mirrors[i]
	}
	bref := objRef{vswitch.BridgeTable, mp.name}
	held := map[string]bool{}
	var add, del []string
	for _, u := range mp.cur.Mirrors {
		r := &vswitch.Mirror{}
		if !p.rowByUUID(vswitch.MirrorTable, u, r) {
			continue // not in the cache yet: a later pass sees it
		}
		held[r.Name] = true
		if !ownedBy(r.ExternalIDs, p.owner) {
			continue // someone else's: never ours to change or unlink
		}
		w, wanted := want[r.Name]
		if !wanted {
			del = append(del, u)
			continue
		}
		wrow, got := mirrorRow(w, ports), curMirrorRow(r)
		if sameRow(wrow, got) {
			continue
		}
		p.guard(objRef{vswitch.MirrorTable, mp.name + " " + r.Name}, u, true, got)
		wrow["external_ids"] = mustMap(tagged(withoutTags(r.ExternalIDs), p.owner, p.gen))
		p.add(bref, updateOp(vswitch.MirrorTable, whereUUID(u), wrow))
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !held[name] {
			add = append(add, p.insertMirror(mp.name, mirrorRow(want[name], ports)))
		}
	}
	if len(add)+len(del) > 0 {
		p.guard(bref, b.uuid, true, existsRow(b.uuid))
		p.add(bref, mutateOp(vswitch.BridgeTable, whereUUID(b.uuid), pairMutations("mirrors", del, add)))
	}
}

// MirrorHave is what OVSDB holds for one mirror of a bridge, read from the cache.
type MirrorHave struct {
	// Mirror is the row's settings, its ports named (ports not on the bridge left out).
	Mirror model.Mirror
	// Owned: this client's owner created it; otherwise ovsplane never changes or unlinks it.
	Owned bool
}

// BridgeMirrors returns, by bridge name and mirror name, the mirrors OVSDB holds for each
// bridge in the cache that has any.
func (c *Client) BridgeMirrors() map[string]map[string]MirrorHave {
	rr, ok := c.read()
	if !ok {
		return nil
	}
	out := map[string]map[string]MirrorHave{}
	rr.each(vswitch.BridgeTable, func(_ string, m libmodel.Model) bool {
		br, ok := m.(*vswitch.Bridge)
		if !ok || len(br.Mirrors) == 0 {
			return true
		}
		names := map[string]string{}
		for _, pu := range br.Ports {
			if pt, ok := rr.byUUID(vswitch.PortTable, pu).(*vswitch.Port); ok {
				names[pu] = pt.Name
			}
		}
		have := map[string]MirrorHave{}
		for _, mu := range br.Mirrors {
			if r, ok := rr.byUUID(vswitch.MirrorTable, mu).(*vswitch.Mirror); ok {
				have[r.Name] = MirrorHave{Mirror: mirrorModel(r, names), Owned: ownedBy(r.ExternalIDs, c.owner)}
			}
		}
		out[br.Name] = have
		return true
	})
	return out
}
