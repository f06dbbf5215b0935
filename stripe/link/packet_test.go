//go:build linux

package link_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/test/lab"
)

// openIn opens a link on dev inside ns and closes it at cleanup.
func openIn(t *testing.T, ns *lab.Netns, cfg link.Config) link.Link {
	t.Helper()
	var l link.Link
	if err := ns.Do(func() error {
		var err error
		l, err = link.Open(t.Context(), cfg)
		return err
	}); err != nil {
		t.Fatalf("open %s in %s: %v", cfg.Interface, ns, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestConfigRejectsBadInput(t *testing.T) {
	for _, cfg := range []link.Config{
		{},
		{Interface: "a/b"},
		{Interface: "sixteen-chars-xx"},
		{Interface: ".."},
		{Interface: "eth0", EtherType: 0x0500},
		{Interface: "eth0", RecvBuffer: 10},
		{Interface: "eth0", SendBuffer: link.MaxSocketBuffer + 1},
	} {
		if _, err := link.Open(t.Context(), cfg); err == nil {
			t.Errorf("Open(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestOpenMissingInterface(t *testing.T) {
	ns := lab.NewNetns(t)
	err := ns.Do(func() error {
		_, err := link.Open(t.Context(), link.Config{Interface: "nosuchdev0"})
		return err
	})
	if err == nil {
		t.Fatal("Open on a missing interface succeeded")
	}
}

func TestSendRecvStatsAndDown(t *testing.T) {
	for _, ring := range []bool{false, true} {
		name := "recvfrom"
		if ring {
			name = "rx-ring"
		}
		t.Run(name, func(t *testing.T) { testSendRecvStatsAndDown(t, ring) })
	}
}

func testSendRecvStatsAndDown(t *testing.T, ring bool) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
	la := openIn(t, a, link.Config{Interface: p.A.Name, RxRing: ring})
	lb := openIn(t, b, link.Config{Interface: p.B.Name, RecvBuffer: link.MinSocketBuffer, RxRing: ring})
	if la.MTU() != 1500 || len(la.MAC()) != 6 || bytes.Equal(la.MAC(), lb.MAC()) {
		t.Fatalf("link a: MTU %d MAC %v, link b MAC %v", la.MTU(), la.MAC(), lb.MAC())
	}
	ctx := t.Context()

	// One frame each way, with the right source MAC.
	msg := bytes.Repeat([]byte{0xab}, 100)
	if err := la.Send(ctx, lb.MAC(), msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, src, err := lb.Recv(ctx, buf)
	if err != nil || !bytes.Equal(buf[:n], msg) || !bytes.Equal(src, la.MAC()) {
		t.Fatalf("Recv = %d bytes from %v, %v; want the 100 bytes from %v", n, src, err, la.MAC())
	}

	// Bounds: longer than the MTU is refused; a frame longer than the buffer is dropped, counted.
	if err := la.Send(ctx, lb.MAC(), make([]byte, la.MTU()+1)); !errors.Is(err, link.ErrTooLong) {
		t.Fatalf("Send of MTU+1 bytes: %v, want ErrTooLong", err)
	}
	if err := la.Send(ctx, lb.MAC(), make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := la.Send(ctx, lb.MAC(), msg[:10]); err != nil {
		t.Fatal(err)
	}
	if n, _, err := lb.Recv(ctx, make([]byte, 500)); err != nil || n < 10 || n > 60 {
		t.Fatalf("Recv after an oversized frame: %d bytes, %v; want the 10-byte frame (padded to at most 46)", n, err)
	}
	if s := lb.Stats(); s.RxOversize != 1 || s.RxFrames != 2 {
		t.Fatalf("receiver stats %+v: want 1 oversize, 2 frames", s)
	}

	// Recv ends with its context.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := lb.Recv(cctx, buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv with nothing to receive: %v, want the context's deadline", err)
	}

	// Kernel drops: flood the small receive buffer (or the 4 MiB ring) without reading.
	const flood = 5000
	for range flood {
		if err := la.Send(ctx, lb.MAC(), make([]byte, 1400)); err != nil {
			t.Fatal(err)
		}
	}
	lab.WaitFor(t, 10*time.Second, "kernel drops on the receiver", func(context.Context) error {
		if s := lb.Stats(); s.KernelDrops == 0 {
			return errors.New("no drops counted yet")
		}
		return nil
	})
	if s := la.Stats(); s.TxFrames != flood+3 || s.TxErrors != 0 {
		t.Fatalf("sender stats %+v: want %d frames, no errors", s, flood+3)
	}

	// Down: Send fails with IsDown and State says so; up again: both work.
	a.Run(t, "ip", "link", "set", "dev", p.A.Name, "down")
	if st, err := la.State(); err != nil || st.Up || st.Usable() {
		t.Fatalf("State after down: %+v, %v", st, err)
	}
	// The peer end loses its carrier at once (ETHTOOL_GLINK; IFF_RUNNING would lag).
	if st, err := lb.State(); err != nil || !st.Up || st.Running {
		t.Fatalf("peer State after down: %+v, %v; want up without carrier", st, err)
	}
	if err := la.Send(ctx, lb.MAC(), msg); !link.IsDown(err) {
		t.Fatalf("Send on a down link: %v, want an error IsDown accepts", err)
	}
	a.Run(t, "ip", "link", "set", "dev", p.A.Name, "up")
	lab.WaitFor(t, 10*time.Second, "link a usable again", func(context.Context) error {
		if st, err := la.State(); err != nil || !st.Usable() {
			return errors.New("not usable yet")
		}
		if st, err := lb.State(); err != nil || !st.Usable() {
			return errors.New("peer not usable yet")
		}
		return nil
	})
	// Drain the flood, then a frame crosses again. The small receive buffer may still drop one
	// under load, so send until one arrives, a bounded number of times.
	drain(t, lb)
	crossed := false
	for try := 0; try < 20 && !crossed; try++ {
		if err := la.Send(ctx, lb.MAC(), []byte("again")); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		for {
			n, _, err := lb.Recv(rctx, buf)
			if link.IsDown(err) && rctx.Err() == nil { // the socket reports the earlier down once
				continue
			}
			if err != nil {
				break
			}
			if bytes.HasPrefix(buf[:n], []byte("again")) {
				crossed = true
				break
			}
		}
		cancel()
	}
	if !crossed {
		t.Fatal("no frame crossed the link after it came back up")
	}
	if err := la.Close(); err != nil {
		t.Fatal(err)
	}
	if err := la.Send(ctx, lb.MAC(), msg); !errors.Is(err, link.ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
}

// drain reads frames until none arrives for 100 ms (at most 100000 frames).
func drain(t *testing.T, l link.Link) {
	t.Helper()
	buf := make([]byte, 2048)
	for range 100000 {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, _, err := l.Recv(ctx, buf)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if err != nil && !link.IsDown(err) {
			t.Fatal(err)
		}
	}
}
