package writer

import (
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
	// InFlightLimit is how many batches may be in flight now: Depth, or 1 on a switch so
	// large that overlapping batches could outlast the apply timeout.
	InFlightLimit int
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
// the switch's size when the last batch began or ended. Without the scale, a switch that
// grows (or shrinks) while batch sizes drift the same way makes the growth look like a cost
// per request, and the limit then shrinks batches for nothing.
type pipeline struct {
	depth, maxSize int
	target         time.Duration
	timeout        time.Duration // bound on one batch's wait for ovs-vswitchd; 0: none
	count          func() int    // interfaces on the switch now; nil: a constant scale

	mu                   sync.Mutex
	applying, peak       int
	acked                uint64
	lastAck              time.Time
	sc                   float64 // the scale when the last batch began or ended
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
// model's scale). count is called only when a batch begins or ends, with no lock of the
// caller's held but the pipeline's: never on the batcher's dispatch path.
func newPipeline(depth, maxSize int, target, timeout time.Duration, count func() int) *pipeline {
	return &pipeline{depth: depth, maxSize: maxSize, target: target, timeout: timeout, count: count, sc: 1}
}

// readScaleLocked reads the model's scale now and keeps it for the limits.
func (p *pipeline) readScaleLocked() float64 {
	p.sc = 1
	if p.count != nil {
		p.sc = float64(max(p.count(), 0) + scaleOffset)
	}
	return p.sc
}

// begin records a batch committed and now waiting for ovs-vswitchd.
func (p *pipeline) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applying++
	p.peak = max(p.peak, p.applying)
	p.readScaleLocked()
}

// end records the end, at now, of the wait of a batch of size requests committed at
// committedAt; ok says it was acknowledged (its apply time is then a sample of the model).
func (p *pipeline) end(size int, committedAt, now time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applying--
	sc := p.readScaleLocked()
	if !ok {
		return
	}
	p.acked++
	from := committedAt
	if p.lastAck.After(from) {
		from = p.lastAck
	}
	p.lastAck = now
	x, y := float64(size), now.Sub(from).Seconds()/sc
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

// modelLocked is the modelled apply time, in seconds, of a batch of size requests at the
// kept scale: the fit, or until it is made the mean apply time whatever the size. Only
// called once a sample is in.
func (p *pipeline) modelLocked(size float64) float64 {
	if !p.fitted {
		return p.sc * p.sy / p.sw
	}
	return p.sc * (p.fixed + p.perReq*size)
}

// limitsLocked returns the most requests a batch may hold now and the most batches that may
// be in flight, from the model at the kept scale; MaxSize and depth until a sample is in.
//
// Only full batches overlap (batch.Options.OverlapFullOnly), so batches go one at a time
// when a full batch sized for overlap (sizeForLocked with 1/depth of the budget) would take
// more than half of that budget: at 120 s of apply timeout, past 15 s a batch. There the
// commit of the next batch is a small share of the apply time, so overlap gains little,
// while the callers of the last batch in flight wait for all of them, and the model, fitted
// on a switch whose size changes under it, errs by tens of percent. One at a time, a batch
// is sized for the whole budget, or for half of what the timeout leaves after the fixed part
// when that is more.
func (p *pipeline) limitsLocked() (size, inFlight int) {
	if p.sw == 0 {
		return p.maxSize, p.depth
	}
	budget := 0.0
	if p.timeout > 0 {
		budget = p.timeout.Seconds() * applyBudgetShare
	}
	each := budget / float64(p.depth)
	if p.depth > 1 {
		size = p.sizeForLocked(each)
		if budget == 0 || p.modelLocked(float64(size)) <= each/2 {
			return size, p.depth
		}
	}
	if p.fitted && budget > 0 {
		// One at a time, the requests get half of what the timeout leaves after the fixed
		// part, at least what the budget leaves: where the fixed part alone nears the budget
		// (ovs-vswitchd's reconfiguration of a 20,000-port switch takes over a minute), a
		// smaller batch would not make the wait shorter, and batches of the minimum size
		// would stall a backlog.
		budget = max(budget, (p.timeout.Seconds()+p.sc*p.fixed)*applyBudgetShare)
	}
	return p.sizeForLocked(budget), 1
}

// sizeForLocked is the batch size the model allows with budget seconds of apply time (0: no
// bound). With no per-request part measured (one batch size seen so far), only the budget
// bounds batches, reading the whole mean apply time as a cost per request (the cautious
// reading). Otherwise, in order:
//   - while the fixed part is under half the target, the size whose modelled apply time fits
//     the target, raised to at least perRequestToFixed · fixed ÷ perRequest (the size whose
//     per-request part is that many times the fixed part); otherwise MaxSize. Where the
//     fixed part alone takes half the target or more (a large switch), a smaller batch
//     hardly makes the acknowledgement come sooner; it only spends more of ovs-vswitchd's
//     time on reconfigurations;
//   - lowered so that the modelled apply time fits the budget;
//   - clamped to [minAdaptiveSize, MaxSize].
func (p *pipeline) sizeForLocked(budget float64) int {
	if !p.fitted || p.perReq <= 0 {
		meanSize, meanTime := p.sx/p.sw, p.modelLocked(0)
		if budget > 0 && meanTime > budget {
			return p.clamp(meanSize * budget / meanTime)
		}
		return p.maxSize
	}
	fixed, perReq := p.sc*p.fixed, p.sc*p.perReq
	n := float64(p.maxSize)
	if target := p.target.Seconds(); fixed < target/2 {
		n = max((target-fixed)/perReq, perRequestToFixed*fixed/perReq)
	}
	if budget > 0 {
		n = min(n, (budget-fixed)/perReq)
	}
	return p.clamp(n)
}

// busy reports whether a batch is waiting for ovs-vswitchd.
func (p *pipeline) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applying > 0
}

// sizeLimit is the batcher's Options.SizeLimit (see limitsLocked).
func (p *pipeline) sizeLimit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	size, _ := p.limitsLocked()
	return size
}

// inFlightLimit is the batcher's Options.InFlightLimit (see limitsLocked).
func (p *pipeline) inFlightLimit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, n := p.limitsLocked()
	return n
}

// gatherDelay is the batcher's Options.GatherDelay: gatherShare of the modelled fixed apply
// time (of the mean apply time until the model is fitted: an upper bound), at most
// maxGatherDelay; 0 before any sample.
func (p *pipeline) gatherDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sw == 0 {
		return 0
	}
	return min(seconds(gatherShare*p.modelLocked(0)), maxGatherDelay)
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
	size, inFlight := p.limitsLocked()
	return PipelineStats{Applying: p.applying, PeakApplying: p.peak, Acknowledged: p.acked, Depth: p.depth,
		SizeLimit: size, InFlightLimit: inFlight, ApplyFixed: seconds(p.sc * p.fixed), ApplyPerRequest: seconds(p.sc * p.perReq)}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
