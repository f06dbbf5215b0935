package fabric

import (
	"context"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// globalCols are the Fabric_Global columns the client reads.
func globalCols() []string {
	return []string{"route_version", "min_applied_version", "lease_holder", "lease_expires_ms", "lease_epoch"}
}

// global is the Fabric_Global row.
type global struct {
	routeVersion, minApplied int64
	holder                   string
	expiresMs, epoch         int64
}

// allGlobal matches every Fabric_Global row (OVSDB needs a condition; versions are ≥ 0).
func allGlobal() []ovsdb.Condition {
	return []ovsdb.Condition{ovsdb.NewCondition("route_version", ovsdb.ConditionGreaterThanOrEqual, 0)}
}

// readGlobal returns the Fabric_Global row, creating it (all zero) when the database is new.
// Two clients creating it at once cannot both succeed: the table holds at most one row.
func (c *Client) readGlobal(ctx context.Context) (global, error) {
	for range 2 {
		rows, err := c.selectRows(ctx, tableGlobal, allGlobal(), globalCols()...)
		if err != nil {
			return global{}, err
		}
		if len(rows) == 1 {
			return parseGlobal(rows[0])
		}
		if len(rows) > 1 {
			return global{}, fmt.Errorf("fabric: %d Fabric_Global rows, want 1", len(rows))
		}
		_, err = c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tableGlobal, Row: ovsdb.Row{
			"route_version": 0, "min_applied_version": 0, "lease_holder": "", "lease_expires_ms": 0, "lease_epoch": 0}})
		if err != nil {
			// Lost the race to another creator (maxRows 1) or the connection: read again.
			continue
		}
	}
	return global{}, fmt.Errorf("fabric: could not create the Fabric_Global row")
}

// parseGlobal decodes a selected Fabric_Global row.
func parseGlobal(r ovsdb.Row) (global, error) {
	var g global
	var err error
	if g.routeVersion, err = rowInt(r, "route_version"); err != nil {
		return g, err
	}
	if g.minApplied, err = rowInt(r, "min_applied_version"); err != nil {
		return g, err
	}
	if g.holder, err = rowString(r, "lease_holder"); err != nil {
		return g, err
	}
	if g.expiresMs, err = rowInt(r, "lease_expires_ms"); err != nil {
		return g, err
	}
	g.epoch, err = rowInt(r, "lease_epoch")
	return g, err
}

// Global is the fabric's root state as read by Status.
type Global struct {
	// RouteVersion is the newest published route version (0: none yet).
	RouteVersion int64
	// MinApplied is min_applied_version as stored at the last publish.
	MinApplied int64
	// Lease is the controller lease (Held: its holder's expiry is in the future by the
	// caller's clock).
	Lease Lease
}

// Status reads Fabric_Global.
func (c *Client) Status(ctx context.Context) (Global, error) {
	g, err := c.readGlobal(ctx)
	if err != nil {
		return Global{}, err
	}
	return Global{RouteVersion: g.routeVersion, MinApplied: g.minApplied, Lease: c.leaseOf(g, "")}, nil
}

// msOf converts t to milliseconds since the epoch, never negative.
func msOf(t time.Time) int64 {
	return max(t.UnixMilli(), 0)
}
