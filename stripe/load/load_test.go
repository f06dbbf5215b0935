package load

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestEWMAVector is the reference's vector (§1.7): r = 0.8, seeded with the first sample.
func TestEWMAVector(t *testing.T) {
	e, err := NewEWMA(DefaultSmoothing)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Value(); ok {
		t.Error("empty average reports a value")
	}
	want := []float64{0.2, 0.76, 0.872, 0.2544}
	for i, in := range []float64{0.2, 0.9, 0.9, 0.1} {
		if got := e.Update(in); !near(got, want[i]) {
			t.Errorf("sample %d (%v): L* = %v, want %v", i, in, got, want[i])
		}
	}
	for _, r := range []float64{0, -0.1, 1.01, math.NaN()} {
		if _, err := NewEWMA(r); err == nil {
			t.Errorf("NewEWMA(%v) accepted", r)
		}
	}
}

func TestUtilisationAndRates(t *testing.T) {
	if u, err := Utilisation(50e6, 125e6); err != nil || !near(u, 0.4) {
		t.Errorf("Utilisation = %v, %v; want 0.4", u, err)
	}
	for _, c := range [][2]float64{{1, 0}, {1, -1}, {-1, 1}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if _, err := Utilisation(c[0], c[1]); err == nil {
			t.Errorf("Utilisation(%v, %v) accepted", c[0], c[1])
		}
	}
	prev := Counters{RxPackets: 10, TxPackets: 20, RxBytes: 1000, TxBytes: 2000, RxMissed: 1, RxErrors: 2}
	cur := Counters{RxPackets: 30, TxPackets: 60, RxBytes: 3000, TxBytes: 6000, RxMissed: 3, RxErrors: 2}
	r, err := RatesBetween(prev, cur, 2*time.Second)
	want := Rates{RxPackets: 10, TxPackets: 20, RxBytes: 1000, TxBytes: 2000, RxMissed: 1}
	if err != nil || r != want {
		t.Errorf("RatesBetween = %+v, %v; want %+v", r, err, want)
	}
	if _, err := RatesBetween(cur, prev, time.Second); err == nil {
		t.Error("counters going backwards accepted")
	}
	if _, err := RatesBetween(prev, cur, 0); err == nil {
		t.Error("zero period accepted")
	}
}

func TestBalanceAndAdjust(t *testing.T) {
	loads := []float64{0.9, 0.3, 0.2, 0.4}
	if b, err := BalanceDegree(loads, 0); err != nil || !near(b, 0.6) {
		t.Errorf("B_0 = %v, %v; want 0.9 − 0.3 = 0.6", b, err)
	}
	if b, err := BalanceDegree(loads, 2); err != nil || !near(b, 0.2-1.6/3) {
		t.Errorf("B_2 = %v, %v", b, err)
	}
	if b, err := BalanceDegree([]float64{0.7}, 0); err != nil || b != 0 {
		t.Errorf("one port: B = %v, %v; want 0", b, err)
	}
	if p, adj, err := Adjust(loads, 0, 0.1); err != nil || p != 2 || !adj {
		t.Errorf("Adjust off port 0 = %d, %v, %v; want 2, true", p, adj, err)
	}
	if p, adj, err := Adjust([]float64{0.75, 0.25, 0.25, 0.25}, 0, 0.5); err != nil || p != 0 || adj {
		t.Errorf("B = δ must not adjust: %d, %v, %v", p, adj, err)
	}
	if p, adj, err := Adjust(loads, 3, 0.1); err != nil || p != 3 || adj {
		t.Errorf("Adjust of a port below δ = %d, %v, %v; want 3, false", p, adj, err)
	}
	if p, err := LeastLoaded([]float64{0.5, 0.1, 0.1}); err != nil || p != 1 {
		t.Errorf("LeastLoaded tie = %d, %v; want the lower index 1", p, err)
	}
	for _, c := range []struct {
		loads []float64
		i     int
		delta float64
	}{
		{nil, 0, 0.1}, {make([]float64, MaxPorts+1), 0, 0.1}, {[]float64{0.1, -1}, 0, 0.1},
		{[]float64{0.1, math.NaN()}, 0, 0.1}, {[]float64{0.1}, 1, 0.1}, {[]float64{0.1}, -1, 0.1},
		{[]float64{0.1}, 0, -0.1}, {[]float64{0.1}, 0, math.NaN()},
	} {
		if _, _, err := Adjust(c.loads, c.i, c.delta); err == nil {
			t.Errorf("Adjust(%v, %d, %v) accepted", c.loads, c.i, c.delta)
		}
	}
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func TestTracker(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	tr, err := NewTracker(TrackerConfig{Clock: clk, Vmax: []float64{100, 200}})
	if err != nil {
		t.Fatal(err)
	}
	c := []Counters{{}, {}}
	if err := tr.Observe(c); err != nil {
		t.Fatal(err)
	}
	if got := tr.TxLoads(); got[0] != 0 || got[1] != 0 {
		t.Errorf("baseline loads %v, want zeros", got)
	}
	// Port 0 sends at 20, 90, 90, 10 bytes/s for Vmax 100: the reference vector's loads.
	want := []float64{0.2, 0.76, 0.872, 0.2544}
	for i, rate := range []uint64{20, 90, 90, 10} {
		clk.now = clk.now.Add(time.Second)
		c[0].TxBytes += rate
		c[1].RxBytes += 50 // port 1 receives at 50 of 200
		if err := tr.Observe(c); err != nil {
			t.Fatal(err)
		}
		if got := tr.TxLoads()[0]; !near(got, want[i]) {
			t.Errorf("period %d: port 0 L* = %v, want %v", i, got, want[i])
		}
		if got := tr.RxLoads()[1]; !near(got, 0.25) {
			t.Errorf("period %d: port 1 rx L* = %v, want 0.25", i, got)
		}
	}
	p := tr.Ports()
	if !near(p[0].TxAvailable, 90) || !near(p[1].RxAvailable, 150) || p[0].Rates.TxBytes != 10 {
		t.Errorf("ports %+v", p)
	}
	// A counter going backwards skips that port's period only.
	c[0].TxBytes = 0
	c[1].RxBytes += 100
	clk.now = clk.now.Add(time.Second)
	if err := tr.Observe(c); err != nil {
		t.Fatal(err)
	}
	p = tr.Ports()
	if p[0].Resets != 1 || !near(p[0].TxLoad, 0.2544) || !near(p[1].RxLoad, 0.8*0.5+0.2*0.25) {
		t.Errorf("after a reset: %+v", p)
	}
	// The clock standing still and a wrong port count are errors that change nothing.
	if err := tr.Observe(c); err == nil {
		t.Error("Observe at the same time accepted")
	}
	if err := tr.Observe(c[:1]); err == nil {
		t.Error("Observe with one port of two accepted")
	}
	for _, cfg := range []TrackerConfig{
		{Vmax: []float64{1}}, {Clock: clk}, {Clock: clk, Vmax: []float64{0}},
		{Clock: clk, Vmax: []float64{1}, Smoothing: 2}, {Clock: clk, Vmax: make([]float64, MaxPorts+1)},
	} {
		if _, err := NewTracker(cfg); err == nil {
			t.Errorf("NewTracker(%+v) accepted", cfg)
		}
	}
}
