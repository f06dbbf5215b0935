package collect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/store"
)

// WriterConfig configures a Writer. Zero durations and sizes take the defaults shown.
type WriterConfig struct {
	// Instance identifies this collector instance in batch IDs ("<Instance>-<n>"); it must be
	// unique among the collectors writing to one store for the store's lifetime (the plugin
	// uses a random id per start). 1 to 64 characters, required.
	Instance string
	// BatchRecords cuts a batch when it holds this many records (default 16384).
	BatchRecords int
	// BatchAge cuts a batch this long after its first record (default 1s).
	BatchAge time.Duration
	// MaxBuffered bounds the records held for the store (filling and waiting batches);
	// records written beyond it are dropped and counted (store_backpressure). Default 262144
	// (about 50 MB of records).
	MaxBuffered int
	// RetryMin and RetryMax bound the exponential backoff between retries of a failed append
	// (defaults 100ms and 5s).
	RetryMin, RetryMax time.Duration
	// DrainTimeout is how long Run keeps appending buffered batches after its context ends
	// (default 5s); what it cannot store by then is counted as dropped (shutdown).
	DrainTimeout time.Duration
	// Appenders is how many batches may be appended to the store at once (default 1, at most
	// 16). More than one lets a store that takes concurrent appends (PostgreSQL) work on
	// several batches; batches then reach the store out of order.
	Appenders int
}

func (c WriterConfig) withDefaults() (WriterConfig, error) {
	if c.Instance == "" || len(c.Instance) > 64 {
		return c, fmt.Errorf("collector writer: instance id %q: want 1 to 64 characters (a unique id per collector process)", c.Instance)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BatchRecords, 16384)
	def(&c.Appenders, 1)
	if c.Appenders > 16 {
		return c, fmt.Errorf("collector writer: %d appenders: at most 16", c.Appenders)
	}
	def(&c.MaxBuffered, 262144)
	defd(&c.BatchAge, time.Second)
	defd(&c.RetryMin, 100*time.Millisecond)
	defd(&c.RetryMax, 5*time.Second)
	defd(&c.DrainTimeout, 5*time.Second)
	if c.MaxBuffered < c.BatchRecords {
		return c, fmt.Errorf("collector writer: max buffered %d below batch size %d: raise MaxBuffered", c.MaxBuffered, c.BatchRecords)
	}
	return c, nil
}

type wbatch struct {
	id   string
	recs []flow.Record
	born time.Time
}

// Writer cuts records into batches and appends them to a store from its own goroutine (Run),
// so decoding never waits for the store. Batch buffers are reused; memory is bounded by
// MaxBuffered records. A failed append is retried with the same batch ID (stores make that
// idempotent), so an outage causes neither duplicates nor, up to MaxBuffered, loss.
type Writer struct {
	st  store.Store
	cfg WriterConfig
	c   *Counters

	mu       sync.Mutex
	fill     *wbatch
	sealed   []*wbatch
	free     []*wbatch
	buffered int
	seq      uint64
	progress chan struct{} // closed and replaced whenever a batch leaves the buffer
	wake     chan struct{} // capacity Appenders: a batch was sealed
}

// NewWriter returns a writer appending to st and counting into c.
func NewWriter(st store.Store, cfg WriterConfig, c *Counters) (*Writer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("collector writer: nil store")
	}
	return &Writer{st: st, cfg: cfg, c: c, progress: make(chan struct{}), wake: make(chan struct{}, cfg.Appenders)}, nil
}

// Write copies recs into the current batch (the caller keeps recs) and never blocks on the
// store. Records beyond MaxBuffered are dropped and counted; Write returns how many it kept.
func (w *Writer) Write(recs []flow.Record) int {
	kept := 0
	w.mu.Lock()
	for len(recs) > 0 {
		room := w.cfg.MaxBuffered - w.buffered
		if room <= 0 {
			break
		}
		if w.fill == nil {
			w.fill = w.newBatch()
		}
		n := min(len(recs), w.cfg.BatchRecords-len(w.fill.recs), room)
		w.fill.recs = append(w.fill.recs, recs[:n]...)
		w.buffered += n
		kept += n
		recs = recs[n:]
		if len(w.fill.recs) >= w.cfg.BatchRecords {
			w.sealLocked()
		}
	}
	w.c.buffered.Store(int64(w.buffered))
	w.mu.Unlock()
	w.c.drop(DropBackpressure, len(recs))
	return kept
}

func (w *Writer) newBatch() *wbatch {
	var b *wbatch
	if n := len(w.free); n > 0 {
		b, w.free = w.free[n-1], w.free[:n-1]
	} else {
		b = &wbatch{recs: make([]flow.Record, 0, w.cfg.BatchRecords)}
	}
	b.born = time.Now()
	return b
}

// sealLocked moves the filling batch to the queue and gives it its ID, which every retry of it
// keeps.
func (w *Writer) sealLocked() {
	if w.fill == nil || len(w.fill.recs) == 0 {
		return
	}
	w.seq++
	w.fill.id = w.cfg.Instance + "-" + strconv.FormatUint(w.seq, 10)
	w.sealed = append(w.sealed, w.fill)
	w.fill = nil
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest sealed batch off the queue (it stays counted in buffered until done),
// sealing the filling one first if it is older than BatchAge (or if force); without one, it
// returns how long until the filling batch ages.
func (w *Writer) next(force bool) (*wbatch, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fill != nil && len(w.fill.recs) > 0 {
		if age := time.Since(w.fill.born); force || age >= w.cfg.BatchAge {
			w.sealLocked()
		}
	}
	if len(w.sealed) > 0 {
		b := w.sealed[0]
		w.sealed = w.sealed[1:]
		return b, 0
	}
	wait := w.cfg.BatchAge
	if w.fill != nil && len(w.fill.recs) > 0 {
		wait = w.cfg.BatchAge - time.Since(w.fill.born)
	}
	return nil, wait
}

// requeue puts a batch next gets back at the head of the queue (an append interrupted by
// the end of Run's context; the drain retries it with the same ID).
func (w *Writer) requeue(b *wbatch) {
	w.mu.Lock()
	w.sealed = append([]*wbatch{b}, w.sealed...)
	w.mu.Unlock()
}

// done forgets a stored batch and recycles its buffer.
func (w *Writer) done(b *wbatch) {
	w.mu.Lock()
	w.buffered -= len(b.recs)
	b.recs = b.recs[:0]
	w.free = append(w.free, b)
	w.c.buffered.Store(int64(w.buffered))
	close(w.progress)
	w.progress = make(chan struct{})
	w.mu.Unlock()
}

// Run appends sealed batches to the store until ctx ends, then drains what is buffered for
// at most DrainTimeout. It returns nil after a clean drain, or an error saying how many
// records it could not store (they are counted as dropped, reason shutdown).
func (w *Writer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.cfg.Appenders {
		wg.Go(func() { w.appendLoop(ctx) })
	}
	wg.Wait()
	return w.drain(context.WithoutCancel(ctx))
}

// appendLoop is one appender: it takes sealed batches and appends them until ctx ends.
func (w *Writer) appendLoop(ctx context.Context) {
	timer := time.NewTimer(w.cfg.BatchAge)
	defer timer.Stop()
	for ctx.Err() == nil {
		b, wait := w.next(false)
		if b == nil {
			timer.Reset(max(wait, time.Millisecond))
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-timer.C:
			}
			continue
		}
		if w.appendRetrying(ctx, b) {
			w.done(b)
		} else {
			w.requeue(b)
		}
	}
}

// appendRetrying appends b, retrying with backoff until it succeeds (true) or ctx ends.
func (w *Writer) appendRetrying(ctx context.Context, b *wbatch) bool {
	backoff := w.cfg.RetryMin
	for {
		err := w.st.Append(ctx, store.Batch{ID: b.id, Records: b.recs})
		if err == nil {
			w.c.storeFailing.Store(false)
			w.c.stored.Add(uint64(len(b.recs)))
			w.c.batches.Add(1)
			return true
		}
		w.c.appendErrors.Add(1)
		w.c.storeFailing.Store(true)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, w.cfg.RetryMax)
	}
}

func (w *Writer) drain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.DrainTimeout)
	defer cancel()
	for {
		b, _ := w.next(true)
		if b == nil {
			return nil
		}
		if !w.appendRetrying(ctx, b) {
			w.requeue(b)
			break
		}
		w.done(b)
	}
	w.mu.Lock()
	lost := w.buffered
	if w.fill != nil {
		w.fill.recs = w.fill.recs[:0]
	}
	w.sealed, w.buffered = nil, 0
	w.c.buffered.Store(0)
	w.mu.Unlock()
	w.c.drop(DropShutdown, lost)
	return fmt.Errorf("collector writer: store did not take %d buffered records within %v: counted as dropped", lost, w.cfg.DrainTimeout)
}

// Flush seals the filling batch and waits until the buffer is empty (every record written so
// far was stored or dropped) or ctx ends. Run must be running; under steady input, bound ctx.
func (w *Writer) Flush(ctx context.Context) error {
	for {
		w.mu.Lock()
		w.sealLocked()
		if w.buffered == 0 {
			w.mu.Unlock()
			return nil
		}
		ch := w.progress
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("collector writer flush: %w", ctx.Err())
		case <-ch:
		}
	}
}
