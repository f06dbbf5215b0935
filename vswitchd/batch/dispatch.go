package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

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
		if b.st.queued > 0 && b.inflight < b.inFlightLimitLocked() {
			batch, oldest, full := b.candidatesLocked()
			now := b.clock.Now()
			if b.opts.Cohort && b.lastDone.After(oldest) {
				// Requests that waited for the slot have not yet waited for the callers of
				// the batch that just finished: the delay starts when the slot freed.
				oldest = b.lastDone
			}
			cohort := b.cohortLocked()
			delay := b.opts.MaxDelay
			if b.opts.Cohort && b.opts.GatherDelay != nil && cohort > len(batch) {
				delay = max(delay, b.opts.GatherDelay())
			}
			ready := (b.inflight == 0 && !b.opts.Linger) ||
				(b.opts.Cohort && cohort > 0 && len(batch) >= cohort) ||
				!now.Before(oldest.Add(delay))
			wait := oldest.Add(delay)
			if ready && b.opts.Cohort {
				// Members of the cohort announced and still preparing hold a batch that is
				// otherwise ready, each for AnnouncedDelay from its announcement, the batch for
				// at most AnnouncedDelay from its oldest request.
				if until := b.heldUntilLocked(); now.Before(until) && now.Before(oldest.Add(b.opts.AnnouncedDelay)) {
					ready, wait = false, minTime(until, oldest.Add(b.opts.AnnouncedDelay))
				}
			}
			switch {
			case len(batch) == 0:
				// Every waiting request's key is in flight; a finishing commit wakes us.
			case full || b.closing:
				b.takeLocked(batch)
				b.mu.Unlock()
				continue
			case b.inflight > 0 && b.opts.OverlapFullOnly:
				// A partial batch waits for the slot to free: the callers of the batch in
				// flight come back then and join it. A finishing commit wakes us.
			case ready:
				b.takeLocked(batch)
				b.mu.Unlock()
				continue
			default:
				// A submission, a withdrawn announcement or a finishing commit wakes us too.
				timer = b.clock.After(wait.Sub(now))
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

// inFlightLimitLocked is the bound on batches in flight now: MaxInFlight, or InFlightLimit's
// answer clamped to [1, MaxInFlight].
func (b *Batcher[Req, Res]) inFlightLimitLocked() int {
	if b.opts.InFlightLimit == nil {
		return b.opts.MaxInFlight
	}
	return min(max(b.opts.InFlightLimit(), 1), b.opts.MaxInFlight)
}

// heldUntilLocked is when the announcements still pending stop holding batches: the latest
// announcement's time plus Options.AnnouncedDelay; the zero time when none is pending.
func (b *Batcher[Req, Res]) heldUntilLocked() time.Time {
	var until time.Time
	for a := range b.announced {
		if t := a.at.Add(b.opts.AnnouncedDelay); t.After(until) {
			until = t
		}
	}
	return until
}

// outstandingLocked counts the requests in flight or queued and the live announcements.
func (b *Batcher[Req, Res]) outstandingLocked() int {
	return b.inflightReqs + b.st.queued + b.liveAnnouncedLocked()
}

// liveAnnouncedLocked counts the announcements still pending and made less than
// Options.AnnouncedDelay ago (those that may still hold a batch).
func (b *Batcher[Req, Res]) liveAnnouncedLocked() int {
	n := 0
	now := b.clock.Now()
	for a := range b.announced {
		if now.Before(a.at.Add(b.opts.AnnouncedDelay)) {
			n++
		}
	}
	return n
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// cohortLocked is the size of the cohort of callers (Options.Cohort): the largest of the last
// cohortWindow batches' sizes and of the requests outstanding when each of the last
// cohortWindow batches finished; 0 before the first batch.
func (b *Batcher[Req, Res]) cohortLocked() int {
	return max(slices.Max(b.recent[:]), slices.Max(b.callers[:]))
}

// candidatesLocked picks, in queue order, up to MaxSize (or SizeLimit's) waiting requests whose key is neither in
// flight nor already picked and whose weights sum to at most MaxWeight, and returns them with
// the enqueue time of the first; full reports that a bound stopped the picking.
//
// The batch is the Batcher's scratch slice, reused by the next call (the dispatcher looks at the
// queue after every submission: a fresh slice and key set each time were most of its garbage
// while a thousand callers wait); takeLocked copies what it sends.
func (b *Batcher[Req, Res]) candidatesLocked() (batch []*item[Req, Res], oldest time.Time, full bool) {
	batch = b.scratch[:0]
	picked := b.picked
	clear(picked)
	defer func() {
		clear(batch[len(batch):cap(batch)]) // no pointers kept to requests that left the queue
		b.scratch = batch[:0]
	}()
	weight := 0
	limit := b.opts.MaxSize
	if b.opts.SizeLimit != nil {
		limit = min(max(b.opts.SizeLimit(), 1), b.opts.MaxSize)
	}
	for _, it := range b.queue {
		if len(batch) == limit {
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
			picked[it.key] = true
		}
		batch = append(batch, it)
		weight += it.weight
	}
	if len(batch) == 0 {
		return nil, time.Time{}, false
	}
	return batch, batch[0].enq, full || len(batch) >= limit
}

// takeLocked removes batch (candidatesLocked's scratch) from the queue, marks it sent and starts
// its commit on a copy.
func (b *Batcher[Req, Res]) takeLocked(scratch []*item[Req, Res]) {
	batch := slices.Clone(scratch)
	clear(scratch)
	b.recent[b.recentNext] = len(batch)
	b.recentNext = (b.recentNext + 1) % cohortWindow
	sent := &sentBatch{outstanding: -1}
	for _, it := range batch {
		it.state = stateSent
		it.sent = sent
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
	go b.run(batch, sent)
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
func (b *Batcher[Req, Res]) run(batch []*item[Req, Res], sent *sentBatch) {
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
	// The callers answered come back with the requests outstanding when they were answered:
	// together they are the cohort the next batch waits for.
	if sent.outstanding < 0 { // nothing answered (every caller gone)
		sent.outstanding = b.outstandingLocked()
	}
	b.callers[b.callersNext] = sent.outstanding
	b.callersNext = (b.callersNext + 1) % cohortWindow
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
	if it.sent != nil && it.sent.outstanding < 0 {
		it.sent.outstanding = b.outstandingLocked()
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
