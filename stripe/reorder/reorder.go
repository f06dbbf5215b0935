// Package reorder restores the order of frames that travelled over several links: a bounded
// buffer keyed by sequence number, with a loss timeout.
//
// # Semantics
//
// The buffer expects sequence number Next (Config.First at the start) and holds frames whose
// sequence number lies in the window [Next, Next+Window). Push(now, seq, payload):
//
//   - seq == Next: delivered at once, with every held frame that follows it without a gap;
//   - Next < seq < Next+Window: held until the gap before it is filled or declared lost
//     (Stats.Reordered counts the frames held this way);
//   - seq ≥ Next+Window: the window moves forward to end at seq: held frames that fall out of it
//     are delivered in order and the missing sequence numbers before them are counted lost
//     (Stats.Advanced counts these moves). Memory stays bounded and a sender far ahead never
//     stalls the receiver;
//   - seq < Next: dropped and counted (Stats.TooOld): already delivered, or already given up;
//   - seq already held: dropped and counted (Stats.Duplicates);
//   - seq ≥ MaxSeq: dropped and counted (Stats.Invalid).
//
// Loss timeout: a missing sequence number is declared lost once a frame after it has been held
// for Config.Timeout; every gap before that frame is skipped (Stats.Lost counts each missing
// sequence number) and the held frames are delivered in order. Push applies the timeout after
// inserting its frame; Expire applies it alone, and NextDeadline says when to call it.
//
// Every delivery is in strictly increasing sequence order and every sequence number is delivered
// at most once; every sequence number from First to Next−1 was either delivered or counted lost,
// exactly once, so Stats.Delivered + Stats.Lost == Next − First until a Reset (which starts a new
// sequence space and keeps the counters running).
//
// Memory: at most Window frames are held (Window ≤ MaxWindow); the buffer keeps the payload
// slices it is given (the caller must not reuse them until they are delivered), so the bytes
// held are at most Window times the largest payload the caller passes (64 KiB for stripe frames).
//
// Time is injected: every call that depends on it takes now. A Buffer is not safe for concurrent
// use; one goroutine owns one flow's buffer.
package reorder

import (
	"fmt"
	"time"
)

// Bounds of Config.
const (
	MaxWindow  = 1 << 16
	MaxTimeout = time.Minute
)

// MaxSeq is one past the largest sequence number the buffer accepts (2^63, which no sender
// reaches); the bound keeps Next+Window from overflowing.
const MaxSeq = uint64(1) << 63

// Config configures a Buffer.
type Config struct {
	// Window is the most frames held at once and the span of sequence numbers accepted ahead of
	// Next: 1..MaxWindow. It must cover the largest skew between the links, in frames.
	Window int
	// Timeout is how long a held frame waits for the gaps before it: 0 < Timeout ≤ MaxTimeout.
	Timeout time.Duration
	// First is the first sequence number expected; < MaxSeq.
	First uint64
}

// Delivery is one frame released in order.
type Delivery struct {
	Seq     uint64
	Payload []byte
}

// Stats are the buffer's counters since New.
type Stats struct {
	Delivered  uint64 // frames delivered
	Lost       uint64 // sequence numbers skipped, never delivered
	Duplicates uint64 // frames dropped because their sequence number was already held
	TooOld     uint64 // frames dropped because their sequence number was below Next
	Invalid    uint64 // frames dropped because their sequence number was ≥ MaxSeq
	Reordered  uint64 // frames that arrived ahead of a gap and were held
	Advanced   uint64 // times a frame beyond the window moved the window forward
	Held       int    // frames held now
	MaxHeld    int    // the most frames held at once
}

type slot struct {
	used    bool
	seq     uint64
	at      time.Time
	payload []byte
}

// Buffer is a reorder buffer for one flow.
type Buffer struct {
	window  uint64
	timeout time.Duration
	next    uint64
	slots   []slot
	// oldest is at or before the earliest arrival time among held frames (exact after a scan).
	oldest time.Time
	stats  Stats
}

// New validates cfg and returns an empty buffer expecting cfg.First.
func New(cfg Config) (*Buffer, error) {
	if cfg.Window < 1 || cfg.Window > MaxWindow {
		return nil, fmt.Errorf("reorder: window of %d frames: want 1 to %d", cfg.Window, MaxWindow)
	}
	if cfg.Timeout <= 0 || cfg.Timeout > MaxTimeout {
		return nil, fmt.Errorf("reorder: loss timeout %v: want more than 0 and at most %v", cfg.Timeout, MaxTimeout)
	}
	if cfg.First >= MaxSeq {
		return nil, fmt.Errorf("reorder: first sequence number %d: want below 2^63", cfg.First)
	}
	return &Buffer{window: uint64(cfg.Window), timeout: cfg.Timeout, next: cfg.First,
		slots: make([]slot, cfg.Window)}, nil
}

// Next returns the sequence number the buffer delivers next.
func (b *Buffer) Next() uint64 { return b.next }

// Stats returns the counters.
func (b *Buffer) Stats() Stats { return b.stats }

// NextDeadline returns when Expire may next release something, and false when nothing is held.
// It may be early (Expire then releases nothing and the deadline moves later), never late.
func (b *Buffer) NextDeadline() (time.Time, bool) {
	if b.stats.Held == 0 {
		return time.Time{}, false
	}
	return b.oldest.Add(b.timeout), true
}

// Push offers one frame received at now and returns the frames now deliverable, in order (nil
// if none). See the package documentation for what happens to each kind of sequence number.
func (b *Buffer) Push(now time.Time, seq uint64, payload []byte) []Delivery {
	return b.PushAppend(nil, now, seq, payload)
}

// PushAppend is Push appending the deliverable frames to out (which it returns), so a caller
// that reuses out allocates nothing per frame.
func (b *Buffer) PushAppend(out []Delivery, now time.Time, seq uint64, payload []byte) []Delivery {
	switch {
	case seq >= MaxSeq:
		b.stats.Invalid++
		return b.expire(now, out)
	case seq < b.next:
		b.stats.TooOld++
		return b.expire(now, out)
	case seq-b.next >= b.window:
		b.stats.Advanced++
		out = b.release(seq-b.window+1, out)
	}
	s := &b.slots[seq%b.window]
	if s.used { // the window holds one sequence number per slot, so this is seq itself
		b.stats.Duplicates++
		return b.expire(now, out)
	}
	*s = slot{used: true, seq: seq, at: now, payload: payload}
	if b.stats.Held == 0 || now.Before(b.oldest) {
		b.oldest = now
	}
	b.stats.Held++
	b.stats.MaxHeld = max(b.stats.MaxHeld, b.stats.Held)
	if seq != b.next {
		b.stats.Reordered++
	}
	out = b.deliver(out)
	return b.expire(now, out)
}

// Expire applies the loss timeout at now and returns the frames it releases, in order.
func (b *Buffer) Expire(now time.Time) []Delivery { return b.expire(now, nil) }

// Reset gives up on the current sequence space, as when the sender restarts (frame.FlagReset):
// the held frames are delivered in order, the gaps between them counted lost, and the buffer then
// expects first. The counters keep running. It fails, changing nothing, when first ≥ MaxSeq.
func (b *Buffer) Reset(first uint64) ([]Delivery, error) {
	if first >= MaxSeq {
		return nil, fmt.Errorf("reorder: reset to sequence number %d: want below 2^63", first)
	}
	var out []Delivery
	if b.stats.Held > 0 {
		out = b.release(b.next+b.window, out)
	}
	b.next = first
	return out, nil
}

// deliver releases the frames that follow Next without a gap.
func (b *Buffer) deliver(out []Delivery) []Delivery {
	for b.stats.Held > 0 {
		s := &b.slots[b.next%b.window]
		if !s.used || s.seq != b.next {
			break
		}
		out = append(out, Delivery{Seq: s.seq, Payload: s.payload})
		*s = slot{}
		b.stats.Held--
		b.stats.Delivered++
		b.next++
	}
	return out
}

// release moves Next up to upTo: held frames below upTo are delivered in order, missing sequence
// numbers counted lost; then the frames that follow without a gap are delivered too. It runs at
// most Window steps: every held frame lies below Next+Window.
func (b *Buffer) release(upTo uint64, out []Delivery) []Delivery {
	for b.next < upTo {
		if b.stats.Held == 0 {
			b.stats.Lost += upTo - b.next
			b.next = upTo
			break
		}
		s := &b.slots[b.next%b.window]
		if s.used && s.seq == b.next {
			out = append(out, Delivery{Seq: s.seq, Payload: s.payload})
			*s = slot{}
			b.stats.Held--
			b.stats.Delivered++
		} else {
			b.stats.Lost++
		}
		b.next++
	}
	return b.deliver(out)
}

// expire releases everything up to the newest held frame that has waited Timeout, then
// recomputes the oldest arrival among what is still held.
func (b *Buffer) expire(now time.Time, out []Delivery) []Delivery {
	if b.stats.Held == 0 || now.Sub(b.oldest) < b.timeout {
		return out
	}
	// One pass over the window in sequence order: the last expired frame, and the oldest arrival.
	var last uint64
	found := false
	for i := uint64(0); i < b.window; i++ {
		seq := b.next + i
		s := &b.slots[seq%b.window]
		if s.used && s.seq == seq && now.Sub(s.at) >= b.timeout {
			last, found = seq, true
		}
	}
	if found {
		out = b.release(last+1, out)
	}
	first := true
	for i := range b.slots {
		if s := &b.slots[i]; s.used && (first || s.at.Before(b.oldest)) {
			b.oldest, first = s.at, false
		}
	}
	return out
}
