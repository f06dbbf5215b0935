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
	// OverlapFullOnly, with MaxInFlight above 1, sends a batch while another is in flight only
	// when it is full (MaxSize, SizeLimit or MaxWeight reached): the extra slots carry a
	// backlog, while a partial batch waits for the slot to free and for the callers of the
	// batch in flight, who come back together, instead of splitting a cohort of callers into
	// ever smaller batches (every batch costs ovs-vswitchd a reconfiguration).
	OverlapFullOnly bool
	// Cohort, with Linger, sends a batch as soon as it holds as many requests as the cohort,
	// without waiting for MaxDelay: callers answered together (clients each with one request
	// outstanding) come back together, and waiting longer for them only adds latency, while
	// sending before they are all back splits them over two commits. The cohort is the
	// largest of the last few batches' sizes and of the requests outstanding (in flight,
	// queued, or announced within AnnouncedDelay) when each of them finished. Taking the
	// largest of the last few, not the last, lets a cohort split by a straggler come back
	// together at the next batch; counting those outstanding at a finish lets a cohort split
	// over two batches (by SizeLimit, or by a batch sent while the rest was preparing) join
	// again instead of alternating halves. MaxDelay still bounds the wait when fewer come
	// back, counted from the later of the oldest request's arrival and the end of the last
	// commit (so requests that waited for the slot still gather with the callers of the
	// batch that freed it).
	Cohort bool
	// GatherDelay, with Cohort, if set, is asked at every batch that holds fewer requests than
	// its cohort for how long it may wait for the rest, in place of MaxDelay when longer: a
	// cohort whose callers come back over more than MaxDelay (many callers, a busy machine)
	// otherwise leaves in two batches, and each batch costs ovs-vswitchd a reconfiguration
	// (vswitchd/writer answers with a share of the modelled reconfiguration time). It is
	// called with the Batcher's lock held and must not call the Batcher.
	GatherDelay func() time.Duration
	// AnnouncedDelay, with Cohort, bounds how long requests announced with Announce hold a
	// batch that is otherwise ready (cohort reached or MaxDelay passed): such a batch waits
	// while an announcement made less than AnnouncedDelay ago is still being prepared (a
	// plugin's Validate and Attach before the write), and for at most AnnouncedDelay from its
	// oldest request. Callers that do work before they submit then join their cohort instead of
	// reaching the batcher just after it left and splitting it from then on. Default
	// 5 × MaxDelay.
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
	// InFlightLimit, if set, is asked at every batch for the most batches that may be in
	// flight now (an adaptive bound, e.g. one at a time once applying a batch takes long); it
	// is clamped to [1, MaxInFlight]. A batch waits in the queue, where requests may still
	// join it, until the batches in flight are under the bound. It is called with the
	// Batcher's lock held and must not call the Batcher.
	InFlightLimit func() int
	// SizeLimit, if set, is asked at every batch for the most requests it may hold now (an
	// adaptive bound, e.g. from the measured time to apply a batch); it is clamped to
	// [1, MaxSize]. It is called with the Batcher's lock held and must not call the Batcher.
	SizeLimit func() int
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

// cohortWindow is how many recent batches Options.Cohort takes the cohort's size from.
const cohortWindow = 4

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
	sent   *sentBatch // the batch it was taken in; nil while queued
}

// sentBatch is what the batcher records about one batch taken from the queue.
type sentBatch struct {
	// outstanding is the number of requests outstanding (in flight, queued, or announced
	// within AnnouncedDelay) when the batch's first answer went out, -1 before. It is taken
	// then, not when the batch's commit returns: by that time answered callers may be back in
	// the queue, and would be counted twice.
	outstanding int
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
	recent       [cohortWindow]int // sizes of the last batches taken, a ring (Options.Cohort)
	recentNext   int
	callers      [cohortWindow]int // requests outstanding when each of the last batches finished, a ring
	callersNext  int
	lastDone     time.Time // when the last commit finished (Options.Cohort)
	inflightReqs int
	inflightKeys map[string]int
	// scratch and picked are candidatesLocked's reused batch slice and set of picked keys.
	scratch   []*item[Req, Res]
	picked    map[string]bool
	announced map[*Announcement[Req, Res]]struct{} // announced, not yet submitted or withdrawn
	st        counters
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
		inflightKeys: map[string]int{}, picked: map[string]bool{},
		announced: map[*Announcement[Req, Res]]struct{}{},
		st:        newCounters(o.MaxSize),
	}
	go b.dispatch()
	return b, nil
}

// Announcement is a request a caller will submit soon (see Announce).
type Announcement[Req, Res any] struct {
	b  *Batcher[Req, Res]
	at time.Time // when it was announced

	// Guarded by b.mu.
	ended bool        // submitted or withdrawn
	stop  func() bool // stops the withdrawal on ctx's end (context.AfterFunc)
}

// Announce tells the Batcher that a request is coming once the caller has prepared it (for
// example after a plugin's calls), so that with Options.Cohort a batch ready to go waits for it
// (see Options.AnnouncedDelay) instead of leaving without it. Submit the request with
// SubmitAnnounced, or call Cancel as soon as it will not come (its preparation failed); the
// announcement is withdrawn by itself when ctx ends. A withdrawn announcement holds no batch.
// An Announcement is used once.
func (b *Batcher[Req, Res]) Announce(ctx context.Context) *Announcement[Req, Res] {
	a := &Announcement[Req, Res]{b: b}
	b.mu.Lock()
	a.at = b.clock.Now()
	b.announced[a] = struct{}{}
	b.mu.Unlock()
	stop := context.AfterFunc(ctx, a.Cancel)
	b.mu.Lock()
	if a.ended {
		b.mu.Unlock()
		stop()
		return a
	}
	a.stop = stop
	b.mu.Unlock()
	return a
}

// Cancel withdraws the announcement: a batch no longer waits for it. It is a no-op once the
// request was submitted or the announcement withdrawn.
func (a *Announcement[Req, Res]) Cancel() {
	a.b.mu.Lock()
	stop := a.endLocked()
	a.b.mu.Unlock()
	if stop != nil {
		stop()
	}
	a.b.signal()
}

// endLocked ends the announcement (idempotent) and returns the function that stops its
// withdrawal on ctx's end, to be called without the lock, or nil.
func (a *Announcement[Req, Res]) endLocked() func() bool {
	if a.ended {
		return nil
	}
	a.ended = true
	delete(a.b.announced, a)
	stop := a.stop
	a.stop = nil
	return stop
}

// SubmitAnnounced is Submit for an announced request: the announcement ends as the request is
// queued (or refused). A nil a makes it Submit.
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
	var stop func() bool
	if a != nil {
		stop = a.endLocked()
	}
	if b.closing {
		b.mu.Unlock()
		if stop != nil {
			stop()
		}
		b.signal()
		return zero, ErrClosed
	}
	b.queue = append(b.queue, it)
	b.st.queued++
	b.st.submitted++
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
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
