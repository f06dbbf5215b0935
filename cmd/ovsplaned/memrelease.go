package main

import (
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/vswitchd"
)

// releaseQuiet and releaseEvery are the daemon's burstRelease: the memory goes back once the
// daemon has done nothing for a second, at most every two seconds. Each release is one garbage
// collection (about 10 ms of CPU at 10,000 ports) and the pages given back are faulted in again
// as the heap regrows, so a trickle of changes a second and a half apart costs about 1 % of a
// CPU; a longer bound would miss the burst's tail: the drift pass that follows the last change
// by a second (reconcile.Options.DriftDelay) allocates as much as the burst's end did.
const (
	releaseQuiet = time.Second
	releaseEvery = 2 * time.Second
)

// burstRelease hands the memory a burst of work left behind (a build of thousands of ports
// through the API, the start-up sync, a reconcile pass over every row) back to the operating
// system once the daemon has gone idle, instead of keeping it resident until the Go runtime's
// background scavenger returns it over the next minutes.
//
// During a burst the Go heap grows to about twice what is live at its busiest (GOGC=100): the
// requests in flight, their goroutines' stacks, the plans of the batches. What the daemon keeps
// afterwards is far less (docs/benchmarks.md, "Scale without a memory limit"). release (in the
// daemon, debug.FreeOSMemory: one garbage collection, then every free page back to the OS) runs
// when nothing happened for quiet after the last activity and no batch is waiting for
// ovs-vswitchd, at most once per every. It is not a limit: a burst still takes what it needs.
//
// The zero value is not usable; use newBurstRelease. All methods are safe for concurrent use.
type burstRelease struct {
	quiet, every time.Duration
	busy         func() bool // work still in flight: the release waits for it
	release      func()

	mu      sync.Mutex
	timer   *time.Timer
	pending bool      // activity since the last release
	last    time.Time // the last release
	stopped bool
}

// newBurstRelease returns a burstRelease that calls release once nothing happened for quiet,
// busy (nil: never busy) reports false, and the previous release is every ago.
func newBurstRelease(quiet, every time.Duration, busy func() bool, release func()) *burstRelease {
	if busy == nil {
		busy = func() bool { return false }
	}
	return &burstRelease{quiet: quiet, every: every, busy: busy, release: release}
}

// active records activity: the release waits until quiet has passed since the latest one.
func (b *burstRelease) active() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.pending = true
	if b.timer == nil {
		b.timer = time.AfterFunc(b.quiet, b.fire)
		return
	}
	b.timer.Reset(b.quiet)
}

// fire runs when quiet has passed since the latest activity (or a postponed check is due).
func (b *burstRelease) fire() {
	b.mu.Lock()
	if b.stopped || !b.pending {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	if wait := b.last.Add(b.every).Sub(now); !b.last.IsZero() && wait > 0 {
		b.timer.Reset(wait)
		b.mu.Unlock()
		return
	}
	if b.busy() {
		b.timer.Reset(b.quiet)
		b.mu.Unlock()
		return
	}
	b.pending, b.last = false, now
	b.mu.Unlock()
	b.release()
}

// stop ends the releases: none is scheduled after it returns (one already running may finish).
func (b *burstRelease) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// burstObserver is the daemon's Observer: obs, and every batch is activity for rel.
type burstObserver struct {
	vswitchd.Observer
	rel *burstRelease
}

// BatchCommitted reports the batch to the wrapped Observer and records the activity.
func (o burstObserver) BatchCommitted(size int, committed, applied time.Duration, err error) {
	o.Observer.BatchCommitted(size, committed, applied, err)
	o.rel.active()
}
