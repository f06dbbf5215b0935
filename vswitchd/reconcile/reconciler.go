package reconcile

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// Client is what the Reconciler needs from *ovsdb.Client.
type Client interface {
	NewTxn(gen int64) *ovsdb.Txn
	Owned() []ovsdb.OwnedRow
	OwnedGlobal(ctx context.Context) (map[string]string, error)
	Changes() <-chan struct{}
	Interface(name string) (ovsdb.InterfaceState, error)
}

// Options tune a Reconciler. The zero value is usable.
type Options struct {
	// Logger receives what each pass did and every repair. Default: slog.Default().
	Logger *slog.Logger
	// Commit is passed to every Commit.
	Commit ovsdb.CommitOptions
	// Resync is the period of passes without any trigger. Default 30s; negative disables.
	Resync time.Duration
	// Debounce is how long Run waits after an OVSDB change before refreshing the statuses, so
	// a burst of changes costs one refresh. Default 50ms.
	Debounce time.Duration
	// DriftDelay is how quiet OVSDB must have been (no change for that long) before Run looks
	// for drift (a pass over everything, which at 10,000 ports costs far more than a refresh);
	// during a sustained burst of changes it looks at least every MaxDriftDelay. Defaults 1s
	// and 10s.
	DriftDelay, MaxDriftDelay time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after a failed pass. Defaults 100ms, 10s.
	MinBackoff, MaxBackoff time.Duration
	// Extra, if set, supplies desired objects besides the configuration's (the daemon's API
	// objects). It is called at the start of every pass, with the owned rows the pass read,
	// and by every status refresh, with nil. A returned bridge whose name is a configured
	// bridge contributes only its ports; any other is desired whole. The result must not be
	// modified afterwards.
	Extra func(owned []ovsdb.OwnedRow) []model.Bridge
	// Unheld, if set, is called with Extra's result (at every pass and every status refresh)
	// and returns, by name, the bridges Extra lists only as holders of its ports — bridges that
	// neither the configuration nor the Extra objects desire themselves — with the reason. Such
	// a bridge is left as OVSDB holds it: neither changed nor pruned. Its ports are still
	// ensured (refused with ovsdb.ErrNotFound when the bridge is gone), and its status is Error
	// with the reason.
	Unheld func(extra []model.Bridge) map[string]string
	// Writer, if set, serialises the passes with the other writers of the owner's rows
	// (ovsplaned's vswitchd/writer.Writer): every pass runs inside Writer.Pass, from reading
	// the owned rows to the end of its commit, so no other writer interleaves with it. Passes
	// that look for drift do not wait: when the writer is busy (Pass with wait false declines)
	// they only refresh the statuses and look again after DriftDelay, until MaxDriftDelay has
	// passed since the first change; that look waits for the writer's turn.
	Writer Writer
	// OnPass, if set, is called after every pass with its duration and error.
	OnPass func(d time.Duration, err error)
	// OnChange, if set, is called (from Run's goroutine, or the caller of Reconcile) with the
	// statuses that changed, removed objects reported with an empty State. It must not block.
	OnChange func([]model.Status)
	// ConflictRepairs and ConflictWindow tune the detection of another writer fighting over an
	// owned column (see Conflict): that many repairs of one column of one object within the
	// window make a conflict. Defaults DefaultConflictRepairs and DefaultConflictWindow.
	ConflictRepairs int
	ConflictWindow  time.Duration
	// OnConflict, if set, is called from the pass at every repair of a column in conflict
	// (Active true) and once when the conflict ends (Active false). It must not block.
	OnConflict func(Conflict)
}

// Writer serialises writers of OVSDB (vswitchd/writer.Writer implements it).
type Writer interface {
	// Pass runs pass as the only writer and returns its error. With wait false it returns
	// (false, nil) at once, without running pass, when another writer holds the turn or is
	// otherwise busy; with wait true it waits for the turn, failing with ctx's error if ctx
	// ends first.
	Pass(ctx context.Context, wait bool, pass func(context.Context) error) (ran bool, err error)
}

// Reconciler converges OVSDB to a desired state. Create it with New; it is safe for concurrent
// use, but Run and Reconcile must not be called concurrently with each other.
type Reconciler struct {
	c    Client
	log  *slog.Logger
	opts Options
	kick chan struct{}

	refreshMu   sync.Mutex   // serialises refresh
	refreshCost atomic.Int64 // duration of the last refresh, in ns
	mu          sync.Mutex
	desired     config.DesiredState
	version     int64     // incremented by every Update that changes desired
	gen         int64     // 0 until the first pass
	genVer      int64     // version gen was computed for
	applied     int64     // version of the last successful pass, -1 before any
	status      statusSet // sorted by kind then name (see statusSet)
	passErr     error
	objErr      map[string]string // status key → why the last pass left that object out
	watch       chan struct{}
	lastErr     error             // error of the last pass, nil after a successful one
	down        string            // why ovs-vswitchd is known not to run; "" when it runs or nobody knows
	conflict    map[string]string // status key → active conflicts' message (conflicts.snapshot)

	conf *conflicts // used by the pass only
}

// New returns a Reconciler for c and desired (from config.Config.Desired). It does nothing until
// Run or Reconcile is called.
func New(c Client, desired config.DesiredState, opts Options) *Reconciler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Resync == 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	if opts.DriftDelay <= 0 {
		opts.DriftDelay = time.Second
	}
	if opts.MaxDriftDelay < opts.DriftDelay {
		opts.MaxDriftDelay = max(10*time.Second, opts.DriftDelay)
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	return &Reconciler{c: c, log: opts.Logger, opts: opts, kick: make(chan struct{}, 1),
		desired: desired, applied: -1, watch: make(chan struct{}),
		conf: newConflicts(opts)}
}

// Update replaces the desired state; Run starts a pass for it at once. An equal desired state
// changes nothing.
func (r *Reconciler) Update(desired config.DesiredState) {
	r.mu.Lock()
	if !desired.Equal(r.desired) {
		r.desired = desired
		r.version++
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Status returns a snapshot of every desired object's status, sorted by kind then name.
func (r *Reconciler) Status() []model.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.status) // already in that order
}

// Watch returns a channel closed at the next change of any status. Call it again after each
// close, then read Status.
func (r *Reconciler) Watch() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watch
}

// Run reconciles until ctx ends, then returns ctx's error. It passes at once, after every
// Update, after OVSDB changes (debounced) and every Options.Resync; a failed pass is retried
// with exponential backoff (Update still starts a pass at once).
func (r *Reconciler) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	changes := r.c.Changes()
	err := r.Reconcile(ctx)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var retry <-chan time.Time
		if err != nil {
			backoff = min(max(2*backoff, r.opts.MinBackoff), r.opts.MaxBackoff)
			r.log.Warn("reconcile: pass failed, retrying", "in", backoff, "err", err)
			retry = time.After(backoff)
		} else {
			backoff = 0
		}
		var resync <-chan time.Time
		if r.opts.Resync > 0 {
			resync = time.After(r.opts.Resync)
		}
		var (
			refresh    <-chan time.Time // a status refresh after Debounce
			drift      <-chan time.Time // a drift pass once OVSDB is quiet
			driftLimit time.Time        // the latest a drift pass may wait for quiet
			waited     bool             // a pass that waits for the writer is due
		)
	wait:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-r.kick:
				waited = true
			case <-retry:
				waited = true
			case <-resync:
				waited = true
			case <-changes:
				changes = r.c.Changes()
				if refresh == nil {
					// At least Debounce, and at least four times the last refresh's cost, so
					// that a stream of changes never keeps more than a fifth of a CPU busy
					// recomputing statuses (a refresh at 10,000 ports takes ~0.1 s).
					refresh = time.After(max(r.opts.Debounce, 4*r.lastRefreshCost()))
				}
				if err != nil {
					continue // in backoff: the retry is the next pass
				}
				drift = r.nextLook(&driftLimit)
			case <-refresh:
				refresh = nil
				r.refresh()
			case <-drift:
				next := r.c.Changes()
				// Past MaxDriftDelay since the first change, the look waits for the writer's
				// turn instead of giving way to a busy writer.
				overdue := !driftLimit.IsZero() && !time.Now().Before(driftLimit)
				ran, perr := r.reconcile(ctx, overdue)
				if ran {
					changes, err = next, perr
					break wait
				}
				// Another writer is committing, or waiting for ovs-vswitchd to apply its
				// writes: look again later, by MaxDriftDelay at the latest; the changes it
				// causes refresh the statuses meanwhile.
				drift = r.nextLook(&driftLimit)
			}
			if waited {
				changes = r.c.Changes()
				err = r.Reconcile(ctx)
				break wait
			}
		}
	}
}

// nextLook arms the next drift look: after DriftDelay, and no later than *limit, which it sets
// to MaxDriftDelay from now when unset (the first change or declined look since the last pass).
func (r *Reconciler) nextLook(limit *time.Time) <-chan time.Time {
	now := time.Now()
	if limit.IsZero() {
		*limit = now.Add(r.opts.MaxDriftDelay)
	}
	return time.After(max(0, min(r.opts.DriftDelay, limit.Sub(now))))
}

// Reconcile runs one pass: it prunes the owner's rows that are no longer desired and ensures
// the desired ones, in one transaction, then refreshes the statuses. An *ovsdb.ApplyError
// (ovs-vswitchd refused some interfaces) is not a failure of the pass: those interfaces get
// State Error and nil is returned. Nor is the refusal of single objects (see the package
// documentation): they are left out of the transaction, get State Error with the refusal, the
// rest is committed, LastError reports them and nil is returned. Any other error is returned and
// also recorded in the status of the objects that are not ready.
func (r *Reconciler) Reconcile(ctx context.Context) error {
	_, err := r.reconcile(ctx, true)
	return err
}

// reconcile runs one pass through Options.Writer (waiting for it or not, see Writer.Pass) and
// reports whether it ran.
func (r *Reconciler) reconcile(ctx context.Context, wait bool) (ran bool, err error) {
	if r.opts.OnPass != nil {
		start := time.Now()
		defer func() {
			if ran {
				r.opts.OnPass(time.Since(start), err)
			}
		}()
	}
	if r.opts.Writer == nil {
		return true, r.pass(ctx)
	}
	return r.opts.Writer.Pass(ctx, wait, r.pass)
}
