package controller

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/route"
)

// graphOf turns the fabric's nodes and links into overlay/route's input. Links that cannot
// enter the graph are left out and counted in ignored: an end not among nodes, two ordinary
// ends, bandwidth 0 (dead) or metrics outside overlay/route's ranges. Links of a super node
// marked stale are left out too (a stale node cannot install new versions, so it must not
// relay for them) and counted in avoided.
func graphOf(nodes []fabric.NodeState, links []fabric.LinkReport) (rn []route.Node, rl []route.Link, ignored, avoided int) {
	kind := make(map[string]route.Kind, len(nodes))
	staleSuper := map[string]bool{}
	rn = make([]route.Node, 0, len(nodes))
	for _, n := range nodes {
		k := route.Ordinary
		if n.Kind == fabric.KindSuper {
			k = route.Super
			if n.Health == fabric.HealthStale {
				staleSuper[n.Name] = true
			}
		}
		kind[n.Name] = k
		rn = append(rn, route.Node{ID: n.Name, Kind: k})
	}
	rl = make([]route.Link, 0, len(links))
	for _, l := range links {
		ka, okA := kind[l.A]
		kb, okB := kind[l.B]
		m := route.Metrics{Bandwidth: uint64(max(l.BandwidthKbps, 0)) * 1000, Latency: time.Duration(l.LatencyUs) * time.Microsecond}
		switch {
		case !okA || !okB || (ka == route.Ordinary && kb == route.Ordinary) || m.Validate() != nil:
			ignored++
		case staleSuper[l.A] || staleSuper[l.B]:
			avoided++
		default:
			rl = append(rl, route.Link{A: l.A, B: l.B, Metrics: m})
		}
	}
	return rn, rl, ignored, avoided
}

// tablesOf renders every node's table from a router (the format is in the package doc).
func tablesOf(r *route.Router, rn []route.Node) (fabric.Tables, error) {
	out := make(fabric.Tables, len(rn))
	for _, n := range rn {
		t, err := r.Table(n.ID)
		if err != nil {
			return nil, fmt.Errorf("controller: table of %s: %w", n.ID, err)
		}
		m := make(map[string]string, len(t.Supers)+len(t.Attached))
		for _, s := range t.Supers {
			m[s.Dest] = s.NextHop + " " + strconv.FormatInt(int64(s.Cost), 10)
		}
		for _, a := range t.Attached {
			if n.Kind == route.Super {
				m[a.Ordinary] = a.Ordinary + " " + strconv.FormatInt(int64(a.Cost), 10)
			} else {
				m["att."+a.Super] = a.Super + " " + strconv.FormatInt(int64(a.Cost), 10)
			}
		}
		out[n.ID] = m
	}
	return out, nil
}

// Recompute says how a round's routes were obtained.
type Recompute int

// Recompute values.
const (
	// Unchanged: the graph equals the previous round's; no route was computed.
	Unchanged Recompute = iota
	// Incremental: the topology is the previous round's and only metrics changed; each changed
	// link went through route.Router.SetLink.
	Incremental
	// Full: a new route.Router was built (first round, a node or link added or removed, a kind
	// changed, or more than a quarter of the links changed at once).
	Full
)

// String names the value.
func (r Recompute) String() string {
	switch r {
	case Unchanged:
		return "unchanged"
	case Incremental:
		return "incremental"
	case Full:
		return "full"
	}
	return "Recompute(" + strconv.Itoa(int(r)) + ")"
}

// linkKey names an undirected link.
type linkKey struct{ a, b string }

func keyOf(a, b string) linkKey {
	if a > b {
		a, b = b, a
	}
	return linkKey{a, b}
}

// planner keeps the previous round's graph and router so that a metric change is re-routed
// incrementally. The zero value is ready; it is owned by one goroutine.
type planner struct {
	r     *route.Router
	kinds map[string]route.Kind
	links map[linkKey]route.Metrics
	rn    []route.Node
	// tables is the rendering of r; nil after a failed render.
	tables fabric.Tables
}

// plan brings the router to the graph (rn, rl) and returns every node's table and how it was
// obtained. The tables returned must not be modified.
func (p *planner) plan(rn []route.Node, rl []route.Link) (fabric.Tables, Recompute, error) {
	how, err := p.update(rn, rl)
	if err != nil {
		*p = planner{}
		return nil, Full, err
	}
	if how != Unchanged || p.tables == nil {
		t, err := tablesOf(p.r, p.rn)
		if err != nil {
			*p = planner{}
			return nil, how, err
		}
		p.tables = t
	}
	return p.tables, how, nil
}

// update applies the graph to p.r incrementally when it can, else rebuilds it.
func (p *planner) update(rn []route.Node, rl []route.Link) (Recompute, error) {
	if p.r != nil && p.sameTopology(rn, rl) {
		var changed []route.Link
		for _, l := range rl {
			if p.links[keyOf(l.A, l.B)] != l.Metrics {
				changed = append(changed, l)
			}
		}
		if len(changed) == 0 {
			return Unchanged, nil
		}
		if len(changed) <= max(len(rl)/4, 1) {
			for _, l := range changed {
				if _, err := p.r.SetLink(l.A, l.B, l.Metrics); err != nil {
					return Full, p.rebuild(rn, rl) // cannot happen with a validated graph; rebuild anyway
				}
				p.links[keyOf(l.A, l.B)] = l.Metrics
			}
			return Incremental, nil
		}
	}
	return Full, p.rebuild(rn, rl)
}

// rebuild builds a new router for the graph.
func (p *planner) rebuild(rn []route.Node, rl []route.Link) error {
	r, err := route.New(rn, rl)
	if err != nil {
		return fmt.Errorf("controller: route graph of %d nodes, %d links: %w", len(rn), len(rl), err)
	}
	p.r, p.rn, p.tables = r, rn, nil
	p.kinds = make(map[string]route.Kind, len(rn))
	for _, n := range rn {
		p.kinds[n.ID] = n.Kind
	}
	p.links = make(map[linkKey]route.Metrics, len(rl))
	for _, l := range rl {
		p.links[keyOf(l.A, l.B)] = l.Metrics
	}
	return nil
}

// sameTopology reports whether rn and rl have the previous round's nodes, kinds and links.
func (p *planner) sameTopology(rn []route.Node, rl []route.Link) bool {
	if len(rn) != len(p.kinds) || len(rl) != len(p.links) {
		return false
	}
	for _, n := range rn {
		if k, ok := p.kinds[n.ID]; !ok || k != n.Kind {
			return false
		}
	}
	for _, l := range rl {
		if _, ok := p.links[keyOf(l.A, l.B)]; !ok {
			return false
		}
	}
	return true
}
