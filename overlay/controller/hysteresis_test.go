package controller

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

// memFabric is an in-memory Fabric: the lease is always ours, publishes are recorded.
type memFabric struct {
	nodes     []fabric.NodeState
	links     []fabric.LinkReport
	versions  []fabric.Tables // versions[v-1] is version v
	publishes int
}

func (m *memFabric) AcquireLease(_ context.Context, holder string, ttl time.Duration) (fabric.Lease, error) {
	return fabric.Lease{Holder: holder, Epoch: 1, Held: true, Expires: time.Now().Add(ttl)}, nil
}
func (m *memFabric) Nodes(context.Context) ([]fabric.NodeState, error)  { return m.nodes, nil }
func (m *memFabric) Links(context.Context) ([]fabric.LinkReport, error) { return m.links, nil }
func (m *memFabric) Status(context.Context) (fabric.Global, error) {
	return fabric.Global{RouteVersion: int64(len(m.versions))}, nil
}
func (m *memFabric) Routes(_ context.Context, v int64) (fabric.Tables, error) {
	if v == 0 {
		return fabric.Tables{}, nil
	}
	return m.versions[v-1], nil
}
func (m *memFabric) PublishRoutes(_ context.Context, _ *fabric.Lease, v int64, t fabric.Tables) (fabric.Published, error) {
	if v != int64(len(m.versions))+1 {
		return fabric.Published{}, fabric.ErrConflict
	}
	m.versions = append(m.versions, t)
	m.publishes++
	return fabric.Published{Version: v, Wrote: true}, nil
}
func (m *memFabric) MarkStale(context.Context, *fabric.Lease, string, time.Time) (bool, error) {
	return false, nil
}
func (m *memFabric) RecordMinApplied(context.Context, *fabric.Lease) (int64, error) { return 0, nil }

// triangle is s1–s2 (direct, 20 ms) and s1–s3–s2 (2 × 15 ms), one ordinary node per super.
func triangle() *memFabric {
	m := &memFabric{}
	for _, n := range []string{"s1", "s2", "s3"} {
		m.nodes = append(m.nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}, Health: fabric.HealthUp})
	}
	for _, n := range []string{"o1", "o2", "o3"} {
		m.nodes = append(m.nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: n, Kind: fabric.KindOrdinary}, Health: fabric.HealthUp})
	}
	for _, l := range [][3]any{{"s1", "s2", 20_000}, {"s1", "s3", 15_000}, {"s3", "s2", 15_000},
		{"o1", "s1", 5000}, {"o2", "s2", 5000}, {"o3", "s3", 5000}} {
		m.links = append(m.links, fabric.LinkReport{A: l[0].(string), B: l[1].(string), BandwidthKbps: 1_000_000, LatencyUs: int64(l[2].(int))})
	}
	return m
}

func (m *memFabric) setLatency(a, b string, us int64) {
	for i := range m.links {
		if m.links[i].A == a && m.links[i].B == b {
			m.links[i].LatencyUs = us
		}
	}
}

func newCtl(t *testing.T, m *memFabric, h float64) *Controller {
	t.Helper()
	c, err := New(Config{Fabric: m, Holder: "ctl", LeaseTTL: time.Second, Period: 100 * time.Millisecond, CostHysteresis: h,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func round(t *testing.T, c *Controller) {
	t.Helper()
	if err := c.Round(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestHysteresisWigglesPublishNothing: latencies wiggling by up to ±10 % around their values
// (every round a different cost) publish nothing after the first version at the default 20 %.
func TestHysteresisWigglesPublishNothing(t *testing.T) {
	m := triangle()
	c := newCtl(t, m, 0)
	round(t, c)
	if m.publishes != 1 {
		t.Fatalf("first round published %d versions, want 1", m.publishes)
	}
	first := maps.Clone(m.versions[0])
	for i := range 40 {
		f := 1 + 0.1*math.Sin(float64(i)) // within ±10 %
		m.setLatency("s1", "s2", int64(20_000*f))
		m.setLatency("s1", "s3", int64(15_000/f))
		m.setLatency("o1", "s1", int64(5000*f))
		round(t, c)
	}
	s := c.Stats()
	if m.publishes != 1 || s.Published != 1 || s.Suppressed == 0 || s.Version != 1 {
		t.Fatalf("after 40 wiggles: %d publishes, stats %+v; want 1 publish and suppressed rounds", m.publishes, s)
	}
	if !maps.EqualFunc(first, m.versions[0], maps.Equal) {
		t.Fatal("version 1 changed")
	}
	// The same wiggles with the smallest threshold do publish (the wiggles do move costs).
	m2 := triangle()
	c2 := newCtl(t, m2, MinCostHysteresis)
	round(t, c2)
	m2.setLatency("s1", "s2", 22_000)
	round(t, c2)
	if m2.publishes != 2 {
		t.Fatalf("a 10 %% latency change at threshold %v: %d publishes, want 2", MinCostHysteresis, m2.publishes)
	}
}

// TestHysteresisPathChangePublishesOnce: a next-hop change publishes exactly one version, and
// later rounds of the same graph publish nothing; a slow drift publishes once it adds up.
func TestHysteresisPathChangePublishesOnce(t *testing.T) {
	m := triangle()
	c := newCtl(t, m, 0)
	round(t, c)
	if hop := m.versions[0]["s1"]["s2"]; hop[:3] != "s2 " {
		t.Fatalf("s1→s2 %q, want direct", hop)
	}
	// s1–s2 goes from 20 ms to 40 ms: s1→s3→s2 (30 ms + tx) is now cheaper. At the same
	// time o3–s3 wiggles by 4 %: o3's table keeps its published costs in version 2.
	m.setLatency("s1", "s2", 40_000)
	m.setLatency("o3", "s3", 5200)
	for range 5 {
		round(t, c)
	}
	if m.publishes != 2 {
		t.Fatalf("path change: %d publishes, want 2", m.publishes)
	}
	for n, want := range map[string]bool{"s1": true, "s2": true, "o1": true, "o2": true, "s3": false, "o3": false} {
		if moved := !maps.Equal(m.versions[0][n], m.versions[1][n]); moved != want {
			t.Errorf("node %s: table moved %v in version 2 (%v → %v), want %v", n, moved, m.versions[0][n], m.versions[1][n], want)
		}
	}
	fresh, _, err := Tables(m.nodes, m.links)
	if err != nil || maps.Equal(fresh["o3"], m.versions[1]["o3"]) {
		t.Fatalf("o3's fresh table %v equals the published %v (%v): the wiggle should have moved its cost", fresh["o3"], m.versions[1]["o3"], err)
	}
	if hop := m.versions[1]["s1"]["s2"]; hop[:3] != "s3 " {
		t.Fatalf("s1→s2 %q in version 2, want via s3", hop)
	}
	// Drift: o1–s1 grows 5 % a round; no single step passes 20 %, the sum does, once.
	lat := int64(5000)
	for range 4 {
		lat = lat * 105 / 100
		m.setLatency("o1", "s1", lat)
		round(t, c)
	}
	if m.publishes != 2 {
		t.Fatalf("drift of 4 × 5 %% of one link's latency (costs move less): %d publishes, want 2", m.publishes)
	}
	for range 20 {
		lat = lat * 105 / 100
		m.setLatency("o1", "s1", lat)
		round(t, c)
	}
	// ×3.2 in steps that each publish after > 20 %: at most log(3.2)/log(1.2) ≈ 6.4 versions,
	// and at least log(3.2)/log(1.4) ≈ 3.5 (no step of the drift itself passes 5 %).
	if d := m.publishes - 2; d < 3 || d > 7 {
		t.Fatalf("drift to %d µs (×%.1f): %d versions for the drift, want 3–7 (each after > 20 %%)", lat, float64(lat)/5000, d)
	}
}

func TestCostHysteresisBounds(t *testing.T) {
	for _, h := range []float64{-0.1, MinCostHysteresis / 2, MaxCostHysteresis + 0.01, math.NaN(), math.Inf(1)} {
		if _, err := New(Config{Fabric: &memFabric{}, Holder: "x", CostHysteresis: h,
			Logger: slog.New(slog.DiscardHandler)}); err == nil {
			t.Errorf("CostHysteresis %v accepted", h)
		}
	}
	for _, h := range []float64{0, MinCostHysteresis, 0.2, MaxCostHysteresis} {
		if _, err := New(Config{Fabric: &memFabric{}, Holder: "x", CostHysteresis: h,
			Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Errorf("CostHysteresis %v: %v", h, err)
		}
	}
}

func TestSettle(t *testing.T) {
	pub := fabric.Tables{"a": {"s2": "s3 1000"}, "b": {"s2": "s2 10"}, "gone": {"s2": "s2 1"}}
	cur := fabric.Tables{"a": {"s2": "s3 1100"}, "b": {"s2": "s4 10"}, "new": {"s2": "s2 1"}}
	got, moved, err := Settle(pub, cur, 0.2)
	want := fabric.Tables{"a": {"s2": "s3 1000"}, "b": {"s2": "s4 10"}, "new": {"s2": "s2 1"}}
	if err != nil || moved != 3 || !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("Settle = %v, %d moved, %v; want %v, 3 moved (b, new, gone)", got, moved, err, want)
	}
	for _, h := range []float64{0, -1, 2, math.NaN()} {
		if _, _, err := Settle(pub, cur, h); err == nil {
			t.Errorf("Settle with hysteresis %v accepted", h)
		}
	}
}

func TestSignificant(t *testing.T) {
	pub := fabric.Tables{"a": {"s2": "s3 1000", "att.s1": "s1 500"}, "b": {}}
	for name, c := range map[string]struct {
		t    fabric.Tables
		want bool
	}{
		"same":              {fabric.Tables{"a": {"s2": "s3 1000", "att.s1": "s1 500"}}, false},
		"cost +20 % exact":  {fabric.Tables{"a": {"s2": "s3 1200", "att.s1": "s1 500"}}, false},
		"cost −20 % exact":  {fabric.Tables{"a": {"s2": "s3 800", "att.s1": "s1 500"}}, false},
		"cost +20.1 %":      {fabric.Tables{"a": {"s2": "s3 1201", "att.s1": "s1 500"}}, true},
		"next hop":          {fabric.Tables{"a": {"s2": "s4 1000", "att.s1": "s1 500"}}, true},
		"destination gone":  {fabric.Tables{"a": {"s2": "s3 1000"}}, true},
		"destination added": {fabric.Tables{"a": {"s2": "s3 1000", "att.s1": "s1 500", "s9": "s9 1"}}, true},
		"node gone":         {fabric.Tables{}, true},
		"node added":        {fabric.Tables{"a": {"s2": "s3 1000", "att.s1": "s1 500"}, "c": {"s2": "s2 1"}}, true},
		"unparsable":        {fabric.Tables{"a": {"s2": "s3", "att.s1": "s1 500"}}, true},
	} {
		if got := significant(pub, c.t, 0.2); got != c.want {
			t.Errorf("%s: significant %v, want %v", name, got, c.want)
		}
	}
}
