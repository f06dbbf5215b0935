package route

import (
	"fmt"
	"slices"
)

// Router holds a validated overlay graph and its routes. Build it with [New]; change one link's
// metrics with [Router.SetLink]. Not safe for concurrent use.
type Router struct {
	g *graph
	// dist is the m×m matrix of phase 1 distances among supers (inf: unreachable).
	dist []Cost
	// next[s*m+d] is super s's next hop (a super index) towards super d; s itself when s == d,
	// -1 when d is unreachable.
	next []int32
	// best[o*m+d] is the slot (index into o's attachments) of the super through which ordinary
	// node o reaches super d most cheaply; noSlot when none does.
	best []uint8
}

// noSlot marks "no attachment reaches this super".
const noSlot = 0xff

// New validates nodes and links (see the bounds in this package), and computes all routes
// with the two-phase algorithm. It returns an error naming the offending node or link.
func New(nodes []Node, links []Link) (*Router, error) {
	g, err := newGraph(nodes, links)
	if err != nil {
		return nil, fmt.Errorf("overlay graph: %w", err)
	}
	r := &Router{g: g}
	m, k := len(g.superIDs), len(g.ordIDs)
	r.dist = make([]Cost, m*m)
	r.next = make([]int32, m*m)
	r.best = make([]uint8, k*m)
	r.phase1()
	scratch := make([]Cost, m)
	for o := range k {
		r.phase2Row(o, scratch)
	}
	return r, nil
}

// Supers returns the number of super nodes.
func (r *Router) Supers() int { return len(r.g.superIDs) }

// Ordinaries returns the number of ordinary nodes.
func (r *Router) Ordinaries() int { return len(r.g.ordIDs) }

// phase1 computes dist (Floyd–Warshall over the super–super links: O(m³), the super mesh is
// dense) and next (the canonical next hops, see nextHops).
func (r *Router) phase1() {
	m := len(r.g.superIDs)
	d := r.dist
	copy(d, r.g.w)
	for s := range m {
		d[s*m+s] = 0
	}
	for k := range m {
		rowK := d[k*m : (k+1)*m]
		for i := range m {
			dik := d[i*m+k]
			if dik >= inf || i == k {
				continue
			}
			rowI := d[i*m : (i+1)*m]
			rowI = rowI[:len(rowK)]
			for j, dkj := range rowK {
				if v := dik + dkj; v < rowI[j] {
					rowI[j] = v
				}
			}
		}
	}
	r.nextHops()
}

// nextHops fills next from dist with the tie-break rule: super s's next hop towards d is the
// neighbour u with the smallest index (IDs sort first) such that w(s,u) + dist(u,d) == dist(s,d).
// Every hop therefore lies on a shortest path and forwarding hop by hop is loop-free (costs are
// at least 1).
func (r *Router) nextHops() {
	for s := range r.g.superIDs {
		r.nextHopsRow(s)
	}
}

// nextHopsRow recomputes super s's next hops towards every super.
func (r *Router) nextHopsRow(s int) {
	m := len(r.g.superIDs)
	row := r.next[s*m : (s+1)*m]
	for d := range row {
		row[d] = -1
	}
	row[s] = int32(s)
	rowS := r.dist[s*m : (s+1)*m]
	for _, u := range r.g.nbrs[s] {
		w := r.g.w[s*m+int(u)]
		rowU := r.dist[int(u)*m : (int(u)+1)*m]
		rowU = rowU[:len(rowS)]
		row = row[:len(rowS)]
		for d, du := range rowU {
			if row[d] == -1 && w+du == rowS[d] {
				row[d] = u
			}
		}
	}
}

// nextHopsCol recomputes every super's next hop towards super d.
func (r *Router) nextHopsCol(d int) {
	m := len(r.g.superIDs)
	for s := range m {
		nh := int32(-1)
		if s == d {
			nh = int32(s)
		} else if ds := r.dist[s*m+d]; ds < inf {
			for _, u := range r.g.nbrs[s] {
				if r.g.w[s*m+int(u)]+r.dist[int(u)*m+d] == ds {
					nh = u
					break
				}
			}
		}
		r.next[s*m+d] = nh
	}
}

// phase2Row computes ordinary node o's best attachment per destination super: the slot minimising
// cost(o,s) + dist(s,d), ties to the lower slot (the super whose ID sorts first). scratch has
// length m.
func (r *Router) phase2Row(o int, scratch []Cost) {
	m := len(r.g.superIDs)
	row := r.best[o*m : (o+1)*m]
	for d := range row {
		row[d] = noSlot
		scratch[d] = inf
	}
	for slot, a := range r.g.att[r.g.attOff[o]:r.g.attOff[o+1]] {
		rowS := r.dist[int(a.super)*m : (int(a.super)+1)*m]
		rowS = rowS[:len(scratch)]
		row = row[:len(scratch)]
		for d, ds := range rowS {
			if ds >= inf {
				continue
			}
			if v := a.cost + ds; v < scratch[d] {
				scratch[d] = v
				row[d] = uint8(slot)
			}
		}
	}
}

// phase2Cols recomputes ordinary node o's entries for the destination supers in cols only.
func (r *Router) phase2Cols(o int, cols []int32) {
	m := len(r.g.superIDs)
	as := r.g.att[r.g.attOff[o]:r.g.attOff[o+1]]
	for _, d := range cols {
		bestSlot, bestCost := uint8(noSlot), inf
		for slot, a := range as {
			ds := r.dist[int(a.super)*m+int(d)]
			if ds >= inf {
				continue
			}
			if v := a.cost + ds; v < bestCost {
				bestCost, bestSlot = v, uint8(slot)
			}
		}
		r.best[o*m+int(d)] = bestSlot
	}
}

// Update describes what one [Router.SetLink] recomputed.
type Update struct {
	// Phase1 is true when the super–super distances were recomputed (a super–super link changed).
	Phase1 bool
	// SuperPairsChanged counts (source, destination) super pairs whose distance changed.
	SuperPairsChanged int
	// OrdinaryNodesTouched counts ordinary nodes whose phase 2 entries were recomputed.
	OrdinaryNodesTouched int
	// OrdinaryEntriesRecomputed counts the (ordinary node, destination super) entries recomputed.
	OrdinaryEntriesRecomputed int
}

// SetLink changes the metrics of the existing link between a and b (either order) and re-routes
// incrementally: a super–super change updates phase 1 (O(m²) for a cheaper link, O(m²) per
// affected source for a dearer one) and then phase 2 only for the ordinary nodes and
// destinations whose inputs changed; an ordinary–super change recomputes only
// that ordinary node's phase 2 row (O(m·attachments)). The result equals a full [New] on the
// changed graph. On error (unknown node, no such link, metrics out of range) nothing changes.
// Adding or removing links needs a new Router.
func (r *Router) SetLink(a, b string, metrics Metrics) (Update, error) {
	ra, ok := r.g.index[a]
	if !ok {
		return Update{}, fmt.Errorf("set link %q–%q: %w", a, b, errUnknown(a))
	}
	rb, ok := r.g.index[b]
	if !ok {
		return Update{}, fmt.Errorf("set link %q–%q: %w", a, b, errUnknown(b))
	}
	c, err := metrics.Cost()
	if err != nil {
		return Update{}, fmt.Errorf("set link %q–%q: %w", a, b, err)
	}
	g := r.g
	m := len(g.superIDs)
	if ra.kind == Super && rb.kind == Super {
		i, j := int(ra.idx), int(rb.idx)
		if i == j || g.w[i*m+j] >= inf {
			return Update{}, fmt.Errorf("set link %q–%q: no such link: links are added by building a new router", a, b)
		}
		return r.setSuperLink(i, j, c), nil
	}
	if ra.kind == Ordinary && rb.kind == Ordinary {
		return Update{}, fmt.Errorf("set link %q–%q: no such link: ordinary nodes never talk directly", a, b)
	}
	o, s := ra, rb
	if o.kind == Super {
		o, s = rb, ra
	}
	as := g.att[g.attOff[o.idx]:g.attOff[o.idx+1]]
	slot := slices.IndexFunc(as, func(x attachment) bool { return x.super == s.idx })
	if slot < 0 {
		return Update{}, fmt.Errorf("set link %q–%q: no such link: links are added by building a new router", a, b)
	}
	as[slot].cost = c
	r.phase2Row(int(o.idx), make([]Cost, m))
	return Update{OrdinaryNodesTouched: 1, OrdinaryEntriesRecomputed: m}, nil
}

// setSuperLink sets the cost of super link i–j to c and re-routes incrementally. Phase 1: a
// cheaper link relaxes every pair through it (O(m²): a new shortest path uses the link at most
// once); a dearer link re-runs Dijkstra only from the sources for which the link was on a
// shortest path (the others' distances cannot move); next hops are re-derived for rows i and j
// (their link changed) and for the destination columns whose distances moved. Phase 2: only the
// entries (o, d) where dist(s, d) moved for one of o's supers s.
func (r *Router) setSuperLink(i, j int, c Cost) Update {
	g := r.g
	m := len(g.superIDs)
	old := g.w[i*m+j]
	g.w[i*m+j], g.w[j*m+i] = c, c
	d := r.dist
	changed := make([]bool, m*m)
	u := Update{Phase1: true}
	mark := func(s, t int, v Cost) {
		d[s*m+t] = v
		if !changed[s*m+t] {
			changed[s*m+t] = true
			u.SuperPairsChanged++
		}
	}
	switch {
	case c < old:
		rowI := slices.Clone(d[i*m : (i+1)*m])
		rowJ := slices.Clone(d[j*m : (j+1)*m])
		for s := range m {
			dsi, dsj := rowI[s], rowJ[s] // symmetric: dist(s,i) == dist(i,s)
			row := d[s*m : (s+1)*m]
			for t := range row {
				if v := min(dsi+c+rowJ[t], dsj+c+rowI[t]); v < row[t] {
					mark(s, t, v)
				}
			}
		}
	case c > old:
		scratch := make([]Cost, m)
		done := make([]bool, m)
		var sources []int
		for s := range m {
			dsi, dsj := d[s*m+i], d[s*m+j]
			if dsi < inf && (dsj == dsi+old || dsi == dsj+old) {
				sources = append(sources, s)
			}
		}
		for _, s := range sources {
			r.dijkstraRow(s, scratch, done)
			for t, v := range scratch {
				if v != d[s*m+t] {
					mark(s, t, v)
				}
			}
		}
	}
	r.nextHopsRow(i)
	r.nextHopsRow(j)
	colChanged := make([]bool, m)
	rowChanged := make([]bool, m)
	for k, ch := range changed {
		if ch {
			colChanged[k%m] = true
			rowChanged[k/m] = true
		}
	}
	for t, ch := range colChanged {
		if ch {
			r.nextHopsCol(t)
		}
	}
	if u.SuperPairsChanged == 0 {
		return u
	}
	cols := make([]int32, 0, m)
	for o := range g.ordIDs {
		as := g.att[g.attOff[o]:g.attOff[o+1]]
		hit := false
		for _, a := range as {
			hit = hit || rowChanged[a.super]
		}
		if !hit {
			continue
		}
		cols = cols[:0]
		for t := range m {
			for _, a := range as {
				if changed[int(a.super)*m+t] {
					cols = append(cols, int32(t))
					break
				}
			}
		}
		r.phase2Cols(o, cols)
		u.OrdinaryNodesTouched++
		u.OrdinaryEntriesRecomputed += len(cols)
	}
	return u
}

// dijkstraRow writes the distances from super s over the super links into out (dense
// Dijkstra, O(m²)); done is scratch of length m.
func (r *Router) dijkstraRow(s int, out []Cost, done []bool) {
	g := r.g
	m := len(g.superIDs)
	for v := range out {
		out[v] = inf
		done[v] = false
	}
	out[s] = 0
	for range m {
		u, du := -1, inf
		for v, dv := range out {
			if !done[v] && dv < du {
				u, du = v, dv
			}
		}
		if u < 0 {
			return
		}
		done[u] = true
		for _, v := range g.nbrs[u] {
			if nd := du + g.w[u*m+int(v)]; nd < out[v] {
				out[v] = nd
			}
		}
	}
}
