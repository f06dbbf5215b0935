package writer

import (
	"context"
	"sync"
	"time"
)

// Defaults of the pipelined port door (Options.BatchDepth, Options.ApplyTarget).
const (
	// DefaultBatchDepth is how many port batches may be in flight at once: one being committed
	// while one or more are applied by ovs-vswitchd.
	DefaultBatchDepth = 2
	// MaxBatchDepth bounds Options.BatchDepth: every batch in flight holds its callers, and
	// ovs-vswitchd coalesces what is pending anyway.
	MaxBatchDepth = 8
	// DefaultApplyTarget is the acknowledgement time a batch is sized for once the apply cost
	// has been measured (see Options.ApplyTarget).
	DefaultApplyTarget = time.Second
	// minAdaptiveSize is the smallest size the adaptive bound ever sets: below it, the fixed
	// cost of a reconfiguration dominates and smaller batches only add reconfigurations.
	minAdaptiveSize = 16
	// applyBudgetShare is the share of the apply timeout (ovsdb.CommitOptions.ApplyTimeout)
	// that BatchDepth batches applied one after another may take in the model: the last
	// batch's callers wait for all of them, and the model is an estimate.
	applyBudgetShare = 0.5
	// perRequestToFixed is the least ratio of a batch's per-request part to its fixed part
	// that the size limit keeps: two thirds of ovs-vswitchd's time then goes to the requests.
	// Below it, smaller batches add reconfigurations more than they shorten the wait; and
	// the fit, made on a switch whose size changes under it, errs by tens of percent.
	perRequestToFixed = 2
	// gatherShare and maxGatherDelay bound how long a batch short of its cohort waits for the
	// rest of it (batch.Options.GatherDelay): a share of the modelled fixed apply time (what
	// the reconfiguration of a second, split-off batch would cost), at most maxGatherDelay.
	gatherShare    = 0.125
	maxGatherDelay = 250 * time.Millisecond
	// applyDecay weighs the past in the apply-time model (per batch).
	applyDecay = 0.9
)

// PipelineStats is a snapshot of the port door's pipeline.
type PipelineStats struct {
	// Applying is the number of port batches committed to OVSDB and not yet acknowledged by
	// ovs-vswitchd (a gauge); PeakApplying its highest value so far.
	Applying, PeakApplying int
	// Acknowledged counts the batches acknowledged (cur_cfg reached their next_cfg).
	Acknowledged uint64
	// Depth is the bound on batches in flight (Options.BatchDepth).
	Depth int
	// SizeLimit is the batch size the measured apply time allows now (Options.BatchMaxSize
	// until the cost has been measured).
	SizeLimit int
	// ApplyFixed and ApplyPerRequest are the fitted cost of one acknowledged batch at the
	// switch's current size: a fixed part (ovs-vswitchd's reconfiguration of the switch) and
	// a part per request.
	ApplyFixed, ApplyPerRequest time.Duration
}

// pipeline tracks the port batches waiting for ovs-vswitchd and models their apply time.
//
// The time of a batch counts from its commit or the previous acknowledgement, whichever is
// later (before that, ovs-vswitchd was applying the previous batch). ovs-vswitchd's work per
// reconfiguration grows with the switch: it revisits every port, and its userspace datapath
// revisits them for every port it adds or removes. So the model is
//
//	time = scale · (fixed + perRequest·size),  scale = interfaces on the switch + scaleOffset
//
// fitted by least squares on time ÷ scale over exponentially decayed samples, and read at
// the switch's current size. Without the scale, a switch that grows (or shrinks) while batch
// sizes drift the same way makes the growth look like a cost per request, and the limit
// then shrinks batches for nothing.
type pipeline struct {
	depth, maxSize int
	target         time.Duration
	timeout        time.Duration // bound on one batch's wait for ovs-vswitchd; 0: none
	count          func() int    // interfaces on the switch now; nil: a constant scale

	mu                   sync.Mutex
	applying, peak       int
	committing           int           // batches admitted (admit) and not yet begun or aborted
	changed              chan struct{} // closed and replaced when applying or committing falls
	acked                uint64
	lastAck              time.Time
	sw, sx, sy, sxx, sxy float64 // decayed sums: weight, size, seconds÷scale, size², size·seconds÷scale
	fixed, perReq        float64 // fitted, seconds per unit of scale
	fitted               bool
}

// scaleOffset is added to the switch's interface count in the model's scale: the part of a
// reconfiguration that does not grow with the switch, counted in interfaces. It matters only
// on small switches, where batches are fast anyway.
const scaleOffset = 32

// newPipeline returns a pipeline of at most depth batches of at most maxSize requests, sized
// for an acknowledgement within target once measured; timeout is the bound on a batch's wait
// for ovs-vswitchd (0: none); count, if not nil, returns the interfaces on the switch (the
// model's scale), and is called with no lock of the caller's held but the pipeline's.
func newPipeline(depth, maxSize int, target, timeout time.Duration, count func() int) *pipeline {
	return &pipeline{depth: depth, maxSize: maxSize, target: target, timeout: timeout, count: count,
		changed: make(chan struct{})}
}

// admit waits until a batch may be committed and reserves its place. That is at once, unless
// the switch is so large that batches overlapping in ovs-vswitchd could outlast the apply
// timeout (serialLocked): then a batch is committed only when no other is committing or
// waiting for ovs-vswitchd, and each caller waits for one batch's reconfiguration, not
// depth of them. A nil error must be followed by begin (committed) or abort (not committed).
func (p *pipeline) admit(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.applying+p.committing == 0 || !p.serialLocked() {
			p.committing++
			p.mu.Unlock()
			return nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// abort releases the place of an admitted batch that was not committed.
func (p *pipeline) abort() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.committing--
	p.signalLocked()
}

func (p *pipeline) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// serialLocked reports whether batches must be applied one at a time: when the fixed part of
// the apply time (the mean apply time until the model is fitted) takes more than half of the
// budget that depth overlapping batches would each have. The size limit then uses the budget
// of a single batch.
func (p *pipeline) serialLocked() bool {
	if p.timeout <= 0 || p.depth <= 1 || p.sw == 0 {
		return false
	}
	fixed := p.fixed
	if !p.fitted {
		fixed = p.sy / p.sw
	}
	return p.scale()*fixed > p.timeout.Seconds()*applyBudgetShare/float64(p.depth)/2
}

// scale is the model's scale now.
func (p *pipeline) scale() float64 {
	if p.count == nil {
		return 1
	}
	return float64(max(p.count(), 0) + scaleOffset)
}

// begin records a batch committed and now waiting for ovs-vswitchd.
func (p *pipeline) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.committing = max(p.committing-1, 0)
	p.applying++
	p.peak = max(p.peak, p.applying)
}

// end records the end, at now, of the wait of a batch of size requests committed at
// committedAt; ok says it was acknowledged (its apply time is then a sample of the model).
func (p *pipeline) end(size int, committedAt, now time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applying--
	p.signalLocked()
	if !ok {
		return
	}
	p.acked++
	from := committedAt
	if p.lastAck.After(from) {
		from = p.lastAck
	}
	p.lastAck = now
	x, y := float64(size), now.Sub(from).Seconds()/p.scale()
	p.sw = p.sw*applyDecay + 1
	p.sx = p.sx*applyDecay + x
	p.sy = p.sy*applyDecay + y
	p.sxx = p.sxx*applyDecay + x*x
	p.sxy = p.sxy*applyDecay + x*y
	den := p.sw*p.sxx - p.sx*p.sx
	if den <= 1e-9 { // one size seen so far: no slope to fit
		return
	}
	slope := (p.sw*p.sxy - p.sx*p.sy) / den
	p.perReq = max(slope, 0)
	p.fixed = max((p.sy-p.perReq*p.sx)/p.sw, 0)
	p.fitted = true
}

// sizeLimit is the batcher's Options.SizeLimit: the most requests a batch may hold now, from
// the model at the switch's current size. MaxSize until a sample is in. With no per-request
// part measured (one batch size seen so far), only the timeout bounds batches, reading the
// whole mean apply time as a cost per request (the cautious reading). Otherwise, in order:
//   - while the fixed part is under half the target, the size whose modelled apply time fits
//     the target, raised to at least perRequestToFixed · fixed ÷ perRequest (the size whose
//     per-request part is that many times the fixed part); otherwise MaxSize. Where the
//     fixed part alone takes half the target or more (a large switch), a smaller batch
//     hardly makes the acknowledgement come sooner; it only spends more of ovs-vswitchd's
//     time on reconfigurations;
//   - lowered so that depth batches applied one after another fit within applyBudgetShare of
//     the apply timeout: the callers of the last batch in flight wait for all of them, and a
//     wait longer than the timeout fails the batch (one batch, when batches are applied one
//     at a time: see admit);
//   - clamped to [minAdaptiveSize, MaxSize].
func (p *pipeline) sizeLimit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sizeLimitLocked()
}

func (p *pipeline) sizeLimitLocked() int {
	if p.sw == 0 {
		return p.maxSize
	}
	sc := p.scale()
	budget := 0.0
	if p.timeout > 0 {
		budget = p.timeout.Seconds() * applyBudgetShare
		if !p.serialLocked() {
			budget /= float64(p.depth)
		}
	}
	if !p.fitted || p.perReq <= 0 {
		meanSize, meanTime := p.sx/p.sw, sc*p.sy/p.sw
		if budget > 0 && meanTime > budget {
			return p.clamp(meanSize * budget / meanTime)
		}
		return p.maxSize
	}
	fixed, perReq := sc*p.fixed, sc*p.perReq
	n := float64(p.maxSize)
	if target := p.target.Seconds(); fixed < target/2 {
		n = max((target-fixed)/perReq, perRequestToFixed*fixed/perReq)
	}
	if budget > 0 {
		n = min(n, (budget-fixed)/perReq)
	}
	return p.clamp(n)
}

// gatherDelay is the batcher's Options.GatherDelay: gatherShare of the modelled fixed apply
// time at the switch's current size (of the mean apply time until the model is fitted: an
// upper bound), at most maxGatherDelay; 0 before any sample.
func (p *pipeline) gatherDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sw == 0 {
		return 0
	}
	fixed := p.fixed
	if !p.fitted {
		fixed = p.sy / p.sw
	}
	return min(seconds(gatherShare*p.scale()*fixed), maxGatherDelay)
}

// clamp bounds a modelled size to [minAdaptiveSize, maxSize].
func (p *pipeline) clamp(n float64) int {
	if n >= float64(p.maxSize) {
		return p.maxSize
	}
	return min(max(int(n), minAdaptiveSize), p.maxSize)
}

func (p *pipeline) stats() PipelineStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PipelineStats{Applying: p.applying, PeakApplying: p.peak, Acknowledged: p.acked, Depth: p.depth,
		SizeLimit: p.sizeLimitLocked(), ApplyFixed: seconds(p.scale() * p.fixed), ApplyPerRequest: seconds(p.scale() * p.perReq)}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
