package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/frame"
)

// TestFrameBufReusedOnlyAfterLastHolder: a frame held by its slot, its first sender and the
// retransmitter goes back to the free list only when all three released it, and is then the
// next frame handed out.
func TestFrameBufReusedOnlyAfterLastHolder(t *testing.T) {
	e := &Engine{maxPayload: 100}
	fb := e.newFrameLocked()
	if fb.refs != 2 || cap(fb.b) < frame.HeaderLen+100 {
		t.Fatalf("new frame: %d holders, room %d: want 2 and at least %d", fb.refs, cap(fb.b), frame.HeaderLen+100)
	}
	fb.refs++           // the retransmitter takes it
	e.releaseLocked(fb) // the ack frees the slot
	e.releaseLocked(fb) // the first send returned
	if len(e.txFree) != 0 {
		t.Fatal("frame reused while the retransmitter still sends it")
	}
	if other := e.newFrameLocked(); other == fb {
		t.Fatal("a held frame was handed out again")
	}
	e.releaseLocked(fb) // the retransmission returned
	if len(e.txFree) != 1 || e.txFree[0] != fb {
		t.Fatalf("free list %v after the last release: want the frame", e.txFree)
	}
	if again := e.newFrameLocked(); again != fb || again.refs != 2 || len(again.b) != 0 {
		t.Fatalf("reuse: got %p with %d holders and %d bytes, want %p, 2, 0", again, again.refs, len(again.b), fb)
	}
	e.releaseLocked(nil) // ignored
}

// TestRxPoolReuse: a released payload buffer carries the next copy; a larger payload gets its
// own buffer, and a buffer too small to hold any payload is not taken back.
func TestRxPoolReuse(t *testing.T) {
	p := &rxPool{size: 64}
	a := p.copyOf([]byte("hello"))
	if string(a) != "hello" || cap(a) < 64 {
		t.Fatalf("copy %q room %d", a, cap(a))
	}
	p.put(a)
	b := p.copyOf([]byte("world"))
	if &b[0] != &a[0] || string(b) != "world" {
		t.Fatalf("released buffer not reused: %q", b)
	}
	big := bytes.Repeat([]byte{7}, 100)
	if c := p.copyOf(big); !bytes.Equal(c, big) {
		t.Fatal("large payload copied wrong")
	}
	p.put(make([]byte, 10))
	if len(p.free) != 0 {
		t.Fatalf("a 10-byte buffer was pooled for payloads up to 64")
	}
}

// TestDupAcksMarkTheBaseFrame: after two acks that repeat a connection's base, its frame is
// marked for the retransmitter once it went out longer ago than the ack delay estimate (found
// by the periodic check without a further ack), not before; progress resets the count; without
// repeated acks, the base is marked once it is twice the estimate old (a tail-loss probe).
func TestDupAcksMarkTheBaseFrame(t *testing.T) {
	c := Conn{Service: 1, SrcPort: 2, DstPort: 3}
	now := time.Now()
	e := &Engine{cfg: Config{AckInterval: 5 * time.Millisecond, RetransmitTimeout: time.Second}, rto: time.Second,
		srtt: 10 * time.Millisecond, rttvar: 2 * time.Millisecond, flows: map[Conn]*sendFlow{},
		retrans: make(chan struct{}, 1), space: make(chan struct{})}
	fl := &sendFlow{conn: c, base: 100, next: 103, slots: make([]pending, 8)}
	for s := uint64(100); s < 103; s++ {
		fl.slots[s%8] = pending{used: true, fb: &frameBuf{refs: 1}, link: 0, sent: now.Add(-10 * time.Millisecond)}
	}
	e.flows[c] = fl
	base := &fl.slots[100%8]
	e.onAck(Ack{Conn: c, Next: 100})
	e.onAck(Ack{Conn: c, Next: 100})
	if base.fast {
		t.Fatal("base frame sent 10 ms ago marked with an ack delay estimate of 18 ms")
	}
	base.sent = now.Add(-30 * time.Millisecond)
	if !e.fastDue(now) { // no further ack: the window is full behind the hole
		t.Fatal("fastDue marked nothing")
	}
	if !base.fast || e.c.fastRetransmits.Load() != 1 {
		t.Fatalf("after repeated acks for a frame sent 30 ms ago: marked %v, %d fast retransmits; want true, 1", base.fast, e.c.fastRetransmits.Load())
	}
	if other := fl.slots[101%8]; other.fast {
		t.Fatal("a frame after the base was marked")
	}
	e.onAck(Ack{Conn: c, Next: 102}) // progress frees 100 and 101 and resets the count
	if fl.base != 102 || fl.dups != 0 || fl.slots[100%8].used {
		t.Fatalf("after progress: base %d, dups %d, slot used %v; want 102, 0, false", fl.base, fl.dups, fl.slots[100%8].used)
	}
	tail := &fl.slots[102%8]
	tail.sent = now.Add(-30 * time.Millisecond)
	if e.fastDue(now) || tail.fast {
		t.Fatal("without repeated acks, a frame 30 ms old was marked before twice the estimate (36 ms)")
	}
	tail.sent = now.Add(-40 * time.Millisecond)
	if !e.fastDue(now) || !tail.fast {
		t.Fatal("tail-loss probe: a frame 40 ms old without acks was not marked")
	}
}
