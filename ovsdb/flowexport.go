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

// Flow export rows. A bridge's NetFlow, IPFIX and sFlow settings are one row each of the
// NetFlow, IPFIX and sFlow tables, referenced (strongly) from the bridge's netflow, ipfix and
// sflow columns. Those tables are not roots: OVSDB deletes a row when no bridge refers to it
// any more, so a row is created in the same transaction that sets the bridge's column, and
// removing it means clearing the column. A bridge's IPFIX collector sets are
// Flow_Sample_Collector_Set rows (a root table) naming the bridge and an IPFIX row of their own.
//
// Ownership is per row, like everything else: the rows this package creates carry the owner
// tag; a row someone else put on an owned bridge (ovs-vsctl -- set Bridge br0 netflow=@nf --
// --id=@nf create NetFlow …) is never modified, replaced or unlinked, even when the intent
// asks for another setting or none. Client.BridgeExports reports such a row as Foreign so the
// daemon's status can say which setting is held and how to release it.

// exportCol describes one of the bridge's single-row export columns.
type exportCol struct {
	col, table, prefix string
}

var (
	netflowCol = exportCol{"netflow", vswitch.NetFlowTable, "nf"}
	ipfixCol   = exportCol{"ipfix", vswitch.IPFIXTable, "ipfix"}
	sflowCol   = exportCol{"sflow", vswitch.SFlowTable, "sflow"}
)

// netflowRow encodes n's settings columns (every column but external_ids).
func netflowRow(n *model.NetFlow) libovsdb.Row {
	return libovsdb.Row{"targets": stringSet(n.Targets), "active_timeout": n.ActiveTimeout,
		"engine_type": optInt(n.EngineType), "engine_id": optInt(n.EngineID), "add_id_to_interface": n.AddIDToInterface}
}

func netflowModel(r *vswitch.NetFlow) *model.NetFlow {
	return (&model.NetFlow{Targets: r.Targets, ActiveTimeout: r.ActiveTimeout, EngineType: r.EngineType,
		EngineID: r.EngineID, AddIDToInterface: r.AddIDToInterface}).Canonical()
}

func ipfixRow(x *model.IPFIX) libovsdb.Row {
	return libovsdb.Row{"targets": stringSet(x.Targets), "sampling": optInt(x.Sampling),
		"obs_domain_id": optInt(x.ObsDomainID), "obs_point_id": optInt(x.ObsPointID),
		"cache_active_timeout": optInt(x.CacheActiveTimeout), "cache_max_flows": optInt(x.CacheMaxFlows),
		"other_config": mustMap(x.OtherConfig)}
}

func ipfixModel(r *vswitch.IPFIX) *model.IPFIX {
	return (&model.IPFIX{Targets: r.Targets, Sampling: r.Sampling, ObsDomainID: r.ObsDomainID, ObsPointID: r.ObsPointID,
		CacheActiveTimeout: r.CacheActiveTimeout, CacheMaxFlows: r.CacheMaxFlows, OtherConfig: r.OtherConfig}).Canonical()
}

func sflowRow(s *model.SFlow) libovsdb.Row {
	return libovsdb.Row{"targets": stringSet(s.Targets), "agent": optString(s.Agent), "header": optInt(s.Header),
		"polling": optInt(s.Polling), "sampling": optInt(s.Sampling)}
}

func sflowModel(r *vswitch.SFlow) *model.SFlow {
	return (&model.SFlow{Targets: r.Targets, Agent: derefStr(r.Agent), Header: r.Header, Polling: r.Polling,
		Sampling: r.Sampling}).Canonical()
}

// exportRow reads export row uuid of table from the cache: its settings columns, encoded like a
// wanted row, and its external_ids.
func (p *planner) exportRow(table, uuid string) (libovsdb.Row, map[string]string, bool) {
	switch table {
	case vswitch.NetFlowTable:
		r := &vswitch.NetFlow{}
		if p.rowByUUID(table, uuid, r) {
			return netflowRow(netflowModel(r)), r.ExternalIDs, true
		}
	case vswitch.IPFIXTable:
		r := &vswitch.IPFIX{}
		if p.rowByUUID(table, uuid, r) {
			return ipfixRow(ipfixModel(r)), r.ExternalIDs, true
		}
	case vswitch.SFlowTable:
		r := &vswitch.SFlow{}
		if p.rowByUUID(table, uuid, r) {
			return sflowRow(sflowModel(r)), r.ExternalIDs, true
		}
	}
	return nil, nil, false
}

// wantedExports returns the settings rows spec asks for, by column (nil: none).
func wantedExports(spec *model.Bridge) map[exportCol]libovsdb.Row {
	w := map[exportCol]libovsdb.Row{netflowCol: nil, ipfixCol: nil, sflowCol: nil}
	if n := spec.NetFlow.Canonical(); n != nil {
		w[netflowCol] = netflowRow(n)
	}
	if x := spec.IPFIX.Canonical(); x != nil {
		w[ipfixCol] = ipfixRow(x)
	}
	if s := spec.SFlow.Canonical(); s != nil {
		w[sflowCol] = sflowRow(s)
	}
	return w
}

// insertExport emits the insert of a new, tagged export row and returns its named UUID.
func (p *planner) insertExport(bridge string, ec exportCol, want libovsdb.Row) string {
	uuid := p.namedUUID(ec.prefix)
	row := maps.Clone(want)
	row["external_ids"] = mustMap(tagged(nil, p.owner, p.gen))
	p.add(objRef{vswitch.BridgeTable, bridge}, insertOp(ec.table, uuid, row))
	return uuid
}

// planExportsNew plans the export rows of a bridge created in this transaction and sets its
// columns in br.
func (p *planner) planExportsNew(name string, spec *model.Bridge, br *vswitch.Bridge) {
	for ec, want := range sortedExports(wantedExports(spec)) {
		if want == nil {
			continue
		}
		uuid := p.insertExport(name, ec, want)
		switch ec {
		case netflowCol:
			br.Netflow = &uuid
		case ipfixCol:
			br.IPFIX = &uuid
		case sflowCol:
			br.Sflow = &uuid
		}
	}
}

// sortedExports yields the columns of w in a fixed order, so plans are deterministic.
func sortedExports(w map[exportCol]libovsdb.Row) func(func(exportCol, libovsdb.Row) bool) {
	return func(yield func(exportCol, libovsdb.Row) bool) {
		for _, ec := range []exportCol{ipfixCol, netflowCol, sflowCol} {
			if !yield(ec, w[ec]) {
				return
			}
		}
	}
}

// planExports plans an existing owned bridge's export columns: it adds to row the bridge
// columns to set and to read their values as read, and emits the inserts and updates of export
// rows. An owned row with other settings is updated in place; an owned row no longer wanted is
// unlinked (OVSDB deletes it); a missing one is created and linked in the same transaction; a
// row ovsplane did not create is left exactly as it is. It reports whether it updated a row in
// place (the bridge then takes the generation too: Client.Owned lists bridges, not export rows).
func (p *planner) planExports(name string, spec *model.Bridge, cur *vswitch.Bridge, row libovsdb.Row, read map[string]any) (updated bool) {
	have := map[exportCol]*string{netflowCol: cur.Netflow, ipfixCol: cur.IPFIX, sflowCol: cur.Sflow}
	for ec, want := range sortedExports(wantedExports(spec)) {
		curUUID := have[ec]
		read[ec.col] = optUUID(curUUID)
		if curUUID == nil {
			if want != nil {
				uuid := p.insertExport(name, ec, want)
				row[ec.col] = optUUID(&uuid)
			}
			continue
		}
		got, ext, ok := p.exportRow(ec.table, *curUUID)
		if !ok {
			continue // not in the cache yet: the bridge guard fails if the server disagrees
		}
		if !ownedBy(ext, p.owner) {
			continue // someone else's: never ours to change or unlink (BridgeExports reports it)
		}
		if want == nil {
			row[ec.col] = optUUID(nil)
			continue
		}
		if reflect.DeepEqual(got, want) {
			continue
		}
		ref := objRef{ec.table, name}
		p.guard(ref, *curUUID, true, got) // the settings as read: a concurrent edit fails the txn
		upd := maps.Clone(want)
		upd["external_ids"] = mustMap(tagged(withoutTags(ext), p.owner, p.gen))
		p.add(objRef{vswitch.BridgeTable, name}, updateOp(ec.table, whereUUID(*curUUID), upd))
		updated = true
	}
	return updated
}

func withoutTags(ext map[string]string) map[string]string {
	out := maps.Clone(ext)
	delete(out, OwnerKey)
	delete(out, GenerationKey)
	return out
}

// optUUID encodes an optional reference column: nil is the empty set.
func optUUID(u *string) libovsdb.OvsSet {
	if u == nil {
		return libovsdb.OvsSet{GoSet: []any{}}
	}
	return libovsdb.OvsSet{GoSet: []any{libovsdb.UUID{GoUUID: *u}}}
}

// collectorSetRow is one Flow_Sample_Collector_Set row of a bridge, read from the cache.
type collectorSetRow struct {
	uuid  string
	id    int
	ipfix *model.IPFIX // nil when it has none or its row is not in the cache
	owned bool
	// ipfixUUID is its IPFIX row when that row is ours too ("" otherwise).
	ipfixUUID string
}

// bridgeCollectorSets reads the collector sets that name bridge uuid.
func (c *Client) bridgeCollectorSets(bridgeUUID string) []collectorSetRow {
	rr, ok := c.read()
	if !ok {
		return nil
	}
	var out []collectorSetRow
	rr.each(vswitch.FlowSampleCollectorSetTable, func(_ string, m libmodel.Model) bool {
		cs, ok := m.(*vswitch.FlowSampleCollectorSet)
		if !ok || cs.Bridge != bridgeUUID {
			return true
		}
		r := collectorSetRow{uuid: cs.UUID, id: cs.ID, owned: ownedBy(cs.ExternalIDs, c.owner)}
		if cs.IPFIX != nil {
			if x, ok := rr.byUUID(vswitch.IPFIXTable, *cs.IPFIX).(*vswitch.IPFIX); ok {
				r.ipfix = ipfixModel(x)
				if ownedBy(x.ExternalIDs, c.owner) {
					r.ipfixUUID = x.UUID
				}
			}
		}
		out = append(out, r)
		return true
	})
	slices.SortFunc(out, func(a, b collectorSetRow) int { return a.id - b.id })
	return out
}

// planCollectorSets plans the owned collector sets of bridge (bridgeUUID, named when created in
// this transaction) so that they are exactly sets: a missing id gets a new set with a new IPFIX
// row; an owned set with other settings has its (owned) IPFIX row updated in place; an owned
// set no longer wanted is deleted, and OVSDB deletes its IPFIX row with it. (Replacing the
// IPFIX row instead leaked the old one on ovsdb-server 3.1: it was not garbage collected.) An
// id held by a set someone else created is left alone (BridgeExports reports it). have is nil
// for a new bridge. It reports whether it planned anything.
func (p *planner) planCollectorSets(bridge, bridgeUUID string, have []collectorSetRow, sets []model.CollectorSet) (changed bool) {
	want := map[int]*model.IPFIX{}
	for _, cs := range sets {
		want[cs.ID] = cs.IPFIX.Canonical()
	}
	// Operations are reported as the bridge's (the reconciler isolates a refused bridge); the
	// guards name the rows they wait on.
	bref := objRef{vswitch.BridgeTable, bridge}
	held := map[int]bool{}
	for _, h := range have {
		held[h.id] = true
		ref := objRef{vswitch.FlowSampleCollectorSetTable, fmt.Sprintf("%s %d", bridge, h.id)}
		w, wanted := want[h.id]
		switch {
		case !h.owned:
		case !wanted:
			p.guard(ref, h.uuid, true, existsRow(h.uuid))
			p.add(bref, deleteOp(vswitch.FlowSampleCollectorSetTable, h.uuid))
			p.goneUUIDs[h.uuid] = true
			changed = true
		case !reflect.DeepEqual(h.ipfix, w) && h.ipfixUUID != "":
			// In place: the IPFIX row stays the set's.
			xref := objRef{vswitch.IPFIXTable, ref.name}
			p.guard(xref, h.ipfixUUID, true, ipfixRow(h.ipfix))
			upd := ipfixRow(w)
			upd["external_ids"] = mustMap(tagged(nil, p.owner, p.gen))
			p.add(bref, updateOp(vswitch.IPFIXTable, whereUUID(h.ipfixUUID), upd))
			changed = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if held[id] {
			continue
		}
		x := p.insertExport(bridge, ipfixCol, ipfixRow(want[id]))
		row := libovsdb.Row{"id": id, "bridge": libovsdb.UUID{GoUUID: bridgeUUID}, "ipfix": optUUID(&x),
			"external_ids": mustMap(tagged(nil, p.owner, p.gen))}
		p.add(bref, insertOp(vswitch.FlowSampleCollectorSetTable, p.namedUUID("fscs"), row))
		changed = true
	}
	return changed
}

// dropCollectorSets plans the deletion of a bridge's owned collector sets, before the bridge
// itself (they refer to it strongly). A set someone else created blocks the deletion like a
// foreign port does.
func (p *planner) dropCollectorSets(name, bridgeUUID string) error {
	for _, h := range p.c.bridgeCollectorSets(bridgeUUID) {
		if !h.owned {
			return &OpError{Kind: ErrNotOwned, Table: vswitch.BridgeTable, Row: name, Details: fmt.Sprintf(
				"bridge has IPFIX collector set %d, which ovsplane did not create; remove it first (ovs-vsctl destroy Flow_Sample_Collector_Set %s)", h.id, h.uuid)}
		}
		ref := objRef{vswitch.FlowSampleCollectorSetTable, fmt.Sprintf("%s %d", name, h.id)}
		p.guard(ref, h.uuid, true, existsRow(h.uuid))
		p.add(objRef{vswitch.BridgeTable, name}, deleteOp(vswitch.FlowSampleCollectorSetTable, h.uuid))
		p.goneUUIDs[h.uuid] = true
	}
	return nil
}

// ExportHolder says who holds one of a bridge's export settings in OVSDB.
type ExportHolder string

// Holders of an export setting.
const (
	// ExportNone: the bridge has no such row.
	ExportNone ExportHolder = ""
	// ExportOwned: a row this client's owner created.
	ExportOwned ExportHolder = "owned"
	// ExportForeign: a row someone else created (ovs-vsctl, another controller); ovsplane
	// never changes or unlinks it.
	ExportForeign ExportHolder = "foreign"
)

// BridgeExport is what OVSDB holds for one bridge's flow export, read from the cache.
type BridgeExport struct {
	NetFlow       *model.NetFlow
	NetFlowHolder ExportHolder
	IPFIX         *model.IPFIX
	IPFIXHolder   ExportHolder
	SFlow         *model.SFlow
	SFlowHolder   ExportHolder
	// CollectorSets are the bridge's collector sets this owner created, by id; ForeignSets the
	// ids of those someone else created.
	CollectorSets map[int]*model.IPFIX
	ForeignSets   []int
}

// BridgeExports returns, by bridge name, the flow export rows OVSDB holds for each bridge in
// the cache (bridges without any are absent).
func (c *Client) BridgeExports() map[string]BridgeExport {
	rr, ok := c.read()
	if !ok {
		return nil
	}
	holder := func(ext map[string]string) ExportHolder {
		if ownedBy(ext, c.owner) {
			return ExportOwned
		}
		return ExportForeign
	}
	out := map[string]BridgeExport{}
	rr.each(vswitch.BridgeTable, func(_ string, m libmodel.Model) bool {
		br, ok := m.(*vswitch.Bridge)
		if !ok {
			return true
		}
		var e BridgeExport
		if br.Netflow != nil {
			if r, ok := rr.byUUID(vswitch.NetFlowTable, *br.Netflow).(*vswitch.NetFlow); ok {
				e.NetFlow, e.NetFlowHolder = netflowModel(r), holder(r.ExternalIDs)
			}
		}
		if br.IPFIX != nil {
			if r, ok := rr.byUUID(vswitch.IPFIXTable, *br.IPFIX).(*vswitch.IPFIX); ok {
				e.IPFIX, e.IPFIXHolder = ipfixModel(r), holder(r.ExternalIDs)
			}
		}
		if br.Sflow != nil {
			if r, ok := rr.byUUID(vswitch.SFlowTable, *br.Sflow).(*vswitch.SFlow); ok {
				e.SFlow, e.SFlowHolder = sflowModel(r), holder(r.ExternalIDs)
			}
		}
		for _, cs := range c.bridgeCollectorSets(br.UUID) {
			if !cs.owned {
				e.ForeignSets = append(e.ForeignSets, cs.id)
				continue
			}
			if e.CollectorSets == nil {
				e.CollectorSets = map[int]*model.IPFIX{}
			}
			e.CollectorSets[cs.id] = cs.ipfix
		}
		if e.NetFlowHolder != ExportNone || e.IPFIXHolder != ExportNone || e.SFlowHolder != ExportNone || len(e.CollectorSets)+len(e.ForeignSets) > 0 {
			out[br.Name] = e
		}
		return true
	})
	return out
}

// putExportRefs encodes a new bridge's export columns.
func putExportRefs(row libovsdb.Row, br *vswitch.Bridge) {
	for col, u := range map[string]*string{"netflow": br.Netflow, "ipfix": br.IPFIX, "sflow": br.Sflow} {
		if u != nil {
			row[col] = optUUID(u)
		}
	}
}

// validateExport checks a bridge intent's flow export settings; its error matches ErrInvalid
// and names the first problem.
func validateExport(b *model.Bridge) error {
	var probs []string
	add := func(key string, ps []model.FieldProblem) {
		for _, fp := range ps {
			sep := "."
			if strings.HasPrefix(fp.Path, "[") {
				sep = ""
			}
			probs = append(probs, key+sep+fp.String())
		}
	}
	if b.NetFlow != nil {
		add("netflow", b.NetFlow.Check())
	}
	if b.IPFIX != nil {
		add("ipfix", b.IPFIX.Check())
	}
	if b.SFlow != nil {
		add("sflow", b.SFlow.Check())
	}
	add("collector_sets", model.CheckCollectorSets(b.CollectorSets))
	if len(probs) > 0 {
		return fmt.Errorf("%w: bridge %q: %s", ErrInvalid, b.Name, strings.Join(probs, "; "))
	}
	return nil
}
