package reorder

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(100, 0)

func seqs(ds []Delivery) []uint64 {
	out := make([]uint64, len(ds))
	for i, d := range ds {
		out[i] = d.Seq
	}
	return out
}

func mustNew(t *testing.T, cfg Config) *Buffer {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInOrderAndHeld(t *testing.T) {
	b := mustNew(t, Config{Window: 8, Timeout: time.Second})
	if got := seqs(b.Push(t0, 0, []byte("a"))); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("push 0: %v", got)
	}
	if got := b.Push(t0, 2, nil); got != nil {
		t.Fatalf("push 2 ahead of a gap delivered %v", seqs(got))
	}
	b.Push(t0, 3, nil)
	if got := seqs(b.Push(t0, 1, nil)); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("filling the gap delivered %v, want 1 2 3", got)
	}
	b.Push(t0, 2, nil) // too old
	b.Push(t0, 5, nil)
	b.Push(t0, 5, nil) // duplicate while held
	b.Push(t0, MaxSeq, nil)
	st := b.Stats()
	want := Stats{Delivered: 4, TooOld: 1, Duplicates: 1, Invalid: 1, Reordered: 3, Held: 1, MaxHeld: 3} // 2 and 3 held when 1 arrives
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if b.Next() != 4 {
		t.Errorf("Next = %d, want 4", b.Next())
	}
}

func TestLossTimeout(t *testing.T) {
	b := mustNew(t, Config{Window: 16, Timeout: time.Second, First: 10})
	b.Push(t0, 12, []byte("12"))                  // 10, 11 missing
	b.Push(t0.Add(500*time.Millisecond), 15, nil) // 13, 14 missing
	if d, ok := b.NextDeadline(); !ok || !d.Equal(t0.Add(time.Second)) {
		t.Errorf("NextDeadline = %v, %v; want t0+1s", d, ok)
	}
	if got := b.Expire(t0.Add(999 * time.Millisecond)); got != nil {
		t.Fatalf("released before the timeout: %v", seqs(got))
	}
	got := b.Expire(t0.Add(time.Second))
	if !slices.Equal(seqs(got), []uint64{12}) || string(got[0].Payload) != "12" {
		t.Fatalf("at t0+1s released %v, want 12", seqs(got))
	}
	if st := b.Stats(); st.Lost != 2 || st.Held != 1 {
		t.Errorf("after the first timeout: %+v", st)
	}
	if d, ok := b.NextDeadline(); !ok || !d.Equal(t0.Add(1500*time.Millisecond)) {
		t.Errorf("NextDeadline = %v, %v; want t0+1.5s", d, ok)
	}
	// A late 11 is too old; 13 arrives in time and waits for 14 with 15.
	b.Push(t0.Add(1200*time.Millisecond), 11, nil)
	if got := b.Push(t0.Add(1200*time.Millisecond), 13, nil); !slices.Equal(seqs(got), []uint64{13}) {
		t.Fatalf("13 delivered %v", seqs(got))
	}
	// A push after 15's timeout releases it, counting 14 lost.
	if got := b.Push(t0.Add(1500*time.Millisecond), 17, nil); !slices.Equal(seqs(got), []uint64{15}) {
		t.Fatalf("push after the timeout released %v, want 15", seqs(got))
	}
	st := b.Stats()
	if st.Lost != 3 || st.TooOld != 1 || st.Delivered+st.Lost != b.Next()-10 {
		t.Errorf("stats %+v, next %d", st, b.Next())
	}
}

func TestAdvanceBeyondWindow(t *testing.T) {
	b := mustNew(t, Config{Window: 4, Timeout: time.Second})
	b.Push(t0, 1, nil)
	b.Push(t0, 3, nil)
	// 9 ≥ 0+4: the window moves to [6, 10): 1 and 3 delivered, 0 2 4 5 lost, 9 held.
	got := b.Push(t0, 9, nil)
	if !slices.Equal(seqs(got), []uint64{1, 3}) || b.Next() != 6 {
		t.Fatalf("advance delivered %v, next %d", seqs(got), b.Next())
	}
	st := b.Stats()
	if st.Lost != 4 || st.Advanced != 1 || st.Held != 1 {
		t.Errorf("stats %+v", st)
	}
	// A huge jump costs no more than the window: nothing held in between, counted in one step.
	got = b.Push(t0, 1<<40, nil)
	if !slices.Equal(seqs(got), []uint64{9}) || b.Next() != 1<<40-3 {
		t.Fatalf("jump delivered %v, next %d", seqs(got), b.Next())
	}
	st = b.Stats()
	if st.Delivered+st.Lost != b.Next() {
		t.Errorf("Delivered %d + Lost %d != Next %d", st.Delivered, st.Lost, b.Next())
	}
}

func TestReset(t *testing.T) {
	b := mustNew(t, Config{Window: 8, Timeout: time.Second, First: 100})
	b.Push(t0, 102, nil)
	got, err := b.Reset(0)
	if err != nil || !slices.Equal(seqs(got), []uint64{102}) || b.Next() != 0 || b.Stats().Held != 0 {
		t.Fatalf("Reset: %v, %v, next %d", seqs(got), err, b.Next())
	}
	if got := seqs(b.Push(t0, 0, nil)); !slices.Equal(got, []uint64{0}) {
		t.Errorf("after reset, 0 delivered %v", got)
	}
	if _, err := b.Reset(MaxSeq); err == nil {
		t.Error("Reset(MaxSeq) accepted")
	}
}

func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{
		{Window: 0, Timeout: time.Second}, {Window: MaxWindow + 1, Timeout: time.Second},
		{Window: 1}, {Window: 1, Timeout: MaxTimeout + 1}, {Window: 1, Timeout: time.Second, First: MaxSeq},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// TestPermutationsWithinWindow: frames shuffled within aligned blocks of the window size, with
// random duplicates, are all delivered in order exactly once, none lost, at most Window held.
func TestPermutationsWithinWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		w := 1 + r.IntN(64)
		n := r.IntN(1000)
		first := uint64(r.IntN(1 << 20))
		b := mustNew(t, Config{Window: w, Timeout: MaxTimeout, First: first})
		order := make([]uint64, 0, n)
		for start := 0; start < n; start += w {
			block := make([]uint64, 0, w)
			for s := start; s < min(n, start+w); s++ {
				block = append(block, first+uint64(s))
			}
			r.Shuffle(len(block), func(i, j int) { block[i], block[j] = block[j], block[i] })
			order = append(order, block...)
		}
		var got []uint64
		now := t0
		for k, s := range order {
			for _, d := range b.Push(now, s, binary.BigEndian.AppendUint64(nil, s)) {
				if binary.BigEndian.Uint64(d.Payload) != d.Seq {
					t.Fatalf("round %d: payload of %d is %x", round, d.Seq, d.Payload)
				}
				got = append(got, d.Seq)
			}
			if r.IntN(4) == 0 { // a duplicate of a frame already pushed
				d := order[r.IntN(k+1)]
				if got := b.Push(now, d, binary.BigEndian.AppendUint64(nil, d)); got != nil {
					t.Fatalf("round %d: a duplicate of %d delivered %v", round, d, seqs(got))
				}
			}
			now = now.Add(time.Millisecond)
		}
		if len(got) != n {
			t.Fatalf("round %d (window %d): delivered %d of %d", round, w, len(got), n)
		}
		for i, s := range got {
			if s != first+uint64(i) {
				t.Fatalf("round %d: delivery %d is %d, want %d", round, i, s, first+uint64(i))
			}
		}
		st := b.Stats()
		if st.Lost != 0 || st.Held != 0 || st.MaxHeld > w || st.Advanced != 0 {
			t.Fatalf("round %d: stats %+v (window %d)", round, st, w)
		}
	}
}

// FuzzPush drives a buffer with arbitrary pushes, expiries and resets and checks the invariants:
// no panic, deliveries strictly increasing and never repeated within a sequence space, the right
// payloads, at most Window held, Delivered + Lost == Next − First.
func FuzzPush(f *testing.F) {
	f.Add(uint8(4), []byte{0, 2, 1, 1, 0, 0, 9, 9, 2, 0, 200, 3, 0, 0})
	f.Add(uint8(1), []byte{0, 0, 255, 1, 5, 0})
	f.Fuzz(func(t *testing.T, window uint8, ops []byte) {
		w := 1 + int(window)%32
		b := mustNew(t, Config{Window: w, Timeout: 10 * time.Millisecond})
		now := t0
		var base, first uint64 // counters at the last reset, and the space's first sequence number
		var last uint64
		seen := false
		order := func(ds []Delivery) {
			for _, d := range ds {
				if seen && d.Seq <= last {
					t.Fatalf("delivered %d after %d", d.Seq, last)
				}
				if len(d.Payload) != 8 || binary.BigEndian.Uint64(d.Payload) != d.Seq {
					t.Fatalf("payload %x for %d", d.Payload, d.Seq)
				}
				last, seen = d.Seq, true
			}
		}
		check := func(ds []Delivery) {
			order(ds)
			st := b.Stats()
			if st.Held > w || st.Held < 0 {
				t.Fatalf("held %d with window %d", st.Held, w)
			}
			if st.Delivered+st.Lost-base != b.Next()-first {
				t.Fatalf("delivered %d + lost %d − %d != next %d − first %d", st.Delivered, st.Lost, base, b.Next(), first)
			}
		}
		for i := 0; i+2 < len(ops); i += 3 {
			op, arg, dt := ops[i], ops[i+1], ops[i+2]
			now = now.Add(time.Duration(dt) * time.Millisecond / 8)
			switch op % 8 {
			case 0, 1, 2, 3: // a frame near Next
				s := b.Next() + uint64(arg%64) - 8
				check(b.Push(now, s, binary.BigEndian.AppendUint64(nil, s)))
			case 4: // far ahead
				s := b.Next() + uint64(arg)<<uint(op%40)
				check(b.Push(now, s, binary.BigEndian.AppendUint64(nil, s)))
			case 5:
				check(b.Expire(now))
			case 6:
				ds, err := b.Reset(uint64(arg))
				if err != nil {
					t.Fatal(err)
				}
				order(ds) // the flush continues the old space in order
				st := b.Stats()
				base, first = st.Delivered+st.Lost, uint64(arg)
				seen = false
				check(nil)
			case 7: // time going backwards
				now = now.Add(-time.Duration(arg) * time.Millisecond)
				check(b.Expire(now))
			}
		}
	})
}
