package watch

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// countingFeed is a fakeFeed that counts its full updates.
type countingFeed struct {
	*fakeFeed
	fulls int
}

func (f *countingFeed) Collect(full bool) ovsdb.InterfaceUpdate {
	if full {
		f.fulls++
	}
	return f.fakeFeed.Collect(full)
}

// recorder is a watcher that keeps the interfaces of the events it gets.
type recorder struct {
	mu  sync.Mutex
	got []string
	end chan struct{} // closed at the end of the first snapshot
}

func (r *recorder) OnPortEvents(_ context.Context, b api.PortEventBatch) ([]api.InterfaceChange, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range b.Events {
		r.got = append(r.got, e.Interface)
	}
	if b.ResyncDone {
		close(r.end)
	}
	return nil, nil
}

// TestIdleDispatcherKeepsNoInterfaces: with no watcher plugin configured the Dispatcher reads
// the feed but keeps no interface; once a watcher is configured it reads the feed whole, so the
// watcher's first snapshot lists every interface, those that changed while nobody watched
// included.
func TestIdleDispatcherKeepsNoInterfaces(t *testing.T) {
	feed := &countingFeed{fakeFeed: newFakeFeed()}
	for _, n := range []string{"a", "b"} {
		feed.set(ovsdb.InterfaceView{Name: n, Port: n, Bridge: "br0"})
	}
	d := New(feed, nil, Options{Owner: "o", PluginKey: "k"})
	d.collect(true)
	feed.set(ovsdb.InterfaceView{Name: "c", Port: "c", Bridge: "br0"})
	d.collect(false)
	if n := d.Interfaces(); n != 0 {
		t.Fatalf("idle Dispatcher holds %d interfaces, want 0", n)
	}

	rec := &recorder{end: make(chan struct{})}
	d.SetWatchers([]Watcher{{Plugin: "w", Watcher: rec, Running: true, Instance: "1"}})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); d.stopAll() }()
	fulls := feed.fulls
	d.syncWatchers(ctx)
	if feed.fulls != fulls+1 {
		t.Errorf("configuring a watcher read the feed whole %d times, want once", feed.fulls-fulls)
	}
	if n := d.Interfaces(); n != 3 {
		t.Errorf("with a watcher the Dispatcher holds %d interfaces, want 3", n)
	}
	select {
	case <-rec.end:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	rec.mu.Lock()
	got := slices.Sorted(slices.Values(rec.got))
	rec.mu.Unlock()
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("the watcher's snapshot lists %v, want %v", got, want)
	}

	d.SetWatchers(nil)
	d.syncWatchers(ctx)
	d.collect(false)
	if n := d.Interfaces(); n != 0 {
		t.Errorf("after its last watcher left the Dispatcher holds %d interfaces, want 0", n)
	}
}

// pausingFeed is a countingFeed that can pause (as *ovsdb.InterfaceWatch can) and counts its
// pauses and its Collects.
type pausingFeed struct {
	countingFeed
	pauses, collects int
}

func (f *pausingFeed) Pause() { f.pauses++ }

func (f *pausingFeed) Collect(full bool) ovsdb.InterfaceUpdate {
	f.collects++
	return f.countingFeed.Collect(full)
}

// TestIdleDispatcherPausesItsFeed: an idle Dispatcher pauses a feed that can pause, once, and
// reads nothing from it until a watcher is configured; then it reads it whole.
func TestIdleDispatcherPausesItsFeed(t *testing.T) {
	feed := &pausingFeed{countingFeed: countingFeed{fakeFeed: newFakeFeed()}}
	feed.set(ovsdb.InterfaceView{Name: "a", Port: "a", Bridge: "br0"})
	d := New(feed, nil, Options{Owner: "o", PluginKey: "k"})
	d.collect(true)
	d.collect(false)
	d.collect(true) // the audit
	if feed.pauses != 1 || feed.collects != 1 {
		t.Fatalf("idle Dispatcher: %d pauses, %d collects; want 1 and 1", feed.pauses, feed.collects)
	}
	rec := &recorder{end: make(chan struct{})}
	d.SetWatchers([]Watcher{{Plugin: "w", Watcher: rec, Running: true, Instance: "1"}})
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); d.stopAll() }()
	d.syncWatchers(ctx)
	if feed.fulls != 2 || d.Interfaces() != 1 {
		t.Errorf("after a watcher was configured: %d full reads (want 2), %d interfaces held (want 1)", feed.fulls, d.Interfaces())
	}
}
