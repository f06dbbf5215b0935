package fabric

import (
	"context"
	"fmt"
	"maps"

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
// stores min_applied_version and drops tables of versions every node has moved past.
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
		cur, err := c.readTables(ctx, g.routeVersion)
		if err != nil {
			return false, err
		}
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
		// Tables of versions below every running node's are garbage (the current one stays).
		if drop := min(minApplied, g.routeVersion); drop > 1 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: tableRoutes,
				Where: []ovsdb.Condition{ovsdb.NewCondition("version", ovsdb.ConditionLessThan, drop)}})
		}
		created := msOf(c.now())
		for node, routes := range tables {
			hops, err := ovsdb.NewOvsMap(routes)
			if err != nil {
				return false, fmt.Errorf("fabric: node %s routes: %w", node, err)
			}
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tableRoutes,
				Row: ovsdb.Row{"version": version, "node": node, "created_ms": created, "next_hops": hops}})
		}
		if _, err := c.transact(ctx, ops...); err != nil {
			return false, err
		}
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

// Routes returns the tables of route version (empty when it is 0 or has been dropped).
func (c *Client) Routes(ctx context.Context, version int64) (Tables, error) {
	if version < 0 || version > MaxVersion {
		return nil, fmt.Errorf("%w: route version %d: give 0 to %d", ErrInvalid, version, int64(MaxVersion))
	}
	return c.readTables(ctx, version)
}

// readTables reads the Route_Table rows of version.
func (c *Client) readTables(ctx context.Context, version int64) (Tables, error) {
	t := Tables{}
	if version == 0 {
		return t, nil
	}
	rows, err := c.selectRows(ctx, tableRoutes, []ovsdb.Condition{eq("version", version)}, "node", "next_hops")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		node, err := rowString(r, "node")
		if err != nil {
			return nil, err
		}
		if t[node], err = rowMap(r, "next_hops"); err != nil {
			return nil, err
		}
	}
	return t, nil
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
		res, err := c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: []ovsdb.Condition{eq("name", node), ovsdb.NewCondition("applied_version", ovsdb.ConditionLessThan, version)},
			Row:   ovsdb.Row{"applied_version": version, "health": HealthUp, "last_seen_ms": msOf(c.now())}})
		if err != nil {
			return false, err
		}
		if res[0].Count == 1 {
			advanced = true
			return true, nil
		}
		rows, err := c.selectRows(ctx, tableNode, []ovsdb.Condition{eq("name", node)}, "applied_version")
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
	nodes, err := c.Nodes(ctx)
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
