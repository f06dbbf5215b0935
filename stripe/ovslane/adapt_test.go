package ovslane

import (
	"math"
	"testing"
	"time"
)

// TestAdapter steps an Adapter over a scripted resend counter: a period with resends scales
// both links down by AdaptDecrease, quiet periods raise the scale by AdaptIncrease up to 1,
// and the scale never falls below AdaptMinScale.
func TestAdapter(t *testing.T) {
	a1, err := Pace(&fakeLink{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := Pace(&fakeLink{}, 4000)
	if err != nil {
		t.Fatal(err)
	}
	var resends uint64
	ad, err := NewAdapter([]*PacedLink{a1, a2}, func() uint64 { return resends })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	step := func(add uint64, want float64) {
		t.Helper()
		resends += add
		if err := ad.Step(now); err != nil {
			t.Fatal(err)
		}
		if math.Abs(ad.Scale()-want) > 1e-9 || math.Abs(a1.Rate()-1000*want) > 1e-6 || math.Abs(a2.Rate()-4000*want) > 1e-6 {
			t.Fatalf("scale %v, rates %v %v; want scale %v", ad.Scale(), a1.Rate(), a2.Rate(), want)
		}
	}
	step(5, 1) // the first step only reads the counter
	step(3, AdaptDecrease)
	step(0, AdaptDecrease+AdaptIncrease)
	for range 200 {
		resends++
		if err := ad.Step(now); err != nil {
			t.Fatal(err)
		}
	}
	if ad.Scale() != AdaptMinScale || ad.Decreases() != 201 {
		t.Errorf("after 200 lossy periods: scale %v, decreases %d; want %v and 201", ad.Scale(), ad.Decreases(), AdaptMinScale)
	}
	for range 100 {
		step(0, math.Min(1, ad.Scale()+AdaptIncrease))
	}
	step(0, 1)
	if _, err := NewAdapter(nil, func() uint64 { return 0 }); err == nil {
		t.Error("NewAdapter with no links accepted")
	}
	if err := a1.SetRate(now, 0); err == nil {
		t.Error("SetRate(0) accepted")
	}
}
