package vswitchd

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFactsLoop: a kick while ovs-vswitchd is known down refreshes nothing; a kick once it runs
// refreshes, and what depends on the facts is refreshed only when plugins were configured
// again.
func TestFactsLoop(t *testing.T) {
	var mu sync.Mutex
	down := "ovs-vswitchd is not running"
	var calls, afters atomic.Int32
	answer := []string{"p"}
	refreshed, followed := make(chan struct{}, 4), make(chan struct{}, 4)
	f := newFactsLoop(func(context.Context) ([]string, error) {
		calls.Add(1)
		defer func() { refreshed <- struct{}{} }()
		mu.Lock()
		defer mu.Unlock()
		return answer, nil
	}, slog.New(slog.DiscardHandler), func() string {
		mu.Lock()
		defer mu.Unlock()
		return down
	}, func(context.Context) { afters.Add(1); followed <- struct{}{} })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.run(ctx) }()
	defer cancel()

	f.Kick()
	time.Sleep(factsSettle + 500*time.Millisecond) // the kick is handled (not refreshed: down)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d refreshes while ovs-vswitchd is down", n)
	}
	mu.Lock()
	down = ""
	mu.Unlock()
	f.Kick()
	<-refreshed
	<-followed
	if calls.Load() != 1 || afters.Load() != 1 {
		t.Errorf("after a kick: %d refreshes, %d follow-ups; want 1 and 1", calls.Load(), afters.Load())
	}
	mu.Lock()
	answer = nil
	mu.Unlock()
	f.Kick()
	<-refreshed
	cancel()
	<-done // the iteration is over
	if calls.Load() != 2 || afters.Load() != 1 {
		t.Errorf("after a refresh that configured nobody: %d refreshes, %d follow-ups; want 2 and 1", calls.Load(), afters.Load())
	}
}
