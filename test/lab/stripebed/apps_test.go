//go:build linux

package stripebed

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// bedRates are the bed's configured link rates in bit/s (the arms use measured ones).
func bedRates(b *Bed) []float64 {
	rates := make([]float64, len(b.Links))
	for i, l := range b.Links {
		rates[i] = float64(l.RateMbit) * 1e6
	}
	return rates
}

// TestStripeApps is the applications arm's short form: five applications send concurrently
// through the stripe engines and their endpoints for two seconds; every one of them has a
// non-zero share and receives messages. No rate or fairness is asserted (that is the
// benchmark's job), only that the shares exist and everything moves.
func TestStripeApps(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	b := New(t, Spec{})
	r, err := b.AppsArm(t, bedRates(b), AppsSpec{Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", r.Format())
	if len(r.Apps) != len(DefaultAppSizes()) {
		t.Fatalf("%d applications, want %d", len(r.Apps), len(DefaultAppSizes()))
	}
	for _, a := range r.Apps {
		if a.Share <= 0 || a.Bytes == 0 || a.Messages == 0 {
			t.Errorf("%s: share %v bit/s, %d bytes in %d messages: want all non-zero", a.Name, a.Share, a.Bytes, a.Messages)
		}
	}
	if !(r.Jain > 0 && r.Jain <= 1) {
		t.Errorf("Jain's index %v outside (0, 1]", r.Jain)
	}
}

// appsDurationEnv overrides BenchmarkStripeApps' sending time (a Go duration).
const appsDurationEnv = "STRIPEBED_APPS_DURATION"

// BenchmarkStripeApps measures the applications arm: five applications (messages of 1 kB to
// 60 kB) send at once for 20 s (STRIPEBED_APPS_DURATION) through the stripe engines (weighted
// policy) and endpoints, first with Vmax at the links' rates (the shares are what the links
// leave: Σ(Vmax − V)/5), then at a quarter of them (the shares, not the CPU, bound every
// application). It reports each application's Mbit/s and Jain's index over them (target
// ≥ 0.98). Run it with -benchtime 1x.
func BenchmarkStripeApps(b *testing.B) {
	lab.Require(b, lab.NeedNetns)
	bed := New(b, Spec{})
	d := 20 * time.Second
	if v := os.Getenv(appsDurationEnv); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("%s=%q: %v", appsDurationEnv, v, err)
		}
	}
	for _, scale := range []float64{1, 0.25} {
		b.Run("vmax="+strconv.FormatFloat(scale, 'f', -1, 64), func(b *testing.B) {
			r, err := bed.AppsArm(b, bedRates(bed), AppsSpec{Duration: d, Scale: scale})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s", r.Format())
			total := 0.0
			for _, a := range r.Apps {
				total += a.BitsPerSecond
			}
			b.ReportMetric(r.Jain, "jain")
			b.ReportMetric(total/1e6, "Mbit/s")
		})
	}
}
