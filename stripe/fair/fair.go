// Package fair measures and divides bandwidth fairly: Jain's fairness index, max-min fair shares
// of a capacity among applications, the seed's equal share of the available bandwidth, and a
// token bucket that paces one application to its share.
//
// All functions are pure. TokenBucket takes the current time on every call (time is injected, no
// clock is read), so tests are deterministic; a time earlier than the previous call counts as no
// time passing.
package fair

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// MaxUsers bounds the number of values Jain and MaxMin accept (applications or links).
const MaxUsers = 4096

func checkValues(what string, xs []float64, allowInf bool) error {
	if len(xs) < 1 || len(xs) > MaxUsers {
		return fmt.Errorf("fair: %d %s: want 1 to %d", len(xs), what, MaxUsers)
	}
	for i, x := range xs {
		if !(x >= 0) || (!allowInf && math.IsInf(x, 1)) {
			return fmt.Errorf("fair: %s[%d] = %v: want a finite value ≥ 0", what, i, x)
		}
	}
	return nil
}

// Jain returns Jain's fairness index (Σx)² / (n·Σx²) of 1..MaxUsers finite values ≥ 0: 1 when
// all are equal, 1/n when one value has everything, k/n when k equal values share and the others
// get nothing. All zeros count as equal (1).
func Jain(xs []float64) (float64, error) {
	if err := checkValues("values", xs, false); err != nil {
		return 0, err
	}
	// Scale by the largest value so the squares cannot overflow.
	top := slices.Max(xs)
	if top == 0 {
		return 1, nil
	}
	var sum, sq float64
	for _, x := range xs {
		v := x / top
		sum += v
		sq += v * v
	}
	return sum * sum / (float64(len(xs)) * sq), nil
}

// MaxMin divides capacity among demands max-min fairly (water filling): no application gets more
// than it asks for, and capacity left over by small demands is split equally among the others.
// Demands are ≥ 0 and may be +Inf (as much as it can get); capacity is finite and ≥ 0. The shares
// are returned in the order of demands and sum to min(capacity, Σ demands).
func MaxMin(capacity float64, demands []float64) ([]float64, error) {
	if !(capacity >= 0) || math.IsInf(capacity, 1) {
		return nil, fmt.Errorf("fair: capacity %v: want a finite value ≥ 0", capacity)
	}
	if err := checkValues("demands", demands, true); err != nil {
		return nil, err
	}
	order := make([]int, len(demands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case demands[a] < demands[b]:
			return -1
		case demands[a] > demands[b]:
			return 1
		}
		return 0
	})
	shares := make([]float64, len(demands))
	left := capacity
	for k, i := range order {
		equal := left / float64(len(order)-k)
		s := min(demands[i], equal)
		shares[i] = s
		left -= s
	}
	return shares, nil
}

// SeedShare is the seed's per-application rate: the real-time available bandwidth of all ports,
// Σ(Vmax_i − V_i), divided by the number of registered applications. vmax and used are per
// port in the same unit (used above vmax counts as nothing available); apps ≥ 1.
func SeedShare(vmax, used []float64, apps int) (float64, error) {
	if err := checkValues("Vmax", vmax, false); err != nil {
		return 0, err
	}
	if err := checkValues("used", used, false); err != nil {
		return 0, err
	}
	if len(vmax) != len(used) {
		return 0, fmt.Errorf("fair: %d Vmax values and %d used values: want one of each per port", len(vmax), len(used))
	}
	if apps < 1 || apps > MaxUsers {
		return 0, fmt.Errorf("fair: %d applications: want 1 to %d", apps, MaxUsers)
	}
	var avail float64
	for i := range vmax {
		avail += max(0, vmax[i]-used[i])
	}
	return avail / float64(apps), nil
}

// TokenBucket paces a sender to Rate units (bytes) per second with bursts of up to Burst units.
// It starts full. It is not safe for concurrent use.
type TokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

// NewTokenBucket returns a full bucket filling at rate per second up to burst, both finite and
// > 0, whose time starts at now.
func NewTokenBucket(rate, burst float64, now time.Time) (*TokenBucket, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	if !(burst > 0) || math.IsInf(burst, 1) {
		return nil, fmt.Errorf("fair: token bucket burst %v: want a finite size > 0 (at least one frame)", burst)
	}
	return &TokenBucket{rate: rate, burst: burst, tokens: burst, last: now}, nil
}

func checkRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return fmt.Errorf("fair: token bucket rate %v: want a finite rate > 0", rate)
	}
	return nil
}

// refill adds the tokens earned since the last call.
func (b *TokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// Take removes n units (0 ≤ n ≤ Burst) if the bucket holds them at time now and reports whether
// it did; it never removes part of n.
func (b *TokenBucket) Take(now time.Time, n float64) bool {
	if !(n >= 0) || n > b.burst {
		return false
	}
	b.refill(now)
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

// Wait returns how long after now the bucket will hold n units (0 if it holds them now). It
// fails when n is negative or larger than Burst (it would never fit); the sender must then split
// the send.
func (b *TokenBucket) Wait(now time.Time, n float64) (time.Duration, error) {
	if !(n >= 0) || n > b.burst {
		return 0, fmt.Errorf("fair: %v units from a bucket of burst %v: split the send into pieces of at most the burst", n, b.burst)
	}
	b.refill(now)
	if b.tokens >= n {
		return 0, nil
	}
	return time.Duration(math.Ceil((n - b.tokens) / b.rate * float64(time.Second))), nil
}

// SetRate changes the fill rate from now on (the tokens earned so far at the old rate are kept),
// as when an application registers or leaves and every share changes.
func (b *TokenBucket) SetRate(now time.Time, rate float64) error {
	if err := checkRate(rate); err != nil {
		return err
	}
	b.refill(now)
	b.rate = rate
	return nil
}

// Rate returns the fill rate per second.
func (b *TokenBucket) Rate() float64 { return b.rate }

// Burst returns the bucket's size: the most units it holds, and the largest n Wait accepts.
func (b *TokenBucket) Burst() float64 { return b.burst }

// Tokens returns the units available at time now.
func (b *TokenBucket) Tokens(now time.Time) float64 {
	b.refill(now)
	return b.tokens
}
