package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// pipelineEnv is a Writer of the given depth and batches of one request on an in-memory OVSDB
// whose simulated ovs-vswitchd the test can stop acknowledging, with bridge br0.
func pipelineEnv(t *testing.T, depth int) (context.Context, *simvswitchd.Switch, *Writer) {
	t.Helper()
	srv := ovsdbtest.Start(t)
	sw := ovsdbtest.StartOVSVswitchd(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{srv.Endpoint()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// One request is a full batch: only full batches overlap (batch.Options.OverlapFullOnly).
	w, err := New(ctx, c, Options{BatchDepth: depth, BatchMaxSize: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.WithoutCancel(ctx)) })
	return ctx, sw, w
}

// ensureAsync asks for port name from a goroutine of its own; its outcome arrives on the
// returned channel.
func ensureAsync(ctx context.Context, w *Writer, name string) <-chan portOutcome {
	out := make(chan portOutcome, 1)
	go func() {
		r, err := w.EnsurePort(ctx, nil, "br0", internalPort(name))
		out <- portOutcome{name, r, err}
	}()
	return out
}

// While ovs-vswitchd does not acknowledge, each new batch is still committed, up to the
// depth: three waves of requests are three transactions waiting together, a fourth waits in
// the queue; once acknowledgements resume every caller gets its ofport, and the
// pipeline never held more than the depth.
func TestPipelineCommitsWhileVswitchdApplies(t *testing.T) {
	const depth = 3
	ctx, sw, w := pipelineEnv(t, depth)
	sw.PauseAck()
	var waits []<-chan portOutcome
	for wave := range depth + 1 { // one request a wave: a wave is one full batch
		waits = append(waits, ensureAsync(ctx, w, fmt.Sprintf("w%d", wave)))
		want := min(wave+1, depth)
		eventually(t, fmt.Sprintf("%d batches waiting for ovs-vswitchd after wave %d", want, wave), func() bool {
			st := w.Pipeline()
			return st.Applying == want && (wave < depth || w.Batches().Queued == 1)
		})
	}
	if st := w.Batches(); st.InFlight != depth || st.Batches != depth {
		t.Fatalf("with acknowledgements paused: %d batches in flight, %d taken; want %d and %d", st.InFlight, st.Batches, depth, depth)
	}
	sw.ResumeAck()
	for _, ch := range waits {
		o := <-ch
		if o.err != nil {
			t.Fatalf("port %s: %v", o.name, o.err)
		}
		if len(o.r.Interfaces) != 1 || o.r.Interfaces[0].Ofport < 1 {
			t.Fatalf("port %s: acknowledged without an ofport: %+v", o.name, o.r)
		}
	}
	st := w.Pipeline()
	if st.PeakApplying != depth || st.Applying != 0 || st.Acknowledged != depth+1 {
		t.Fatalf("pipeline after the churn: %+v; want a peak of %d, none applying, %d acknowledged", st, depth, depth+1)
	}
}

// Two requests for one port are never in flight together, even with room in the pipeline: the
// delete of a waits in the queue while a's ensure waits for ovs-vswitchd, and b, another port,
// goes past it. A caller that gives up while its batch is being applied learns that the outcome
// is unknown; its neighbours still get theirs.
func TestPipelineKeepsPerPortOrder(t *testing.T) {
	ctx, sw, w := pipelineEnv(t, 4)
	sw.PauseAck()
	a := ensureAsync(ctx, w, "a")
	eventually(t, "a's batch waiting for ovs-vswitchd", func() bool { return w.Pipeline().Applying == 1 })
	del := make(chan error, 1)
	go func() { del <- w.DeletePort(ctx, "br0", "a") }()
	b := ensureAsync(ctx, w, "b")
	cctx, cancel := context.WithCancel(ctx)
	gone := ensureAsync(cctx, w, "gone")
	eventually(t, "b and gone waiting for ovs-vswitchd too, a's delete queued behind a's ensure", func() bool {
		st := w.Batches()
		return st.InFlightRequests == 3 && st.Queued == 1 && w.Pipeline().Applying == st.InFlight
	})
	cancel()
	if o := <-gone; !errors.Is(o.err, batch.ErrOutcomeUnknown) || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("caller gone while its batch was applied: %v; want ErrOutcomeUnknown and context.Canceled", o.err)
	}
	sw.ResumeAck()
	for _, ch := range []<-chan portOutcome{a, b} {
		if o := <-ch; o.err != nil {
			t.Fatalf("port %s: %v", o.name, o.err)
		}
	}
	if err := <-del; err != nil {
		t.Fatalf("delete a: %v", err)
	}
	if _, err := w.db.Interface("a"); err == nil {
		t.Fatal("a still exists after its delete, which was queued behind its ensure")
	}
	if st, err := w.db.Interface("b"); err != nil || st.Ofport < 1 {
		t.Fatalf("b: %+v, %v", st, err)
	}
}

func TestPipelineBatchDepthBounds(t *testing.T) {
	for _, depth := range []int{-1, MaxBatchDepth + 1} {
		if _, err := New(t.Context(), nil, Options{BatchDepth: depth}); err == nil {
			t.Errorf("BatchDepth %d accepted", depth)
		}
	}
}

// The size bound follows the fitted model fixed + perRequest·size: unbounded (MaxSize) until
// two sizes have been seen, then the size whose apply time fits the target; never below the
// size whose per-request part is twice the fixed part, and not bounded by the target at all
// once the fixed part takes half of it (smaller batches then only add reconfigurations);
// never more than keep the batches in flight within half the apply timeout; never below
// minAdaptiveSize.
func TestPipelineSizeLimitFromApplyTime(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	sample := func(p *pipeline, size int, d time.Duration) {
		p.begin()
		p.end(size, t0, t0.Add(d), true)
		t0 = t0.Add(time.Hour) // the next batch's wait starts after this acknowledgement
	}
	cost := func(n int) time.Duration { return 100*time.Millisecond + time.Duration(n)*time.Millisecond }
	fit := func(target, timeout time.Duration) *pipeline {
		p := newPipeline(2, 512, target, timeout, nil)
		sample(p, 10, cost(10))
		sample(p, 50, cost(50))
		return p
	}

	p := newPipeline(2, 512, 500*time.Millisecond, 0, nil)
	sample(p, 10, cost(10))
	if got := p.sizeLimit(); got != 512 {
		t.Fatalf("one size seen: limit %d, want MaxSize 512", got)
	}
	sample(p, 50, cost(50))
	sample(p, 30, cost(30))
	if got := p.sizeLimit(); got < 398 || got > 400 { // (500 − 100) ms ÷ 1 ms
		t.Fatalf("fixed 100 ms + 1 ms/request, target 500 ms: limit %d, want 400", got)
	}
	if st := p.stats(); st.ApplyPerRequest < 990*time.Microsecond || st.ApplyPerRequest > 1010*time.Microsecond {
		t.Fatalf("fitted per-request cost %v, want 1ms", st.ApplyPerRequest)
	}
	if got := fit(500*time.Millisecond, 2*time.Minute).sizeLimit(); got < 398 || got > 400 {
		t.Fatalf("a 2-minute apply timeout does not bind at 400 ms per batch: limit %d, want 400", got)
	}

	// The fixed part near the target (a bridge grown to thousands of ports): the batch keeps
	// the size whose per-request part is twice the fixed part, 200, instead of falling to the
	// minimum; from half the target on, only the timeout bounds it.
	if got := fit(250*time.Millisecond, 0).sizeLimit(); got < 199 || got > 200 {
		t.Fatalf("fixed 100 ms + 1 ms/request, target 250 ms: limit %d, want 200 (2 × fixed ÷ per request)", got)
	}
	for _, target := range []time.Duration{105 * time.Millisecond, 50 * time.Millisecond} {
		if got := fit(target, 0).sizeLimit(); got != 512 {
			t.Fatalf("fixed 100 ms + 1 ms/request, target %v: limit %d, want MaxSize", target, got)
		}
		if got := fit(target, 2*time.Minute).sizeLimit(); got != 512 {
			t.Fatalf("fixed 100 ms + 1 ms/request, target %v, 2-minute timeout: limit %d, want MaxSize", target, got)
		}
	}

	// The apply timeout bounds what the target would allow: 2 batches in flight within half
	// of 4 s is 1 s each, and the target's 400 requests take 500 ms, half of that.
	if got := fit(500*time.Millisecond, 4*time.Second); got.sizeLimit() < 399 || got.sizeLimit() > 400 || got.inFlightLimit() != 2 {
		t.Fatalf("target 500 ms, apply timeout 4 s, depth 2: limit %d, in flight %d, want 400 and 2", got.sizeLimit(), got.inFlightLimit())
	}
	// With a 1 s timeout, an overlapping batch would be cut to 150 requests (250 ms each) and
	// still take more than half of its budget: batches go one at a time, each with the whole
	// budget (500 ms): the target's 400 again.
	if got := fit(500*time.Millisecond, time.Second); got.sizeLimit() < 399 || got.sizeLimit() > 400 || got.inFlightLimit() != 1 {
		t.Fatalf("target 500 ms, apply timeout 1 s, depth 2: limit %d, in flight %d, want 400 and 1", got.sizeLimit(), got.inFlightLimit())
	}
	// A fixed part over half of an overlapping batch's budget (300 ms timeout: 75 ms each)
	// makes batches go one at a time, with the budget of one (150 ms), raised to half of what
	// the timeout leaves after the fixed part ((300 − 100) ÷ 2 = 100 ms): 100 requests.
	if got := fit(time.Second, 300*time.Millisecond).sizeLimit(); got < 99 || got > 100 {
		t.Fatalf("fixed part above half the overlapping budget: limit %d, want 100", got)
	}
	// A fixed part above the budget of one batch (75 ms of a 150 ms timeout) still leaves the
	// requests half of the rest of the timeout: 25 ms, 25 requests.
	if got := fit(time.Second, 150*time.Millisecond).sizeLimit(); got < 24 || got > 25 {
		t.Fatalf("fixed part above the timeout's budget: limit %d, want 25", got)
	}
	// And a fixed part beyond the timeout itself leaves the minimum.
	if got := fit(time.Second, 90*time.Millisecond).sizeLimit(); got != minAdaptiveSize {
		t.Fatalf("fixed part above the apply timeout: limit %d, want the minimum %d", got, minAdaptiveSize)
	}

	// A batch acknowledged while an earlier one was still applied counts from that
	// acknowledgement, not from its own commit.
	q := newPipeline(2, 512, time.Second, 0, nil)
	q.begin()
	q.begin()
	q.end(10, t0, t0.Add(cost(10)), true)
	q.end(50, t0, t0.Add(cost(10)+cost(50)), true)
	if st := q.stats(); st.ApplyPerRequest < 990*time.Microsecond || st.ApplyPerRequest > 1010*time.Microsecond || st.PeakApplying != 2 {
		t.Fatalf("overlapping batches: %+v, want 1ms per request and a peak of 2", st)
	}
}

// ovs-vswitchd's apply time grows with the switch. A switch shrinking while batch sizes shrink
// too (ports deleted by a cohort the limit trims) must not read as a cost per request: the
// model divides each sample by the switch's size and reads it at the current size.
func TestPipelineModelFollowsTheSwitchSize(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ifaces := 0
	p := newPipeline(2, 512, time.Second, 2*time.Minute, func() int { return ifaces })
	// Per unit of scale (interfaces + scaleOffset): 100 µs fixed, 1 µs per request.
	cost := func(n int) time.Duration {
		return time.Duration(float64(ifaces+scaleOffset) * (100e-6 + 1e-6*float64(n)) * float64(time.Second))
	}
	for i := range 12 {
		ifaces = 5000 - 400*i
		size := 100 - 5*i
		p.begin()
		p.end(size, t0, t0.Add(cost(size)), true)
		t0 = t0.Add(time.Hour)
	}
	st := p.stats() // at 600 interfaces: 632 × 100 µs fixed, 632 × 1 µs per request
	if got, want := st.ApplyPerRequest.Seconds(), 632e-6; got < want*0.99 || got > want*1.01 {
		t.Fatalf("per-request cost %v at 600 interfaces, want %.0f µs (the switch's shrinking is not a per-request cost)", st.ApplyPerRequest, want*1e6)
	}
	if got, want := st.ApplyFixed.Seconds(), 63.2e-3; got < want*0.99 || got > want*1.01 {
		t.Fatalf("fixed cost %v at 600 interfaces, want %.1f ms", st.ApplyFixed, want*1e3)
	}
	if st.SizeLimit != 512 { // (1 s − 63 ms) ÷ 0.632 ms is past MaxSize
		t.Fatalf("limit %d, want 512", st.SizeLimit)
	}
}

// With one batch size seen there is no per-request part to size batches for the target, but
// batches whose apply time would overrun the apply timeout's budget are cut, in proportion.
func TestPipelineCutsUnfittedBatchesToTheTimeout(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	p := newPipeline(2, 512, time.Second, 2*time.Minute, nil)
	for range 3 {
		p.begin()
		p.end(512, t0, t0.Add(90*time.Second), true)
		t0 = t0.Add(time.Hour)
	}
	// 90 s batches: applied one at a time, each within half of 2 minutes: 512 × 60 ÷ 90.
	if got := p.sizeLimit(); got < 340 || got > 342 {
		t.Fatalf("512-request batches taking 90 s against a 60 s budget: limit %d, want 341", got)
	}
}

// On a switch so large that overlapping batches could outlast the apply timeout, batches go
// one at a time: when a full batch would take more than half of an overlapping batch's budget
// (15 s of the 30 s each of two batches has in half of 2 minutes), whether the time is in the
// fixed part or in the requests.
func TestPipelineOneAtATimeOnALargeSwitch(t *testing.T) {
	for _, c := range []struct {
		name           string
		fixed, perReq  time.Duration
		size, inFlight int
	}{
		{"1 s fixed, 1 ms per request: 1.5 s at 512", time.Second, time.Millisecond, 512, 2},
		{"20 s fixed: over 15 s at any size", 20 * time.Second, time.Millisecond, 512, 1},
		// The batch that overran the timeout at 14,800 ports in the 20k scale run: 25 s at 512,
		// most of it per request.
		{"3.4 s fixed, 43 ms per request: 25 s at 512", 3400 * time.Millisecond, 43 * time.Millisecond, 512, 1},
		// Under 15 s at 512 (an overlapping batch could have (30 − 3.4) ÷ 0.02 = 1,330): overlapped.
		{"3.4 s fixed, 20 ms per request: 13.6 s at 512", 3400 * time.Millisecond, 20 * time.Millisecond, 512, 2},
		// The 20k build at 18,000 ports: 70 s fixed, 24 ms per request. The budget of one
		// (60 s) leaves nothing for requests; half of the 50 s the timeout leaves does.
		{"70 s fixed, 24 ms per request: half the room under the timeout", 70 * time.Second, 24 * time.Millisecond, 512, 1},
		{"100 s fixed, 100 ms per request: 10 s of room, 100 requests", 100 * time.Second, 100 * time.Millisecond, 100, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Unix(1_000_000, 0)
			p := newPipeline(2, 512, time.Second, 2*time.Minute, nil)
			if got := p.inFlightLimit(); got != 2 {
				t.Fatalf("no sample: in flight %d, want the depth 2", got)
			}
			for _, n := range []int{100, 200} {
				p.begin()
				p.end(n, t0, t0.Add(c.fixed+time.Duration(n)*c.perReq), true)
				t0 = t0.Add(time.Hour)
			}
			if size, inFlight := p.sizeLimit(), p.inFlightLimit(); size != c.size || inFlight != c.inFlight {
				t.Fatalf("limit %d, in flight %d; want %d and %d", size, inFlight, c.size, c.inFlight)
			}
			if st := p.stats(); st.InFlightLimit != c.inFlight {
				t.Fatalf("stats in flight limit %d, want %d", st.InFlightLimit, c.inFlight)
			}
		})
	}
}

// A batch short of its cohort may wait a share of the modelled fixed apply time for the rest
// (what a second reconfiguration would cost), never more than maxGatherDelay.
func TestPipelineGatherDelay(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	p := newPipeline(2, 512, time.Second, 0, nil)
	if got := p.gatherDelay(); got != 0 {
		t.Fatalf("no sample: gather delay %v, want 0", got)
	}
	for _, n := range []int{10, 50} { // 400 ms fixed, 1 ms per request
		p.begin()
		p.end(n, t0, t0.Add(400*time.Millisecond+time.Duration(n)*time.Millisecond), true)
		t0 = t0.Add(time.Hour)
	}
	if got := p.gatherDelay(); got < 49*time.Millisecond || got > 51*time.Millisecond {
		t.Fatalf("fixed 400 ms: gather delay %v, want 50ms (1/8)", got)
	}
	for _, n := range []int{10, 50, 30} { // 10 s fixed: capped
		p.begin()
		p.end(n, t0, t0.Add(10*time.Second+time.Duration(n)*time.Millisecond), true)
		t0 = t0.Add(time.Hour)
	}
	if got := p.gatherDelay(); got != maxGatherDelay {
		t.Fatalf("fixed near 10 s: gather delay %v, want the cap %v", got, maxGatherDelay)
	}
}

// A look for drift (Pass without waiting) gives way while a port batch waits for
// ovs-vswitchd, even with the turn free; a pass that waits runs; once the batch is
// acknowledged the look runs again.
func TestPassGivesWayWhileABatchIsApplied(t *testing.T) {
	ctx, sw, w := pipelineEnv(t, 2)
	sw.PauseAck()
	a := ensureAsync(ctx, w, "a")
	eventually(t, "a's batch waiting for ovs-vswitchd", func() bool { return w.Pipeline().Applying == 1 })
	ran, err := w.Pass(ctx, false, func(context.Context) error { return nil })
	if ran || err != nil {
		t.Fatalf("look for drift while a batch is applied: ran %v, err %v; want it to give way", ran, err)
	}
	ran, err = w.Pass(ctx, true, func(context.Context) error { return nil })
	if !ran || err != nil {
		t.Fatalf("waiting pass while a batch is applied: ran %v, err %v; want it to run", ran, err)
	}
	sw.ResumeAck()
	if o := <-a; o.err != nil {
		t.Fatalf("port a: %v", o.err)
	}
	ran, err = w.Pass(ctx, false, func(context.Context) error { return nil })
	if !ran || err != nil {
		t.Fatalf("look for drift with nothing applied: ran %v, err %v; want it to run", ran, err)
	}
}
