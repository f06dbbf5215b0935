package fabric

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Kind is a node's role in the overlay.
type Kind string

// Node kinds (the schema's enum).
const (
	// KindSuper is a super node: it relays for others.
	KindSuper Kind = "super"
	// KindOrdinary is an ordinary node.
	KindOrdinary Kind = "ordinary"
)

// NodeSpec is what a node registers.
type NodeSpec struct {
	// Name identifies the node: 1 to MaxNameLen bytes of letters, digits, '.', '_', '-'.
	Name string
	// Kind is KindSuper or KindOrdinary.
	Kind Kind
	// Carriers names the node's carrier links (at most MaxSetSize names, each like Name).
	Carriers []string
	// Underlay lists the node's underlay addresses, "IP" or "IP:port" (at most MaxSetSize).
	Underlay []string
}

// NodeState is a node's row as read back.
type NodeState struct {
	NodeSpec
	// AppliedVersion is the route version the node last acknowledged.
	AppliedVersion int64
	// Health is "up", "degraded", "down" or "stale" (HealthStale: marked by the controller
	// after the node stopped reporting).
	Health string
	// LastSeen is the time of its last registration, acknowledgement or heartbeat (its own
	// clock).
	LastSeen time.Time
}

// checkName validates a node or carrier name.
func checkName(what, s string) error {
	if s == "" || len(s) > MaxNameLen {
		return fmt.Errorf("%w: %s %q: give 1 to %d bytes", ErrInvalid, what, s, MaxNameLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: %s %q: use letters, digits, '.', '_' and '-' only", ErrInvalid, what, s)
		}
	}
	return nil
}

// Validate checks the spec's bounds and syntax; errors wrap ErrInvalid and name the field.
func (s NodeSpec) Validate() error {
	if err := checkName("node name", s.Name); err != nil {
		return err
	}
	if s.Kind != KindSuper && s.Kind != KindOrdinary {
		return fmt.Errorf("%w: node %s: kind %q: use %q or %q", ErrInvalid, s.Name, s.Kind, KindSuper, KindOrdinary)
	}
	if len(s.Carriers) > MaxSetSize || len(s.Underlay) > MaxSetSize {
		return fmt.Errorf("%w: node %s: %d carriers, %d underlay addresses: at most %d each", ErrInvalid, s.Name, len(s.Carriers), len(s.Underlay), MaxSetSize)
	}
	for _, cr := range s.Carriers {
		if err := checkName("node "+s.Name+" carrier", cr); err != nil {
			return err
		}
	}
	for _, a := range s.Underlay {
		if _, err := netip.ParseAddr(a); err != nil {
			if _, err2 := netip.ParseAddrPort(a); err2 != nil {
				return fmt.Errorf("%w: node %s: underlay address %q: give IP or IP:port", ErrInvalid, s.Name, a)
			}
		}
	}
	return nil
}

// nodeCols are the Node columns the client reads.
func nodeCols() []string {
	return []string{"name", "kind", "carriers", "underlay", "applied_version", "health", "last_seen_ms"}
}

// RegisterNode creates the node's row, or updates its kind, carriers and underlay addresses
// (keeping its applied version), and marks it up and seen now.
func (c *Client) RegisterNode(ctx context.Context, spec NodeSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	carriers, err := ovsdb.NewOvsSet(sortedCopy(spec.Carriers))
	if err != nil {
		return fmt.Errorf("fabric: node %s carriers: %w", spec.Name, err)
	}
	underlay, err := ovsdb.NewOvsSet(sortedCopy(spec.Underlay))
	if err != nil {
		return fmt.Errorf("fabric: node %s underlay: %w", spec.Name, err)
	}
	return c.retry(ctx, "register node "+spec.Name, func(ctx context.Context, _ bool) (bool, error) {
		row := ovsdb.Row{"kind": string(spec.Kind), "carriers": carriers, "underlay": underlay,
			"health": HealthUp, "last_seen_ms": msOf(c.now())}
		known := c.ids.get(spec.Name) != ""
		ops := []ovsdb.Operation{{Op: ovsdb.OperationUpdate, Table: tableNode, Where: c.nodeWhere(spec.Name), Row: row}}
		if !known {
			// Learn the row's _uuid for the acknowledgements and heartbeats to come.
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableNode,
				Where: []ovsdb.Condition{eq("name", spec.Name)}, Columns: []string{"_uuid"}})
		}
		res, err := c.transact(ctx, ops...)
		if err != nil {
			return false, err
		}
		if res[0].Count == 1 {
			if !known && len(res[1].Rows) == 1 {
				if u, ok := res[1].Rows[0]["_uuid"].(ovsdb.UUID); ok {
					c.ids.set(spec.Name, u.GoUUID)
				}
			}
			return true, nil
		}
		if known {
			// The cached _uuid is stale (the database was recreated): forget it and retry.
			c.ids.set(spec.Name, "")
			return false, nil
		}
		// A new node's table may have been written before it registered, without marking
		// it: take it as changed in the current version (see AckUnchanged).
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		row["name"], row["applied_version"], row["routes_version"] = spec.Name, 0, g.routeVersion
		// A concurrent insert of the same name fails on the unique index; the retry updates.
		res, err = c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tableNode, Row: row})
		if err != nil {
			return false, err
		}
		c.ids.set(spec.Name, res[0].UUID.GoUUID)
		return true, nil
	})
}

// Nodes returns every node's row, sorted by name.
func (c *Client) Nodes(ctx context.Context) ([]NodeState, error) {
	return c.readNodes(ctx)
}

// readNodes reads every Node row, sorted by name, and refreshes the client's cache of their
// _uuids (nodeIDs).
func (c *Client) readNodes(ctx context.Context) ([]NodeState, error) {
	rows, err := c.selectRows(ctx, tableNode, []ovsdb.Condition{ovsdb.NewCondition("applied_version", ovsdb.ConditionGreaterThanOrEqual, 0)}, append(nodeCols(), "_uuid")...)
	if err != nil {
		return nil, err
	}
	out := make([]NodeState, 0, len(rows))
	for _, r := range rows {
		n, err := parseNode(r)
		if err != nil {
			return nil, err
		}
		if u, ok := r["_uuid"].(ovsdb.UUID); ok {
			c.ids.set(n.Name, u.GoUUID)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b NodeState) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// parseNode decodes a selected Node row.
func parseNode(r ovsdb.Row) (NodeState, error) {
	var n NodeState
	var err error
	var kind string
	if n.Name, err = rowString(r, "name"); err != nil {
		return n, err
	}
	if kind, err = rowString(r, "kind"); err != nil {
		return n, err
	}
	n.Kind = Kind(kind)
	if n.Carriers, err = rowStrings(r, "carriers"); err != nil {
		return n, err
	}
	if n.Underlay, err = rowStrings(r, "underlay"); err != nil {
		return n, err
	}
	if n.AppliedVersion, err = rowInt(r, "applied_version"); err != nil {
		return n, err
	}
	if n.Health, err = rowString(r, "health"); err != nil {
		return n, err
	}
	ms, err := rowInt(r, "last_seen_ms")
	n.LastSeen = time.UnixMilli(ms)
	return n, err
}

// sortedCopy returns a sorted copy of s.
func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// Node health values (the schema's enum).
const (
	HealthUp       = "up"
	HealthDegraded = "degraded"
	HealthDown     = "down"
)

// SetHealth sets a registered node's health. A node marked HealthDown or HealthStale no longer
// holds MinApplied back (a dead node must not keep old route tables alive); its next registration
// or acknowledgement marks it up again.
func (c *Client) SetHealth(ctx context.Context, node, health string) error {
	if err := checkName("node name", node); err != nil {
		return err
	}
	if health != HealthUp && health != HealthDegraded && health != HealthDown && health != HealthStale {
		return fmt.Errorf("%w: node %s: health %q: use %q, %q, %q or %q", ErrInvalid, node, health, HealthUp, HealthDegraded, HealthDown, HealthStale)
	}
	return c.retry(ctx, "set health of node "+node, func(ctx context.Context, _ bool) (bool, error) {
		res, err := c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableNode,
			Where: []ovsdb.Condition{eq("name", node)}, Row: ovsdb.Row{"health": health}})
		if err != nil {
			return false, err
		}
		if res[0].Count == 0 {
			return false, fmt.Errorf("%w: set health of node %s: register it first", ErrUnknownNode, node)
		}
		return true, nil
	})
}
