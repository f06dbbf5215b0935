package route

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
)

// oracle builds the directed graph in which ordinary nodes never relay: super i is gonum node i,
// ordinary node o is split into an entry (n+o, only incoming edges from its supers) and an exit
// (2n+o, only outgoing edges to its supers). Super–super links are edges both ways.
func oracle(t *testing.T, nodes []Node, links []Link) (path.AllShortest, func(id string, out bool) int64) {
	t.Helper()
	n := int64(len(nodes))
	idx := map[string]int64{}
	kind := map[string]Kind{}
	for i, nd := range nodes {
		idx[nd.ID] = int64(i)
		kind[nd.ID] = nd.Kind
	}
	gid := func(id string, out bool) int64 {
		if kind[id] == Super {
			return idx[id]
		}
		if out {
			return 2*n + idx[id]
		}
		return n + idx[id]
	}
	g := simple.NewWeightedDirectedGraph(0, math.Inf(1))
	for _, nd := range nodes {
		g.AddNode(simple.Node(gid(nd.ID, true)))
		if nd.Kind == Ordinary {
			g.AddNode(simple.Node(gid(nd.ID, false)))
		}
	}
	edge := func(from, to int64, c Cost) {
		g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(from), T: simple.Node(to), W: float64(c)})
	}
	for _, l := range links {
		c, err := l.Metrics.Cost()
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		edge(gid(l.A, true), gid(l.B, false), c)
		edge(gid(l.B, true), gid(l.A, false), c)
	}
	return path.DijkstraAllPaths(g), gid
}

// checkPath asserts p is a real path from src to dst over links, relayed only by supers, whose
// cost is the sum of its link costs.
func checkPath(t *testing.T, p Path, src, dst string, kinds map[string]Kind, cost map[[2]string]Cost) {
	t.Helper()
	if len(p.Nodes) == 0 || p.Nodes[0] != src || p.Nodes[len(p.Nodes)-1] != dst {
		t.Fatalf("%s → %s: path %v does not run from source to destination", src, dst, p.Nodes)
	}
	var sum Cost
	for i := 1; i < len(p.Nodes); i++ {
		c, ok := cost[[2]string{p.Nodes[i-1], p.Nodes[i]}]
		if !ok {
			t.Fatalf("%s → %s: path %v uses a missing link %s–%s", src, dst, p.Nodes, p.Nodes[i-1], p.Nodes[i])
		}
		sum += c
		if i < len(p.Nodes)-1 && kinds[p.Nodes[i]] != Super {
			t.Fatalf("%s → %s: path %v relays through ordinary node %s", src, dst, p.Nodes, p.Nodes[i])
		}
	}
	if sum != p.Cost {
		t.Fatalf("%s → %s: path %v costs %d by its links but Lookup says %d", src, dst, p.Nodes, sum, p.Cost)
	}
}

func linkCosts(t *testing.T, links []Link) map[[2]string]Cost {
	t.Helper()
	out := map[[2]string]Cost{}
	for _, l := range links {
		c, err := l.Metrics.Cost()
		if err != nil {
			t.Fatal(err)
		}
		out[[2]string{l.A, l.B}] = c
		out[[2]string{l.B, l.A}] = c
	}
	return out
}

// TestDistancesEqualGonum is the property test of issue 17: on random seed-shaped graphs (and on
// sparser super meshes, with isolated ordinary nodes), every pair's distance equals gonum's
// DijkstraAllPaths on the graph that forbids ordinary relay, and Lookup's hop-by-hop path is a
// real path of that cost relayed only by supers.
func TestDistancesEqualGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	shapes := []shape{
		{m: 1, k: 5, meshP: 1, maxAtt: 1},
		{m: 4, k: 20, meshP: 1, maxAtt: 3},
		{m: 8, k: 40, meshP: 1, maxAtt: 3},
		{m: 8, k: 30, meshP: 0.4, maxAtt: 3, allowIsolated: true},
		{m: 12, k: 25, meshP: 0.15, maxAtt: 4, allowIsolated: true},
	}
	pairs := 0
	for round := range 40 {
		sh := shapes[round%len(shapes)]
		nodes, links := randGraph(rng, sh)
		r, err := New(nodes, links)
		if err != nil {
			t.Fatalf("round %d: New: %v", round, err)
		}
		sp, gid := oracle(t, nodes, links)
		kinds := map[string]Kind{}
		for _, n := range nodes {
			kinds[n.ID] = n.Kind
		}
		costs := linkCosts(t, links)
		for _, a := range nodes {
			for _, b := range nodes {
				want := 0.0
				if a.ID != b.ID {
					want = sp.Weight(gid(a.ID, true), gid(b.ID, false))
				}
				got, ok, err := r.Distance(a.ID, b.ID)
				if err != nil {
					t.Fatal(err)
				}
				p, lerr := r.Lookup(a.ID, b.ID)
				if math.IsInf(want, 1) {
					if ok || !errors.Is(lerr, ErrNoRoute) {
						t.Fatalf("round %d: %s → %s: gonum finds no path, we say ok=%v cost %d, lookup error %v", round, a.ID, b.ID, ok, got, lerr)
					}
					continue
				}
				if !ok || float64(got) != want {
					t.Fatalf("round %d: %s → %s: distance %d (ok=%v), gonum %v", round, a.ID, b.ID, got, ok, want)
				}
				if lerr != nil {
					t.Fatalf("round %d: %s → %s: %v", round, a.ID, b.ID, lerr)
				}
				if p.Cost != got {
					t.Fatalf("round %d: %s → %s: lookup cost %d, distance %d", round, a.ID, b.ID, p.Cost, got)
				}
				checkPath(t, p, a.ID, b.ID, kinds, costs)
				pairs++
			}
		}
	}
	if pairs < 10_000 {
		t.Fatalf("only %d reachable pairs checked: the generator lost its shape", pairs)
	}
}
