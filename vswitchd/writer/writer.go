package writer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// DB is what a Writer needs from *ovsdb.Client.
type DB interface {
	NewTxn(gen int64) *ovsdb.Txn
	// Interface returns the cached state of an interface (for the ports a batch left as they
	// were, whose state the commit does not report).
	Interface(name string) (ovsdb.InterfaceState, error)
}

// interfaceCounter is what the batch size model asks of a DB that can say how large the switch
// is (*ovsdb.Client); without it the model assumes a switch of constant size.
type interfaceCounter interface {
	InterfaceCount() int
}

// Options configure a Writer. Zero values are usable.
type Options struct {
	Logger *slog.Logger
	// Commit is passed to the commits of ApplyBridge, DeleteBridge and the port batches (the
	// reconciler passes its own to its transactions).
	Commit ovsdb.CommitOptions
	// Generation returns the generation the doors tag rows with (ovsdb.GenerationKey); it is
	// read holding the turn, at each commit. Nil: 1.
	Generation func() int64
	// BatchMaxSize and BatchMaxDelay tune the port batcher (batch.Options.MaxSize, MaxDelay);
	// it lingers with cohorts (batch.Options.Linger, Cohort).
	BatchMaxSize  int
	BatchMaxDelay time.Duration
	// BatchDepth bounds the port batches in flight at once (batch.Options.MaxInFlight): while
	// ovs-vswitchd applies one, the next full batch (BatchMaxSize or the size the apply time
	// allows) is committed, so with a backlog ovs-vswitchd never waits for the daemon between
	// two reconfigurations; a partial batch waits for the one in flight
	// (batch.Options.OverlapFullOnly), whose callers then join it. 1 commits a batch only
	// once the previous one has been acknowledged; so does a switch so large that a full
	// batch would take over Commit.ApplyTimeout ÷ (4 × BatchDepth), 15 s at the defaults
	// (PipelineStats.InFlightLimit). Default DefaultBatchDepth, at most MaxBatchDepth.
	BatchDepth int
	// ApplyTarget is the acknowledgement time batches are sized for: once the apply time has
	// been measured (fixed + per request), a batch holds at most as many requests as fit in
	// it, but no fewer than make the per-request part twice the fixed part, and none fewer at
	// all once the fixed part takes half the target (a large switch); never more than keep
	// BatchDepth batches within half of Commit.ApplyTimeout, never fewer than a small minimum
	// (PipelineStats.SizeLimit). Default DefaultApplyTarget.
	ApplyTarget time.Duration
	// OnBatch, if set, receives every port batch's size, how long it took to commit (planning
	// included) and to be acknowledged by ovs-vswitchd after that, and its whole-batch error.
	// It is called once the batch is acknowledged (or failed), outside the turn, possibly
	// from several goroutines at once, and must not block.
	OnBatch func(size int, committed, applied time.Duration, err error)
	// Settle, if set, is called holding the turn after every port batch that may have written
	// something (also after a whole-batch error whose outcome is unknown, never after a
	// refusal before anything was written), with its requests, so the caller records what
	// OVSDB now holds before any other door writes.
	Settle func(reqs []PortRequest)
}

// Writer is the daemon's one writer of OVSDB (see the package documentation). Create it with
// New, stop it with Close. Its methods are safe for concurrent use.
type Writer struct {
	db    DB
	log   *slog.Logger
	opts  Options
	turn  chan struct{} // holds a token while a door writes
	ports *portDoor

	batcher *batch.Batcher[PortRequest, PortResult]
	stop    context.CancelFunc
}

// New returns a Writer on db and starts its port batcher, which lives until Close (not until
// ctx ends: ctx only carries values).
func New(ctx context.Context, db DB, opts Options) (*Writer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Generation == nil {
		opts.Generation = func() int64 { return 1 }
	}
	if opts.BatchDepth < 0 || opts.BatchDepth > MaxBatchDepth {
		return nil, fmt.Errorf("writer: batch depth %d: want 1 to %d (0 for the default, %d)", opts.BatchDepth, MaxBatchDepth, DefaultBatchDepth)
	}
	if opts.BatchDepth == 0 {
		opts.BatchDepth = DefaultBatchDepth
	}
	if opts.ApplyTarget <= 0 {
		opts.ApplyTarget = DefaultApplyTarget
	}
	maxSize := opts.BatchMaxSize
	if maxSize <= 0 {
		maxSize = batch.DefaultMaxSize
	}
	applyTimeout := opts.Commit.ApplyTimeout
	switch {
	case applyTimeout == 0:
		applyTimeout = ovsdb.DefaultApplyTimeout
	case applyTimeout < 0:
		applyTimeout = 0 // no bound but the callers' contexts
	}
	var counter func() int
	if c, ok := db.(interfaceCounter); ok {
		counter = c.InterfaceCount
	}
	w := &Writer{db: db, log: opts.Logger, opts: opts, turn: make(chan struct{}, 1)}
	w.ports = &portDoor{db: db, gen: opts.Generation, opts: opts.Commit, turn: w.take, release: w.release,
		log: opts.Logger, onBatch: opts.OnBatch, settle: opts.Settle, pipe: newPipeline(opts.BatchDepth, maxSize, opts.ApplyTarget, applyTimeout, counter)}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b, err := batch.Start(bctx, batch.Committer[PortRequest, PortResult](w.ports), batch.Options[PortRequest]{
		MaxSize: opts.BatchMaxSize, MaxDelay: opts.BatchMaxDelay, Linger: true, Cohort: true, Key: portKey,
		MaxInFlight: opts.BatchDepth, OverlapFullOnly: true, SizeLimit: w.ports.pipe.sizeLimit,
		InFlightLimit: w.ports.pipe.inFlightLimit, GatherDelay: w.ports.pipe.gatherDelay})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("writer: starting the port batcher: %w", err)
	}
	w.batcher, w.stop = b, cancel
	return w, nil
}

// Pipeline returns a snapshot of the port door's pipeline: the batches waiting for
// ovs-vswitchd and the apply-time model that sizes them.
func (w *Writer) Pipeline() PipelineStats { return w.ports.pipe.stats() }

// Batches returns a snapshot of the port batcher's counters (queue, batches in flight, batch
// sizes).
func (w *Writer) Batches() batch.Stats { return w.batcher.Stats() }

// Close stops accepting port requests (they fail with batch.ErrClosed), lets the batches in
// flight finish or ctx end (see batch.Batcher.Close). The other doors stay usable.
func (w *Writer) Close(ctx context.Context) error {
	err := w.batcher.Close(ctx)
	w.stop()
	return err
}

// take waits for the turn; without wait it returns false at once when another door holds
// it. It fails only when ctx ends first.
func (w *Writer) take(ctx context.Context, wait bool) (bool, error) {
	if !wait {
		select {
		case w.turn <- struct{}{}:
			return true, nil
		default:
			return false, nil
		}
	}
	select {
	case w.turn <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (w *Writer) release() { <-w.turn }

// Pass is the reconciler's door: it runs pass holding the turn and returns its error. With
// wait false it returns (false, nil) at once, without running pass, when another door holds
// the turn or a port batch is waiting for ovs-vswitchd (the switch is busy with our own
// writes: a look for drift then would only compete with ovs-vswitchd for the CPU, and at
// 5,000 ports such looks took half of the daemon's CPU during port churn); with wait true it
// waits for the turn only, failing with ctx's error if ctx ends first.
func (w *Writer) Pass(ctx context.Context, wait bool, pass func(context.Context) error) (ran bool, err error) {
	if !wait && w.ports.pipe.busy() {
		return false, nil
	}
	ok, err := w.take(ctx, wait)
	if !ok {
		return false, err
	}
	defer w.release()
	return true, pass(ctx)
}

// ApplyBridge commits b (converted by BridgeSpec; its Ports are ignored) in a transaction of
// its own, waiting for ovs-vswitchd, then calls settle with the commit's error, still holding
// the turn, and returns settle's result: the caller decides from OVSDB whether the bridge is
// there (the commit's outcome may be unknown). It fails with ctx's error, having written
// nothing, if ctx ends while it waits for the turn.
func (w *Writer) ApplyBridge(ctx context.Context, b model.Bridge, settle func(commitErr error) error) error {
	return w.bridge(ctx, func(txn *ovsdb.Txn) { txn.EnsureBridge(BridgeSpec(b), nil) }, settle)
}

// DeleteBridge deletes the bridge name (with its ports) in a transaction of its own, like
// ApplyBridge. objects are the plugin objects whose first port the bridge holds: their other
// ports and bridges (deletion requests, see PortRequest) go in the same transaction.
func (w *Writer) DeleteBridge(ctx context.Context, name string, settle func(commitErr error) error, objects ...PortRequest) error {
	return w.bridge(ctx, func(txn *ovsdb.Txn) {
		for _, o := range objects {
			for _, on := range o.More {
				txn.DeletePort(on.Bridge, on.Port.Name)
			}
			for _, b := range o.Bridges {
				txn.DeleteBridge(b.Name)
			}
		}
		txn.DeleteBridge(name)
	}, settle)
}

func (w *Writer) bridge(ctx context.Context, add func(*ovsdb.Txn), settle func(error) error) error {
	if _, err := w.take(ctx, true); err != nil {
		return err
	}
	defer w.release()
	txn := w.db.NewTxn(w.opts.Generation())
	add(txn)
	_, err := txn.Commit(ctx, w.opts.Commit)
	return settle(err)
}
