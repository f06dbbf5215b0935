package fabric

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// nodeIDs caches Node rows' _uuid by node name. ovsdb-server (3.1) finds the rows of a
// condition by scanning the whole table unless the condition starts with `_uuid ==`, which it
// looks up in its row hash: the schema's index on name only enforces uniqueness. An
// acknowledgement or heartbeat that names its node by `name ==` therefore costs the server a
// pass over every Node row, and 10,000 agents acknowledging a version cost it 10,000 passes
// over 10,000 rows (the leader's CPU grew with the square of the agents). Node rows are never
// deleted, so a node's _uuid, learnt once (at registration, or by one select), stays valid;
// the conditions still carry `name ==` too, so a stale entry (a database recreated under the
// client) matches nothing instead of another node, and is detected and refreshed (refresh).
type nodeIDs struct {
	mu sync.Mutex
	m  map[string]string // node name → Node _uuid; at most MaxNodes entries
}

// get returns the cached _uuid of node ("" when unknown).
func (n *nodeIDs) get(node string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[node]
}

// set records node's _uuid (uuid "" forgets it). The cache never holds more than MaxNodes
// names (the schema's Node maxRows): past that it is cleared and relearnt.
func (n *nodeIDs) set(node, uuid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if uuid == "" {
		delete(n.m, node)
		return
	}
	if _, ok := n.m[node]; n.m == nil || !ok && len(n.m) >= MaxNodes {
		n.m = map[string]string{}
	}
	n.m[node] = uuid
}

// nodeWhere returns the condition selecting node's row: `_uuid == U` and `name == node` when
// its _uuid is cached (no scan), `name == node` alone otherwise.
func (c *Client) nodeWhere(node string) []ovsdb.Condition {
	if u := c.ids.get(node); u != "" {
		return []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: u}), eq("name", node)}
	}
	return []ovsdb.Condition{eq("name", node)}
}

// learnNodeIDs looks up the _uuid of each node not cached yet (one select per node, in one
// transaction: each is a scan, paid once per node and client) and caches it. Unregistered
// nodes stay unknown.
func (c *Client) learnNodeIDs(ctx context.Context, nodes []string) error {
	var ask []string
	for _, n := range nodes {
		if c.ids.get(n) == "" {
			ask = append(ask, n)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	ops := make([]ovsdb.Operation, len(ask))
	for i, n := range ask {
		ops[i] = ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableNode, Where: []ovsdb.Condition{eq("name", n)}, Columns: []string{"_uuid"}}
	}
	res, err := c.transact(ctx, ops...)
	if err != nil {
		return err
	}
	for i, r := range res[:len(ask)] {
		if len(r.Rows) == 1 {
			u, ok := r.Rows[0]["_uuid"].(ovsdb.UUID)
			if !ok {
				return fmt.Errorf("fabric: Node _uuid is %T", r.Rows[0]["_uuid"])
			}
			c.ids.set(ask[i], u.GoUUID)
		}
	}
	return nil
}

// refresh checks the cached _uuid of each of nodes (one select by _uuid each, no scan) and
// forgets those whose row is gone or belongs to another name. It reports whether it forgot any:
// the caller then retries those nodes, which relearns them.
func (c *Client) refresh(ctx context.Context, nodes []string) (bool, error) {
	var ask []string
	var uuids []string
	for _, n := range nodes {
		if u := c.ids.get(n); u != "" {
			ask, uuids = append(ask, n), append(uuids, u)
		}
	}
	if len(ask) == 0 {
		return false, nil
	}
	ops := make([]ovsdb.Operation, len(ask))
	for i := range ask {
		ops[i] = ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableNode,
			Where: []ovsdb.Condition{eq("_uuid", ovsdb.UUID{GoUUID: uuids[i]})}, Columns: []string{"name"}}
	}
	res, err := c.transact(ctx, ops...)
	if err != nil {
		return false, err
	}
	forgot := false
	for i, r := range res[:len(ask)] {
		if len(r.Rows) == 1 {
			if name, err := rowString(r.Rows[0], "name"); err == nil && name == ask[i] {
				continue
			}
		}
		c.ids.set(ask[i], "")
		forgot = true
	}
	return forgot, nil
}

// updateNodes sends, in one transaction, the operation op(i, where) for each nodes[i], where
// selects the node's row (nodeWhere, after learning unknown _uuids), and returns each
// operation's count. Nodes whose count is 0 while a _uuid was cached are checked (refresh);
// those whose entry was stale are relearnt and sent again, once.
func (c *Client) updateNodes(ctx context.Context, nodes []string, op func(i int, where []ovsdb.Condition) ovsdb.Operation) ([]int, error) {
	counts := make([]int, len(nodes))
	todo := make([]int, len(nodes))
	for i := range nodes {
		todo[i] = i
	}
	for pass := 0; pass < 2 && len(todo) > 0; pass++ {
		names := make([]string, len(todo))
		for k, i := range todo {
			names[k] = nodes[i]
		}
		if err := c.learnNodeIDs(ctx, names); err != nil {
			return nil, err
		}
		cached := make([]bool, len(todo))
		ops := make([]ovsdb.Operation, len(todo))
		for k, i := range todo {
			cached[k] = c.ids.get(nodes[i]) != ""
			ops[k] = op(i, c.nodeWhere(nodes[i]))
		}
		res, err := c.transact(ctx, ops...)
		if err != nil {
			return nil, err
		}
		var zero []int
		var zeroNames []string
		for k, i := range todo {
			counts[i] = res[k].Count
			if res[k].Count == 0 && cached[k] {
				zero, zeroNames = append(zero, i), append(zeroNames, nodes[i])
			}
		}
		if len(zero) == 0 {
			break
		}
		if forgot, err := c.refresh(ctx, zeroNames); err != nil || !forgot {
			return counts, err
		}
		todo = slices.DeleteFunc(zero, func(i int) bool { return c.ids.get(nodes[i]) != "" })
	}
	return counts, nil
}
