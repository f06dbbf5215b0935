package watch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// fakeFeed is an in-memory Feed: the test sets and removes interfaces.
type fakeFeed struct {
	ready chan struct{}
	mu    sync.Mutex
	all   map[string]ovsdb.InterfaceView
	views []ovsdb.InterfaceView
	gone  []string
}

func newFakeFeed() *fakeFeed {
	return &fakeFeed{ready: make(chan struct{}, 1), all: map[string]ovsdb.InterfaceView{}}
}

func (f *fakeFeed) Ready() <-chan struct{} { return f.ready }

func (f *fakeFeed) Collect(full bool) ovsdb.InterfaceUpdate {
	f.mu.Lock()
	defer f.mu.Unlock()
	if full {
		f.views, f.gone = nil, nil
		return ovsdb.InterfaceUpdate{Full: true, Views: slices.Collect(maps.Values(f.all))}
	}
	u := ovsdb.InterfaceUpdate{Views: f.views, Gone: f.gone}
	f.views, f.gone = nil, nil
	return u
}

func (f *fakeFeed) set(v ovsdb.InterfaceView) {
	f.mu.Lock()
	f.all[v.Name] = v
	f.views = append(f.views, v)
	f.mu.Unlock()
	kick(f.ready)
}

func (f *fakeFeed) remove(name string) {
	f.mu.Lock()
	delete(f.all, name)
	f.gone = append(f.gone, name)
	f.mu.Unlock()
	kick(f.ready)
}

// fakeWatcher answers every batch with the statuses its answer function gives and counts the
// batches (and snapshots) it answered.
type fakeWatcher struct {
	mu      sync.Mutex
	answer  func(api.PortEvent) *api.InterfaceStatus
	extra   []api.InterfaceChange // added to the next answer only
	batches int
	resyncs int
}

func (w *fakeWatcher) OnPortEvents(_ context.Context, b api.PortEventBatch) ([]api.InterfaceChange, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batches++
	if b.ResyncDone {
		w.resyncs++
	}
	var out []api.InterfaceChange
	for _, ev := range b.Events {
		if ev.Kind == api.EventRemoved || w.answer == nil {
			continue
		}
		if st := w.answer(ev); st != nil {
			out = append(out, api.InterfaceChange{Interface: ev.Interface, Status: st})
		}
	}
	out = append(out, w.extra...)
	w.extra = nil
	return out, nil
}

func (w *fakeWatcher) setAnswer(f func(api.PortEvent) *api.InterfaceStatus) {
	w.mu.Lock()
	w.answer = f
	w.mu.Unlock()
}

func (w *fakeWatcher) count() (batches, resyncs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.batches, w.resyncs
}

type noApply struct{}

func (noApply) InterfaceConfig(context.Context, string, []ovsdb.InterfaceConfig) error { return nil }

// statusRig runs a Dispatcher on a fakeFeed with one fakeWatcher plugin "w".
type statusRig struct {
	t    *testing.T
	feed *fakeFeed
	w    *fakeWatcher
	d    *Dispatcher
	ws   Watcher
}

func newStatusRig(t *testing.T, opts Options) *statusRig {
	r := &statusRig{t: t, feed: newFakeFeed(), w: &fakeWatcher{}}
	opts.Owner, opts.PluginKey = "ovsplane", "ovsplane-plugin"
	opts.Debounce, opts.RetryMin = time.Millisecond, time.Millisecond
	r.d = New(r.feed, noApply{}, opts)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = r.d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r.ws = Watcher{Plugin: "w", Watcher: r.w, Running: true, Instance: "pid 1", Configured: 1}
	return r
}

func (r *statusRig) iface(name, br string) {
	r.feed.set(ovsdb.InterfaceView{Name: name, Port: name, Bridge: br, Type: "dpdkvhostuserclient", Ofport: 1})
}

// want waits until the statuses are exactly want ("iface=level:summary", sorted).
func (r *statusRig) want(want ...string) {
	r.t.Helper()
	testkit.Eventually(r.t, 10*time.Second, time.Millisecond, func() error {
		var got []string
		for _, s := range r.d.Statuses() {
			got = append(got, s.Interface+"="+s.Level+":"+s.Summary)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("statuses %q, want %q", got, want)
		}
		return nil
	})
}

// after runs change and waits until the plugin answered a batch after it, with nothing
// pending and no resync under way; it returns the plugin's stats then.
func (r *statusRig) after(change func()) Stats {
	r.t.Helper()
	before := r.d.Stats()[0].Batches
	change()
	var s Stats
	testkit.Eventually(r.t, 10*time.Second, time.Millisecond, func() error {
		st := r.d.Stats()
		if len(st) != 1 || st[0].Batches == before || st[0].Pending != 0 || st[0].Resyncing {
			return fmt.Errorf("stats %+v", st)
		}
		s = st[0]
		return nil
	})
	return s
}

func warn(s string) *api.InterfaceStatus {
	return &api.InterfaceStatus{Level: api.StatusWarning, Summary: s}
}

// The status store: set from answers (with where the interface is), replaced, cleared by the
// empty status, dropped when the interface goes away, refused for interfaces not in the
// batch, kept across a resync that lists the interface and dropped by one that does not, and
// all dropped when the plugin stops, restarts or goes.
func TestStatusStore(t *testing.T) {
	r := newStatusRig(t, Options{})
	r.w.setAnswer(func(ev api.PortEvent) *api.InterfaceStatus {
		if strings.HasPrefix(ev.Interface, "vhu") {
			return &api.InterfaceStatus{Level: api.StatusInfo, Summary: "accelerated by wq0.1", Details: map[string]string{"wq": "wq0.1"}}
		}
		return nil
	})
	r.iface("vhu1", "br-int")
	r.iface("vhu2", "br-int")
	r.iface("tap1", "br-int")
	r.feed.set(ovsdb.InterfaceView{Name: "own1", Port: "own1", Bridge: "br0", PortExternalIDs: map[string]string{"ovsplane-owner": "ovsplane"}})
	r.d.SetWatchers([]Watcher{r.ws})
	r.want("vhu1=info:accelerated by wq0.1", "vhu2=info:accelerated by wq0.1")
	got := r.d.Statuses()
	if g := got[0]; g.Plugin != "w" || g.Bridge != "br-int" || g.Port != "vhu1" || g.Owner != model.WatchedOwnerForeign || g.Details["wq"] != "wq0.1" {
		t.Errorf("status %+v", g)
	}
	got[0].Details["wq"] = "changed"
	if r.d.Statuses()[0].Details["wq"] != "wq0.1" {
		t.Error("Statuses hands out the store's own Details")
	}

	// Replace on a later event; clear with the empty status; other interfaces keep theirs.
	r.w.setAnswer(func(ev api.PortEvent) *api.InterfaceStatus {
		switch ev.Interface {
		case "vhu1":
			return warn("CPU copy: no DMA queue on NUMA 1")
		case "vhu2":
			return &api.InterfaceStatus{}
		}
		return nil
	})
	r.feed.set(ovsdb.InterfaceView{Name: "vhu1", Port: "vhu1", Bridge: "br-int", Type: "dpdkvhostuserclient", Ofport: 7})
	r.want("vhu1=warning:CPU copy: no DMA queue on NUMA 1", "vhu2=info:accelerated by wq0.1")
	r.feed.set(ovsdb.InterfaceView{Name: "vhu2", Port: "vhu2", Bridge: "br-int", Type: "dpdkvhostuserclient", Ofport: 8})
	r.want("vhu1=warning:CPU copy: no DMA queue on NUMA 1")

	// A status for an interface outside the batch is refused and counted.
	r.w.setAnswer(func(api.PortEvent) *api.InterfaceStatus { return nil })
	r.w.mu.Lock()
	r.w.extra = []api.InterfaceChange{{Interface: "own1", Status: warn("not in this batch")}}
	r.w.mu.Unlock()
	if s := r.after(func() { r.iface("vhu3", "br-int") }); s.StatusesRefused != 1 || s.Statuses[api.StatusWarning] != 1 || len(s.Statuses) != 1 {
		t.Errorf("after a status outside the batch: stats %+v", s)
	}
	r.want("vhu1=warning:CPU copy: no DMA queue on NUMA 1")

	// The interface goes away: its status goes.
	r.feed.remove("vhu1")
	r.want()

	// A resync (a new configuration) that lists the interface keeps its status when the plugin
	// says nothing new; a new filter that leaves it out drops it at the snapshot's end.
	r.w.setAnswer(func(ev api.PortEvent) *api.InterfaceStatus {
		if ev.Interface == "vhu3" || ev.Interface == "own1" {
			return warn("x")
		}
		return nil
	})
	r.iface("vhu3", "br-other") // moved to another bridge: a change
	r.feed.set(ovsdb.InterfaceView{Name: "own1", Port: "own1", Bridge: "br0", Ofport: 3, PortExternalIDs: map[string]string{"ovsplane-owner": "ovsplane"}})
	r.want("own1=warning:x", "vhu3=warning:x")
	if s := r.d.Statuses(); s[0].Owner != model.WatchedOwnerDaemon || s[1].Bridge != "br-other" {
		t.Errorf("statuses %+v", s)
	}
	r.w.setAnswer(func(api.PortEvent) *api.InterfaceStatus { return nil })
	_, resyncs := r.w.count()
	r.ws.Configured = 2
	r.after(func() { r.d.SetWatchers([]Watcher{r.ws}) })
	if _, n := r.w.count(); n != resyncs+1 {
		t.Errorf("%d resyncs after a new configuration, want %d", n, resyncs+1)
	}
	r.want("own1=warning:x", "vhu3=warning:x")
	r.ws.Filter = api.WatchFilter{Bridges: []string{"br-int", "br-other"}}
	r.d.SetWatchers([]Watcher{r.ws})
	testkit.EventuallyTrue(t, 10*time.Second, time.Millisecond, "a resync after a new filter", func() bool {
		_, n := r.w.count()
		return n == resyncs+2
	})
	r.want("vhu3=warning:x")

	// The plugin stops: its statuses go; running again (a new process), it starts with none.
	r.ws.Running, r.ws.Instance = false, ""
	r.d.SetWatchers([]Watcher{r.ws})
	r.want()
	r.w.setAnswer(func(api.PortEvent) *api.InterfaceStatus { return warn("y") })
	r.ws.Running, r.ws.Instance = true, "pid 2"
	r.d.SetWatchers([]Watcher{r.ws})
	r.want("tap1=warning:y", "vhu2=warning:y", "vhu3=warning:y")
	// A restart seen only as a new Instance drops the old process's statuses too.
	r.w.setAnswer(func(api.PortEvent) *api.InterfaceStatus { return nil })
	r.ws.Instance = "pid 3"
	r.d.SetWatchers([]Watcher{r.ws})
	r.want()
	r.w.setAnswer(func(api.PortEvent) *api.InterfaceStatus { return warn("z") })
	r.ws.Instance = "pid 4"
	r.d.SetWatchers([]Watcher{r.ws})
	r.want("tap1=warning:z", "vhu2=warning:z", "vhu3=warning:z")
	// The plugin leaves the configuration: all gone.
	r.d.SetWatchers(nil)
	r.want()
}

// At most Options.MaxStatuses interfaces have a status per plugin: a status for one more is
// refused and counted, while those stored are still replaced and cleared, and a freed place
// is taken by the next one.
func TestStatusStoreBound(t *testing.T) {
	r := newStatusRig(t, Options{MaxStatuses: 2})
	r.w.setAnswer(func(ev api.PortEvent) *api.InterfaceStatus { return warn("first " + ev.Interface) })
	r.iface("a", "br")
	r.iface("b", "br")
	r.d.SetWatchers([]Watcher{r.ws})
	r.want("a=warning:first a", "b=warning:first b")
	if s := r.after(func() { r.iface("c", "br") }); s.StatusesRefused != 1 || s.Statuses[api.StatusWarning] != 2 {
		t.Errorf("past the bound: stats %+v", s)
	}
	r.want("a=warning:first a", "b=warning:first b")
	r.w.setAnswer(func(ev api.PortEvent) *api.InterfaceStatus {
		if ev.Interface == "a" {
			return &api.InterfaceStatus{}
		}
		return warn("second " + ev.Interface)
	})
	r.feed.set(ovsdb.InterfaceView{Name: "b", Port: "b", Bridge: "br", Ofport: 2})
	r.want("a=warning:first a", "b=warning:second b")
	r.feed.set(ovsdb.InterfaceView{Name: "a", Port: "a", Bridge: "br", Ofport: 2})
	r.want("b=warning:second b")
	r.feed.set(ovsdb.InterfaceView{Name: "c", Port: "c", Bridge: "br", Ofport: 2})
	r.want("b=warning:second b", "c=warning:second c")
	if s := r.d.Stats()[0]; s.StatusesRefused != 1 {
		t.Errorf("stats %+v", s)
	}
}
