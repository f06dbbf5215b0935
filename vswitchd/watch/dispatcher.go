package watch

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Watcher is one plugin's watcher as the plugin host reports it (host.Watchers and the
// plugin's status).
type Watcher struct {
	Plugin  string
	Filter  api.WatchFilter
	Watcher api.Watcher
	// Running is true while the plugin serves calls. Instance identifies its process: a new
	// Instance (a restart) or a new Filter gets a fresh snapshot, and a new Instance starts
	// with no statuses.
	Running  bool
	Instance string
	// Configured counts the Configure calls the plugin accepted (host.Status.Configured): a
	// new value (a new configuration or new facts, same process) gets a fresh snapshot, so the
	// plugin computes its statuses again; they stay until the snapshot ends.
	Configured uint64
}

// Feed is what the Dispatcher needs from the OVSDB client: *ovsdb.InterfaceWatch. A Feed may
// also have a Pause method (as *ovsdb.InterfaceWatch does): the Dispatcher calls it when it
// goes idle, and reads nothing until a watcher is configured, then a Full update (Pause must
// make the next Collect Full).
type Feed interface {
	// Ready holds a token while Collect has something to say.
	Ready() <-chan struct{}
	// Collect returns the interfaces that changed since the last call (all of them when full).
	Collect(full bool) ovsdb.InterfaceUpdate
}

// Applier writes a watcher's other_config changes: the daemon's one OVSDB writer
// (writer.Writer.InterfaceConfig, through vswitchd.Daemon).
type Applier interface {
	InterfaceConfig(ctx context.Context, plugin string, changes []ovsdb.InterfaceConfig) error
}

// Defaults of Options.
const (
	DefaultMaxPending     = 1024
	DefaultMaxBatchEvents = 256
	DefaultMaxBatchBytes  = 1 << 20
	DefaultDebounce       = 10 * time.Millisecond
	DefaultAuditInterval  = 30 * time.Second
	DefaultRetryMin       = 100 * time.Millisecond
	DefaultRetryMax       = 5 * time.Second
	DefaultApplyTimeout   = 30 * time.Second
)

// Options configure a Dispatcher; zero fields take their defaults.
type Options struct {
	// Owner is the owner tag of the daemon's rows (ovsdb.Client.Owner); required.
	Owner string
	// PluginKey is the Port external_ids key naming the plugin that attached a port
	// (vswitchd.PluginKey); required.
	PluginKey string
	Logger    *slog.Logger
	// MaxPending bounds, per plugin, the interfaces whose state waits for delivery (see
	// queue: beyond it the plugin gets a resync instead).
	MaxPending int
	// MaxBatchEvents and MaxBatchBytes bound one batch (one event goes alone whatever its
	// size; an event is at most limits.MaxPortBytes, see classifier.newState).
	MaxBatchEvents, MaxBatchBytes int
	// Debounce is how long the Dispatcher lets a burst of changes gather before it reads the
	// cache.
	Debounce time.Duration
	// AuditInterval is the period of a full comparison of the cache with what was published
	// (for events libovsdb dropped under load).
	AuditInterval time.Duration
	// RetryMin and RetryMax bound the growing pause before a failed batch goes again.
	RetryMin, RetryMax time.Duration
	// ApplyTimeout bounds the write of one batch's other_config changes.
	ApplyTimeout time.Duration
	// MaxStatuses bounds, per plugin, the interfaces with a status (default
	// DefaultMaxStatuses): past it a status for one more interface is refused (logged, counted
	// in Stats.StatusesRefused) until the plugin clears one or an interface goes away.
	MaxStatuses int
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&o.MaxPending, DefaultMaxPending)
	setDefault(&o.MaxBatchEvents, DefaultMaxBatchEvents)
	setDefault(&o.MaxBatchBytes, DefaultMaxBatchBytes)
	setDefault(&o.Debounce, DefaultDebounce)
	setDefault(&o.AuditInterval, DefaultAuditInterval)
	setDefault(&o.RetryMin, DefaultRetryMin)
	setDefault(&o.RetryMax, max(o.RetryMin, DefaultRetryMax))
	setDefault(&o.ApplyTimeout, DefaultApplyTimeout)
	setDefault(&o.MaxStatuses, DefaultMaxStatuses)
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Stats are one plugin's delivery counters and gauges.
type Stats struct {
	Plugin string
	// Pending is the number of interfaces whose state waits; PendingHigh the most there ever
	// were; MaxPending the bound.
	Pending, PendingHigh, MaxPending int
	// Known is the number of interfaces the plugin was told about and not told are gone.
	Known int
	// Resyncing is true while a snapshot is asked for or under way.
	Resyncing bool
	// Batches and Events delivered; Failures of OnPortEvents; Resyncs completed.
	Batches, Events, Failures, Resyncs uint64
	// Overflows of the bound, and the states they dropped (the resync covers them).
	Overflows, Dropped uint64
	// Coalesced counts states replaced by a newer one before delivery.
	Coalesced uint64
	// Changes are the interface changes written; Ignored the keys refused (foreign keys,
	// interfaces not live in the batch).
	Changes, Ignored uint64
	// Statuses counts the plugin's interface statuses by level; StatusesRefused the statuses
	// refused (an interface not live in the batch, or past Options.MaxStatuses).
	Statuses        map[api.StatusLevel]int
	StatusesRefused uint64
}

// Dispatcher delivers the interfaces OVSDB holds to the watcher plugins (see the package
// documentation). Create it with New, run it with Run, tell it the watchers with SetWatchers.
// Its methods are safe for concurrent use.
type Dispatcher struct {
	feed  Feed
	apply Applier
	opts  Options
	cls   classifier
	log   *slog.Logger
	sync  chan struct{} // SetWatchers was called

	mu   sync.Mutex
	want []Watcher
	cur  map[string]*state // every interface on a bridge, by name (none while idle)
	// idle: no watcher plugin is configured, so cur is kept empty (nothing reads it: at
	// 10,000 interfaces it would hold several MB for nobody); the first collect once a watcher
	// is configured reads the cache whole.
	idle    bool
	seq     uint64 // order of the states in cur
	plugins map[string]*plugin
}

// plugin is one watcher plugin's queue and delivery goroutine.
type plugin struct {
	w       Watcher
	q       *queue
	kick    chan struct{} // something to deliver
	restart chan struct{} // a fresh snapshot: retry now
	stop    context.CancelFunc
	done    chan struct{}
	// statuses are the plugin's statuses by interface (api.InterfaceChange.Status).
	statuses map[string]api.InterfaceStatus
}

// New returns a Dispatcher reading feed and writing other_config changes through apply.
func New(feed Feed, apply Applier, opts Options) *Dispatcher {
	opts.defaults()
	return &Dispatcher{feed: feed, apply: apply, opts: opts, cls: classifier{owner: opts.Owner, pluginKey: opts.PluginKey},
		log: opts.Logger, sync: make(chan struct{}, 1), cur: map[string]*state{}, plugins: map[string]*plugin{}}
}

// SetWatchers replaces the set of watcher plugins: new ones and restarted ones (a new
// Instance, or a new Filter) get a snapshot, removed ones stop. It does not block: Run applies
// the set.
func (d *Dispatcher) SetWatchers(ws []Watcher) {
	d.mu.Lock()
	d.want = slices.Clone(ws)
	d.mu.Unlock()
	select {
	case d.sync <- struct{}{}:
	default:
	}
}

// Stats returns every watcher plugin's counters, by plugin name.
func (d *Dispatcher) Stats() []Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Stats, 0, len(d.plugins))
	for name, p := range d.plugins {
		s := p.q.snapshotStats()
		s.Plugin = name
		p.statusCounts(&s)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Stats) int { return cmp.Compare(a.Plugin, b.Plugin) })
	return out
}

// Interfaces returns how many interfaces the Dispatcher holds (every interface on a bridge
// while a watcher plugin is configured, none otherwise).
func (d *Dispatcher) Interfaces() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cur)
}

// Run reads the cache (all of it first), follows its changes and delivers them until ctx
// ends; then it stops every delivery and returns ctx's error.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer d.stopAll()
	d.collect(true)
	d.syncWatchers(ctx)
	audit := time.NewTicker(d.opts.AuditInterval)
	defer audit.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.sync:
			d.syncWatchers(ctx)
		case <-audit.C:
			d.collect(true)
		case <-d.feed.Ready():
			select { // let the burst gather
			case <-time.After(d.opts.Debounce):
			case <-ctx.Done():
				return ctx.Err()
			}
			d.collect(false)
		}
	}
}

// collect reads the feed and offers every interface whose state changed to the running
// plugins' queues, in order.
func (d *Dispatcher) collect(full bool) {
	pauser, pausable := d.feed.(interface{ Pause() })
	d.mu.Lock()
	if pausable && d.idle && len(d.want) == 0 && len(d.plugins) == 0 {
		d.mu.Unlock()
		return // the feed is paused: nothing to read
	}
	full = full || d.idle && len(d.want) > 0 // resuming: cur is empty
	d.mu.Unlock()
	upd := d.feed.Collect(full) // a feed that cannot pause is drained even while idle, so its dirty sets stay small
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.want) == 0 && len(d.plugins) == 0 {
		if !d.idle {
			d.cur, d.idle = map[string]*state{}, true // a new map: clear would keep the old one's room
			if pausable {
				pauser.Pause()
			}
		}
		return
	}
	if !upd.Full && d.idle {
		return // SetWatchers came after this Collect: the next one is full
	}
	d.idle = false
	var seen map[string]struct{}
	if upd.Full {
		seen = make(map[string]struct{}, len(upd.Views))
	}
	for _, v := range upd.Views {
		if seen != nil {
			seen[v.Name] = struct{}{}
		}
		s, cut := d.cls.newState(v)
		old := d.cur[v.Name]
		if old != nil && old.same(s) {
			continue
		}
		if cut {
			d.log.Warn("watchers get this interface without its options, other_config and external_ids: they exceed the size of a port",
				"interface", v.Name, "limit", "limits.MaxPortBytes")
		}
		d.cur[v.Name] = s
		d.seq++
		s.seq = d.seq
		for _, p := range d.plugins {
			if p.w.Running {
				p.q.offer(v.Name, s, !matches(p.w.Filter, s), d.seq)
			}
		}
	}
	gone := upd.Gone
	if upd.Full {
		for name := range d.cur {
			if _, ok := seen[name]; !ok {
				gone = append(gone, name)
			}
		}
	}
	for _, name := range gone {
		old := d.cur[name]
		if old == nil {
			continue
		}
		delete(d.cur, name)
		d.dropStatuses(name)
		d.seq++
		for _, p := range d.plugins {
			if p.w.Running {
				p.q.offer(name, old, true, d.seq)
			}
		}
	}
	for _, p := range d.plugins {
		if p.q.ready() || p.q.wantResync {
			kick(p.kick)
		}
	}
}

// syncWatchers applies the last SetWatchers.
func (d *Dispatcher) syncWatchers(ctx context.Context) {
	d.mu.Lock()
	resume := d.idle && len(d.want) > 0
	d.mu.Unlock()
	if resume { // the snapshot needs every interface
		d.collect(true)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	wanted := map[string]bool{}
	for _, w := range d.want {
		wanted[w.Plugin] = true
		p := d.plugins[w.Plugin]
		if p == nil {
			pctx, cancel := context.WithCancel(ctx)
			p = &plugin{q: newQueue(d.opts.MaxPending), kick: make(chan struct{}, 1), restart: make(chan struct{}, 1),
				stop: cancel, done: make(chan struct{}), statuses: map[string]api.InterfaceStatus{}}
			d.plugins[w.Plugin] = p
			go d.deliver(pctx, p)
		}
		restarted := !w.Running || p.w.Instance != w.Instance
		fresh := w.Running && (!p.w.Running || restarted || !sameFilter(p.w.Filter, w.Filter) || p.w.Configured != w.Configured)
		if restarted {
			clear(p.statuses) // the process that set them is gone
		}
		p.w = w
		if fresh {
			d.log.Info("watcher plugin gets a snapshot", "plugin", w.Plugin, "instance", w.Instance)
			p.q.startResync(d.namesFor(w.Filter))
			kick(p.restart)
			kick(p.kick)
		}
	}
	for name, p := range d.plugins {
		if !wanted[name] {
			p.stop()
			delete(d.plugins, name)
		}
	}
}

// namesFor returns the interfaces f selects, in the order of their last change; d.mu held.
func (d *Dispatcher) namesFor(f api.WatchFilter) []string {
	type named struct {
		name string
		seq  uint64
	}
	var all []named
	for name, s := range d.cur {
		if matches(f, s) {
			all = append(all, named{name, s.seq})
		}
	}
	slices.SortFunc(all, func(a, b named) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]string, len(all))
	for i, n := range all {
		out[i] = n.name
	}
	return out
}

// stopAll stops every delivery goroutine and waits for them.
func (d *Dispatcher) stopAll() {
	d.mu.Lock()
	ps := make([]*plugin, 0, len(d.plugins))
	for name, p := range d.plugins {
		p.stop()
		ps = append(ps, p)
		delete(d.plugins, name)
	}
	d.mu.Unlock()
	for _, p := range ps {
		<-p.done
	}
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
