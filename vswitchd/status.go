package vswitchd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// subscriberBuffer is how many change sets a subscriber may lag behind before it is dropped
// (its channel closed), so a stuck watcher never slows the daemon down.
const subscriberBuffer = 256

type subscriber struct {
	ch   chan []model.Status
	once sync.Once
}

func (s *subscriber) end() { s.once.Do(func() { close(s.ch) }) }

// statusHub is where statuses leave the daemon: it reads them from the reconciler, overlays
// the health of each object's plugin, hands every change to the watch subscribers and the
// Observer, and answers WaitReady. It owns the subscribers (under its own lock); it never
// writes OVSDB.
type statusHub struct {
	rec *reconcile.Reconciler // set once by New, before anything runs
	// overlay returns the statuses with their plugin's health applied (plugin errors win).
	overlay func([]model.Status) []model.Status
	// managed reports whether a key names an object the Daemon manages, whatever its status.
	managed func(key string) bool
	// unattached returns the statuses of the objects the reconciler does not know (the
	// configuration's ports not attached by their plugin); nil: none.
	unattached func() []model.Status
	observer   Observer // nil: none
	log        *slog.Logger

	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

func newStatusHub(log *slog.Logger, obs Observer, overlay func([]model.Status) []model.Status, managed func(string) bool) *statusHub {
	return &statusHub{log: log, observer: obs, overlay: overlay, managed: managed, subs: map[*subscriber]struct{}{}}
}

// all returns every managed object's status (see reconcile.Reconciler.Status), and the
// configuration's plugin-typed ports that are not attached (error `not attached: <why>`),
// which the reconciler does not know, sorted by kind then name.
func (h *statusHub) all() []model.Status {
	out := h.overlay(h.rec.Status())
	if h.unattached == nil {
		return out
	}
	extra := h.unattached()
	if len(extra) == 0 {
		return out
	}
	out = append(out, extra...)
	slices.SortFunc(out, func(a, b model.Status) int {
		if a.Kind != b.Kind {
			return strings.Compare(string(a.Kind), string(b.Kind))
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// of returns the reconciler's status of key, with the health of the object's plugin.
func (h *statusHub) of(key string) (model.Status, bool) {
	s, ok := h.rec.StatusOf(key)
	if ok {
		s = h.overlay([]model.Status{s})[0]
	}
	return s, ok
}

// orPending returns the status of key, or a pending one (with its plugin's health) when the
// reconciler has none yet.
func (h *statusHub) orPending(key string, kind model.Kind, name, bridge string) model.Status {
	if s, ok := h.of(key); ok {
		return s
	}
	return h.overlay([]model.Status{{Kind: kind, Name: name, Bridge: bridge, State: model.StatePending}})[0]
}

// subscribe: see Daemon.Subscribe.
func (h *statusHub) subscribe(ctx context.Context) ([]model.Status, <-chan []model.Status) {
	s := &subscriber{ch: make(chan []model.Status, subscriberBuffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	snapshot := h.all()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		s.end()
	}()
	return snapshot, s.ch
}

// publish hands changed statuses, with their plugins' health, to every subscriber and the
// Observer. A subscriber that fell subscriberBuffer change sets behind is dropped.
func (h *statusHub) publish(changed []model.Status) {
	changed = h.overlay(changed)
	h.mu.Lock()
	for s := range h.subs {
		select {
		case s.ch <- changed:
		default:
			delete(h.subs, s)
			s.end()
			h.log.Warn("status subscriber fell behind; its stream is closed (it may subscribe again)")
		}
	}
	h.mu.Unlock()
	if h.observer != nil {
		h.observer.Statuses(h.rec.Counts())
	}
}

// close ends every subscription.
func (h *statusHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.end()
	}
	h.subs = map[*subscriber]struct{}{}
}

// waitReady: see Daemon.WaitReady.
func (h *statusHub) waitReady(ctx context.Context, keys []string) ([]model.Status, error) {
	for {
		watch := h.rec.Watch()
		out := make([]model.Status, 0, len(keys))
		ready := true
		for _, k := range keys {
			s, ok := h.of(k)
			if !ok && h.managed(k) { // applied (or waiting for its plugin), not yet in the reconciler's statuses
				kind, name, _ := strings.Cut(k, "/")
				s, ok = h.overlay([]model.Status{{Kind: model.Kind(kind), Name: name, State: model.StatePending}})[0], true
			}
			if !ok {
				return out, fmt.Errorf("%w: %s is not managed by ovsplane (keys are bridge/NAME, port/NAME or interface/NAME)", model.ErrNotFound, k)
			}
			out = append(out, s)
			switch s.State {
			case model.StateError:
				return out, fmt.Errorf("%w: %s: %s", model.ErrFailed, k, s.Error)
			case model.StatePending:
				ready = false
			}
		}
		if ready {
			return out, nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

// Subscribe returns the current statuses and a channel of the changes after them (removed
// objects have an empty State). The channel is closed when ctx ends, when the Daemon closes,
// or when the subscriber fell subscriberBuffer change sets behind; call Subscribe again then.
func (d *Daemon) Subscribe(ctx context.Context) ([]model.Status, <-chan []model.Status) {
	return d.hub.subscribe(ctx)
}

// Status returns every managed object's status (see reconcile.Reconciler.Status).
func (d *Daemon) Status() []model.Status { return d.hub.all() }

// WaitReady waits until every object named by keys ("port/NAME", "bridge/NAME",
// "interface/NAME") is ready. It fails at once for an unknown key, and as soon as one of them
// is in error (naming it and ovs-vswitchd's message).
func (d *Daemon) WaitReady(ctx context.Context, keys []string) ([]model.Status, error) {
	return d.hub.waitReady(ctx, keys)
}

// Watch returns a channel closed at the next change of any status.
func (d *Daemon) Watch() <-chan struct{} { return d.rec.Watch() }

// Health reports the daemon's state.
func (d *Daemon) Health(context.Context) model.Health {
	h := model.Health{Version: model.Version, Mode: d.opts.Mode, OVSDBConnected: d.c.Connected(), Objects: map[model.State]int{}}
	h.PluginConflicts = d.globals.conflictList()
	if h.OVSDBConnected {
		h.OVSDBEndpoint = d.c.Endpoint()
	}
	for st, n := range d.rec.Counts() {
		h.Objects[st] = n
	}
	if err := d.rec.LastError(); err != nil {
		h.LastError = err.Error()
	}
	h.Degraded = d.degraded(h.OVSDBConnected)
	return h
}

// degraded returns Health.Degraded: OVSDB not connected, ovs-vswitchd known not to run, then
// Options.Degraded's lines.
func (d *Daemon) degraded(connected bool) []string {
	var out []string
	if !connected {
		out = append(out, "not connected to OVSDB (reconnecting)")
	}
	if d.live != nil {
		if why := d.live.downReason(); why != "" {
			out = append(out, why)
		}
	}
	if d.opts.Degraded != nil {
		out = append(out, d.opts.Degraded()...)
	}
	return out
}

// WatchedStatuses returns the watcher plugins' statuses of the interfaces they watch, managed
// or not (Options.WatchedStatuses), sorted by plugin then interface; none without it.
func (d *Daemon) WatchedStatuses() []model.WatchedStatus {
	if d.opts.WatchedStatuses == nil {
		return nil
	}
	return d.opts.WatchedStatuses()
}

// KickFacts asks for the plugins' facts to be refreshed soon (Open_vSwitch.other_config
// changed; see Options.RefreshFacts); without RefreshFacts it does nothing. It never blocks.
func (d *Daemon) KickFacts() {
	if d.facts != nil {
		d.facts.Kick()
	}
}
