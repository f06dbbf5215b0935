package controller

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/route"
)

// planGraph is a seed-shaped graph: m meshed supers, k ordinary nodes tied to 1–3 supers.
func planGraph(rng *rand.Rand, m, k int) ([]fabric.NodeState, []fabric.LinkReport) {
	var nodes []fabric.NodeState
	var links []fabric.LinkReport
	metric := func(a, b string) fabric.LinkReport {
		return fabric.LinkReport{A: a, B: b, BandwidthKbps: 1000 * (1 + rng.Int64N(1000)), LatencyUs: 1 + rng.Int64N(200_000)}
	}
	for i := range m {
		nodes = append(nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: fmt.Sprintf("s%d", i), Kind: fabric.KindSuper}, Health: fabric.HealthUp})
		for j := range i {
			links = append(links, metric(fmt.Sprintf("s%d", j), fmt.Sprintf("s%d", i)))
		}
	}
	for i := range k {
		o := fmt.Sprintf("o%d", i)
		nodes = append(nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: o, Kind: fabric.KindOrdinary}, Health: fabric.HealthUp})
		for _, s := range rng.Perm(m)[:1+rng.IntN(min(3, m))] {
			links = append(links, metric(o, fmt.Sprintf("s%d", s)))
		}
	}
	return nodes, links
}

func tablesEqual(a, b fabric.Tables) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// TestPlannerIncrementalEqualsFull: after every single-link metric change the planner takes the
// incremental path and its tables equal a full computation; no change computes nothing; a
// topology change, a stale super or many changes at once rebuild.
func TestPlannerIncrementalEqualsFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 5))
	nodes, links := planGraph(rng, 12, 60)
	var p planner
	step := func(want Recompute) {
		t.Helper()
		rn, rl, _, _ := graphOf(nodes, links)
		got, how, err := p.plan(rn, rl)
		if err != nil {
			t.Fatal(err)
		}
		if how != want {
			t.Fatalf("recompute %v, want %v", how, want)
		}
		full, _, err := Tables(nodes, links)
		if err != nil {
			t.Fatal(err)
		}
		if !tablesEqual(got, full) {
			t.Fatalf("%v tables differ from a full computation", how)
		}
	}
	step(Full)
	step(Unchanged)
	for range 200 {
		i := rng.IntN(len(links))
		if rng.IntN(2) == 0 {
			links[i].LatencyUs = 1 + rng.Int64N(300_000)
		} else {
			links[i].BandwidthKbps = 1000 * (1 + rng.Int64N(1000))
		}
		step(Incremental)
	}
	// Only the measurement time moved: nothing to compute.
	for i := range links {
		links[i].MeasuredAt = time.Unix(int64(i), 0)
	}
	step(Unchanged)
	// A new node with a link: rebuild.
	nodes = append(nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: "onew", Kind: fabric.KindOrdinary}})
	links = append(links, fabric.LinkReport{A: "onew", B: "s3", BandwidthKbps: 1000, LatencyUs: 10})
	step(Full)
	// A super marked stale: its links leave the graph, rebuild; the others never route via it.
	nodes[3].Health = fabric.HealthStale
	step(Full)
	rn, rl, _, avoided := graphOf(nodes, links)
	if avoided == 0 {
		t.Fatal("no link of stale s3 avoided")
	}
	r, err := route.New(rn, rl)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rn {
		tb, err := r.Table(n.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tb.Supers {
			if s.NextHop == "s3" || s.Dest == "s3" {
				t.Fatalf("%s routes via or to stale s3: %+v", n.ID, s)
			}
		}
	}
	// Many links changed at once: rebuild.
	for i := range links {
		links[i].LatencyUs++
	}
	step(Full)
	if Recompute(9).String() != "Recompute(9)" || Incremental.String() != "incremental" {
		t.Error("Recompute.String")
	}
}
