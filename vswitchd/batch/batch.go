package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
)

// Errors returned to callers of Submit.
var (
	// ErrClosed: the Batcher is closed (or closing) and did not take, or did not send, the request.
	ErrClosed = errors.New("batch: batcher closed")
	// ErrOutcomeUnknown: the caller's context ended after its request had been sent. The batch
	// goes on for the other callers, so the change may or may not be applied.
	ErrOutcomeUnknown = errors.New("batch: request sent, outcome unknown")
)

// Outcome is the result of one request of a committed batch: a value, or the error that made
// this request (and only it) fail.
type Outcome[Res any] struct {
	Value Res
	Err   error
}

// Committer applies a batch of requests. It is the only thing a Batcher needs from the system
// it feeds.
//
// Commit returns either one Outcome per request, in order (err nil; per-request failures go in
// Outcome.Err and fail only those requests), or a non-nil error for the whole batch, which must
// mean that nothing of the batch was applied: the Batcher may then commit parts of the batch
// again to isolate the culprit (see the package documentation). An error that leaves the
// outcome unknown (for example a timeout waiting for an acknowledgement of a committed change)
// must not be reported as divisible. Commit must honour ctx and be safe to call from several
// goroutines when MaxInFlight > 1.
type Committer[Req, Res any] interface {
	Commit(ctx context.Context, reqs []Req) ([]Outcome[Res], error)
}

// ItemError is a whole-batch error that a Committer attributes to some of its requests: Indexes
// (into the reqs given to Commit) name the requests that caused it. The Batcher fails exactly
// those requests with Err and commits the others again without them.
type ItemError struct {
	Indexes []int
	Err     error
}

// Error implements error.
func (e *ItemError) Error() string {
	return fmt.Sprintf("batch: requests %v refused: %v", e.Indexes, e.Err)
}

// Unwrap returns the cause.
func (e *ItemError) Unwrap() error { return e.Err }

// Clock is the time source of a Batcher; tests substitute a controllable one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Defaults of Options.
const (
	DefaultMaxSize     = 128
	DefaultMaxDelay    = 5 * time.Millisecond
	DefaultMaxInFlight = 1
)

// Options tune a Batcher. The zero value is usable.
type Options[Req any] struct {
	// MaxSize bounds the requests in one batch: at most limits.MaxRequestsPerBatch. Default
	// DefaultMaxSize.
	MaxSize int
	// MaxDelay bounds how long a request waits for its batch to fill once it could be sent.
	// Default DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxInFlight bounds the batches being committed at once. Default 1, the right value for
	// OVSDB: every commit makes ovs-vswitchd reconfigure, and requests arriving meanwhile form
	// the next batch. Batches in flight together are not ordered with each other.
	MaxInFlight int
	// Linger makes the Batcher wait for a full batch or MaxDelay even when nothing is in flight,
	// instead of sending at once.
	Linger bool
	// Cohort, with Linger, sends a batch as soon as it holds as many requests as the previous
	// batch did, without waiting for MaxDelay: callers answered together (clients each with
	// one request outstanding) come back together, and waiting longer for them only adds
	// latency, while sending before they are all back splits them over two commits. MaxDelay
	// still bounds the wait when fewer come back, counted from the later of the oldest
	// request's arrival and the end of the last commit (so requests that waited for the slot
	// still gather with the callers of the batch that freed it).
	Cohort bool
	// AnnouncedDelay, with Cohort, replaces MaxDelay while requests announced with Announce
	// are still being prepared and the batch is short of the previous batch's size: callers
	// that do work before they submit (a plugin's attach) still join their cohort instead of
	// splitting it. Default 5 × MaxDelay.
	AnnouncedDelay time.Duration
	// Key, if set, names the object a request changes. Requests with the same non-empty key never
	// share a batch and are never in flight together, so they are applied in submission order.
	Key func(Req) string
	// Divisible reports whether a whole-batch error may be caused by a single request, so that
	// splitting the batch can isolate it. Nil means the Committer's own
	// Divisible(error) bool method if it has one, else every error but context errors.
	Divisible func(error) bool
	// Check, if set, refuses a request before it is queued: Submit returns its error at once
	// and the request never joins a batch, so a request OVS cannot take (a NUL byte makes
	// ovsdb-server drop the session, failing the whole transaction) never fails its
	// neighbours. Nil means the Committer's own Check(Req) error method if it has one.
	Check func(Req) error
	// Weight, if set, is the number of objects a request writes; a batch is closed before the
	// request that would take its total past MaxWeight (a request heavier than MaxWeight
	// still goes, alone). Nil means the Committer's own Weight(Req) int method if it has one,
	// else every request weighs 1.
	Weight func(Req) int
	// MaxWeight bounds the summed Weight of one batch. Default limits.MaxObjectsPerBatch.
	MaxWeight int
	// Clock defaults to the real time.
	Clock Clock
}

func (o Options[Req]) withDefaults(c any) (Options[Req], error) {
	if o.MaxSize < 0 || o.MaxDelay < 0 || o.MaxInFlight < 0 || o.MaxWeight < 0 {
		return o, fmt.Errorf("batch: negative option: MaxSize %d, MaxDelay %s, MaxInFlight %d",
			o.MaxSize, o.MaxDelay, o.MaxInFlight)
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxSize > limits.MaxRequestsPerBatch {
		return o, fmt.Errorf("batch: MaxSize %d is more than limits.MaxRequestsPerBatch (%d)", o.MaxSize, limits.MaxRequestsPerBatch)
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.AnnouncedDelay <= 0 {
		o.AnnouncedDelay = 5 * o.MaxDelay
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.MaxWeight == 0 {
		o.MaxWeight = limits.MaxObjectsPerBatch
	}
	if o.Check == nil {
		if ch, ok := c.(interface{ Check(Req) error }); ok {
			o.Check = ch.Check
		}
	}
	if o.Weight == nil {
		if w, ok := c.(interface{ Weight(Req) int }); ok {
			o.Weight = w.Weight
		} else {
			o.Weight = func(Req) int { return 1 }
		}
	}
	if o.Divisible == nil {
		if d, ok := c.(interface{ Divisible(error) bool }); ok {
			o.Divisible = d.Divisible
		} else {
			o.Divisible = func(err error) bool {
				return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
			}
		}
	}
	return o, nil
}

type itemState int

const (
	stateQueued itemState = iota
	stateSent
	stateAbandoned // removed from the queue by its caller's cancellation
	stateDone
)

type item[Req, Res any] struct {
	req    Req
	key    string
	enq    time.Time
	weight int
	state  itemState // guarded by Batcher.mu
	gone   bool      // caller returned after sending; guarded by Batcher.mu
	done   chan struct{}
	res    Res // written before done is closed
	err    error
}

// Batcher groups concurrent requests into batches committed by a Committer. Create it with
// Start; it is safe for concurrent use.
type Batcher[Req, Res any] struct {
	c     Committer[Req, Res]
	opts  Options[Req]
	clock Clock

	runCtx  context.Context
	stop    context.CancelFunc // hard stop: cancels commits in flight
	wake    chan struct{}      // capacity 1: the dispatcher has something to look at
	stopped chan struct{}      // closed when the dispatcher and all commits have returned
	commits sync.WaitGroup

	mu           sync.Mutex
	queue        []*item[Req, Res]
	closing      bool
	inflight     int
	lastSize     int       // size of the last batch taken (Options.Cohort)
	lastDone     time.Time // when the last commit finished (Options.Cohort)
	inflightReqs int
	inflightKeys map[string]int
	announced    int // requests announced (Announce) and not yet submitted or cancelled
	st           counters
}

// Start returns a running Batcher committing through c. ctx bounds its life: when ctx ends the
// Batcher stops hard, as Close does when its own context ends. Call Close to release it.
func Start[Req, Res any](ctx context.Context, c Committer[Req, Res], opts Options[Req]) (*Batcher[Req, Res], error) {
	if c == nil {
		return nil, errors.New("batch: nil Committer")
	}
	o, err := opts.withDefaults(c)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	b := &Batcher[Req, Res]{
		c: c, opts: o, clock: o.Clock,
		runCtx: runCtx, stop: stop,
		wake:         make(chan struct{}, 1),
		stopped:      make(chan struct{}),
		inflightKeys: map[string]int{},
		st:           newCounters(o.MaxSize),
	}
	go b.dispatch()
	return b, nil
}

// Announcement is a request a caller will submit soon (see Announce).
type Announcement[Req, Res any] struct {
	b    *Batcher[Req, Res]
	once sync.Once
}

// Announce tells the Batcher that a request is coming once the caller has prepared it, so a
// cohort waits for it (up to Options.AnnouncedDelay). Submit it with SubmitAnnounced, or call
// Cancel when it will not come; an Announcement is used once.
func (b *Batcher[Req, Res]) Announce() *Announcement[Req, Res] {
	b.mu.Lock()
	b.announced++
	b.mu.Unlock()
	return &Announcement[Req, Res]{b: b}
}

// Cancel withdraws the announcement (no-op once submitted or cancelled).
func (a *Announcement[Req, Res]) Cancel() {
	a.once.Do(func() {
		a.b.mu.Lock()
		a.b.announced--
		a.b.mu.Unlock()
		a.b.signal()
	})
}

// SubmitAnnounced is Submit for an announced request: the announcement ends as the request is
// queued.
func (b *Batcher[Req, Res]) SubmitAnnounced(ctx context.Context, a *Announcement[Req, Res], req Req) (Res, error) {
	return b.submit(ctx, req, a)
}

// Submit queues req, waits for the batch that carries it and returns this request's own result.
// A request refused by Options.Check fails at once with Check's error, never queued. It fails
// with ctx.Err() when ctx ends before the request is sent (nothing was sent), with an
// error matching both ctx.Err() and ErrOutcomeUnknown when ctx ends after (the change may still
// be applied), and with ErrClosed when the Batcher is closed. Otherwise it returns the
// Committer's outcome for req, or the whole-batch error that could not be isolated from it.
func (b *Batcher[Req, Res]) Submit(ctx context.Context, req Req) (Res, error) {
	return b.submit(ctx, req, nil)
}

func (b *Batcher[Req, Res]) submit(ctx context.Context, req Req, a *Announcement[Req, Res]) (Res, error) {
	var zero Res
	if err := ctx.Err(); err != nil {
		if a != nil {
			a.Cancel()
		}
		return zero, err
	}
	if b.opts.Check != nil {
		if err := b.opts.Check(req); err != nil {
			if a != nil {
				a.Cancel()
			}
			b.mu.Lock()
			b.st.refused++
			b.mu.Unlock()
			return zero, err
		}
	}
	it := &item[Req, Res]{req: req, enq: b.clock.Now(), weight: b.opts.Weight(req), done: make(chan struct{})}
	if b.opts.Key != nil {
		it.key = b.opts.Key(req)
	}
	b.mu.Lock()
	if a != nil {
		a.once.Do(func() { b.announced-- })
	}
	if b.closing {
		b.mu.Unlock()
		return zero, ErrClosed
	}
	b.queue = append(b.queue, it)
	b.st.queued++
	b.st.submitted++
	b.mu.Unlock()
	b.signal()

	select {
	case <-it.done:
		return it.res, it.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	switch it.state {
	case stateQueued:
		it.state = stateAbandoned
		b.st.queued--
		b.st.canceled++
		b.mu.Unlock()
		b.signal()
		return zero, ctx.Err()
	case stateSent:
		it.gone = true
		b.st.canceledSent++
		b.mu.Unlock()
		return zero, fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	default: // done meanwhile
		b.mu.Unlock()
		<-it.done
		return it.res, it.err
	}
}

// Close stops accepting requests, sends what is queued and waits for every batch in flight. When
// ctx ends first it stops hard: commits in flight are cancelled and queued requests fail with
// ErrClosed; Close then returns ctx.Err() once everything has returned. Close is idempotent and
// never leaves a goroutine behind.
func (b *Batcher[Req, Res]) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.signal()
	select {
	case <-b.stopped:
		b.stop()
		return nil
	case <-ctx.Done():
		b.stop()
		<-b.stopped
		return ctx.Err()
	}
}

func (b *Batcher[Req, Res]) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// dispatch is the Batcher's one goroutine: it decides when to send a batch and starts its commit.
func (b *Batcher[Req, Res]) dispatch() {
	defer close(b.stopped)
	for {
		b.mu.Lock()
		if b.runCtx.Err() != nil {
			b.closing = true
			b.failQueuedLocked(ErrClosed)
			b.mu.Unlock()
			b.commits.Wait()
			return
		}
		if b.closing && b.st.queued == 0 && b.inflight == 0 {
			b.mu.Unlock()
			b.commits.Wait()
			return
		}
		var timer <-chan time.Time
		if b.inflight < b.opts.MaxInFlight && b.st.queued > 0 {
			batch, oldest, full := b.candidatesLocked()
			now := b.clock.Now()
			if b.opts.Cohort && b.lastDone.After(oldest) {
				// Requests that waited for the slot have not yet waited for the callers of
				// the batch that just finished: the delay starts when the slot freed.
				oldest = b.lastDone
			}
			delay := b.opts.MaxDelay
			if b.opts.Cohort && b.announced > 0 && len(batch) < b.lastSize {
				delay = b.opts.AnnouncedDelay // members of the cohort are still preparing
			}
			switch {
			case len(batch) == 0:
				// Every waiting request's key is in flight; a finishing commit wakes us.
			case full || b.closing || (b.inflight == 0 && !b.opts.Linger) ||
				(b.opts.Cohort && b.lastSize > 0 && len(batch) >= b.lastSize) ||
				!now.Before(oldest.Add(delay)):
				b.takeLocked(batch)
				b.mu.Unlock()
				continue
			default:
				timer = b.clock.After(oldest.Add(delay).Sub(now))
			}
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-timer:
		case <-b.runCtx.Done():
		}
	}
}

// candidatesLocked picks, in queue order, up to MaxSize waiting requests whose key is neither in
// flight nor already picked and whose weights sum to at most MaxWeight, and returns them with
// the enqueue time of the first; full reports that a bound stopped the picking.
func (b *Batcher[Req, Res]) candidatesLocked() (batch []*item[Req, Res], oldest time.Time, full bool) {
	var picked map[string]bool
	weight := 0
	for _, it := range b.queue {
		if len(batch) == b.opts.MaxSize {
			full = true
			break
		}
		if it.state != stateQueued {
			continue
		}
		if len(batch) > 0 && weight+it.weight > b.opts.MaxWeight {
			full = true // the rest waits for the next batch, in order
			break
		}
		if it.key != "" {
			if b.inflightKeys[it.key] > 0 || picked[it.key] {
				continue
			}
			if picked == nil {
				picked = map[string]bool{}
			}
			picked[it.key] = true
		}
		batch = append(batch, it)
		weight += it.weight
	}
	if len(batch) == 0 {
		return nil, time.Time{}, false
	}
	return batch, batch[0].enq, full || len(batch) >= b.opts.MaxSize
}

// takeLocked removes batch from the queue, marks it sent and starts its commit.
func (b *Batcher[Req, Res]) takeLocked(batch []*item[Req, Res]) {
	b.lastSize = len(batch)
	for _, it := range batch {
		it.state = stateSent
		if it.key != "" {
			b.inflightKeys[it.key]++
		}
	}
	rest := b.queue[:0]
	for _, it := range b.queue {
		if it.state == stateQueued {
			rest = append(rest, it)
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	b.st.queued -= len(batch)
	b.inflight++
	b.inflightReqs += len(batch)
	b.st.observeBatch(len(batch))
	b.commits.Add(1)
	go b.run(batch)
}

func (b *Batcher[Req, Res]) failQueuedLocked(err error) {
	for _, it := range b.queue {
		if it.state == stateQueued {
			b.finishLocked(it, *new(Res), err)
		}
	}
	clear(b.queue)
	b.queue = nil
	b.st.queued = 0
}

// run commits one batch taken from the queue, with isolation retries, then frees its slot.
func (b *Batcher[Req, Res]) run(batch []*item[Req, Res]) {
	defer b.commits.Done()
	b.commit(b.runCtx, batch, false)
	b.mu.Lock()
	for _, it := range batch {
		if it.state != stateDone { // a Committer bug must not leave a caller hanging
			b.finishLocked(it, *new(Res), errors.New("batch: request left without an outcome"))
		}
		if it.key != "" {
			if b.inflightKeys[it.key]--; b.inflightKeys[it.key] == 0 {
				delete(b.inflightKeys, it.key)
			}
		}
	}
	b.inflight--
	b.inflightReqs -= len(batch)
	b.lastDone = b.clock.Now()
	b.mu.Unlock()
	b.signal()
}

// commit sends items through the Committer and isolates a failing request as the package
// documentation describes. retry tells whether this is an isolation retry.
func (b *Batcher[Req, Res]) commit(ctx context.Context, items []*item[Req, Res], retry bool) {
	items = b.live(items)
	if len(items) == 0 {
		return
	}
	reqs := make([]Req, len(items))
	for i, it := range items {
		reqs[i] = it.req
	}
	b.mu.Lock()
	b.st.commits++
	if retry {
		b.st.retries++
	}
	b.mu.Unlock()
	outs, err := b.c.Commit(ctx, reqs)
	if err == nil && len(outs) != len(items) {
		err = fmt.Errorf("batch: committer returned %d outcomes for %d requests", len(outs), len(items))
		b.finishAll(items, err)
		return
	}
	if err == nil {
		b.mu.Lock()
		for i, it := range items {
			b.finishLocked(it, outs[i].Value, outs[i].Err)
		}
		b.mu.Unlock()
		return
	}
	if ctx.Err() != nil {
		b.finishAll(items, err)
		return
	}
	if blamed := blame(err, len(items)); blamed != nil {
		var ie *ItemError
		errors.As(err, &ie)
		cause := ie.Err
		if cause == nil {
			cause = err
		}
		var rest []*item[Req, Res]
		b.mu.Lock()
		for i, it := range items {
			if blamed[i] {
				b.finishLocked(it, *new(Res), cause)
			} else {
				rest = append(rest, it)
			}
		}
		b.mu.Unlock()
		b.commit(ctx, rest, true)
		return
	}
	if len(items) > 1 && b.opts.Divisible(err) {
		mid := len(items) / 2
		b.commit(ctx, items[:mid], true)
		b.commit(ctx, items[mid:], true)
		return
	}
	b.finishAll(items, err)
}

// blame returns the requests an *ItemError in err names, or nil when it names none validly.
func blame(err error, n int) map[int]bool {
	var ie *ItemError
	if !errors.As(err, &ie) || len(ie.Indexes) == 0 {
		return nil
	}
	m := make(map[int]bool, len(ie.Indexes))
	for _, i := range ie.Indexes {
		if i < 0 || i >= n {
			return nil
		}
		m[i] = true
	}
	return m
}

// live drops (and completes) the items whose caller has returned.
func (b *Batcher[Req, Res]) live(items []*item[Req, Res]) []*item[Req, Res] {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*item[Req, Res], 0, len(items))
	for _, it := range items {
		if it.gone {
			b.finishLocked(it, *new(Res), ErrOutcomeUnknown)
			continue
		}
		out = append(out, it)
	}
	return out
}

func (b *Batcher[Req, Res]) finishAll(items []*item[Req, Res], err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		b.finishLocked(it, *new(Res), err)
	}
}

func (b *Batcher[Req, Res]) finishLocked(it *item[Req, Res], res Res, err error) {
	if it.state == stateDone || it.state == stateAbandoned {
		return
	}
	it.state = stateDone
	it.res, it.err = res, err
	if err != nil {
		b.st.failed++
	} else {
		b.st.succeeded++
	}
	close(it.done)
}
