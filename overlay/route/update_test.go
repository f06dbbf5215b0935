package route

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sameRoutes asserts that two routers hold identical route state (distances, next hops, phase 2
// choices) and give identical lookups for every pair.
func sameRoutes(t *testing.T, step int, got, want *Router, nodes []Node) {
	t.Helper()
	if !slices.Equal(got.dist, want.dist) || !slices.Equal(got.next, want.next) || !slices.Equal(got.best, want.best) {
		t.Fatalf("step %d: incremental state differs from a full recompute", step)
	}
	for _, a := range nodes {
		for _, b := range nodes {
			pg, eg := got.Lookup(a.ID, b.ID)
			pw, ew := want.Lookup(a.ID, b.ID)
			if (eg == nil) != (ew == nil) || pg.Cost != pw.Cost || !slices.Equal(pg.Nodes, pw.Nodes) {
				t.Fatalf("step %d: %s → %s: incremental %v %v, full %v %v", step, a.ID, b.ID, pg, eg, pw, ew)
			}
		}
	}
}

// TestIncrementalEqualsFull changes one random link at a time (super–super and ordinary–super,
// including big swings that move many routes) and compares the incrementally updated router
// with one built from scratch on the changed links.
func TestIncrementalEqualsFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	for _, sh := range []shape{
		{m: 6, k: 30, meshP: 1, maxAtt: 3},
		{m: 10, k: 40, meshP: 0.3, maxAtt: 3, allowIsolated: true},
	} {
		nodes, links := randGraph(rng, sh)
		r, err := New(nodes, links)
		if err != nil {
			t.Fatal(err)
		}
		var sawPhase1, sawLocal, sawChange bool
		for step := range 150 {
			i := rng.IntN(len(links))
			links[i].Metrics = randMetrics(rng)
			if rng.IntN(4) == 0 { // a degraded link: the routes through it must move
				links[i].Metrics = Metrics{Bandwidth: MinBandwidth, Latency: MaxLatency}
			}
			a, b := links[i].A, links[i].B
			if rng.IntN(2) == 0 {
				a, b = b, a
			}
			u, err := r.SetLink(a, b, links[i].Metrics)
			if err != nil {
				t.Fatalf("step %d: SetLink: %v", step, err)
			}
			if u.Phase1 {
				sawPhase1 = true
				sawChange = sawChange || u.SuperPairsChanged > 0
			} else {
				sawLocal = true
				if u.OrdinaryNodesTouched != 1 {
					t.Fatalf("step %d: an ordinary–super change touched %d ordinary nodes, want 1", step, u.OrdinaryNodesTouched)
				}
			}
			full, err := New(nodes, links)
			if err != nil {
				t.Fatal(err)
			}
			sameRoutes(t, step, r, full, nodes)
		}
		if !sawPhase1 || !sawLocal || !sawChange {
			t.Fatalf("the random changes missed a case: phase 1 %v, local %v, distances changed %v", sawPhase1, sawLocal, sawChange)
		}
	}
}

// TestSetLinkRefusesAndKeepsState: bad updates are refused with a reason and change nothing.
func TestSetLinkRefusesAndKeepsState(t *testing.T) {
	r, err := New(seedNodes(), seedLinks())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := r.Lookup("a1", "b1")
	good := Metrics{Bandwidth: 1e9, Latency: time.Millisecond}
	for _, c := range []struct {
		a, b string
		m    Metrics
		want string
	}{
		{"a1", "nope", good, "unknown node"},
		{"a1", "b1", good, "ordinary nodes never talk directly"},
		{"a2", "s1", good, "no such link"},
		{"s1", "s1", good, "no such link"},
		{"a1", "s1", Metrics{Bandwidth: 0, Latency: time.Millisecond}, "bandwidth 0 bit/s is outside"},
		{"a1", "s1", Metrics{Bandwidth: 1e9, Latency: -time.Millisecond}, "latency -1ms is outside"},
		{"a1", "s1", Metrics{Bandwidth: 1e9, Latency: time.Minute}, "latency 1m0s is outside"},
		{"s1", "s2", Metrics{Bandwidth: MaxBandwidth + 1}, "bandwidth 1000000000001 bit/s is outside"},
	} {
		_, err := r.SetLink(c.a, c.b, c.m)
		assertErr(t, err, c.want)
	}
	after, err := r.Lookup("a1", "b1")
	if err != nil || !slices.Equal(before.Nodes, after.Nodes) || before.Cost != after.Cost {
		t.Fatalf("refused updates changed the routes: %v → %v (%v)", before, after, err)
	}
}
