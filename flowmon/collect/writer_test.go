package collect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
)

// fakeStore is an in-memory store.Store with injected failures. It keeps batches by ID, so a
// retried batch is stored once, as the Store contract requires.
type fakeStore struct {
	mu      sync.Mutex
	ids     map[string]int
	recs    []flow.Record
	calls   int
	fail    bool // Append fails without storing
	lostAck int  // the next lostAck Appends store the batch but report an error
	discard bool // Append keeps nothing (benchmarks)
	failed  chan struct{}
}

func newFakeStore() *fakeStore {
	return &fakeStore{ids: make(map[string]int), failed: make(chan struct{}, 1)}
}

func (f *fakeStore) Append(_ context.Context, b store.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail {
		select {
		case f.failed <- struct{}{}:
		default:
		}
		return errors.New("fake store: down")
	}
	if f.discard {
		return nil
	}
	if _, dup := f.ids[b.ID]; !dup {
		f.ids[b.ID] = len(b.Records)
		f.recs = append(f.recs, b.Records...)
	}
	if f.lostAck > 0 {
		f.lostAck--
		return errors.New("fake store: commit not confirmed")
	}
	return nil
}

func (f *fakeStore) Query(context.Context, query.Query) (query.Result, error) {
	return query.Result{}, errors.New("fake store: no queries")
}

func (f *fakeStore) Retain(context.Context, time.Time) (int, error) { return 0, nil }
func (f *fakeStore) Close() error                                   { return nil }

func (f *fakeStore) set(fn func(*fakeStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func numbered(n, from int) []flow.Record {
	out := make([]flow.Record, n)
	for i := range out {
		out[i].Packets = uint64(from + i)
	}
	return out
}

func startWriter(t *testing.T, st store.Store, cfg WriterConfig) (*Writer, *Counters, func() error) {
	t.Helper()
	c := &Counters{}
	w, err := NewWriter(st, cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	stop := func() error { cancel(); return <-errc }
	t.Cleanup(func() { cancel() })
	return w, c, stop
}

func TestWriterBatchesByCountAndFlush(t *testing.T) {
	st := newFakeStore()
	w, c, stop := startWriter(t, st, WriterConfig{Instance: "i1", BatchRecords: 10, MaxBuffered: 100, BatchAge: time.Hour})
	for i := range 5 {
		w.Write(numbered(7, i*7))
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.recs) != 35 {
		t.Fatalf("stored %d records, want 35", len(st.recs))
	}
	for i, r := range st.recs {
		if r.Packets != uint64(i) {
			t.Fatalf("record %d is %d: order or duplicates wrong", i, r.Packets)
		}
	}
	// 35 records in batches of 10: 3 full ones and the flushed 5.
	if len(st.ids) != 4 {
		t.Errorf("%d batches, want 4: %v", len(st.ids), st.ids)
	}
	if s := c.Snapshot(); s.Stored != 35 || s.Batches != 4 || s.Buffered != 0 {
		t.Errorf("counters %+v", s)
	}
}

func TestWriterBatchesByAge(t *testing.T) {
	st := newFakeStore()
	w, c, _ := startWriter(t, st, WriterConfig{Instance: "i1", BatchRecords: 1000, BatchAge: time.Millisecond})
	w.Write(numbered(3, 0))
	// Without Flush: only the age cut can store a 3-record batch. Wait for it on the counter
	// through Flush's progress channel.
	for c.Snapshot().Stored != 3 {
		w.mu.Lock()
		ch := w.progress
		buffered := w.buffered
		w.mu.Unlock()
		if buffered == 0 {
			continue
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatal("age cut never stored the batch")
		}
	}
}

// TestWriterStoreOutage: the store goes down; the writer keeps MaxBuffered records, counts
// the rest as dropped (store_backpressure), reports the failure, and when the store returns
// stores everything it kept exactly once, including a batch whose commit was not confirmed.
func TestWriterStoreOutage(t *testing.T) {
	for _, appenders := range []int{1, 3} {
		t.Run(fmt.Sprint(appenders, " appenders"), func(t *testing.T) { testWriterStoreOutage(t, appenders) })
	}
}

func testWriterStoreOutage(t *testing.T, appenders int) {
	st := newFakeStore()
	st.set(func(f *fakeStore) { f.fail = true })
	w, c, stop := startWriter(t, st, WriterConfig{Instance: "i1", BatchRecords: 10, MaxBuffered: 100, Appenders: appenders,
		BatchAge: time.Hour, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	kept := w.Write(numbered(150, 0))
	if kept != 100 {
		t.Fatalf("kept %d, want 100", kept)
	}
	<-st.failed
	s := c.Snapshot()
	if !s.StoreFailing || s.Dropped["store_backpressure"] != 50 || s.Buffered != 100 || s.AppendErrors == 0 {
		t.Fatalf("during outage: %+v", s)
	}
	// The store returns, but its first commits are not confirmed: the retries carry the same
	// IDs.
	st.set(func(f *fakeStore) { f.fail, f.lostAck = false, appenders })
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.recs) != 100 {
		t.Fatalf("stored %d records, want 100 (no duplicates, no loss)", len(st.recs))
	}
	got := make([]int, len(st.recs))
	for i, r := range st.recs {
		got[i] = int(r.Packets)
	}
	if appenders > 1 {
		slices.Sort(got) // concurrent appenders store batches out of order
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("record %d is %d", i, v)
		}
	}
	s = c.Snapshot()
	if s.StoreFailing || s.Stored != 100 || s.Dropped["store_backpressure"] != 50 || s.Buffered != 0 {
		t.Errorf("after outage: %+v", s)
	}
}

// TestWriterShutdownCountsUnstored: a store that stays down at shutdown loses the buffered
// records, counted as shutdown drops, and Run says so.
func TestWriterShutdownCountsUnstored(t *testing.T) {
	st := newFakeStore()
	st.set(func(f *fakeStore) { f.fail = true })
	w, c, stop := startWriter(t, st, WriterConfig{Instance: "i1", BatchRecords: 10, MaxBuffered: 100,
		RetryMin: time.Millisecond, RetryMax: time.Millisecond, DrainTimeout: 10 * time.Millisecond})
	w.Write(numbered(25, 0))
	<-st.failed
	if err := stop(); err == nil {
		t.Fatal("Run returned nil with 25 records unstored")
	}
	if s := c.Snapshot(); s.Dropped["shutdown"] != 25 || s.Buffered != 0 {
		t.Errorf("counters %+v", s)
	}
}

func TestWriterConfigChecked(t *testing.T) {
	for _, cfg := range []WriterConfig{{}, {Instance: "x", BatchRecords: 10, MaxBuffered: 5}, {Instance: "x", Appenders: 17}} {
		if _, err := NewWriter(newFakeStore(), cfg, &Counters{}); err == nil {
			t.Errorf("NewWriter accepted %+v", cfg)
		}
	}
}
