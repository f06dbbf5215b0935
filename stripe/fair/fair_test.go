package fair

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func near(a, b, eps float64) bool { return math.Abs(a-b) < eps }

// TestJainVectors: the reference's test values (§1.9).
func TestJainVectors(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, 1, 1, 1}, 1},
		{[]float64{1, 0, 0, 0}, 0.25},
		{[]float64{1000, 1000, 1000, 0}, 0.75},
		{[]float64{940, 930, 950, 960}, 0.99986},
		{[]float64{0, 0}, 1},
		{[]float64{1e300, 1e300}, 1},
	} {
		got, err := Jain(c.xs)
		if err != nil || !near(got, c.want, 5e-6) {
			t.Errorf("Jain(%v) = %v, %v; want %v", c.xs, got, err, c.want)
		}
	}
	for _, xs := range [][]float64{nil, {-1}, {math.NaN()}, {math.Inf(1)}, make([]float64, MaxUsers+1)} {
		if _, err := Jain(xs); err == nil {
			t.Errorf("Jain(%d values %v…) accepted", len(xs), xs[:min(len(xs), 2)])
		}
	}
}

func TestMaxMin(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		capacity float64
		demands  []float64
		want     []float64
	}{
		{10, []float64{inf, inf, inf, inf, inf}, []float64{2, 2, 2, 2, 2}},
		{10, []float64{1, inf, 2, inf}, []float64{1, 3.5, 2, 3.5}},
		{10, []float64{1, 2, 3}, []float64{1, 2, 3}},
		{6, []float64{4, 4, 4}, []float64{2, 2, 2}},
		{0, []float64{1, inf}, []float64{0, 0}},
	} {
		got, err := MaxMin(c.capacity, c.demands)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if !near(got[i], c.want[i], 1e-9) {
				t.Errorf("MaxMin(%v, %v) = %v, want %v", c.capacity, c.demands, got, c.want)
				break
			}
		}
	}
	// Properties over random demands: no share above its demand, the sum is min(capacity, Σd),
	// and an application that gets less than it asked has a share no smaller than anyone's.
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + r.IntN(10)
		d := make([]float64, n)
		var sum float64
		for i := range d {
			d[i] = r.Float64() * 10
			sum += d[i]
		}
		capacity := r.Float64() * 40
		s, err := MaxMin(capacity, d)
		if err != nil {
			t.Fatal(err)
		}
		var got, top float64
		for i := range s {
			if s[i] > d[i]+1e-9 {
				t.Fatalf("share %v above demand %v", s[i], d[i])
			}
			got += s[i]
			top = max(top, s[i])
		}
		if !near(got, min(capacity, sum), 1e-9) {
			t.Fatalf("shares sum %v, want %v", got, min(capacity, sum))
		}
		for i := range s {
			if s[i] < d[i]-1e-9 && s[i] < top-1e-9 {
				t.Fatalf("capped app %d got %v below the top share %v: %v of %v", i, s[i], top, s, d)
			}
		}
	}
	for _, c := range []struct {
		capacity float64
		demands  []float64
	}{{-1, []float64{1}}, {math.Inf(1), []float64{1}}, {1, nil}, {1, []float64{-1}}, {1, []float64{math.NaN()}}} {
		if _, err := MaxMin(c.capacity, c.demands); err == nil {
			t.Errorf("MaxMin(%v, %v) accepted", c.capacity, c.demands)
		}
	}
}

func TestSeedShare(t *testing.T) {
	// 4 ports of 125 (1G in MB/s) with 25, 50, 150 (over Vmax: nothing left), 0 used; 5 apps.
	got, err := SeedShare([]float64{125, 125, 125, 125}, []float64{25, 50, 150, 0}, 5)
	if err != nil || !near(got, (100+75+0+125)/5.0, 1e-9) {
		t.Errorf("SeedShare = %v, %v; want 60", got, err)
	}
	if _, err := SeedShare([]float64{1}, []float64{1, 2}, 1); err == nil {
		t.Error("mismatched port counts accepted")
	}
	if _, err := SeedShare([]float64{1}, []float64{0}, 0); err == nil {
		t.Error("zero applications accepted")
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	b, err := NewTokenBucket(1000, 500, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Take(t0, 500) || b.Take(t0, 1) {
		t.Fatal("a full bucket of 500 must give 500 then nothing")
	}
	if w, err := b.Wait(t0, 100); err != nil || w != 100*time.Millisecond {
		t.Errorf("Wait(100) = %v, %v; want 100ms at 1000/s", w, err)
	}
	if b.Take(t0.Add(99*time.Millisecond), 100) {
		t.Error("took 100 after 99 ms at 1000/s")
	}
	if !b.Take(t0.Add(100*time.Millisecond), 100) {
		t.Error("could not take 100 after 100 ms at 1000/s")
	}
	// Time going backwards earns nothing; a long pause fills only up to the burst.
	if got := b.Tokens(t0); got != 0 {
		t.Errorf("tokens after the clock went back: %v, want 0", got)
	}
	if got := b.Tokens(t0.Add(time.Hour)); got != 500 {
		t.Errorf("tokens after an hour: %v, want the burst 500", got)
	}
	// Over a paced run the sender gets rate × time (+ the initial burst), never more.
	c, _ := NewTokenBucket(1000, 100, t0)
	var sent float64
	for ms := range 10001 {
		if c.Take(t0.Add(time.Duration(ms)*time.Millisecond), 10) {
			sent += 10
		}
	}
	if sent > 100+1000*10 || sent < 1000*10 {
		t.Errorf("sent %v in 10 s at 1000/s with burst 100", sent)
	}
	if err := c.SetRate(t0.Add(20*time.Second), 2000); err != nil || c.Rate() != 2000 {
		t.Errorf("SetRate: %v, rate %v", err, c.Rate())
	}
	if _, err := c.Wait(t0, 101); err == nil {
		t.Error("Wait for more than the burst accepted")
	}
	if c.Take(t0.Add(time.Hour), 101) || c.Take(t0.Add(time.Hour), -1) {
		t.Error("Take beyond the burst or negative succeeded")
	}
	for _, v := range [][2]float64{{0, 1}, {1, 0}, {math.Inf(1), 1}, {1, math.NaN()}} {
		if _, err := NewTokenBucket(v[0], v[1], t0); err == nil {
			t.Errorf("NewTokenBucket(%v, %v) accepted", v[0], v[1])
		}
	}
	if err := c.SetRate(t0, -1); err == nil {
		t.Error("SetRate(-1) accepted")
	}
}
