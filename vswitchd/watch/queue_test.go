package watch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// st is a state of interface name with other_config n=<n>.
func st(name string, n int) *state {
	s := &state{ev: api.PortEvent{Interface: name, Bridge: "br0", Port: name, OtherConfig: map[string]string{"n": fmt.Sprint(n)}}}
	s.size = eventSize(&s.ev)
	return s
}

// kinds renders a batch as "name:kind:n" items.
func kinds(b batch) []string {
	var out []string
	for _, ev := range b.Events {
		k := map[api.PortEventKind]string{api.EventAdded: "add", api.EventChanged: "chg", api.EventRemoved: "del"}[ev.Kind]
		out = append(out, ev.Interface+":"+k+":"+ev.OtherConfig["n"])
	}
	return out
}

func none(string) *state { return nil }

// take builds the next batch and settles it as delivered (ok) or failed.
func take(t *testing.T, q *queue, ok bool) []string {
	t.Helper()
	b, has := q.next(100, 1<<20, none)
	if !has {
		return nil
	}
	q.done(b, ok)
	return kinds(b)
}

func TestQueueCoalescesLatestStateWins(t *testing.T) {
	q := newQueue(10)
	var seq uint64
	offer := func(name string, n int, gone bool) {
		seq++
		q.offer(name, st(name, n), gone, seq)
	}
	offer("a", 1, false)
	offer("b", 1, false)
	offer("a", 2, false)
	offer("c", 1, false)
	offer("c", 2, true) // came and went: nothing to say
	if got, want := take(t, q, true), []string{"b:add:1", "a:add:2"}; !slices.Equal(got, want) {
		t.Fatalf("first batch %v, want %v", got, want)
	}
	offer("a", 3, false)
	offer("b", 2, true)
	offer("a", 4, false)
	if got, want := take(t, q, true), []string{"b:del:2", "a:chg:4"}; !slices.Equal(got, want) {
		t.Fatalf("second batch %v, want %v", got, want)
	}
	offer("b", 9, true) // the plugin no longer knows b: nothing
	if got := take(t, q, true); got != nil {
		t.Fatalf("third batch %v, want none", got)
	}
	s := q.snapshotStats()
	if s.Known != 1 || s.Coalesced != 3 || s.Batches != 2 || s.Events != 4 || s.Pending != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestQueueFailedBatchMergesWithNewerStates(t *testing.T) {
	q := newQueue(10)
	q.offer("a", st("a", 1), false, 1)
	q.offer("b", st("b", 1), false, 2)
	b, _ := q.next(100, 1<<20, none)
	q.offer("a", st("a", 2), false, 3) // arrives while the batch is in flight
	q.done(b, false)
	got := take(t, q, true)
	if want := []string{"b:add:1", "a:add:2"}; !slices.Equal(got, want) {
		t.Fatalf("redelivery %v, want %v", got, want)
	}
	if s := q.snapshotStats(); s.Failures != 1 || s.Known != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestQueueOverflowCollapsesToResync(t *testing.T) {
	const bound = 8
	q := newQueue(bound)
	for i := range 1000 {
		name := fmt.Sprintf("p%d", i%50)
		q.offer(name, st(name, i), false, uint64(i+1))
		if len(q.pending) > bound {
			t.Fatalf("%d pending after offer %d, bound %d", len(q.pending), i, bound)
		}
	}
	s := q.snapshotStats()
	if s.Overflows == 0 || !q.wantResync || s.PendingHigh > bound || !s.Resyncing {
		t.Fatalf("stats %+v, wantResync %v", s, q.wantResync)
	}
	// The resync sends everything as it is now, in batches, and then the queue is plain again.
	cur := map[string]*state{}
	var names []string
	for i := range 50 {
		n := fmt.Sprintf("p%d", i)
		cur[n] = st(n, 1000+i)
		names = append(names, n)
	}
	q.startResync(names)
	lookup := func(n string) *state { return cur[n] }
	var got []string
	first := true
	for {
		b, ok := q.next(16, 1<<20, lookup)
		if !ok {
			break
		}
		if b.Resync != first || len(b.Events) > 16 {
			t.Fatalf("batch resync=%v (first %v), %d events", b.Resync, first, len(b.Events))
		}
		first = false
		q.done(b, true)
		got = append(got, kinds(b)...)
		if b.ResyncDone {
			break
		}
	}
	if len(got) != 50 || got[0] != "p0:add:1000" || got[49] != "p49:add:1049" {
		t.Fatalf("snapshot %v", got)
	}
	if s := q.snapshotStats(); s.Resyncs != 1 || s.Resyncing || s.Known != 50 {
		t.Errorf("after the snapshot: %+v", s)
	}
	q.offer("p3", st("p3", 7), false, 5000)
	if got := take(t, q, true); !slices.Equal(got, []string{"p3:chg:7"}) {
		t.Errorf("after the snapshot: %v", got)
	}
}

// Changes during a snapshot: an interface not sent yet goes with its latest state in the
// snapshot; one sent already follows after ResyncDone; an overflow during the snapshot asks
// for another one after it; a batch of an earlier snapshot answers nothing.
func TestQueueChangesDuringSnapshot(t *testing.T) {
	q := newQueue(3)
	cur := map[string]*state{"a": st("a", 1), "b": st("b", 1), "c": st("c", 1)}
	lookup := func(n string) *state { return cur[n] }
	q.startResync([]string{"a", "b", "c"})
	b1, _ := q.next(1, 1<<20, lookup)
	q.done(b1, true)
	cur["a"], cur["c"] = st("a", 2), st("c", 2)
	q.offer("a", cur["a"], false, 10)
	q.offer("c", cur["c"], false, 11)
	delete(cur, "b") // gone before its turn: not in the snapshot
	q.offer("b", st("b", 1), true, 12)
	b2, _ := q.next(5, 1<<20, lookup)
	q.done(b2, true)
	if got := kinds(b2); !slices.Equal(got, []string{"c:add:2"}) || !b2.ResyncDone || b2.Resync {
		t.Fatalf("second snapshot batch %v done=%v resync=%v", got, b2.ResyncDone, b2.Resync)
	}
	if got := take(t, q, true); !slices.Equal(got, []string{"a:chg:2"}) {
		t.Fatalf("after the snapshot %v", got)
	}
	// An overflow during a snapshot: another snapshot once this one is done.
	q.startResync([]string{"a", "c"})
	stale, _ := q.next(1, 1<<20, lookup)
	q.startResync([]string{"a", "c"}) // a restart: the batch in flight answers nothing
	q.done(stale, true)
	if q.snap.started {
		t.Fatal("a batch of an earlier snapshot moved the new one")
	}
	for i := range 5 {
		n := fmt.Sprintf("x%d", i)
		q.offer(n, st(n, 1), false, uint64(20+i))
	}
	if !q.again || q.wantResync {
		t.Fatalf("overflow during a snapshot: again %v wantResync %v", q.again, q.wantResync)
	}
	for q.snap != nil {
		b, _ := q.next(10, 1<<20, lookup)
		q.done(b, true)
	}
	if !q.wantResync {
		t.Fatal("no new snapshot asked for after an overflow during one")
	}
}

func TestQueueBatchBounds(t *testing.T) {
	q := newQueue(100)
	for i := range 10 {
		n := fmt.Sprintf("i%d", i)
		q.offer(n, st(n, i), false, uint64(i+1))
	}
	one := st("i0", 0).size
	b, _ := q.next(100, 3*one, none)
	if len(b.Events) != 3 {
		t.Fatalf("%d events in a batch of %d bytes (%d each)", len(b.Events), 3*one, one)
	}
	q.done(b, true)
	b, _ = q.next(2, 1<<20, none)
	if len(b.Events) != 2 {
		t.Fatalf("%d events, bound 2", len(b.Events))
	}
	q.done(b, true)
	b, _ = q.next(100, 1, none) // one event goes alone whatever its size
	if len(b.Events) != 1 {
		t.Fatalf("%d events under a 1-byte bound", len(b.Events))
	}
}

// An empty snapshot is still one batch: Resync and ResyncDone, no event.
func TestQueueEmptySnapshot(t *testing.T) {
	q := newQueue(4)
	q.startResync(nil)
	b, ok := q.next(10, 100, none)
	if !ok || !b.Resync || !b.ResyncDone || len(b.Events) != 0 {
		t.Fatalf("empty snapshot: %+v %v", b.PortEventBatch, ok)
	}
	q.done(b, true)
	if _, ok := q.next(10, 100, none); ok {
		t.Fatal("a batch after the empty snapshot")
	}
}
