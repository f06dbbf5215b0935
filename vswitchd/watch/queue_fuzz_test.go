package watch

import (
	"fmt"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// FuzzQueue drives a queue with a random sequence of changes, deliveries (answered or failed),
// restarts and overflows, against a model of the truth (each interface's current state) and of
// a plugin that follows the contract (a Resync batch starts its view over). After every step:
// at most the bound pending, at most one event per interface per batch, Added only for an
// interface the plugin does not know, Changed and Removed only for one it knows. At the end,
// once every batch is answered, the plugin's view is the truth.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 200, 201, 4, 5, 250, 202, 203, 204})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200})
	f.Add([]byte{240, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 210, 220, 230})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const bound = 4
		q := newQueue(bound)
		truth := map[string]*state{}
		plugin := map[string]int{} // name → the n of the state the plugin holds
		var seq uint64
		lookup := func(n string) *state { return truth[n] }
		names := func() []string {
			var out []string
			for i := range 8 {
				if n := fmt.Sprintf("i%d", i); truth[n] != nil {
					out = append(out, n)
				}
			}
			return out
		}
		deliver := func(ok bool, maxEvents int) {
			if q.wantResync && q.snap == nil {
				q.startResync(names())
			}
			b, has := q.next(maxEvents, 1<<20, lookup)
			if !has {
				return
			}
			seen := map[string]bool{}
			if ok && b.Resync {
				clear(plugin)
			}
			for _, ev := range b.Events {
				if seen[ev.Interface] {
					t.Fatalf("two events for %s in one batch", ev.Interface)
				}
				seen[ev.Interface] = true
				_, knows := plugin[ev.Interface]
				switch {
				case ev.Kind == api.EventAdded && knows && !b.snap:
					t.Fatalf("Added for %s, which the plugin knows", ev.Interface)
				case ev.Kind != api.EventAdded && !knows:
					t.Fatalf("kind %d for %s, which the plugin does not know", ev.Kind, ev.Interface)
				}
				if !ok {
					continue
				}
				if ev.Kind == api.EventRemoved {
					delete(plugin, ev.Interface)
				} else {
					var n int
					fmt.Sscan(ev.OtherConfig["n"], &n)
					plugin[ev.Interface] = n
				}
			}
			q.done(b, ok)
		}
		for i, op := range ops {
			name := fmt.Sprintf("i%d", op%8)
			seq++
			switch {
			case op < 128: // a new state
				truth[name] = st(name, i)
				q.offer(name, truth[name], false, seq)
			case op < 192: // gone
				old := truth[name]
				delete(truth, name)
				q.offer(name, old, true, seq)
			case op < 220:
				deliver(true, 1+int(op%3))
			case op < 240:
				deliver(false, 1+int(op%3))
			default: // the plugin restarted
				q.startResync(names())
			}
			if len(q.pending) > bound {
				t.Fatalf("%d pending, bound %d", len(q.pending), bound)
			}
		}
		for range 100 {
			if !q.ready() && !q.wantResync {
				break
			}
			deliver(true, 3)
		}
		if q.ready() || q.wantResync {
			t.Fatal("the queue did not drain")
		}
		for n, s := range truth {
			var want int
			fmt.Sscan(s.ev.OtherConfig["n"], &want)
			if got, ok := plugin[n]; !ok || got != want {
				t.Fatalf("plugin holds %s as %d (present %v), truth %d; plugin %v", n, got, ok, want, plugin)
			}
		}
		for n := range plugin {
			if truth[n] == nil {
				t.Fatalf("plugin still holds %s, which is gone", n)
			}
		}
	})
}
