package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DisconnectedError is returned by Commit when the connection to OVSDB was lost and did not
// come back within CommitOptions.ReconnectWait. errors.Is(err, ErrNotConnected) holds.
// Unknown tells the caller what it may assume: false means nothing of the transaction reached
// the server (nothing was applied); true means an attempt was in flight when the connection
// dropped, so the transaction may or may not have been committed. Every change of a Txn is
// idempotent, so sending the same transaction again is safe either way.
type DisconnectedError struct {
	Endpoints []string      // the endpoints the client reconnects to
	Down      time.Duration // how long the connection had been down when Commit gave up
	Wait      time.Duration // CommitOptions.ReconnectWait
	Unknown   bool          // an attempt was in flight when the connection dropped
	Err       error         // the transport error of the attempt in flight, if any
}

// Error implements error. The message names the endpoints and says whether anything may
// have been applied.
func (e *DisconnectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): down for %s, longer than the reconnect wait of %s; ", ErrNotConnected,
		strings.Join(e.Endpoints, ","), e.Down.Round(time.Millisecond), e.Wait)
	if e.Unknown {
		b.WriteString("the connection dropped while the transaction was in flight, so its outcome is unknown " +
			"(it may have been committed); its changes are idempotent: sending it again once OVSDB is back is safe")
	} else {
		b.WriteString("the transaction was not sent, nothing was applied: send it again once OVSDB is back")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " (last error: %v)", e.Err)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrNotConnected) true and exposes the transport error.
func (e *DisconnectedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotConnected}
	}
	return []error{ErrNotConnected, e.Err}
}

// linkPoll is how often a lost connection is checked for its return.
const linkPoll = 20 * time.Millisecond

// link follows the connection for the writers that wait on it: whether it is down, since
// when, and a channel closed at every change. libovsdb starts every reconnection by resetting
// its backoff, which calls lost; a goroutine then polls until the connection is back (or the
// client is closed), so nothing runs while the connection is up.
type link struct {
	connected func() bool // the client's Connected
	closed    func() bool // the client was closed: stop watching

	mu      sync.Mutex
	down    bool
	since   time.Time     // start of the current outage, while down
	outage  uint64        // counts outages, so a watcher only ends its own
	changed chan struct{} // closed and replaced at every change
}

func newLink(connected, closed func() bool) *link {
	return &link{connected: connected, closed: closed, changed: make(chan struct{})}
}

// lost records that the connection dropped and starts watching for its return. Further calls
// during the same outage keep its start.
func (l *link) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return
	}
	l.down, l.since = true, time.Now()
	l.outage++
	l.broadcastLocked()
	go l.watch(l.outage)
}

func (l *link) watch(outage uint64) {
	tick := time.NewTicker(linkPoll)
	defer tick.Stop()
	for range tick.C {
		if l.closed() {
			return
		}
		if l.connected() {
			l.up(outage)
			return
		}
	}
}

// up ends outage if it is still the current one.
func (l *link) up(outage uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down && l.outage == outage {
		l.down, l.since = false, time.Time{}
		l.broadcastLocked()
	}
}

func (l *link) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// state returns whether the connection is down, since when, and a channel closed at the next
// change. An outage whose connection is already back is ended here rather than at the
// watcher's next poll, so a writer arriving in between is not cut for an outage that is over.
// connected is called without l.mu held: libovsdb may call lost under its own lock.
func (l *link) state() (down bool, since time.Time, changed <-chan struct{}) {
	l.mu.Lock()
	down, outage := l.down, l.outage
	l.mu.Unlock()
	if down && l.connected() {
		l.up(outage)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down, l.since, l.changed
}

// AwaitConnected returns nil once the client is connected. With wait > 0 it returns a
// *DisconnectedError (Unknown false: the caller has sent nothing yet) as soon as the
// connection has been down for wait, counted from when it was lost: writers queued behind each
// other all give up by then, and one arriving later fails at once. It always gives up when ctx
// ends, with an error matching ErrNotConnected and ctx.Err(). wait <= 0 waits for ctx alone.
func (c *Client) AwaitConnected(ctx context.Context, wait time.Duration) error {
	if wait <= 0 {
		return c.waitConnected(ctx)
	}
	firstSeen := time.Time{}
	for !c.Connected() {
		down, since, changed := c.link.state()
		if firstSeen.IsZero() {
			firstSeen = time.Now()
		}
		if !down {
			// Dropped, but libovsdb has not started reconnecting yet (microseconds): the
			// outage starts now as far as this writer knows.
			since = firstSeen
		}
		left := time.Until(since.Add(wait))
		if left <= 0 {
			return &DisconnectedError{Endpoints: c.endpoints, Down: time.Since(since), Wait: wait}
		}
		timer := time.NewTimer(min(left, linkPoll))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w to %s (reconnecting): %w", ErrNotConnected, strings.Join(c.endpoints, ","), ctx.Err())
		}
		timer.Stop()
	}
	return nil
}

// boundByLink returns a context for one transaction that ends, with a *DisconnectedError as
// its cause, once the connection has been down for wait (libovsdb holds a transaction sent
// while it reconnects until it is back or its context ends). wait <= 0: ctx itself. Call stop
// when the transaction has returned.
func (c *Client) boundByLink(ctx context.Context, wait time.Duration) (bctx context.Context, stop func()) {
	if wait <= 0 {
		return ctx, func() {}
	}
	bctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	// watch waits for the next change of the link and says whether to keep watching; its
	// timer is stopped at every return, not piled up until the transaction ends.
	watch := func() bool {
		down, since, changed := c.link.state()
		var expire <-chan time.Time
		if down {
			t := time.NewTimer(time.Until(since.Add(wait)))
			defer t.Stop()
			expire = t.C
		}
		select {
		case <-done:
			return false
		case <-bctx.Done():
			return false
		case <-changed:
			return true
		case <-expire:
			cancel(&DisconnectedError{Endpoints: c.endpoints, Down: time.Since(since), Wait: wait, Unknown: true})
			return false
		}
	}
	go func() {
		for watch() {
		}
	}()
	return bctx, func() { close(done); cancel(nil) }
}

// linkGaveUp returns the *DisconnectedError that ended a transaction's context made by
// boundByLink, or nil when something else ended it. libovsdb says when the transaction was
// still waiting for the reconnection, i.e. never sent: then Unknown is false.
func linkGaveUp(bctx context.Context, transactErr error) *DisconnectedError {
	var de *DisconnectedError
	if transactErr == nil || !errors.As(context.Cause(bctx), &de) {
		return nil
	}
	out := *de
	if !errors.Is(transactErr, context.Canceled) { // not just the cancellation that made it give up
		out.Err = transactErr
	}
	// libovsdb v0.8.1 (client.Transact): "<ctx error>: while awaiting reconnection" when it
	// never sent the transaction. Any other text keeps the conservative answer: unknown.
	if strings.HasSuffix(transactErr.Error(), "while awaiting reconnection") {
		out.Unknown = false
	}
	return &out
}
