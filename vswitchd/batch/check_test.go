package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// TestCheckRefusesBeforeQueueing: a request refused by Options.Check fails at once and never
// reaches a batch; the others are committed together, with no isolation retry.
func TestCheckRefusesBeforeQueueing(t *testing.T) {
	noLeak(t)
	clk := newFakeClock() // never advanced: with Linger the batch goes when full
	f := &fakeCommitter{}
	bad := errors.New("13 is refused")
	b := start(t, f, batch.Options[int]{MaxSize: 7, Linger: true, Clock: clk,
		Check: func(r int) error {
			if r == 13 {
				return bad
			}
			return nil
		}})
	res := collect(t, submitAll(context.Background(), b, 10, 11, 12, 13, 14, 15, 16, 17), 8)
	for r, x := range res {
		if (r == 13) != errors.Is(x.err, bad) || (r != 13 && x.err != nil) {
			t.Errorf("req %d: %v", r, x.err)
		}
	}
	calls := f.calls()
	if len(calls) != 1 || len(calls[0]) != 7 || b.Stats().Refused != 1 {
		t.Fatalf("commits %v, stats %+v; want one commit of the 7 good requests", calls, b.Stats())
	}
}

// TestWeightClosesBatches: a batch holds requests up to MaxWeight in total, in queue order; a
// request heavier than MaxWeight goes alone.
func TestWeightClosesBatches(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxWeight: 10, Weight: func(r int) int { return r }})
	// The first request holds the slot while the others queue.
	first := submitAll(context.Background(), b, 1)
	eventually(t, "the first commit", func() bool { return len(f.calls()) == 1 })
	rest := make(chan result, 5)
	for i, r := range []int{4, 5, 2, 20, 3} {
		ch := submitAll(context.Background(), b, r)
		go func() { rest <- <-ch }()
		// one at a time, so the queue order is the order above
		eventually(t, fmt.Sprint("request ", r, " queued"), func() bool { return b.Stats().Queued == i+1 })
	}
	eventually(t, "five queued", func() bool { return b.Stats().Queued == 5 })
	close(f.gate)
	collect(t, first, 1)
	collect(t, rest, 5)
	got := f.calls()[1:]
	want := [][]int{{4, 5}, {2}, {20}, {3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v (weights up to 10, in order)", got, want)
	}
}

func TestMaxSizeBounded(t *testing.T) {
	_, err := batch.Start[int, int](context.Background(), &fakeCommitter{}, batch.Options[int]{MaxSize: limits.MaxRequestsPerBatch + 1})
	if err == nil || !strings.Contains(err.Error(), "limits.MaxRequestsPerBatch") {
		t.Fatalf("got %v", err)
	}
}
