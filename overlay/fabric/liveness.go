package fabric

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// HealthStale marks a node that stopped reporting (no registration, acknowledgement or
// heartbeat) for longer than the controller's bound. Like HealthDown it no longer holds
// MinApplied back; unlike HealthDown it is set by the controller, never by an operator, and the
// node's next heartbeat, acknowledgement or registration marks it up again.
const HealthStale = "stale"

// MaxBatch bounds the nodes of one RoutesFor or AckVersions call (one transaction).
const MaxBatch = 1024

// Heartbeat records that node is alive: its last-seen time becomes now and, when the
// controller had marked it stale, its health goes back to up (an operator's degraded or down
// is kept). An unregistered node is ErrUnknownNode.
func (c *Client) Heartbeat(ctx context.Context, node string) error {
	if err := checkName("node name", node); err != nil {
		return err
	}
	return c.retry(ctx, "heartbeat of node "+node, func(ctx context.Context, _ bool) (bool, error) {
		if err := c.learnNodeIDs(ctx, []string{node}); err != nil {
			return false, err
		}
		known := c.ids.get(node) != ""
		// Two updates of the same row: the second only when the node was marked stale.
		res, err := c.transact(ctx,
			ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode, Where: c.nodeWhere(node),
				Row: ovsdb.Row{"last_seen_ms": msOf(c.now())}},
			ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode, Where: append(c.nodeWhere(node), eq("health", HealthStale)),
				Row: ovsdb.Row{"health": HealthUp}})
		if err != nil {
			return false, err
		}
		if res[0].Count == 0 {
			if known {
				if forgot, err := c.refresh(ctx, []string{node}); err != nil || forgot {
					return false, err // a stale _uuid: the next attempt relearns it
				}
			}
			return false, fmt.Errorf("%w: heartbeat of node %s: register it first", ErrUnknownNode, node)
		}
		return true, nil
	})
}

// MarkStale marks node stale, but only while its last-seen time is still lastSeen (the value
// the caller observed unchanged for its bound: a heartbeat that lands first wins) and, when
// fence is not nil, while the controller lease is still fence's (ErrFenced otherwise). It
// reports whether this call marked the node (a retry after a lost reply reports false); a node
// already stale, down, or seen again is left alone.
func (c *Client) MarkStale(ctx context.Context, fence *Lease, node string, lastSeen time.Time) (bool, error) {
	if err := checkName("node name", node); err != nil {
		return false, err
	}
	if fence != nil && !fence.Held {
		return false, fmt.Errorf("%w: mark node %s stale: the lease given is not held", ErrFenced, node)
	}
	var marked bool
	err := c.retry(ctx, "mark node "+node+" stale", func(ctx context.Context, _ bool) (bool, error) {
		ops := []ovsdb.Operation{}
		if fence != nil {
			ops = append(ops, waitLease(*fence))
		}
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: []ovsdb.Condition{eq("name", node), eq("last_seen_ms", msOf(lastSeen)),
				ovsdb.NewCondition("health", ovsdb.ConditionNotEqual, HealthStale),
				ovsdb.NewCondition("health", ovsdb.ConditionNotEqual, HealthDown)},
			Row: ovsdb.Row{"health": HealthStale}})
		res, err := c.transact(ctx, ops...)
		if err != nil {
			if fence != nil {
				if g, gerr := c.readGlobal(ctx); gerr == nil && (g.holder != fence.Holder || g.epoch != fence.Epoch) {
					return false, fmt.Errorf("%w: mark node %s stale: lease is held by %q epoch %d", ErrFenced, node, g.holder, g.epoch)
				}
			}
			return false, err
		}
		marked = res[len(res)-1].Count == 1
		return true, nil
	})
	return marked, err
}

// waitLease asserts the lease holder and epoch are still fence's.
func waitLease(fence Lease) ovsdb.Operation {
	return waitEqual(tableGlobal, allGlobal(), []string{"lease_holder", "lease_epoch"},
		[]ovsdb.Row{{"lease_holder": fence.Holder, "lease_epoch": fence.Epoch}})
}

// RecordMinApplied stores the slowest running node's applied version (MinApplied) in
// Fabric_Global.min_applied_version, as OVN's northd keeps hv_cfg current between publishes,
// and returns it. fence, when not nil, is the controller's lease (ErrFenced when taken over).
// Nothing is written when the stored value is already current.
func (c *Client) RecordMinApplied(ctx context.Context, fence *Lease) (int64, error) {
	if fence != nil && !fence.Held {
		return 0, fmt.Errorf("%w: record min applied: the lease given is not held", ErrFenced)
	}
	var out int64
	err := c.retry(ctx, "record min applied version", func(ctx context.Context, _ bool) (bool, error) {
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		if fence != nil && (g.holder != fence.Holder || g.epoch != fence.Epoch) {
			return false, fmt.Errorf("%w: record min applied: lease is held by %q epoch %d, not %q epoch %d",
				ErrFenced, g.holder, g.epoch, fence.Holder, fence.Epoch)
		}
		minV, _, err := c.versions(ctx, g.routeVersion)
		if err != nil {
			return false, err
		}
		out = minV
		if minV == g.minApplied {
			return true, nil
		}
		_, err = c.transact(ctx, waitGlobal(g, fence != nil),
			ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableGlobal, Where: allGlobal(),
				Row: ovsdb.Row{"min_applied_version": minV}})
		return err == nil, err
	})
	return out, err
}

// checkBatch validates the node names of a batched call.
func checkBatch(what string, nodes []string) error {
	if len(nodes) == 0 || len(nodes) > MaxBatch {
		return fmt.Errorf("%w: %s for %d nodes: give 1 to %d", ErrInvalid, what, len(nodes), MaxBatch)
	}
	for _, n := range nodes {
		if err := checkName("node name", n); err != nil {
			return err
		}
	}
	return nil
}

// RoutesFor returns the tables of route version for the given nodes only, so an agent reads
// its own table instead of every node's. A node with no table in that version is absent from
// the result. At most MaxBatch nodes.
//
// A node's table in version is its newest Route_Table row at or below it (see
// PublishRoutes). The publish that writes a node's row also points the node's routes_row at
// it, so when the node's routes_version is at most version that row is the table, and
// RoutesFor reads the Node rows and then those rows by _uuid: two transactions without a table
// scan in ovsdb-server. A node whose newest row is newer than version (a later publish
// landed), whose routes_row is unset (it registered after its table was written) or whose row
// is gone is read by a select on (node, version), which scans Route_Table.
func (c *Client) RoutesFor(ctx context.Context, version int64, nodes ...string) (Tables, error) {
	if version < 0 || version > MaxVersion {
		return nil, fmt.Errorf("%w: route version %d: give 0 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	if err := checkBatch("read routes", nodes); err != nil {
		return nil, err
	}
	t := Tables{}
	if version == 0 {
		return t, nil
	}
	rows, scan, err := c.routeRows(ctx, version, nodes)
	if err != nil {
		return nil, err
	}
	var ops []ovsdb.Operation
	var opNode []string
	for _, n := range nodes {
		if u, ok := rows[n]; ok {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableRoutes,
				Where: []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: u.uuid})}, Columns: []string{"version", "node", "next_hops"}})
			opNode = append(opNode, n)
		}
	}
	var res []ovsdb.OperationResult
	if len(ops) > 0 {
		if res, err = c.transact(ctx, ops...); err != nil {
			return nil, err
		}
	}
	for i, r := range res[:len(ops)] {
		n := opNode[i]
		if len(r.Rows) != 1 {
			scan = append(scan, n)
			continue
		}
		node, err := rowString(r.Rows[0], "node")
		if err != nil {
			return nil, err
		}
		v, err := rowInt(r.Rows[0], "version")
		if err != nil {
			return nil, err
		}
		if node != n || v != rows[n].version {
			scan = append(scan, n)
			continue
		}
		routes, err := rowMap(r.Rows[0], "next_hops")
		if err != nil {
			return nil, err
		}
		if len(routes) > 0 {
			t[n] = routes
		}
	}
	if len(scan) > 0 {
		if err := c.scanRoutes(ctx, version, scan, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// routeRef is a node's newest Route_Table row as its Node row names it.
type routeRef struct {
	uuid    string
	version int64
}

// routeRows reads the Node rows of nodes (by _uuid, learnt once) and returns, for each node
// whose newest Route_Table row is at or below version, that row; the other nodes are returned
// in scan (their table must be found by a select on Route_Table).
func (c *Client) routeRows(ctx context.Context, version int64, nodes []string) (map[string]routeRef, []string, error) {
	if err := c.learnNodeIDs(ctx, nodes); err != nil {
		return nil, nil, err
	}
	var scan, ask []string
	var ops []ovsdb.Operation
	for _, n := range nodes {
		if c.ids.get(n) == "" {
			scan = append(scan, n)
			continue
		}
		ask = append(ask, n)
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableNode, Where: c.nodeWhere(n),
			Columns: []string{"routes_version", "routes_row"}})
	}
	out := make(map[string]routeRef, len(ask))
	if len(ops) == 0 {
		return out, scan, nil
	}
	res, err := c.transact(ctx, ops...)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range res[:len(ask)] {
		n := ask[i]
		if len(r.Rows) != 1 {
			scan = append(scan, n) // a stale _uuid: the scan finds the table by name
			c.ids.set(n, "")
			continue
		}
		rv, err := rowInt(r.Rows[0], "routes_version")
		if err != nil {
			return nil, nil, err
		}
		var u string
		switch x := r.Rows[0]["routes_row"].(type) {
		case ovsdb.UUID:
			u = x.GoUUID
		case ovsdb.OvsSet:
			if len(x.GoSet) == 1 {
				if y, ok := x.GoSet[0].(ovsdb.UUID); ok {
					u = y.GoUUID
				}
			}
		}
		if u == "" || rv > version {
			scan = append(scan, n)
			continue
		}
		out[n] = routeRef{uuid: u, version: rv}
	}
	return out, scan, nil
}

// scanRoutes adds to t the tables of version of nodes found by a select per node on (node,
// version) in one transaction: the node's rows at or below version, of which the newest is
// its table. Each select scans Route_Table.
func (c *Client) scanRoutes(ctx context.Context, version int64, nodes []string, t Tables) error {
	ops := make([]ovsdb.Operation, len(nodes))
	for i, n := range nodes {
		ops[i] = ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableRoutes,
			Where:   []ovsdb.Condition{eq("node", n), ovsdb.NewCondition("version", ovsdb.ConditionLessThanOrEqual, version)},
			Columns: []string{"version", "next_hops"}}
	}
	res, err := c.transact(ctx, ops...)
	if err != nil {
		return err
	}
	for i, r := range res[:len(nodes)] {
		best, newest := -1, int64(0)
		for j, row := range r.Rows {
			v, err := rowInt(row, "version")
			if err != nil {
				return err
			}
			if best < 0 || v > newest {
				best, newest = j, v
			}
		}
		if best < 0 {
			continue
		}
		routes, err := rowMap(r.Rows[best], "next_hops")
		if err != nil {
			return err
		}
		if len(routes) > 0 {
			t[nodes[i]] = routes
		}
	}
	return nil
}

// AckVersions acknowledges version for several nodes in one transaction (each node's applied
// version advances only when it is below version, as AckVersion), for a process that hosts
// many nodes' agents. It returns how many nodes advanced; nodes already at version or later,
// and unregistered nodes, do not count. A version not yet published is ErrConflict. It is not
// retried: the caller's next round acknowledges again, which advances nothing twice.
func (c *Client) AckVersions(ctx context.Context, version int64, nodes ...string) (int, error) {
	if version < 1 || version > MaxVersion {
		return 0, fmt.Errorf("%w: ack route version %d: give 1 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	if err := checkBatch("ack", nodes); err != nil {
		return 0, err
	}
	// The version must be published; route versions only grow, so a read before the write is
	// enough.
	g, err := c.readGlobal(ctx)
	if err != nil {
		return 0, err
	}
	if g.routeVersion < version {
		return 0, fmt.Errorf("%w: ack route version %d: only %d is published", ErrConflict, version, g.routeVersion)
	}
	now := msOf(c.now())
	counts, err := c.updateNodes(ctx, nodes, func(_ int, where []ovsdb.Condition) ovsdb.Operation {
		return ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: append(where, ovsdb.NewCondition("applied_version", ovsdb.ConditionLessThan, version)),
			Row:   ovsdb.Row{"applied_version": version, "health": HealthUp, "last_seen_ms": now}}
	})
	if err != nil {
		return 0, err
	}
	advanced := 0
	for _, n := range counts {
		advanced += n
	}
	return advanced, nil
}

// AckUnchanged acknowledges version, in one transaction and without reading any table, for
// each node whose route table has not changed since the version it has installed
// (installed[node]: its Node.routes_version, the version its table last changed in, is at
// most that), advancing its applied version as AckVersion does. It returns the nodes it did
// not acknowledge, sorted: their table changed after what they installed (they must read it
// with RoutesFor, install it, then AckVersions), or they had already acknowledged version or a
// later one, or are not registered, or installed nothing (installed 0). A version not yet published is ErrConflict. At most
// MaxBatch nodes; installed versions within 0 to version. Not retried, like AckVersions.
func (c *Client) AckUnchanged(ctx context.Context, version int64, installed map[string]int64) ([]string, error) {
	if version < 1 || version > MaxVersion {
		return nil, fmt.Errorf("%w: ack route version %d: give 1 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	nodes := slices.Sorted(maps.Keys(installed))
	if err := checkBatch("ack unchanged", nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if v := installed[n]; v < 0 || v > version {
			return nil, fmt.Errorf("%w: node %s installed route version %d: give 0 to %d", ErrInvalid, n, v, version)
		}
	}
	g, err := c.readGlobal(ctx)
	if err != nil {
		return nil, err
	}
	if g.routeVersion < version {
		return nil, fmt.Errorf("%w: ack route version %d: only %d is published", ErrConflict, version, g.routeVersion)
	}
	// A node that installed nothing must read its table.
	var ask, skip []string
	for _, n := range nodes {
		if installed[n] == 0 {
			skip = append(skip, n)
		} else {
			ask = append(ask, n)
		}
	}
	if len(ask) == 0 {
		return skip, nil
	}
	now := msOf(c.now())
	counts, err := c.updateNodes(ctx, ask, func(i int, where []ovsdb.Condition) ovsdb.Operation {
		return ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: append(where, ovsdb.NewCondition("applied_version", ovsdb.ConditionLessThan, version),
				ovsdb.NewCondition("routes_version", ovsdb.ConditionLessThanOrEqual, installed[ask[i]])),
			Row: ovsdb.Row{"applied_version": version, "health": HealthUp, "last_seen_ms": now}}
	})
	if err != nil {
		return nil, err
	}
	rest := slices.Clone(skip)
	for i, n := range counts {
		if n == 0 {
			rest = append(rest, ask[i])
		}
	}
	slices.Sort(rest)
	return rest, nil
}

// ChangedSince returns the registered nodes whose route table changed in a version after
// since (Node.routes_version above it), sorted: one select, whose reply lists only those
// nodes. A process hosting many agents that all installed since or later can read just these
// nodes' tables and acknowledge every agent in one AckVersions transaction: the others' tables
// are the same in every version up to the one current at the read. since is 0 to MaxVersion.
func (c *Client) ChangedSince(ctx context.Context, since int64) ([]string, error) {
	if since < 0 || since > MaxVersion {
		return nil, fmt.Errorf("%w: changed since route version %d: give 0 to %d", ErrInvalid, since, int64(MaxVersion))
	}
	rows, err := c.selectRows(ctx, tableNode, []ovsdb.Condition{ovsdb.NewCondition("routes_version", ovsdb.ConditionGreaterThan, since)}, "name")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		n, err := rowString(r, "name")
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}
