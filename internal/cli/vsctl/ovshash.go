package vsctl

import (
	"strconv"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// Some ovs-vsctl output is in the iteration order of OVS's hash tables (struct hmap);
// datum.HmapOrder models that order, these functions apply it to vsctl's values and rows.

// smapHashOrder returns the indexes of a string map's pairs in the order ovs-vsctl iterates
// the smap its IDL builds from the column (pairs inserted in key order, hashed by key).
func smapHashOrder(d datum.Datum) []int {
	hashes := make([]uint32, len(d.Keys))
	for i, k := range d.Keys {
		hashes[i] = datum.HashString(k.Str)
	}
	return datum.HmapOrder(hashes)
}

// idlOrder puts rows, given in the order of ovsdb-server's monitor reply (dbcmd's listing
// order), into the order ovs-vsctl's IDL iterates them, which is what ovs-vsctl's list and
// find print: the client parses the reply's JSON object into a hash table keyed by UUID
// string, and inserts the rows, in that table's order, into the IDL's row table, hashed by the
// first 32 bits of their UUID. Rows inserted by this invocation come last, in their own order.
func idlOrder(rows []*dbcmd.Row) []*dbcmd.Row {
	var old, fresh []*dbcmd.Row
	for _, r := range rows {
		if r.Inserted() {
			fresh = append(fresh, r)
		} else {
			old = append(old, r)
		}
	}
	byString := func(in []*dbcmd.Row) []*dbcmd.Row {
		hashes := make([]uint32, len(in))
		for i, r := range in {
			hashes[i] = datum.HashString(r.UUID())
		}
		out := make([]*dbcmd.Row, len(in))
		for i, j := range datum.HmapOrder(hashes) {
			out[i] = in[j]
		}
		return out
	}
	old = byString(old) // the client's parse of the server's JSON object
	hashes := make([]uint32, len(old))
	for i, r := range old {
		if v, err := strconv.ParseUint(r.UUID()[:8], 16, 32); err == nil {
			hashes[i] = uint32(v)
		}
	}
	out := make([]*dbcmd.Row, 0, len(rows))
	for _, j := range datum.HmapOrder(hashes) {
		out = append(out, old[j])
	}
	return append(out, fresh...)
}
