package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
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
	// that look for drift do not wait: when another writer holds the turn they only refresh
	// the statuses and look again after DriftDelay.
	Writer Writer
	// OnPass, if set, is called after every pass with its duration and error.
	OnPass func(d time.Duration, err error)
	// OnChange, if set, is called (from Run's goroutine, or the caller of Reconcile) with the
	// statuses that changed, removed objects reported with an empty State. It must not block.
	OnChange func([]model.Status)
}

// Writer serialises writers of OVSDB (vswitchd/writer.Writer implements it).
type Writer interface {
	// Pass runs pass as the only writer and returns its error. With wait false it returns
	// (false, nil) at once, without running pass, when another writer holds the turn; with
	// wait true it waits, failing with ctx's error if ctx ends first.
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
	version     int64 // incremented by every Update that changes desired
	gen         int64 // 0 until the first pass
	genVer      int64 // version gen was computed for
	applied     int64 // version of the last successful pass, -1 before any
	status      map[string]model.Status
	passErr     error
	objErr      map[string]string // status key → why the last pass left that object out
	watch       chan struct{}
	lastErr     error  // error of the last pass, nil after a successful one
	down        string // why ovs-vswitchd is known not to run; "" when it runs or nobody knows
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
		desired: desired, applied: -1, status: map[string]model.Status{}, watch: make(chan struct{})}
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
	out := slices.Collect(maps.Values(r.status))
	slices.SortFunc(out, func(a, b model.Status) int {
		if a.Kind != b.Kind {
			return cmpString(string(a.Kind), string(b.Kind))
		}
		return cmpString(a.Name, b.Name)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
				now := time.Now()
				if driftLimit.IsZero() {
					driftLimit = now.Add(r.opts.MaxDriftDelay)
				}
				drift = time.After(max(0, min(r.opts.DriftDelay, driftLimit.Sub(now))))
			case <-refresh:
				refresh = nil
				r.refresh()
			case <-drift:
				next := r.c.Changes()
				ran, perr := r.reconcile(ctx, false)
				if ran {
					changes, err = next, perr
					break wait
				}
				// Another writer is committing (and may wait seconds for ovs-vswitchd): look
				// again later; the changes it causes refresh the statuses meanwhile.
				drift = time.After(r.opts.DriftDelay)
			}
			if waited {
				changes = r.c.Changes()
				err = r.Reconcile(ctx)
				break wait
			}
		}
	}
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

// pass is the body of Reconcile, run as the only writer.
func (r *Reconciler) pass(ctx context.Context) error {
	r.mu.Lock()
	desired, version := r.desired, r.version
	r.mu.Unlock()

	owned := r.c.Owned()
	desired, unheld := r.merge(desired, owned)
	ownedGlobal, err := r.c.OwnedGlobal(ctx)
	if err != nil {
		return r.fail(fmt.Errorf("reconcile: reading owned other_config: %w", err))
	}
	gen := r.generation(owned, version)

	want := wanted(desired)
	have := map[string]bool{}
	for _, o := range owned {
		have[tableKind(o.Table)+"/"+o.Name] = true
	}
	var deleted, missing []string
	var items []item
	// Deletions first: stale ports, then stale bridges, then other_config keys.
	for _, o := range owned {
		k := tableKind(o.Table) + "/" + o.Name
		if o.Table == "Port" && !want[k] && !want["bridge/"+o.Name] {
			items = append(items, item{kind: model.KindPort, name: o.Name, del: true,
				add: func(t *ovsdb.Txn) { t.DeletePort("", o.Name) }})
			deleted = append(deleted, k)
		}
	}
	for _, o := range owned {
		if k := "bridge/" + o.Name; o.Table == "Bridge" && !want[k] {
			items = append(items, item{kind: model.KindBridge, name: o.Name, del: true,
				add: func(t *ovsdb.Txn) { t.DeleteBridge(o.Name) }})
			deleted = append(deleted, k)
		}
	}
	var unset []string
	for k := range ownedGlobal {
		if _, ok := desired.OtherConfig[k]; !ok {
			unset = append(unset, k)
		}
	}
	slices.Sort(unset)
	if len(unset) > 0 {
		items = append(items, item{kind: kindGlobal, name: ".", del: true,
			add: func(t *ovsdb.Txn) { t.UnsetGlobal(unset...) }})
		deleted = append(deleted, "other_config/"+fmt.Sprint(unset))
	}
	if len(desired.OtherConfig) > 0 {
		items = append(items, item{kind: kindGlobal, name: ".",
			add: func(t *ovsdb.Txn) { t.SetGlobal(desired.OtherConfig) }})
	}
	for _, b := range desired.Bridges {
		if _, left := unheld[b.Name]; !left {
			items = append(items, item{kind: model.KindBridge, name: b.Name, ifaces: []string{b.Name},
				add: func(t *ovsdb.Txn) { t.EnsureBridge(writer.BridgeSpec(b), nil) }})
			if !have["bridge/"+b.Name] {
				missing = append(missing, "bridge/"+b.Name)
			}
		}
		for _, p := range b.Ports {
			it := item{kind: model.KindPort, name: p.Name, bridge: b.Name,
				add: func(t *ovsdb.Txn) { t.EnsurePort(writer.PortSpec(b.Name, p)) }}
			for _, in := range p.Interfaces {
				it.ifaces = append(it.ifaces, in.Name)
			}
			items = append(items, it)
			if !have["port/"+p.Name] {
				missing = append(missing, "port/"+p.Name)
			}
		}
	}

	res, refused, err := r.commitIsolated(ctx, gen, items)
	var applyErr *ovsdb.ApplyError
	if err != nil && !errors.As(err, &applyErr) {
		return r.fail(fmt.Errorf("reconcile: pass (generation %d): %w", gen, err))
	}
	r.mu.Lock()
	drift := r.applied == version
	r.applied = version
	r.mu.Unlock()
	if res != nil && res.Ops > 0 {
		switch {
		case drift:
			r.log.Warn("reconcile: repaired drift", "generation", gen, "recreated", logList(missing),
				"pruned", logList(deleted), "changed_interfaces", logList(ifaceNames(res.Interfaces)), "ops", res.Ops)
		default:
			r.log.Info("reconcile: applied desired state", "generation", gen, "created", logList(missing),
				"pruned", logList(deleted), "ops", res.Ops)
		}
	}
	objErr, partial := refusedStatus(refused)
	if partial != nil {
		partial = fmt.Errorf("reconcile: pass (generation %d) applied everything else: %w", gen, partial)
		r.log.Warn("reconcile: objects refused, the rest applied", "generation", gen, "err", partial)
	}
	r.mu.Lock()
	r.passErr, r.lastErr, r.objErr = nil, partial, objErr
	r.mu.Unlock()
	r.refresh()
	return nil
}

// merge returns desired plus Options.Extra's objects (desired itself when there are none), and
// Options.Unheld's bridges among them.
func (r *Reconciler) merge(desired config.DesiredState, owned []ovsdb.OwnedRow) (config.DesiredState, map[string]string) {
	if r.opts.Extra == nil {
		return desired, nil
	}
	extra := r.opts.Extra(owned)
	if len(extra) == 0 {
		return desired, nil
	}
	var unheld map[string]string
	if r.opts.Unheld != nil {
		unheld = r.opts.Unheld(extra)
	}
	out := config.DesiredState{OtherConfig: desired.OtherConfig, Bridges: slices.Clone(desired.Bridges)}
	idx := map[string]int{}
	for i, b := range out.Bridges {
		idx[b.Name] = i
	}
	touched := map[int]bool{}
	for _, b := range extra {
		i, ok := idx[b.Name]
		if !ok {
			idx[b.Name] = len(out.Bridges)
			out.Bridges = append(out.Bridges, b)
			continue
		}
		if len(b.Ports) == 0 {
			continue
		}
		if !touched[i] {
			out.Bridges[i].Ports = slices.Clone(out.Bridges[i].Ports)
			touched[i] = true
		}
		out.Bridges[i].Ports = append(out.Bridges[i].Ports, b.Ports...)
	}
	for i := range touched {
		slices.SortFunc(out.Bridges[i].Ports, func(a, b model.Port) int { return cmpString(a.Name, b.Name) })
	}
	slices.SortFunc(out.Bridges, func(a, b model.Bridge) int { return cmpString(a.Name, b.Name) })
	return out, unheld
}

// Generation returns the generation the reconciler tags rows with (at least 1), for other
// writers of the owner's rows.
func (r *Reconciler) Generation() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.gen, 1)
}

// Counts returns how many objects are in each state (cheaper than Status: no copy, no sort).
func (r *Reconciler) Counts() map[model.State]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[model.State]int{}
	for _, s := range r.status {
		out[s.State]++
	}
	return out
}

// StatusOf returns the status of one object by key ("port/NAME"…).
func (r *Reconciler) StatusOf(key string) (model.Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.status[key]
	return s, ok
}

// LastError returns the error of the last pass, nil when it succeeded (or none ran yet).
func (r *Reconciler) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// SetDown tells the reconciler that ovs-vswitchd is not running (why, non-empty) or runs again
// (""). While it is down every interface's status is an error with that message, and the
// statuses of bridges and ports follow.
func (r *Reconciler) SetDown(why string) {
	r.mu.Lock()
	changed := r.down != why
	r.down = why
	r.mu.Unlock()
	if changed {
		r.refresh()
	}
}

// lastRefreshCost is how long the last status refresh took.
func (r *Reconciler) lastRefreshCost() time.Duration { return time.Duration(r.refreshCost.Load()) }

// Refresh recomputes the statuses from the client's cache now (for a writer that just
// changed rows and wants the statuses to show it).
func (r *Reconciler) Refresh() { r.refresh() }

// generation returns the generation for the desired state version: one more than the highest
// owned generation on the first pass, incremented when the version changes.
func (r *Reconciler) generation(owned []ovsdb.OwnedRow, version int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen == 0 {
		var hi int64
		for _, o := range owned {
			hi = max(hi, o.Generation)
		}
		r.gen, r.genVer = hi+1, version
	} else if r.genVer != version {
		r.gen++
		r.genVer = version
	}
	return r.gen
}

func (r *Reconciler) fail(err error) error {
	r.mu.Lock()
	r.passErr, r.lastErr = err, err
	r.mu.Unlock()
	r.refresh()
	return err
}

// refresh recomputes every status from the client's cache and notifies watchers of changes.
func (r *Reconciler) refresh() {
	// One refresh at a time: a slower one computed from an older cache must not overwrite
	// the result of a newer one.
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	start := time.Now()
	defer func() { r.refreshCost.Store(int64(time.Since(start))) }()
	r.mu.Lock()
	desired, passErr, down, objErr := r.desired, r.passErr, r.down, r.objErr
	r.mu.Unlock()
	desired, unheld := r.merge(desired, nil)

	lookup := r.c.Interface
	if bulk, ok := r.c.(interface {
		InterfaceStates() map[string]ovsdb.InterfaceState
	}); ok { // one pass over the cache instead of a copied row per interface
		all := bulk.InterfaceStates()
		lookup = func(name string) (ovsdb.InterfaceState, error) {
			if st, ok := all[name]; ok {
				return st, nil
			}
			return ovsdb.InterfaceState{}, ovsdb.ErrNotFound
		}
	}
	var bridgeErrs map[string]string // bridges ovs-vswitchd failed to create
	if be, ok := r.c.(interface{ BridgeErrors() map[string]string }); ok && down == "" {
		bridgeErrs = be.BridgeErrors()
	}
	next := make(map[string]model.Status, len(r.status))
	put := func(s model.Status) { next[s.Key()] = s }
	for _, b := range desired.Bridges {
		local := r.ifaceStatus(lookup, b.Name, b.Name, passErr, down)
		bs := model.Status{Kind: model.KindBridge, Name: b.Name, State: local.State, Error: local.Error}
		failed, bridgeFailed := bridgeErrs[b.Name]
		if bridgeFailed && bs.State == model.StatePending {
			bs.State, bs.Error = model.StateError, failed
		}
		if why, left := unheld[b.Name]; left {
			bs.State, bs.Error = model.StateError, why
		}
		put(refusedAs(bs, objErr))
		for _, p := range b.Ports {
			ps := model.Status{Kind: model.KindPort, Name: p.Name, Bridge: b.Name, State: model.StateReady}
			if msg, ok := objErr[ps.Key()]; ok {
				ps.State, ps.Error = model.StateError, msg
			}
			for _, i := range p.Interfaces {
				is := r.ifaceStatus(lookup, b.Name, i.Name, passErr, down)
				if bridgeFailed && is.State == model.StatePending {
					is.State, is.Error = model.StateError, fmt.Sprintf("its bridge %q does not exist in ovs-vswitchd: %s", b.Name, failed)
				}
				is = refusedAs(is, objErr)
				put(is)
				switch {
				case is.State == model.StateError && ps.State != model.StateError:
					ps.State, ps.Error = model.StateError, is.Error
				case is.State == model.StatePending && ps.State == model.StateReady:
					ps.State = model.StatePending
				}
			}
			put(ps)
		}
	}

	r.mu.Lock()
	var changed []model.Status
	for k, s := range next {
		if old, ok := r.status[k]; !ok || old != s {
			changed = append(changed, s)
		}
	}
	for k, s := range r.status {
		if _, ok := next[k]; !ok {
			changed = append(changed, model.Status{Kind: s.Kind, Name: s.Name, Bridge: s.Bridge})
		}
	}
	if len(changed) == 0 {
		r.mu.Unlock()
		return
	}
	r.status = next
	close(r.watch)
	r.watch = make(chan struct{})
	r.mu.Unlock()
	if r.opts.OnChange != nil {
		slices.SortFunc(changed, func(a, b model.Status) int { return cmpString(a.Key(), b.Key()) })
		r.opts.OnChange(changed)
	}
}

func (r *Reconciler) ifaceStatus(lookup func(string) (ovsdb.InterfaceState, error), bridge, name string, passErr error, down string) model.Status {
	s := model.Status{Kind: model.KindInterface, Name: name, Bridge: bridge, State: model.StatePending}
	st, err := lookup(name)
	if err == nil && !st.Owned {
		err = ovsdb.ErrNotOwned // a row of someone else's with our name tells nothing about ours
	}
	switch {
	case err == nil && st.Error != "":
		s.State, s.Error = model.StateError, st.Error
	case err == nil && st.Ofport > 0:
		s.State, s.Ofport = model.StateReady, st.Ofport
	case err == nil && st.Ofport < 0:
		s.State, s.Error = model.StateError, "ovs-vswitchd could not set it up (ofport -1)"
	}
	if s.State == model.StatePending && passErr != nil {
		s.State, s.Error = model.StateError, passErr.Error()
	}
	if down != "" && s.State != model.StateError {
		s.State, s.Ofport, s.Error = model.StateError, 0, down
	}
	return s
}

// refusedAs returns s as an error with the reason the last pass left its object out, if it did.
func refusedAs(s model.Status, objErr map[string]string) model.Status {
	if msg, ok := objErr[s.Key()]; ok {
		s.State, s.Ofport, s.Error = model.StateError, 0, msg
	}
	return s
}

func wanted(d config.DesiredState) map[string]bool {
	w := map[string]bool{}
	for _, b := range d.Bridges {
		w["bridge/"+b.Name] = true
		w["port/"+b.Name] = true // the bridge's local port
		w["interface/"+b.Name] = true
		for _, p := range b.Ports {
			w["port/"+p.Name] = true
			for _, i := range p.Interfaces {
				w["interface/"+i.Name] = true
			}
		}
	}
	return w
}

func tableKind(table string) string {
	switch table {
	case "Bridge":
		return string(model.KindBridge)
	case "Port":
		return string(model.KindPort)
	case "Interface":
		return string(model.KindInterface)
	}
	return table
}

func ifaceNames(states []ovsdb.InterfaceState) []string {
	var out []string
	for _, s := range states {
		out = append(out, s.Name)
	}
	return out
}
