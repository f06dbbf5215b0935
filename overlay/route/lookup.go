package route

import "fmt"

// Path is the route from one node to another as forwarding takes it, hop by hop.
type Path struct {
	// Nodes lists the node IDs from source to destination, both included. Every node but the
	// first and last is a super node.
	Nodes []string
	// Cost is the sum of the link costs along Nodes; 0 when source and destination are equal.
	Cost Cost
}

// distTo returns the cost from x to dst; inf when unreachable.
func (r *Router) distTo(x, dst ref) Cost {
	g := r.g
	m := len(g.superIDs)
	if x == dst {
		return 0
	}
	best := inf
	switch {
	case x.kind == Super && dst.kind == Super:
		return r.dist[int(x.idx)*m+int(dst.idx)]
	case x.kind == Super: // towards an ordinary node: through one of its attachments
		for _, e := range g.att[g.attOff[dst.idx]:g.attOff[dst.idx+1]] {
			if v := r.dist[int(x.idx)*m+int(e.super)] + e.cost; v < best {
				best = v
			}
		}
	default: // from an ordinary node: through one of its own attachments
		for _, a := range g.att[g.attOff[x.idx]:g.attOff[x.idx+1]] {
			if v := a.cost + r.distTo(ref{Super, a.super}, dst); v < best {
				best = v
			}
		}
	}
	if best > inf {
		best = inf
	}
	return best
}

// nextHop returns x's next hop towards dst (x != dst) and the cost of the link to it, with the
// tie-break rules: a super delivers directly to an attached destination when that is a shortest
// path, otherwise it forwards to the super neighbour whose ID sorts first among those on a
// shortest path; an ordinary node picks, among its supers on a shortest path, the one whose ID
// sorts first. ok is false when dst is unreachable from x.
func (r *Router) nextHop(x, dst ref) (hop ref, cost Cost, ok bool) {
	g := r.g
	m := len(g.superIDs)
	total := r.distTo(x, dst)
	if total >= inf {
		return ref{}, 0, false
	}
	if x.kind == Ordinary {
		if dst.kind == Super {
			slot := r.best[int(x.idx)*m+int(dst.idx)]
			a := g.att[int(g.attOff[x.idx])+int(slot)]
			return ref{Super, a.super}, a.cost, true
		}
		for _, a := range g.att[g.attOff[x.idx]:g.attOff[x.idx+1]] {
			if a.cost+r.distTo(ref{Super, a.super}, dst) == total {
				return ref{Super, a.super}, a.cost, true
			}
		}
		return ref{}, 0, false // unreachable: distTo and the loop agree by construction
	}
	if dst.kind == Super {
		n := r.next[int(x.idx)*m+int(dst.idx)]
		return ref{Super, n}, g.w[int(x.idx)*m+int(n)], true
	}
	for _, e := range g.att[g.attOff[dst.idx]:g.attOff[dst.idx+1]] {
		if e.super == x.idx && e.cost == total {
			return dst, e.cost, true
		}
	}
	for _, u := range g.nbrs[x.idx] {
		w := g.w[int(x.idx)*m+int(u)]
		if w+r.distTo(ref{Super, u}, dst) == total {
			return ref{Super, u}, w, true
		}
	}
	return ref{}, 0, false
}

func (r *Router) id(x ref) string {
	if x.kind == Super {
		return r.g.superIDs[x.idx]
	}
	return r.g.ordIDs[x.idx]
}

// Lookup returns the path from src to dst that hop-by-hop forwarding on the current tables
// takes, and its cost. Errors wrap [ErrUnknownNode] or [ErrNoRoute].
func (r *Router) Lookup(src, dst string) (Path, error) {
	s, ok := r.g.index[src]
	if !ok {
		return Path{}, fmt.Errorf("lookup %q → %q: %w", src, dst, errUnknown(src))
	}
	d, ok := r.g.index[dst]
	if !ok {
		return Path{}, fmt.Errorf("lookup %q → %q: %w", src, dst, errUnknown(dst))
	}
	p := Path{Nodes: []string{src}}
	// Every hop strictly lowers the remaining cost, so a path has at most m+2 nodes; the bound
	// guards against a broken invariant rather than looping.
	limit := len(r.g.superIDs) + 2
	for x := s; x != d; {
		hop, c, ok := r.nextHop(x, d)
		if !ok {
			return Path{}, fmt.Errorf("lookup %q → %q: %w from %q", src, dst, ErrNoRoute, r.id(x))
		}
		p.Nodes = append(p.Nodes, r.id(hop))
		p.Cost += c
		x = hop
		if len(p.Nodes) > limit {
			return Path{}, fmt.Errorf("lookup %q → %q: path %s exceeds %d nodes: routing tables are inconsistent", src, dst, quote(p.Nodes), limit)
		}
	}
	return p, nil
}

// Distance returns the cost of the shortest path from src to dst in which only super nodes
// relay; ok is false when there is none. Errors wrap [ErrUnknownNode].
func (r *Router) Distance(src, dst string) (cost Cost, ok bool, err error) {
	s, found := r.g.index[src]
	if !found {
		return 0, false, fmt.Errorf("distance %q → %q: %w", src, dst, errUnknown(src))
	}
	d, found := r.g.index[dst]
	if !found {
		return 0, false, fmt.Errorf("distance %q → %q: %w", src, dst, errUnknown(dst))
	}
	c := r.distTo(s, d)
	if c >= inf {
		return 0, false, nil
	}
	return c, true, nil
}

// SuperRoute is one entry of a node's table: towards super node Dest, send to NextHop; the
// path costs Cost.
type SuperRoute struct {
	Dest, NextHop string
	Cost          Cost
}

// Attachment is one link between an ordinary node and a super node, with its cost.
type Attachment struct {
	Ordinary, Super string
	Cost            Cost
}

// Table is a node's routing table in the compressed form it installs. Towards a super node the
// node uses Supers. Towards an ordinary node X, a forwarder looks up X's attachments (the
// directory, [Router.Attachments]: at most [MaxAttachments] entries) and picks the egress super E
// minimising cost(to E) + cost(E–X), then forwards as towards E — or delivers directly when it is
// E. So a table has m entries (plus a super's attachments), never one per node.
type Table struct {
	Node string
	Kind Kind
	// Supers has one entry per reachable super node other than Node, in ID order. For an
	// ordinary node NextHop is one of its own supers.
	Supers []SuperRoute
	// Attached lists, for a super node, the ordinary nodes linked to it, in ID order; for an
	// ordinary node, its own supers.
	Attached []Attachment
}

// Table returns node's table. Errors wrap [ErrUnknownNode].
func (r *Router) Table(node string) (Table, error) {
	x, ok := r.g.index[node]
	if !ok {
		return Table{}, fmt.Errorf("table of %q: %w", node, errUnknown(node))
	}
	g := r.g
	t := Table{Node: node, Kind: x.kind}
	for d := range g.superIDs {
		dst := ref{Super, int32(d)}
		if dst == x {
			continue
		}
		hop, _, ok := r.nextHop(x, dst)
		if !ok {
			continue
		}
		t.Supers = append(t.Supers, SuperRoute{Dest: g.superIDs[d], NextHop: r.id(hop), Cost: r.distTo(x, dst)})
	}
	if x.kind == Super {
		for _, o := range g.superOrd[x.idx] {
			for _, a := range g.att[g.attOff[o]:g.attOff[o+1]] {
				if a.super == x.idx {
					t.Attached = append(t.Attached, Attachment{Ordinary: g.ordIDs[o], Super: node, Cost: a.cost})
				}
			}
		}
		return t, nil
	}
	t.Attached = r.attachments(x.idx)
	return t, nil
}

// Attachments returns the directory entry of ordinary node id: its super nodes and link costs,
// in super ID order. Errors wrap [ErrUnknownNode], or say id is a super node.
func (r *Router) Attachments(id string) ([]Attachment, error) {
	x, ok := r.g.index[id]
	if !ok {
		return nil, fmt.Errorf("attachments of %q: %w", id, errUnknown(id))
	}
	if x.kind != Ordinary {
		return nil, fmt.Errorf("attachments of %q: it is a super node; attachments are listed for ordinary nodes", id)
	}
	return r.attachments(x.idx), nil
}

func (r *Router) attachments(o int32) []Attachment {
	g := r.g
	var out []Attachment
	for _, a := range g.att[g.attOff[o]:g.attOff[o+1]] {
		out = append(out, Attachment{Ordinary: g.ordIDs[o], Super: g.superIDs[a.super], Cost: a.cost})
	}
	return out
}
