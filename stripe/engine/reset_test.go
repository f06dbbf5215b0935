//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// runEngine runs an engine of node self on one side's links until stop (or the test's end),
// which also closes its links, as a process dying would.
func (tb *testbed) runEngine(t *testing.T, self, peer uint32, aSide bool) (n node, stop func()) {
	t.Helper()
	return tb.runEngineClock(t, self, peer, aSide, nil)
}

// runEngineClock is runEngine with the engine's sequence-space clock (nil: the system's).
func (tb *testbed) runEngineClock(t *testing.T, self, peer uint32, aSide bool, clock load.Clock) (n node, stop func()) {
	t.Helper()
	links := tb.open(t, aSide, false)
	vmax := make([]float64, len(rates))
	for i, r := range rates {
		vmax[i] = float64(r) * 1e6 / 8
	}
	e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: links, Vmax: vmax,
		Policy: policy.Config{Kind: policy.KindRoundRobin}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine %d: Run: %v", self, err)
		}
		for _, l := range links {
			_ = l.Close()
		}
	}
	t.Cleanup(stop)
	return node{e: e, links: links}, stop
}

// TestPeerRestart: node B's engine is replaced by a new one (a restarted plugin) while both
// directions carry data. A sees a clean reset of B's connection (Stats.Resets, the first
// delivery of the new space marked Reset, everything in order and once); B's new engine asks A
// to restart A's connection (ResetRequests), A does (Restarts) and B receives A's data again,
// in order.
func TestPeerRestart(t *testing.T) {
	tb := newTestbed(t)
	a, stopA := tb.runEngine(t, nodeA, nodeB, true)
	defer stopA()
	b, stopB := tb.runEngine(t, nodeB, nodeA, false)
	waitDiscovered(t, a, b, nodeB)
	waitDiscovered(t, b, a, nodeA)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	fromB := engine.Conn{Service: 7, SrcPort: 1, DstPort: 2}
	fromA := engine.Conn{Service: 7, SrcPort: 2, DstPort: 1}
	const n = 1 << 20

	// Before: a megabyte each way, complete and in order.
	if err := b.e.Send(ctx, engine.Message{Conn: fromB, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	if r := receiveAll(ctx, a.e, fromB, n); r.err != nil {
		t.Fatalf("A from B before the restart: %v", r.err)
	}
	if err := a.e.Send(ctx, engine.Message{Conn: fromA, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	if r := receiveAll(ctx, b.e, fromA, n); r.err != nil {
		t.Fatalf("B from A before the restart: %v", r.err)
	}
	lab.WaitFor(t, 10*time.Second, "everything acknowledged", func(context.Context) error {
		if u := a.e.Stats().Unacked + b.e.Stats().Unacked; u != 0 {
			return fmt.Errorf("%d frames unacknowledged", u)
		}
		return nil
	})
	// B dies with frames of its connection in flight (unacknowledged), and a new B starts.
	if err := b.e.Send(ctx, engine.Message{Conn: fromB, Payload: chunk(0, 64<<10)}); err != nil {
		t.Fatal(err)
	}
	stopB()
	b2, stopB2 := tb.runEngine(t, nodeB, nodeA, false)
	defer stopB2()
	waitDiscovered(t, b2, a, nodeA)
	waitDiscovered(t, a, b2, nodeB)

	// B's new connection: A resets its receive state and delivers the new space from its
	// start, in order. Frames of the dead engine still in flight may arrive first: they
	// belong to the old space and are delivered (in order) before the reset, or dropped.
	if err := b2.e.Send(ctx, engine.Message{Conn: fromB, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	off, want := 0, uint64(0)
	for off < n {
		d, err := a.e.Receive(ctx)
		if err != nil {
			t.Fatalf("A after the restart, %d bytes of the new space: %v (stats %+v)", off, err, a.e.Stats())
		}
		if d.Conn != fromB {
			t.Fatalf("delivery of connection %+v", d.Conn)
		}
		if off == 0 && !d.Reset {
			continue // the old space's tail, in order before the reset
		}
		if off == 0 {
			if d.Seq%(1<<16) != 0 {
				t.Fatalf("first delivery after the reset has sequence number %d, not a space's start", d.Seq)
			}
			want = d.Seq
		}
		if d.Reset != (off == 0) || d.Seq != want || !bytes.Equal(d.Payload, chunk(off, len(d.Payload))) {
			t.Fatalf("after the reset, at offset %d: delivery %d (reset %t), want %d: out of order, duplicate or wrong bytes", off, d.Seq, d.Reset, want)
		}
		want++
		off += len(d.Payload)
	}
	sa := a.e.Stats()
	if sa.Resets != 1 || sa.Duplicates != 0 {
		t.Errorf("A: %d resets, %d duplicates: want one reset and no duplicate", sa.Resets, sa.Duplicates)
	}

	// A's connection: B's new engine has no state for it and asks A to restart it; A does,
	// and B receives A's next megabyte whole and in order.
	// A probe frame shows B's new engine the old space; B asks A to restart, and A discards it.
	if err := a.e.Send(ctx, engine.Message{Conn: fromA, Payload: chunk(0, 100)}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 10*time.Second, "A restarted its connection at B's request", func(context.Context) error {
		if s := a.e.Stats(); s.Restarts == 0 || s.Unacked != 0 {
			return fmt.Errorf("A: %d restarts, %d unacked; B: %d reset requests", s.Restarts, s.Unacked, b2.e.Stats().ResetRequests)
		}
		return nil
	})
	// The new space: B receives A's next megabyte from its start, whole and in order.
	if err := a.e.Send(ctx, engine.Message{Conn: fromA, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	if r := receiveAll(ctx, b2.e, fromA, n); r.err != nil {
		t.Fatalf("B from A after the restart: %v", r.err)
	}
	sa, sb := a.e.Stats(), b2.e.Stats()
	if sa.Restarts != 1 || sa.Discarded == 0 || sb.ResetRequests == 0 || sb.StaleFrames == 0 {
		t.Errorf("A restarts %d, discarded %d; B reset requests %d, stale frames %d: want one restart with frames discarded",
			sa.Restarts, sa.Discarded, sb.ResetRequests, sb.StaleFrames)
	}
	t.Logf("A: resets %d, restarts %d, discarded %d, stale %d; B: reset requests %d, stale %d",
		sa.Resets, sa.Restarts, sa.Discarded, sa.StaleFrames, sb.ResetRequests, sb.StaleFrames)
}

// behindClock is a system clock set back by an hour: a node whose clock stepped back while its
// plugin restarted.
type behindClock struct{}

func (behindClock) Now() time.Time { return time.Now().Add(-time.Hour) }

// TestRestartClockBehind: node B's engine restarts with its clock an hour behind, so its new
// connection's sequence space starts below the one A follows from the old engine. A must not
// take the new space's frames for late copies of an old space forever: it tells B (a reset
// request naming the space it follows), B moves its connection above it, sending again the
// frames A never delivered, and A delivers B's data from the new space's start, whole, in
// order and once.
func TestRestartClockBehind(t *testing.T) {
	tb := newTestbed(t)
	a, stopA := tb.runEngine(t, nodeA, nodeB, true)
	defer stopA()
	b, stopB := tb.runEngine(t, nodeB, nodeA, false)
	waitDiscovered(t, a, b, nodeB)
	waitDiscovered(t, b, a, nodeA)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	fromB := engine.Conn{Service: 7, SrcPort: 1, DstPort: 2}
	const n = 256 << 10
	if err := b.e.Send(ctx, engine.Message{Conn: fromB, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	if r := receiveAll(ctx, a.e, fromB, n); r.err != nil {
		t.Fatalf("A from B before the restart: %v", r.err)
	}
	stopB()
	b2, stopB2 := tb.runEngineClock(t, nodeB, nodeA, false, behindClock{})
	defer stopB2()
	waitDiscovered(t, b2, a, nodeA)
	waitDiscovered(t, a, b2, nodeB)
	if err := b2.e.Send(ctx, engine.Message{Conn: fromB, Payload: chunk(0, n)}); err != nil {
		t.Fatal(err)
	}
	// Bounded: a stalled connection never delivers (the receive ends with the context).
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	off, want := 0, uint64(0)
	for off < n {
		d, err := a.e.Receive(rctx)
		if err != nil {
			t.Fatalf("A after B restarted with its clock behind, %d of %d bytes: %v (A %+v; B %+v)", off, n, err, a.e.Stats(), b2.e.Stats())
		}
		if d.Conn != fromB {
			t.Fatalf("delivery of connection %+v", d.Conn)
		}
		if off == 0 {
			if !d.Reset {
				t.Fatalf("first delivery after B's restart (sequence number %d) not marked Reset", d.Seq)
			}
			want = d.Seq
		}
		if d.Reset != (off == 0) || d.Seq != want || !bytes.Equal(d.Payload, chunk(off, len(d.Payload))) {
			t.Fatalf("at offset %d: delivery %d (reset %t), want %d: out of order, duplicate or wrong bytes", off, d.Seq, d.Reset, want)
		}
		want++
		off += len(d.Payload)
	}
	sa, sb := a.e.Stats(), b2.e.Stats()
	if sa.Resets != 1 || sa.Duplicates != 0 || sb.Restarts != 1 || sb.Discarded != 0 || sa.ResetRequests == 0 {
		t.Errorf("A resets %d, duplicates %d, reset requests %d; B restarts %d, discarded %d: want one reset, B moved above A's space once, nothing discarded",
			sa.Resets, sa.Duplicates, sa.ResetRequests, sb.Restarts, sb.Discarded)
	}
}
