package ovsdb

import (
	"sync/atomic"
	"testing"
)

// An outage whose connection is already back reads as over at once, not at the watcher's
// next poll: a writer arriving between the reconnection and that poll must not be cut for an
// outage that has ended (TestWritesWhileOVSDBDownAreUnavailable met exactly that window).
func TestLinkStateSeesReconnectionBeforePoll(t *testing.T) {
	var connected, closed atomic.Bool
	l := newLink(connected.Load, closed.Load)
	t.Cleanup(func() { closed.Store(true) })

	l.lost()
	if down, since, _ := l.state(); !down || since.IsZero() {
		t.Fatalf("after lost while disconnected: down=%v since=%v, want down with a start", down, since)
	}
	_, _, changed := l.state()
	connected.Store(true)
	if down, since, _ := l.state(); down || !since.IsZero() {
		t.Fatalf("connection back: down=%v since=%v, want up at once", down, since)
	}
	select {
	case <-changed:
	default:
		t.Fatal("ending the outage did not close the change channel")
	}

	// A second outage is not ended by the first outage's watcher.
	connected.Store(false)
	l.lost()
	l.up(1)
	if down, _, _ := l.state(); !down {
		t.Fatal("the first outage's watcher ended the second outage")
	}
}
