package ovslane

import (
	"context"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsplane/ovsplane/stripe/fair"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
)

// Pacing bounds.
const (
	// EthernetOverhead is what a frame costs on the wire beyond the stripe frame: the Ethernet
	// header the kernel adds, which a NIC's shaper (tbf) counts.
	EthernetOverhead = 14
	// PaceBurstTime is how much of its rate a paced link may send at once, at least one frame.
	PaceBurstTime = 2 * time.Millisecond
	// MaxPaceRate bounds a paced link's rate: 1 Tbit/s in bytes per second.
	MaxPaceRate = 125e9
)

// PacedLink is a link.Link whose Send never offers the NIC more than Rate bytes per second
// (frames counted with their Ethernet header). Data frames wait for their tokens; control
// frames (acks, hellos: frame.FlagControl) take what tokens there are and never wait, so an ack
// is not queued behind the data it acknowledges. Recv, Stats, State and Close are the wrapped
// link's. Safe for concurrent use.
type PacedLink struct {
	link.Link
	mu     sync.Mutex
	bucket *fair.TokenBucket
	waits  atomic.Uint64
}

// Pace wraps l so that it sends at most rate bytes per second (finite, > 0, ≤ MaxPaceRate),
// in bursts of PaceBurstTime at that rate and at least one MTU-sized frame.
func Pace(l link.Link, rate float64) (*PacedLink, error) {
	if l == nil {
		return nil, fmt.Errorf("ovslane: pace: nil link")
	}
	if !(rate > 0) || rate > MaxPaceRate || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("ovslane: pace %s at %v bytes/s: want more than 0 and at most %v", l.Name(), rate, float64(MaxPaceRate))
	}
	burst := max(float64(l.MTU()+EthernetOverhead), rate*PaceBurstTime.Seconds())
	b, err := fair.NewTokenBucket(rate, burst, time.Now())
	if err != nil {
		return nil, fmt.Errorf("ovslane: pace %s: %w", l.Name(), err)
	}
	return &PacedLink{Link: l, bucket: b}, nil
}

// Rate is the pacing rate in bytes per second.
func (p *PacedLink) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bucket.Rate()
}

// SetRate changes the pacing rate to rate bytes per second (finite, > 0, ≤ MaxPaceRate) from
// now on; the burst stays the one Pace chose.
func (p *PacedLink) SetRate(now time.Time, rate float64) error {
	if !(rate > 0) || rate > MaxPaceRate || math.IsInf(rate, 0) {
		return fmt.Errorf("ovslane: pace %s at %v bytes/s: want more than 0 and at most %v", p.Name(), rate, float64(MaxPaceRate))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.bucket.SetRate(now, rate); err != nil {
		return fmt.Errorf("ovslane: pace %s: %w", p.Name(), err)
	}
	return nil
}

// Waits counts the data frames that waited for tokens.
func (p *PacedLink) Waits() uint64 { return p.waits.Load() }

// Send waits for b's tokens (data frames only) and sends it on the wrapped link; it ends with
// ctx's error when ctx ends first. A frame longer than the MTU goes to the wrapped link at once,
// which refuses it.
func (p *PacedLink) Send(ctx context.Context, dst net.HardwareAddr, b []byte) error {
	n := float64(len(b) + EthernetOverhead)
	control := len(b) > 1 && frame.Flags(b[1])&frame.FlagControl != 0
	for len(b) <= p.MTU() {
		p.mu.Lock()
		now := time.Now()
		if control {
			p.bucket.Take(now, n) // charged when the tokens are there; never waits
			p.mu.Unlock()
			break
		}
		wait, err := p.bucket.Wait(now, n)
		if err == nil && wait == 0 {
			p.bucket.Take(now, n)
		}
		p.mu.Unlock()
		if err != nil {
			return fmt.Errorf("ovslane: pace %s: %w", p.Name(), err)
		}
		if wait == 0 {
			break
		}
		p.waits.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("ovslane: pace %s: %w", p.Name(), ctx.Err())
		case <-t.C:
		}
	}
	return p.Link.Send(ctx, dst, b)
}

// SendBatch implements link.Batcher: it sends the frames in order, each paced as Send paces
// it, but hands the wrapped link as many frames at once as the bucket holds tokens for (one
// sendmmsg when the wrapped link is a link.Batcher), and when the bucket runs dry waits until
// it holds the next frames up to half a burst, not frame by frame: one timer per batch keeps
// the pace when timers fire late on a loaded host. It returns how many frames the wrapped link
// took; it ends with ctx's error when ctx ends during a wait.
func (p *PacedLink) SendBatch(ctx context.Context, frames []link.Outgoing) (int, error) {
	bl, ok := p.Link.(link.Batcher)
	if !ok {
		for i, f := range frames {
			if err := p.Send(ctx, f.Dst, f.B); err != nil {
				return i, err
			}
		}
		return len(frames), nil
	}
	sent := 0
	for sent < len(frames) {
		p.mu.Lock()
		now := time.Now()
		k := sent
		for ; k < len(frames); k++ {
			b := frames[k].B
			if len(b) > p.MTU() {
				continue // the wrapped link refuses it, as in Send
			}
			n := float64(len(b) + EthernetOverhead)
			if len(b) > 1 && frame.Flags(b[1])&frame.FlagControl != 0 {
				p.bucket.Take(now, n) // never waits
				continue
			}
			if !p.bucket.Take(now, n) {
				break
			}
		}
		var wait time.Duration
		var err error
		if k == sent { // the bucket is dry: wait for the next frames, up to half a burst
			need := 0.0
			for j := k; j < len(frames) && need < p.bucket.Burst()/2; j++ {
				next := need + float64(len(frames[j].B)+EthernetOverhead)
				if next > p.bucket.Burst() {
					break
				}
				need = next
			}
			wait, err = p.bucket.Wait(now, need)
		}
		p.mu.Unlock()
		if err != nil {
			return sent, fmt.Errorf("ovslane: pace %s: %w", p.Name(), err)
		}
		if k == sent {
			p.waits.Add(1)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return sent, fmt.Errorf("ovslane: pace %s: %w", p.Name(), ctx.Err())
			case <-t.C:
			}
			continue
		}
		m, err := bl.SendBatch(ctx, frames[sent:k])
		sent += m
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}
