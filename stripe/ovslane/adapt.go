package ovslane

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Adaptive pacing bounds.
const (
	// AdaptPeriod is how often an Adapter looks at the engine's resends.
	AdaptPeriod = 50 * time.Millisecond
	// AdaptDecrease is the factor an Adapter scales the links' rates by after a period with
	// resends.
	AdaptDecrease = 0.85
	// AdaptIncrease is what an Adapter adds to the scale after a period without resends.
	AdaptIncrease = 0.02
	// AdaptMinScale is the lowest scale: each link keeps at least this share of its base rate.
	AdaptMinScale = 0.05
)

// Adapter paces links below their base rates when the engine resends: every AdaptPeriod it
// reads the engine's resend counter; after a period with resends it multiplies one shared scale
// by AdaptDecrease (not below AdaptMinScale), after a quiet period it adds AdaptIncrease (not
// above 1), and sets each link's rate to scale × its base rate. Resends are the engine's sign that
// frames queued in front of a lane (an ack late) or were dropped, so the scale settles where the
// lanes carry what they are offered. Not safe for concurrent use: Run or Step from one
// goroutine.
type Adapter struct {
	links       []*PacedLink
	base        []float64
	resends     func() uint64
	last        uint64
	scale       float64
	decreases   uint64
	initialized bool
}

// NewAdapter adapts links, whose base rates (bytes per second) are their rates now, to the
// counter resends (the engine's Stats().Retransmits). It starts at scale 1.
func NewAdapter(links []*PacedLink, resends func() uint64) (*Adapter, error) {
	if len(links) == 0 || len(links) > MaxBindings || resends == nil {
		return nil, fmt.Errorf("ovslane: adapter: %d links (want 1 to %d) and a resend counter", len(links), MaxBindings)
	}
	a := &Adapter{links: links, resends: resends, scale: 1}
	for _, l := range links {
		if l == nil {
			return nil, fmt.Errorf("ovslane: adapter: nil link")
		}
		a.base = append(a.base, l.Rate())
	}
	return a, nil
}

// Scale is the share of their base rates the links are paced at now, in [AdaptMinScale, 1].
func (a *Adapter) Scale() float64 { return a.scale }

// Decreases counts the periods that lowered the scale.
func (a *Adapter) Decreases() uint64 { return a.decreases }

// Step reads the resend counter once and adjusts the scale and the links' rates; now is the
// time the rates change at.
func (a *Adapter) Step(now time.Time) error {
	r := a.resends()
	resent := a.initialized && r > a.last
	a.last, a.initialized = r, true
	if resent {
		a.scale = math.Max(AdaptMinScale, a.scale*AdaptDecrease)
		a.decreases++
	} else {
		a.scale = math.Min(1, a.scale+AdaptIncrease)
	}
	for i, l := range a.links {
		if err := l.SetRate(now, a.base[i]*a.scale); err != nil {
			return err
		}
	}
	return nil
}

// Run steps every AdaptPeriod until ctx ends, and returns ctx's error (or a step's).
func (a *Adapter) Run(ctx context.Context) error {
	t := time.NewTicker(AdaptPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			if err := a.Step(now); err != nil {
				return err
			}
		}
	}
}
