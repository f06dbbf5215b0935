//go:build linux

package stripebed

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestLatency measures the latency sampler on the best link and through the stripe tunnel
// under a light load: requests are answered, the percentiles are ordered and the load arrives.
// No time is asserted.
func TestLatency(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	b := New(t, Spec{})
	rates := make([]float64, len(b.Links))
	for i, l := range b.Links {
		rates[i] = float64(l.RateMbit) * 1e6
	}
	s := b.StartStripe(t, policy.KindWeighted, rates)
	l := b.Links[len(b.Links)-1]
	// The measurement needs a carrying tunnel: wait (bounded) until a ping crosses it.
	lab.WaitFor(t, 30*time.Second, "a ping crossing the stripe tunnel", func(ctx context.Context) error {
		st, err := lab.Ping(ctx, b.A, s.BAddr.String(), 1)
		if err != nil {
			return err
		}
		if st.Received == 0 {
			return errors.New("no reply yet")
		}
		return nil
	})
	for _, path := range []struct {
		name     string
		src, dst netip.Addr
	}{{"link", l.AAddr, l.BAddr}, {"stripe", s.AAddr, s.BAddr}} {
		spec := LatencySpec{Src: path.src, Dst: path.dst, LoadBitsPerSec: 50e6, Duration: 1500 * time.Millisecond, CC: defaultCC()}
		r, err := Latency(t.Context(), b.A, b.B, spec)
		if err != nil {
			t.Fatalf("%s: %v", path.name, err)
		}
		if r.Samples == 0 || r.P50 <= 0 || r.P50 > r.P99 || r.LoadBitsPerSecond <= 0 {
			t.Errorf("%s: %+v, want answered requests, p50 ≤ p99 and the load delivered", path.name, r)
		}
		t.Logf("%s: %+v", path.name, r)
	}
	if _, err := Latency(t.Context(), b.A, b.B, LatencySpec{Src: l.AAddr, Dst: l.BAddr, LoadBitsPerSec: 1, Duration: time.Second, CC: "cubic"}); err == nil {
		t.Error("a load of 1 bit/s for 1 s accepted")
	}
}
