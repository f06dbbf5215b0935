package fabric

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Tables are the route tables of one version: node name → destination → next hop.
type Tables map[string]map[string]string

// Validate checks sizes and names; errors wrap ErrInvalid and name the node.
func (t Tables) Validate() error {
	if len(t) > MaxNodes {
		return fmt.Errorf("%w: route tables for %d nodes: at most %d", ErrInvalid, len(t), MaxNodes)
	}
	for node, routes := range t {
		if err := checkName("route table node", node); err != nil {
			return err
		}
		if len(routes) > MaxRoutesPerNode {
			return fmt.Errorf("%w: node %s: %d routes: at most %d", ErrInvalid, node, len(routes), MaxRoutesPerNode)
		}
		for dst, hop := range routes {
			if dst == "" || len(dst) > MaxNameLen || len(hop) > MaxNextHopLen {
				return fmt.Errorf("%w: node %s: route %q → %q: destination 1–%d bytes, next hop at most %d",
					ErrInvalid, node, dst, hop, MaxNameLen, MaxNextHopLen)
			}
		}
	}
	return nil
}

// equal reports whether t and u hold the same routes (a node with no routes equals a missing
// node).
func (t Tables) equal(u Tables) bool {
	for n, r := range t {
		if len(r) != len(u[n]) || !maps.Equal(r, u[n]) {
			return false
		}
	}
	for n, r := range u {
		if len(r) != len(t[n]) {
			return false
		}
	}
	return true
}

// Published is the outcome of PublishRoutes.
type Published struct {
	// Version is the route version now in the database holding the given tables.
	Version int64
	// Wrote is true when this call committed Version; false when the tables equalled the
	// current version's, so nothing was written and Version is the current one.
	Wrote bool
}

// PublishRoutes publishes tables as route version, which must be the current version plus one
// (ErrConflict otherwise). When the tables equal the current version's nothing is written
// (Published.Wrote false, Version the current). Calling it again with the version just
// published and the same tables succeeds without writing, so a caller whose reply was lost
// may simply retry. fence, when not nil, is the controller's lease: the write commits only
// while the lease epoch and holder are unchanged (ErrFenced otherwise). The same transaction
// stores min_applied_version and drops rows no longer needed.
//
// Only the tables that changed are written: Route_Table holds, per node, a row for each
// version in which its table changed (an empty row when its table became empty), and a
// node's table in version v is its newest row at or below v. A one-link change therefore
// writes the few tables it moved, not every node's. Rows are dropped once every running node
// has moved past them: for each node the newest row at or below the slowest node's applied
// version (the current version at most) is kept with every newer one, the older ones go (and
// the kept one too when it is empty). The same transaction sets Node.routes_version of each
// registered node whose table changed to version, so an agent can tell that its table is
// unchanged since the version it installed without reading it (AckUnchanged).
func (c *Client) PublishRoutes(ctx context.Context, fence *Lease, version int64, tables Tables) (Published, error) {
	if version < 1 || version > MaxVersion {
		return Published{}, fmt.Errorf("%w: route version %d: give 1 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	if err := tables.Validate(); err != nil {
		return Published{}, err
	}
	if fence != nil && !fence.Held {
		return Published{}, fmt.Errorf("%w: publish version %d: the lease given is not held", ErrFenced, version)
	}
	var out Published
	err := c.retry(ctx, fmt.Sprintf("publish route version %d", version), func(ctx context.Context, tried bool) (bool, error) {
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		stored, err := c.readStored(ctx)
		if err != nil {
			return false, err
		}
		cur := stored.at(g.routeVersion)
		switch {
		case version == g.routeVersion && cur.equal(tables):
			out = Published{Version: version, Wrote: tried} // an earlier attempt of ours committed
			return true, nil
		case version == g.routeVersion:
			return false, fmt.Errorf("%w: route version %d is already published with other tables: publish %d", ErrConflict, version, version+1)
		case version != g.routeVersion+1:
			return false, fmt.Errorf("%w: route version %d: the database holds %d, publish %d next", ErrConflict, version, g.routeVersion, g.routeVersion+1)
		case g.routeVersion > 0 && cur.equal(tables):
			out = Published{Version: g.routeVersion}
			return true, nil
		}
		if fence != nil && (g.holder != fence.Holder || g.epoch != fence.Epoch) {
			return false, fmt.Errorf("%w: publish version %d: lease is held by %q epoch %d, not %q epoch %d",
				ErrFenced, version, g.holder, g.epoch, fence.Holder, fence.Epoch)
		}
		minApplied, _, err := c.versions(ctx, g.routeVersion)
		if err != nil {
			return false, err
		}
		ops := []ovsdb.Operation{waitGlobal(g, fence != nil),
			{Op: ovsdb.OperationUpdate, Table: tableGlobal, Where: allGlobal(),
				Row: ovsdb.Row{"route_version": version, "min_applied_version": minApplied}},
		}
		ops = append(ops, stored.garbage(min(minApplied, g.routeVersion))...)
		created := msOf(c.now())
		delta := changed(cur, tables)
		// Each inserted row is named in the transaction, so that its node's routes_row can
		// point at it (RoutesFor then reads it by _uuid, without a scan).
		rowNames := make(map[string]string, len(delta))
		for i, node := range slices.Sorted(maps.Keys(delta)) {
			rowNames[node] = "rt" + strconv.Itoa(i)
		}
		marks, err := c.markChanged(version, rowNames)
		if err != nil {
			return false, err
		}
		ops = append(ops, marks...)
		inserted := map[int]string{} // op index → node
		for node, routes := range delta {
			hops, err := ovsdb.NewOvsMap(routes)
			if err != nil {
				return false, fmt.Errorf("fabric: node %s routes: %w", node, err)
			}
			inserted[len(ops)] = node
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tableRoutes, UUIDName: rowNames[node],
				Row: ovsdb.Row{"version": version, "node": node, "created_ms": created, "next_hops": hops}})
		}
		res, err := c.transact(ctx, ops...)
		if err != nil {
			return false, err
		}
		// The rows just written join the cache, so the next publish reads none of them.
		added := make(map[string]map[string]string, len(inserted))
		for i, node := range inserted {
			if u := res[i].UUID.GoUUID; u != "" {
				added[u] = maps.Clone(delta[node])
			}
		}
		c.tables.add(added)
		out = Published{Version: version, Wrote: true}
		return true, nil
	})
	return out, err
}

// waitGlobal asserts Fabric_Global's route version (and, when fenced, the lease holder and
// epoch) are still as read in g.
func waitGlobal(g global, fenced bool) ovsdb.Operation {
	cols := []string{"route_version"}
	row := ovsdb.Row{"route_version": g.routeVersion}
	if fenced {
		cols = append(cols, "lease_holder", "lease_epoch")
		row["lease_holder"], row["lease_epoch"] = g.holder, g.epoch
	}
	return waitEqual(tableGlobal, allGlobal(), cols, []ovsdb.Row{row})
}

// Routes returns the tables of route version: each node's newest row at or below it (empty
// when version is 0; incomplete for a version older than every running node's, whose rows may
// have been dropped).
func (c *Client) Routes(ctx context.Context, version int64) (Tables, error) {
	if version < 0 || version > MaxVersion {
		return nil, fmt.Errorf("%w: route version %d: give 0 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	if version == 0 {
		return Tables{}, nil
	}
	stored, err := c.readStored(ctx)
	if err != nil {
		return nil, err
	}
	t := stored.at(version)
	for n, r := range t {
		t[n] = maps.Clone(r) // the rows' maps are the client's cache: the caller may change its copy
	}
	return t, nil
}

// storedRow is one Route_Table row.
type storedRow struct {
	uuid    string
	version int64
	routes  map[string]string
}

// stored is every Route_Table row by node, each node's rows in ascending version.
type stored map[string][]storedRow

// readStored reads every Route_Table row. Rows are never modified once inserted (a version
// adds rows, garbage collection deletes them), so the client keeps the next hops of the rows
// it has read (c.tables) and asks the server only for the list of rows (_uuid, version, node)
// and, by _uuid (no scan), the next hops of rows it has not seen: a publish no longer makes the
// leader serialise every table of every node. When most rows are new (a first read) one
// select reads them all.
func (c *Client) readStored(ctx context.Context) (stored, error) {
	rows, err := c.selectRows(ctx, tableRoutes, []ovsdb.Condition{ovsdb.NewCondition("version", ovsdb.ConditionGreaterThanOrEqual, 1)},
		"_uuid", "version", "node")
	if err != nil {
		return nil, err
	}
	type listed struct {
		uuid, node string
		version    int64
	}
	list := make([]listed, 0, len(rows))
	for _, r := range rows {
		node, err := rowString(r, "node")
		if err != nil {
			return nil, err
		}
		v, err := rowInt(r, "version")
		if err != nil {
			return nil, err
		}
		u, ok := r["_uuid"].(ovsdb.UUID)
		if !ok {
			return nil, fmt.Errorf("fabric: Route_Table _uuid is %T", r["_uuid"])
		}
		list = append(list, listed{uuid: u.GoUUID, node: node, version: v})
	}
	known := c.tables.snapshot()
	var missing []string
	for _, l := range list {
		if _, ok := known[l.uuid]; !ok {
			missing = append(missing, l.uuid)
		}
	}
	hops := make(map[string]map[string]string, len(list))
	for _, l := range list {
		if h, ok := known[l.uuid]; ok {
			hops[l.uuid] = h
		}
	}
	if len(missing) > 0 {
		var ops []ovsdb.Operation
		if 2*len(missing) > len(list) {
			ops = []ovsdb.Operation{{Op: ovsdb.OperationSelect, Table: tableRoutes,
				Where: []ovsdb.Condition{ovsdb.NewCondition("version", ovsdb.ConditionGreaterThanOrEqual, 1)}, Columns: []string{"_uuid", "next_hops"}}}
		} else {
			for _, u := range missing {
				ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableRoutes,
					Where: []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: u})}, Columns: []string{"_uuid", "next_hops"}})
			}
		}
		res, err := c.transact(ctx, ops...)
		if err != nil {
			return nil, err
		}
		for _, r := range res[:len(ops)] {
			for _, row := range r.Rows {
				u, ok := row["_uuid"].(ovsdb.UUID)
				if !ok {
					return nil, fmt.Errorf("fabric: Route_Table _uuid is %T", row["_uuid"])
				}
				routes, err := rowMap(row, "next_hops")
				if err != nil {
					return nil, err
				}
				hops[u.GoUUID] = routes
			}
		}
	}
	out := stored{}
	for _, l := range list {
		routes, ok := hops[l.uuid]
		if !ok {
			// Deleted between the two reads (garbage collected by a newer publish): the
			// caller's transaction will find the database moved on; read again.
			return nil, fmt.Errorf("fabric: Route_Table row %s (node %s, version %d) vanished while reading", l.uuid, l.node, l.version)
		}
		out[l.node] = append(out[l.node], storedRow{uuid: l.uuid, version: l.version, routes: routes})
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b storedRow) int { return cmp.Compare(a.version, b.version) })
	}
	c.tables.replace(hops)
	return out, nil
}

// tableCache holds the next hops of the Route_Table rows a client last read, by _uuid
// (rows are immutable; at most the table's maxRows entries: replace drops rows no longer
// listed).
type tableCache struct {
	mu   sync.Mutex
	hops map[string]map[string]string
}

// snapshot returns the cached rows (the maps are shared and never modified).
func (t *tableCache) snapshot() map[string]map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hops
}

// replace makes hops the cache.
func (t *tableCache) replace(hops map[string]map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hops = hops
}

// add adds rows to the cache (a new map: snapshots handed out stay unchanged). Past the
// schema's Route_Table maxRows the cache is dropped and relearnt by the next read.
func (t *tableCache) add(rows map[string]map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.hops)+len(rows) > maxRouteRows {
		t.hops = nil
		return
	}
	next := make(map[string]map[string]string, len(t.hops)+len(rows))
	maps.Copy(next, t.hops)
	maps.Copy(next, rows)
	t.hops = next
}

// maxRouteRows is the schema's Route_Table maxRows.
const maxRouteRows = 262144

// newestAt returns the index of the newest row at or below version (-1: none).
func newestAt(rs []storedRow, version int64) int {
	i := -1
	for j, r := range rs {
		if r.version <= version {
			i = j
		}
	}
	return i
}

// at returns every node's table in version (nodes whose table is empty are left out).
func (s stored) at(version int64) Tables {
	t := Tables{}
	for node, rs := range s {
		if i := newestAt(rs, version); i >= 0 && len(rs[i].routes) > 0 {
			t[node] = rs[i].routes
		}
	}
	return t
}

// garbage returns delete operations (by _uuid, which ovsdb-server looks up without a scan) for
// the rows no version at or above keep needs: per node, the rows older than its newest row at
// or below keep, and that row too when it is empty.
func (s stored) garbage(keep int64) []ovsdb.Operation {
	var ops []ovsdb.Operation
	del := func(r storedRow) {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: tableRoutes,
			Where: []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: r.uuid})}})
	}
	for _, rs := range s {
		i := newestAt(rs, keep)
		if i < 0 {
			continue
		}
		for _, r := range rs[:i] {
			del(r)
		}
		if len(rs[i].routes) == 0 {
			del(rs[i])
		}
	}
	return ops
}

// markChanged returns the operations setting, on the Node rows (by _uuid: no scan) of the
// registered nodes in rowNames, routes_version to version and routes_row to the row the same
// transaction inserts for the node (rowNames: node → that insert's uuid-name). The Node
// _uuids come from the client's cache, which versions refreshed from a read of every Node
// row in the same publish attempt; nodes not in it are not registered.
func (c *Client) markChanged(version int64, rowNames map[string]string) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	for _, name := range slices.Sorted(maps.Keys(rowNames)) {
		u := c.ids.get(name)
		if u == "" {
			continue
		}
		row, err := ovsdb.NewOvsSet([]ovsdb.UUID{{GoUUID: rowNames[name]}})
		if err != nil {
			return nil, fmt.Errorf("fabric: node %s routes_row: %w", name, err)
		}
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: u})}, Row: ovsdb.Row{"routes_version": version, "routes_row": row}})
	}
	return ops, nil
}

// changed returns the nodes whose table differs between cur and next, with their new table
// (empty when the node has no routes any more).
func changed(cur, next Tables) Tables {
	out := Tables{}
	for n, r := range next {
		if len(r) != len(cur[n]) || !maps.Equal(r, cur[n]) {
			out[n] = r
		}
	}
	for n, r := range cur {
		if len(r) > 0 && len(next[n]) == 0 {
			out[n] = map[string]string{}
		}
	}
	return out
}

// AckVersion records that node has applied route version, and marks it up and seen now. It
// returns true when the node's applied version advanced, false when the node had already
// acknowledged version or a later one (a retry after a lost reply reports true: the earlier
// attempt advanced it). A version not yet published is ErrConflict; an unregistered node
// ErrUnknownNode.
func (c *Client) AckVersion(ctx context.Context, node string, version int64) (bool, error) {
	if err := checkName("node name", node); err != nil {
		return false, err
	}
	if version < 0 || version > MaxVersion {
		return false, fmt.Errorf("%w: node %s: route version %d: give 0 to %d", ErrInvalid, node, version, int64(MaxVersion))
	}
	var advanced bool
	err := c.retry(ctx, fmt.Sprintf("node %s ack version %d", node, version), func(ctx context.Context, tried bool) (bool, error) {
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		if version > g.routeVersion {
			return false, fmt.Errorf("%w: node %s acks route version %d, but only %d is published", ErrConflict, node, version, g.routeVersion)
		}
		counts, err := c.updateNodes(ctx, []string{node}, func(_ int, where []ovsdb.Condition) ovsdb.Operation {
			return ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
				Where: append(where, ovsdb.NewCondition("applied_version", ovsdb.ConditionLessThan, version)),
				Row:   ovsdb.Row{"applied_version": version, "health": HealthUp, "last_seen_ms": msOf(c.now())}}
		})
		if err != nil {
			return false, err
		}
		if counts[0] == 1 {
			advanced = true
			return true, nil
		}
		rows, err := c.selectRows(ctx, tableNode, c.nodeWhere(node), "applied_version")
		if err != nil {
			return false, err
		}
		if len(rows) == 0 {
			return false, fmt.Errorf("%w: node %s acks route version %d: register it first", ErrUnknownNode, node, version)
		}
		advanced = tried
		return true, nil
	})
	return advanced, err
}

// MinApplied returns the slowest node's applied route version (OVN's hv_cfg) over nodes not
// marked down or stale, and every node's applied version. With no such node it returns the current
// route version: nothing lags behind.
func (c *Client) MinApplied(ctx context.Context) (int64, map[string]int64, error) {
	g, err := c.readGlobal(ctx)
	if err != nil {
		return 0, nil, err
	}
	return c.versions(ctx, g.routeVersion)
}

// versions computes MinApplied given the current route version.
func (c *Client) versions(ctx context.Context, routeVersion int64) (int64, map[string]int64, error) {
	nodes, err := c.readNodes(ctx)
	if err != nil {
		return 0, nil, err
	}
	minV, per := routeVersion, make(map[string]int64, len(nodes))
	for _, n := range nodes {
		per[n.Name] = n.AppliedVersion
		if n.Health != HealthDown && n.Health != HealthStale {
			minV = min(minV, n.AppliedVersion)
		}
	}
	return minV, per, nil
}
