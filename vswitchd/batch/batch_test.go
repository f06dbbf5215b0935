package batch_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// fakeClock only moves when told to.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// pending is the number of timers armed and not yet fired.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// fakeCommitter records every Commit call; fn decides the outcome (default: value = 10*req).
type fakeCommitter struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{} // if non-nil, every Commit waits for a receive from it (or ctx)
	fn      func(reqs []int) ([]batch.Outcome[int], error)
}

func (f *fakeCommitter) Commit(ctx context.Context, reqs []int) ([]batch.Outcome[int], error) {
	f.mu.Lock()
	f.batches = append(f.batches, slices.Clone(reqs))
	f.mu.Unlock()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fn != nil {
		return f.fn(reqs)
	}
	out := make([]batch.Outcome[int], len(reqs))
	for i, r := range reqs {
		out[i].Value = 10 * r
	}
	return out, nil
}

func (f *fakeCommitter) calls() [][]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

func sizes(bs [][]int) []int {
	var s []int
	for _, b := range bs {
		s = append(s, len(b))
	}
	return s
}

// eventually polls cond (a condition, not a timing) for up to 20s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.EventuallyTrue(t, 20*time.Second, time.Millisecond, what, cond)
}

// noLeak records the goroutine count and checks at cleanup that it came back down.
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(),
					buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

func start(t *testing.T, c batch.Committer[int, int], o batch.Options[int]) *batch.Batcher[int, int] {
	t.Helper()
	b, err := batch.Start(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

type result struct {
	req, val int
	err      error
}

// submitAll submits reqs concurrently and returns a channel delivering every result.
func submitAll(ctx context.Context, b *batch.Batcher[int, int], reqs ...int) <-chan result {
	ch := make(chan result, len(reqs))
	for _, r := range reqs {
		go func() {
			v, err := b.Submit(ctx, r)
			ch <- result{r, v, err}
		}()
	}
	return ch
}

func collect(t *testing.T, ch <-chan result, n int) map[int]result {
	t.Helper()
	m := map[int]result{}
	for range n {
		select {
		case r := <-ch:
			m[r.req] = r
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of %d results", len(m), n)
		}
	}
	return m
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestSizeBound(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 4, MaxDelay: time.Second, Linger: true, Clock: clk})
	ch := submitAll(context.Background(), b, seq(0, 10)...)
	eventually(t, "two full batches and 2 queued", func() bool {
		return len(f.calls()) == 2 && b.Stats().Queued == 2
	})
	if got := sizes(f.calls()); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("batch sizes before MaxDelay = %v, want [4 4]", got)
	}
	clk.Advance(time.Second)
	res := collect(t, ch, 10)
	for r, x := range res {
		if x.err != nil || x.val != 10*r {
			t.Errorf("req %d: %d, %v", r, x.val, x.err)
		}
	}
	if got := sizes(f.calls()); !slices.Equal(got, []int{4, 4, 2}) {
		t.Errorf("batch sizes = %v, want [4 4 2]", got)
	}
	st := b.Stats()
	if st.Batches != 3 || st.Commits != 3 || st.BatchSizeSum != 10 || st.Succeeded != 10 {
		t.Errorf("stats = %+v", st)
	}
	// Bounds 1, 2, 4: cumulative counts 0, 1 (the batch of 2), 3.
	want := []batch.SizeBucket{{LE: 1, Count: 0}, {LE: 2, Count: 1}, {LE: 4, Count: 3}}
	if !slices.Equal(st.BatchSizes, want) {
		t.Errorf("BatchSizes = %v, want %v", st.BatchSizes, want)
	}
}

func TestDelayBound(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, Linger: true, Clock: clk})
	ch := submitAll(context.Background(), b, 1, 2, 3)
	eventually(t, "3 queued", func() bool { return b.Stats().Queued == 3 })
	clk.Advance(999 * time.Millisecond)
	if n := len(f.calls()); n != 0 {
		t.Fatalf("%d commits before MaxDelay", n)
	}
	clk.Advance(time.Millisecond)
	collect(t, ch, 3)
	if got := sizes(f.calls()); !slices.Equal(got, []int{3}) {
		t.Errorf("batch sizes = %v, want [3]", got)
	}
}

func TestIdleSendsAtOnceAndBusyAccumulates(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})}
	// MaxDelay is irrelevant with one batch in flight at most: the second batch can only go
	// when the first is done.
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Nanosecond})
	first := submitAll(context.Background(), b, 0)
	eventually(t, "first commit", func() bool { return len(f.calls()) == 1 })
	rest := submitAll(context.Background(), b, seq(1, 6)...)
	eventually(t, "5 queued", func() bool { return b.Stats().Queued == 5 })
	if st := b.Stats(); st.InFlight != 1 || st.InFlightRequests != 1 {
		t.Errorf("in flight = %d batches / %d requests, want 1/1", st.InFlight, st.InFlightRequests)
	}
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	collect(t, first, 1)
	collect(t, rest, 5)
	if got := sizes(f.calls()); !slices.Equal(got, []int{1, 5}) {
		t.Errorf("batch sizes = %v, want [1 5]", got)
	}
}

func TestPerItemErrorsFailOnlyThoseItems(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{fn: func(reqs []int) ([]batch.Outcome[int], error) {
		out := make([]batch.Outcome[int], len(reqs))
		for i, r := range reqs {
			if r%2 == 1 {
				out[i].Err = fmt.Errorf("odd %d", r)
			} else {
				out[i].Value = r
			}
		}
		return out, nil
	}}
	b := start(t, f, batch.Options[int]{MaxSize: 8, Linger: true, Clock: clk})
	res := collect(t, submitAll(context.Background(), b, seq(0, 8)...), 8)
	for r, x := range res {
		if (r%2 == 1) != (x.err != nil) {
			t.Errorf("req %d: err %v", r, x.err)
		}
	}
	if n := len(f.calls()); n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
}

var errBad = errors.New("bad request 13")

func TestIsolationByItemError(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	f.fn = func(reqs []int) ([]batch.Outcome[int], error) {
		if i := slices.Index(reqs, 13); i >= 0 {
			return nil, &batch.ItemError{Indexes: []int{i}, Err: errBad}
		}
		out := make([]batch.Outcome[int], len(reqs))
		for i, r := range reqs {
			out[i].Value = r
		}
		return out, nil
	}
	b := start(t, f, batch.Options[int]{MaxSize: 20, Linger: true, Clock: clk})
	res := collect(t, submitAll(context.Background(), b, seq(0, 20)...), 20)
	for r, x := range res {
		if r == 13 {
			if !errors.Is(x.err, errBad) {
				t.Errorf("req 13: err %v, want errBad", x.err)
			}
		} else if x.err != nil || x.val != r {
			t.Errorf("req %d: %d, %v", r, x.val, x.err)
		}
	}
	if got := sizes(f.calls()); !slices.Equal(got, []int{20, 19}) {
		t.Errorf("commits = %v, want [20 19]", got)
	}
	if st := b.Stats(); st.Retries != 1 || st.Commits != 2 || st.Batches != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestIsolationByBisection(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	f.fn = func(reqs []int) ([]batch.Outcome[int], error) {
		if slices.Contains(reqs, 13) {
			return nil, errBad // whole batch refused, culprit not named
		}
		out := make([]batch.Outcome[int], len(reqs))
		for i, r := range reqs {
			out[i].Value = r
		}
		return out, nil
	}
	b := start(t, f, batch.Options[int]{MaxSize: 16, Linger: true, Clock: clk})
	res := collect(t, submitAll(context.Background(), b, seq(0, 16)...), 16)
	for r, x := range res {
		if (r == 13) != errors.Is(x.err, errBad) || (r != 13 && x.err != nil) {
			t.Errorf("req %d: %d, %v", r, x.val, x.err)
		}
	}
	// 1 + 2 per level of a binary split of 16: at most 1 + 2*4 commits.
	if n := len(f.calls()); n > 9 {
		t.Errorf("%d commits, want at most 9: %v", n, sizes(f.calls()))
	}
}

func TestNonDivisibleErrorFailsTheBatch(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	errDown := errors.New("connection lost")
	f := &fakeCommitter{fn: func([]int) ([]batch.Outcome[int], error) { return nil, errDown }}
	b := start(t, f, batch.Options[int]{MaxSize: 4, Linger: true, Clock: clk,
		Divisible: func(err error) bool { return !errors.Is(err, errDown) }})
	for r, x := range collect(t, submitAll(context.Background(), b, seq(0, 4)...), 4) {
		if !errors.Is(x.err, errDown) {
			t.Errorf("req %d: %v", r, x.err)
		}
	}
	if n := len(f.calls()); n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
}

func TestCancelBeforeSend(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 4, Linger: true, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	ch := submitAll(ctx, b, 7)
	eventually(t, "queued", func() bool { return b.Stats().Queued == 1 })
	cancel()
	x := collect(t, ch, 1)[7]
	if !errors.Is(x.err, context.Canceled) || errors.Is(x.err, batch.ErrOutcomeUnknown) {
		t.Errorf("err = %v, want context.Canceled alone", x.err)
	}
	if st := b.Stats(); st.Queued != 0 || st.Canceled != 1 {
		t.Errorf("stats = %+v", st)
	}
	other := submitAll(context.Background(), b, 8)
	eventually(t, "8 queued", func() bool { return b.Stats().Queued == 1 })
	clk.Advance(time.Hour)
	collect(t, other, 1)
	if got := f.calls(); !slices.Equal(got[0], []int{8}) || len(got) != 1 {
		t.Errorf("commits = %v, want [[8]] (the cancelled request never sent)", got)
	}
}

func TestCancelAfterSend(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})}
	b := start(t, f, batch.Options[int]{MaxSize: 4})
	ctx, cancel := context.WithCancel(context.Background())
	gone := submitAll(ctx, b, 1)
	eventually(t, "in flight", func() bool { return len(f.calls()) == 1 })
	cancel()
	x := collect(t, gone, 1)[1]
	if !errors.Is(x.err, context.Canceled) || !errors.Is(x.err, batch.ErrOutcomeUnknown) {
		t.Errorf("err = %v, want context.Canceled and ErrOutcomeUnknown", x.err)
	}
	f.gate <- struct{}{} // the commit itself goes on
	if st := b.Stats(); st.CanceledSent != 1 {
		t.Errorf("stats = %+v", st)
	}
	close(f.gate)
	if x := collect(t, submitAll(context.Background(), b, 2), 1)[2]; x.err != nil || x.val != 20 {
		t.Errorf("next request: %d, %v", x.val, x.err)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 10, Linger: true, Clock: clk})
	ch := submitAll(context.Background(), b, 1, 2, 3)
	eventually(t, "3 queued", func() bool { return b.Stats().Queued == 3 })
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for r, x := range collect(t, ch, 3) {
		if x.err != nil {
			t.Errorf("req %d: %v", r, x.err)
		}
	}
	if _, err := b.Submit(context.Background(), 4); !errors.Is(err, batch.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}

func TestCloseHardStop(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})} // never opened: commits end by cancellation
	b := start(t, f, batch.Options[int]{MaxSize: 10})
	inflight := submitAll(context.Background(), b, 1)
	eventually(t, "in flight", func() bool { return len(f.calls()) == 1 })
	queued := submitAll(context.Background(), b, 2, 3)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	if x := collect(t, inflight, 1)[1]; !errors.Is(x.err, context.Canceled) {
		t.Errorf("in-flight request: %v, want the cancelled commit's error", x.err)
	}
	// The queued requests either failed with ErrClosed or, if the dispatcher drained them
	// before seeing the hard stop, with the cancelled commit's error: never success.
	for r, x := range collect(t, queued, 2) {
		if !errors.Is(x.err, batch.ErrClosed) && !errors.Is(x.err, context.Canceled) {
			t.Errorf("req %d: %v", r, x.err)
		}
	}
}

func TestSameKeyNeverSharesABatch(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 10, Linger: true, Clock: clk,
		Key: func(r int) string { return fmt.Sprint(r % 3) }})
	// 0,3 share key 0; 1,4 key 1; 2 key 2. Submit in order so queue order is known.
	var chans []<-chan result
	for i, r := range []int{0, 1, 2, 3, 4} {
		chans = append(chans, submitAll(context.Background(), b, r))
		eventually(t, "queued", func() bool { return b.Stats().Queued == i+1 })
	}
	clk.Advance(time.Hour)
	for _, ch := range chans[:3] {
		collect(t, ch, 1)
	}
	clk.Advance(time.Hour)
	for _, ch := range chans[3:] {
		collect(t, ch, 1)
	}
	got := f.calls()
	if len(got) != 2 || !slices.Equal(got[0], []int{0, 1, 2}) || !slices.Equal(got[1], []int{3, 4}) {
		t.Errorf("batches = %v, want [[0 1 2] [3 4]]", got)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	if _, err := batch.Start[int, int](context.Background(), &fakeCommitter{}, batch.Options[int]{MaxSize: -1}); err == nil {
		t.Error("negative MaxSize accepted")
	}
	if _, err := batch.Start[int, int](context.Background(), nil, batch.Options[int]{}); err == nil {
		t.Error("nil committer accepted")
	}
}

// With Cohort, a lingering batch goes as soon as the previous batch's number of requests is
// back, without waiting for MaxDelay; fewer still wait for MaxDelay.
func TestCohortSendsWhenThePreviousBatchIsBack(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, Linger: true, Cohort: true, Clock: clk})
	ch := submitAll(context.Background(), b, 1, 2, 3)
	eventually(t, "3 queued", func() bool { return b.Stats().Queued == 3 })
	clk.Advance(time.Second) // no previous batch: MaxDelay
	collect(t, ch, 3)
	ch = submitAll(context.Background(), b, 4, 5, 6)
	collect(t, ch, 3) // the cohort of 3 is back: sent without the clock moving
	ch = submitAll(context.Background(), b, 7, 8)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	if n := len(f.calls()); n != 2 {
		t.Fatalf("%d commits; 2 of a cohort of 3 must wait for MaxDelay", n)
	}
	clk.Advance(time.Second)
	collect(t, ch, 2)
	if got := sizes(f.calls()); !slices.Equal(got, []int{3, 3, 2}) {
		t.Errorf("batch sizes = %v, want [3 3 2]", got)
	}
	// The cohort is still 3 (the largest recent batch), not the straggling 2: two requests
	// wait for the third, which completes the cohort without the clock moving.
	ch = submitAll(context.Background(), b, 9, 10)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	if n := len(f.calls()); n != 3 {
		t.Fatalf("%d commits; 2 of a cohort of 3 must wait for the third", n)
	}
	ch2 := submitAll(context.Background(), b, 11)
	collect(t, ch, 2)
	collect(t, ch2, 1)
	if got := sizes(f.calls()); !slices.Equal(got, []int{3, 3, 2, 3}) {
		t.Errorf("batch sizes = %v, want [3 3 2 3]", got)
	}
}

// With Cohort, a member of the cohort announced but still preparing its request holds the
// batch up to AnnouncedDelay instead of MaxDelay, so it does not split the cohort; a cancelled
// announcement releases the others.
func TestAnnouncedRequestsJoinTheirCohort(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, AnnouncedDelay: 10 * time.Second,
		Linger: true, Cohort: true, Clock: clk})
	ch := submitAll(context.Background(), b, 1, 2, 3)
	eventually(t, "3 queued", func() bool { return b.Stats().Queued == 3 })
	clk.Advance(time.Second)
	collect(t, ch, 3) // the cohort is 3

	late := b.Announce(context.Background())
	ch = submitAll(context.Background(), b, 4, 5)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	clk.Advance(2 * time.Second) // past MaxDelay: the announced third member keeps them waiting
	if n := len(f.calls()); n != 1 {
		t.Fatalf("%d commits; the cohort must wait for its announced member", n)
	}
	res := make(chan error, 1)
	go func() { _, err := b.SubmitAnnounced(context.Background(), late, 6); res <- err }()
	collect(t, ch, 2)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if got := sizes(f.calls()); !slices.Equal(got, []int{3, 3}) {
		t.Fatalf("batch sizes = %v, want [3 3]", got)
	}

	gone := b.Announce(context.Background())
	ch = submitAll(context.Background(), b, 7, 8)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	clk.Advance(2 * time.Second)
	gone.Cancel() // it will not come: MaxDelay applies again, and has passed
	collect(t, ch, 2)
	if got := sizes(f.calls()); !slices.Equal(got, []int{3, 3, 2}) {
		t.Errorf("batch sizes = %v, want [3 3 2]", got)
	}
}

// With two slots and OverlapFullOnly, a partial batch waits for the one in flight while a full
// one goes past it; without it, the partial batch takes the free slot at once (MaxDelay is
// negligible) and the requests after it wait for a slot.
func TestOverlapFullOnly(t *testing.T) {
	for _, fullOnly := range []bool{true, false} {
		t.Run(fmt.Sprint("OverlapFullOnly=", fullOnly), func(t *testing.T) {
			noLeak(t)
			f := &fakeCommitter{gate: make(chan struct{})}
			b := start(t, f, batch.Options[int]{MaxSize: 3, MaxInFlight: 2, MaxDelay: time.Nanosecond, OverlapFullOnly: fullOnly})
			first := submitAll(context.Background(), b, 0)
			eventually(t, "first commit", func() bool { return len(f.calls()) == 1 })
			second := submitAll(context.Background(), b, 1)
			if fullOnly {
				eventually(t, "1 queued", func() bool { return b.Stats().Queued == 1 })
			} else {
				eventually(t, "1 sent alone", func() bool { return len(f.calls()) == 2 })
			}
			rest := submitAll(context.Background(), b, 2, 3)
			want := []int{1, 3} // 1, 2 and 3 fill a batch that goes while 0's is in flight
			if !fullOnly {
				want = []int{1, 1}
				eventually(t, "2 and 3 queued", func() bool { return b.Stats().Queued == 2 })
			}
			eventually(t, fmt.Sprintf("batches %v", want), func() bool {
				return slices.Equal(sizes(f.calls()), want) && b.Stats().InFlight == 2
			})
			for range len(want) + map[bool]int{true: 0, false: 1}[fullOnly] {
				f.gate <- struct{}{}
			}
			collect(t, first, 1)
			collect(t, second, 1)
			collect(t, rest, 2)
		})
	}
}

// InFlightLimit lowers MaxInFlight while it answers 1: full batches wait in the queue for
// the one in flight. Once it answers 2 again (asked when the batcher next looks, here at a
// submission), a full batch overlaps the one in flight.
func TestInFlightLimit(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})}
	var limit atomic.Int64
	limit.Store(1)
	b := start(t, f, batch.Options[int]{MaxSize: 3, MaxInFlight: 2, MaxDelay: time.Nanosecond, OverlapFullOnly: true,
		InFlightLimit: func() int { return int(limit.Load()) }})
	first := submitAll(context.Background(), b, 0)
	eventually(t, "first commit", func() bool { return len(f.calls()) == 1 })
	second := submitAll(context.Background(), b, 1, 2, 3, 4, 5, 6)
	eventually(t, "6 queued", func() bool { return b.Stats().Queued == 6 })
	if n := len(f.calls()); n != 1 {
		t.Fatalf("%d commits with an in-flight limit of 1, want the full batches held", n)
	}
	limit.Store(2)
	third := submitAll(context.Background(), b, 7)
	eventually(t, "a full batch in flight with the first", func() bool {
		return len(f.calls()) == 2 && len(f.calls()[1]) == 3 && b.Stats().InFlight == 2
	})
	done := make(chan struct{})
	go func() { // let every batch through
		for {
			select {
			case f.gate <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	collect(t, first, 1)
	collect(t, second, 6)
	collect(t, third, 1)
	close(done)
}

// A cohort split over two batches by SizeLimit (4 of 5 callers in one batch, the fifth left
// waiting for it) joins again once the limit allows: the callers of the finished batch and
// the request still queued are counted as one cohort, so the queued request waits for all four
// to come back instead of leaving with the first three of them (batch sizes 4 then 5, not 4
// then 4, then 1 and so on in alternation).
func TestCohortSplitBySizeLimitJoinsAgain(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{gate: make(chan struct{})}
	var limit atomic.Int64
	limit.Store(4)
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, Linger: true, Cohort: true, Clock: clk,
		MaxInFlight: 2, OverlapFullOnly: true, SizeLimit: func() int { return int(limit.Load()) }})
	gate := f.gate
	t.Cleanup(func() { close(gate) }) // before the Batcher closes (cleanups run last first): a failure leaves no commit waiting
	first := submitAll(context.Background(), b, 1, 2, 3, 4, 5)
	eventually(t, "a full batch of 4 sent, 1 queued", func() bool {
		return slices.Equal(sizes(f.calls()), []int{4}) && b.Stats().Queued == 1
	})
	limit.Store(100)
	f.gate <- struct{}{} // the batch of 4 is acknowledged: its callers come back
	back := collect(t, first, 4)
	var again []int
	for r := range back {
		again = append(again, 10+r)
	}
	second := submitAll(context.Background(), b, again...)
	eventually(t, "a second batch", func() bool { return len(f.calls()) == 2 })
	if got := sizes(f.calls()); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("batch sizes %v, want [4 5]: the queued request and the 4 callers that came back are one cohort", got)
	}
	f.gate <- struct{}{}
	collect(t, first, 1)
	collect(t, second, 4)
}

// GatherDelay lengthens the wait of a batch short of its cohort past MaxDelay; a batch that
// reached its cohort does not wait for it.
func TestGatherDelayHoldsAShortCohort(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, Linger: true, Cohort: true, Clock: clk,
		GatherDelay: func() time.Duration { return 5 * time.Second }})
	ch := submitAll(context.Background(), b, 1, 2, 3)
	eventually(t, "3 queued", func() bool { return b.Stats().Queued == 3 })
	clk.Advance(5 * time.Second) // no cohort yet: the first batch waits as long as GatherDelay
	collect(t, ch, 3)
	ch = submitAll(context.Background(), b, 4, 5)
	eventually(t, "2 queued, a timer armed", func() bool { return b.Stats().Queued == 2 && clk.pending() > 0 })
	clk.Advance(2 * time.Second) // past MaxDelay, within GatherDelay: still waiting for the third
	eventually(t, "a timer armed again", func() bool { return clk.pending() > 0 })
	if n := len(f.calls()); n != 1 {
		t.Fatalf("%d commits; 2 of a cohort of 3 must wait GatherDelay, not MaxDelay", n)
	}
	clk.Advance(3 * time.Second)
	collect(t, ch, 2)
	collect(t, submitAll(context.Background(), b, 6, 7, 8), 3) // the cohort of 3: at once
	if got := sizes(f.calls()); !slices.Equal(got, []int{3, 2, 3}) {
		t.Errorf("batch sizes = %v, want [3 2 3]", got)
	}
}

// startCohort starts a lingering cohort batcher (MaxDelay 1s, AnnouncedDelay 10s) on clk and
// forms a cohort of 2: the first batch, of 2, goes after MaxDelay.
func startCohort(t *testing.T, f *fakeCommitter, clk *fakeClock) *batch.Batcher[int, int] {
	t.Helper()
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxDelay: time.Second, AnnouncedDelay: 10 * time.Second,
		Linger: true, Cohort: true, Clock: clk})
	ch := submitAll(context.Background(), b, 1, 2)
	eventually(t, "2 queued", func() bool { return b.Stats().Queued == 2 })
	clk.Advance(time.Second)
	collect(t, ch, 2)
	return b
}

// submitAnnounced submits req for announcement a in its own goroutine.
func submitAnnounced(b *batch.Batcher[int, int], a *batch.Announcement[int, int], req int) <-chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := b.SubmitAnnounced(context.Background(), a, req)
		ch <- result{req, v, err}
	}()
	return ch
}

// held waits until queued requests wait in the queue with a timer armed, then checks that no
// batch beyond the first commits has gone.
func held(t *testing.T, b *batch.Batcher[int, int], f *fakeCommitter, clk *fakeClock, queued, commits int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d queued, a timer armed", queued), func() bool {
		return b.Stats().Queued == queued && clk.pending() > 0
	})
	if n := len(f.calls()); n != commits {
		t.Fatalf("%d commits, want %d: the batch must wait for the announced request", n, commits)
	}
}

// A cohort reached while a member announced earlier is still preparing (a plugin port whose
// Validate and Attach have not returned) waits for it instead of leaving without it; the
// batch that then goes is the whole cohort, which becomes the new cohort size.
func TestAnnouncedMemberHoldsAReachedCohort(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := startCohort(t, f, clk)

	late := b.Announce(t.Context())
	ch := submitAll(context.Background(), b, 3, 4) // the cohort of 2 is reached
	held(t, b, f, clk, 2, 1)
	clk.Advance(2 * time.Second) // past MaxDelay, within AnnouncedDelay: still held
	held(t, b, f, clk, 2, 1)
	lateRes := submitAnnounced(b, late, 5)
	collect(t, ch, 2)
	collect(t, lateRes, 1)
	if got := sizes(f.calls()); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("batch sizes = %v, want [2 3]: the announced request joins its cohort", got)
	}
	// The cohort is now 3: three requests go at once, without the clock moving.
	collect(t, submitAll(context.Background(), b, 6, 7, 8), 3)
	if got := sizes(f.calls()); !slices.Equal(got, []int{2, 3, 3}) {
		t.Errorf("batch sizes = %v, want [2 3 3]", got)
	}
}

// A withdrawn announcement — cancelled by its caller (its plugin call failed) or by the end
// of its context — releases the batch it held at once, without the clock moving.
func TestWithdrawnAnnouncementHoldsNothing(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := startCohort(t, f, clk)

	a := b.Announce(t.Context())
	ch := submitAll(context.Background(), b, 3, 4)
	held(t, b, f, clk, 2, 1)
	a.Cancel()
	collect(t, ch, 2)
	a.Cancel() // idempotent

	ctx, cancel := context.WithCancel(t.Context())
	b.Announce(ctx)
	ch = submitAll(context.Background(), b, 5, 6)
	held(t, b, f, clk, 2, 2)
	cancel()
	collect(t, ch, 2)

	if got := sizes(f.calls()); !slices.Equal(got, []int{2, 2, 2}) {
		t.Errorf("batch sizes = %v, want [2 2 2]", got)
	}
}

// An announcement that is never submitted nor withdrawn (a plugin call that hangs) holds a
// batch for at most AnnouncedDelay, and once AnnouncedDelay has passed since it was made it
// holds no later batch.
func TestAnnouncementHoldsAtMostAnnouncedDelay(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := startCohort(t, f, clk)

	hung := b.Announce(t.Context())
	defer hung.Cancel()
	ch := submitAll(context.Background(), b, 3, 4)
	held(t, b, f, clk, 2, 1)
	clk.Advance(9 * time.Second)
	held(t, b, f, clk, 2, 1)
	clk.Advance(time.Second) // AnnouncedDelay
	collect(t, ch, 2)
	collect(t, submitAll(context.Background(), b, 5, 6), 2) // the cohort, at once: hung holds no more
	if got := sizes(f.calls()); !slices.Equal(got, []int{2, 2, 2}) {
		t.Errorf("batch sizes = %v, want [2 2 2]", got)
	}
}

// Announcements change nothing where no cohort is gathered: an idle batcher without Linger
// sends at once, and a full batch goes with announcements pending.
func TestAnnouncementsHoldNoIdleOrFullBatch(t *testing.T) {
	noLeak(t)
	clk := newFakeClock()
	f := &fakeCommitter{}
	b := start(t, f, batch.Options[int]{MaxSize: 2, MaxDelay: time.Second, Clock: clk})
	a := b.Announce(t.Context())
	defer a.Cancel()
	collect(t, submitAll(context.Background(), b, 1), 1) // idle: at once

	c := start(t, f, batch.Options[int]{MaxSize: 2, MaxDelay: time.Second, AnnouncedDelay: 10 * time.Second,
		Linger: true, Cohort: true, Clock: clk})
	a2 := c.Announce(t.Context())
	defer a2.Cancel()
	collect(t, submitAll(context.Background(), c, 2, 3), 2) // full (MaxSize 2): at once
	if got := sizes(f.calls()); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("batch sizes = %v, want [1 2]", got)
	}
}
