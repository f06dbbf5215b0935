package gen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeTx records what a Generator hands to the kernel: it keeps the parsed frames, accepts at
// most accept frames per call, and fails with failAt's error once total reaches failAt.
type fakeTx struct {
	size    int
	max     int
	accept  int
	failAt  int
	got     []Parsed
	calls   int
	closed  bool
	onCall  func(n int)
	failErr error
}

func (f *fakeTx) batch() int { return f.max }

func (f *fakeTx) send(_ context.Context, n int, fill func([]byte, int)) (int, uint64, error) {
	f.calls++
	if f.onCall != nil {
		f.onCall(len(f.got))
	}
	if n > f.max {
		return 0, 0, errors.New("asked for more than a batch")
	}
	n = min(n, f.accept)
	for j := range n {
		if f.failErr != nil && len(f.got) == f.failAt {
			return j, 0, f.failErr
		}
		b := make([]byte, f.size)
		fill(b, j)
		p, err := ParseFrame(b)
		if err != nil {
			return j, 0, err
		}
		f.got = append(f.got, p)
	}
	return n, 0, nil
}

func (f *fakeTx) close() error { f.closed = true; return nil }

// fakeGenerator returns a generator for spec over a fakeTx.
func fakeGenerator(t *testing.T, spec Spec, tx *fakeTx) *Generator {
	t.Helper()
	g, err := newGenerator(spec)
	if err != nil {
		t.Fatal(err)
	}
	tx.size = spec.FrameSize
	g.tx, g.method = tx, MethodRing
	return g
}

func TestRunSendsCountInFlowOrder(t *testing.T) {
	spec := validSpec()
	spec.Flows, spec.Count = 5, 23
	tx := &fakeTx{max: 8, accept: 3} // the kernel takes fewer than asked
	sent, err := fakeGenerator(t, spec, tx).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sent.Packets != 23 || len(tx.got) != 23 || !tx.closed {
		t.Fatalf("sent %d, kernel got %d, closed %v; want 23, 23, true", sent.Packets, len(tx.got), tx.closed)
	}
	for k, p := range tx.got {
		if p.Flow != uint32(k%5) || p.Seq != uint64(k/5) || p.Key != spec.FlowKey(k%5) || p.L3Len != spec.FrameSize-14 {
			t.Errorf("frame %d: flow %d seq %d key %v L3 %d; want flow %d seq %d", k, p.Flow, p.Seq, p.Key, p.L3Len, k%5, k/5)
		}
	}
	var sum uint64
	for i := range 5 {
		sum += sent.FlowPackets(i)
	}
	if sum != 23 || sent.FlowPackets(2) != 5 || sent.FlowPackets(3) != 4 {
		t.Errorf("per-flow counts %d %d (sum %d)", sent.FlowPackets(2), sent.FlowPackets(3), sum)
	}
}

func TestRunPacedBurstsAreBounded(t *testing.T) {
	spec := validSpec()
	spec.Count, spec.PacketsPerSecond = 50, 1000 // burst: max(1, 1000/100) = 10 frames
	tx := &fakeTx{max: 256, accept: 256}
	largest := 0
	prev := 0
	tx.onCall = func(total int) {
		largest = max(largest, total-prev)
		prev = total
	}
	sent, err := fakeGenerator(t, spec, tx).Run(t.Context())
	if err != nil || sent.Packets != 50 {
		t.Fatalf("sent %d, %v", sent.Packets, err)
	}
	if largest > 10 {
		t.Errorf("a paced call sent %d frames; the bucket holds 10", largest)
	}
}

func TestRunEndsOnDuration(t *testing.T) {
	spec := validSpec()
	spec.Count, spec.Duration = 0, time.Millisecond
	sent, err := fakeGenerator(t, spec, &fakeTx{max: 4, accept: 4}).Run(t.Context())
	if err != nil || sent.End.Sub(sent.Start) < time.Millisecond {
		t.Fatalf("run of %v: %v", sent.End.Sub(sent.Start), err)
	}
}

func TestRunCancelAndErrors(t *testing.T) {
	spec := validSpec()
	spec.Count, spec.Duration = 0, time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	tx := &fakeTx{max: 4, accept: 4}
	tx.onCall = func(total int) {
		if total >= 12 {
			cancel()
		}
	}
	sent, err := fakeGenerator(t, spec, tx).Run(ctx)
	if !errors.Is(err, context.Canceled) || sent.Packets != uint64(len(tx.got)) || sent.Packets < 12 {
		t.Errorf("cancelled run: sent %d (kernel %d), %v", sent.Packets, len(tx.got), err)
	}

	boom := errors.New("boom")
	spec.Duration, spec.Count = 0, 100
	tx = &fakeTx{max: 4, accept: 4, failAt: 9, failErr: boom}
	g := fakeGenerator(t, spec, tx)
	sent, err = g.Run(t.Context())
	if !errors.Is(err, boom) || sent.Packets != 9 {
		t.Errorf("failing kernel: sent %d, %v; want 9 and boom", sent.Packets, err)
	}
	if _, err := g.Run(t.Context()); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestReceiverSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec ReceiverSpec
		want string
	}{
		{ReceiverSpec{Flows: 1}, "Interface is empty"},
		{ReceiverSpec{Interface: "abcdefghijklmnop", Flows: 1}, "15 bytes"},
		{ReceiverSpec{Interface: "eth0"}, "Flows 0"},
		{ReceiverSpec{Interface: "eth0", Flows: MaxFlows + 1}, "Flows 65537"},
	} {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
		if _, err := NewReceiver(c.spec); err == nil {
			t.Errorf("NewReceiver(%+v) succeeded", c.spec)
		}
	}
	if err := (ReceiverSpec{Interface: "eth0", Flows: 3}).Validate(); err != nil {
		t.Error(err)
	}
}
