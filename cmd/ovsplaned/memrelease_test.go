package main

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// The release comes once the activity stops for quiet, waits while work is in flight, comes at
// most once per every, and never without activity or after stop. The bubble's clock is fake:
// nothing here depends on the machine's speed.
func TestBurstReleaseAfterQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var releases atomic.Int32
		var busy atomic.Bool
		b := newBurstRelease(time.Second, 10*time.Second, busy.Load, func() { releases.Add(1) })
		defer b.stop()

		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := releases.Load(); n != 0 {
			t.Fatalf("%d releases without any activity, want 0", n)
		}

		// A burst: activity every 500 ms for 5 s keeps it from releasing.
		for range 10 {
			b.active()
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			if n := releases.Load(); n != 0 {
				t.Fatalf("released during the burst (%d)", n)
			}
		}
		time.Sleep(600 * time.Millisecond) // 1.1 s after the last activity
		synctest.Wait()
		if n := releases.Load(); n != 1 {
			t.Fatalf("%d releases a second after the burst, want 1", n)
		}

		// Busy (a batch waiting for ovs-vswitchd): the release waits for it, and for every.
		b.active()
		busy.Store(true)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := releases.Load(); n != 1 {
			t.Fatalf("%d releases while busy, want still 1", n)
		}
		busy.Store(false)
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		if n := releases.Load(); n != 2 {
			t.Fatalf("%d releases once no longer busy, want 2", n)
		}

		// Right after a release, the next waits for every.
		b.active()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := releases.Load(); n != 2 {
			t.Fatalf("%d releases 5 s after the previous one, want still 2 (every is 10 s)", n)
		}
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if n := releases.Load(); n != 3 {
			t.Fatalf("%d releases after every, want 3", n)
		}

		// Nothing after stop.
		b.active()
		b.stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := releases.Load(); n != 3 {
			t.Fatalf("%d releases after stop, want still 3", n)
		}
	})
}

// burstObserver passes batches on and counts them as activity.
func TestBurstObserverRecordsBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var releases atomic.Int32
		b := newBurstRelease(time.Second, time.Second, nil, func() { releases.Add(1) })
		defer b.stop()
		inner := &countingObserver{}
		o := burstObserver{Observer: inner, rel: b}
		o.BatchCommitted(3, time.Millisecond, time.Millisecond, nil)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if inner.batches != 1 || releases.Load() != 1 {
			t.Fatalf("batches passed on %d, releases %d; want 1 and 1", inner.batches, releases.Load())
		}
	})
}

type countingObserver struct{ batches int }

func (o *countingObserver) BatchCommitted(int, time.Duration, time.Duration, error) { o.batches++ }
func (o *countingObserver) ReconcileDone(time.Duration, error)                      {}
func (o *countingObserver) Statuses(map[model.State]int)                            {}
