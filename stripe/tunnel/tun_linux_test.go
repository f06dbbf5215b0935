//go:build linux

package tunnel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
	"github.com/ovsplane/ovsplane/test/lab"
)

// pipe is a loopback engine: what one end sends, the other receives, in order.
type pipe struct {
	out, in chan engine.Delivery
}

func newPipes() (a, b *pipe) {
	ab, ba := make(chan engine.Delivery, 1024), make(chan engine.Delivery, 1024)
	return &pipe{out: ab, in: ba}, &pipe{out: ba, in: ab}
}

func (p *pipe) Send(ctx context.Context, m engine.Message) error {
	d := engine.Delivery{Conn: m.Conn, Payload: bytes.Clone(m.Payload)}
	select {
	case p.out <- d:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipe) Receive(ctx context.Context) (engine.Delivery, error) {
	select {
	case d := <-p.in:
		return d, nil
	case <-ctx.Done():
		return engine.Delivery{}, ctx.Err()
	}
}

// ReceiveBatch waits for one delivery and adds those already waiting.
func (p *pipe) ReceiveBatch(ctx context.Context, ds []engine.Delivery) (int, error) {
	d, err := p.Receive(ctx)
	if err != nil {
		return 0, err
	}
	ds[0] = d
	n := 1
	for n < len(ds) {
		select {
		case d := <-p.in:
			ds[n] = d
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (p *pipe) MaxPayload() int { return 1400 }

// TestTunnelCarriesTCP opens a tunnel in each of two namespaces over a loopback engine and
// moves a TCP stream between the tunnel addresses; then Run ends with its context. It runs
// with the offloads (super-packets split on A, coalesced on B) and without.
func TestTunnelCarriesTCP(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	for _, off := range []bool{false, true} {
		name := "offload"
		if off {
			name = "no-offload"
		}
		t.Run(name, func(t *testing.T) { testTunnelCarriesTCP(t, off) })
	}
}

func testTunnelCarriesTCP(t *testing.T, noOffload bool) {
	nsA, nsB := lab.NewNetns(t), lab.NewNetns(t)
	pa, pb := newPipes()
	open := func(ns *lab.Netns, addr string, e tunnel.Engine) *tunnel.Tunnel {
		var tun *tunnel.Tunnel
		err := ns.Do(func() (err error) {
			tun, err = tunnel.Open(t.Context(), tunnel.Config{Name: "st0", Addr: netip.MustParsePrefix(addr), Engine: e, NoOffload: noOffload})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tun.Close() })
		return tun
	}
	ta, tb := open(nsA, "10.79.0.1/24", pa), open(nsB, "10.79.0.2/24", pb)
	if ta.MTU() != 1400 || ta.Name() != "st0" {
		t.Errorf("tunnel %s MTU %d, want st0 with the engine's MaxPayload 1400", ta.Name(), ta.MTU())
	}
	if out := nsA.Run(t, "ip", "-o", "link", "show", "st0"); !bytes.Contains([]byte(out), []byte("mtu 1400")) {
		t.Errorf("ip link: %s, want mtu 1400", out)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	for _, tun := range []*tunnel.Tunnel{ta, tb} {
		go func() { done <- tun.Run(ctx) }()
	}
	var ln net.Listener
	if err := nsB.Do(func() (err error) { ln, err = net.Listen("tcp", "10.79.0.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	err := nsA.Do(func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write(want); err != nil {
			return err
		}
		return c.(*net.TCPConn).CloseWrite()
	})
	if err != nil {
		t.Fatalf("send over the tunnel: %v", err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("received %d bytes, want the %d sent, equal", len(b), len(want))
	}
	sa, sb := ta.Stats(), tb.Stats()
	if sa.TxPackets < uint64(len(want)/1400) || sb.RxPackets != sa.TxPackets || sa.Malformed != 0 {
		t.Errorf("stats A %+v B %+v: want A's packets all written by B", sa, sb)
	}
	if sa.Offload == noOffload || sb.Offload == noOffload {
		t.Errorf("offload A %v B %v, want %v", sa.Offload, sb.Offload, !noOffload)
	}
	if noOffload && (sa.Reads != sa.TxPackets || sb.Writes != sb.RxPackets) {
		t.Errorf("without offloads: A read %d times for %d packets, B wrote %d times for %d: want one each", sa.Reads, sa.TxPackets, sb.Writes, sb.RxPackets)
	}
	// with offloads, the sending kernel hands over super-packets (4 MiB written at once), and
	// the receiving tunnel coalesces consecutive segments of a batch.
	if !noOffload && (sa.Reads >= sa.TxPackets || sb.Writes >= sb.RxPackets) {
		t.Errorf("with offloads: A read %d times for %d packets, B wrote %d times for %d: want fewer reads and writes than packets", sa.Reads, sa.TxPackets, sb.Writes, sb.RxPackets)
	}
	var perConn uint64
	for _, n := range sa.PerConn {
		perConn += n
	}
	if len(sa.PerConn) != tunnel.DefaultConns || perConn != sa.TxPackets {
		t.Errorf("per-connection counts %v do not sum to %d", sa.PerConn, sa.TxPackets)
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v, want nil", err)
		}
	}
	// after Close, Run fails with ErrClosed.
	if err := ta.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ta.Run(t.Context()); !errors.Is(err, tunnel.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}

// endingEngine is an engine run by the tunnel's own ctx: when ctx ends, it ends too, and its
// Receive says ErrNotRunning rather than the context's error.
type endingEngine struct{ *pipe }

func (e endingEngine) Receive(ctx context.Context) (engine.Delivery, error) {
	<-ctx.Done()
	return engine.Delivery{}, fmt.Errorf("engine: receive: %w", engine.ErrNotRunning)
}

func (e endingEngine) ReceiveBatch(ctx context.Context, _ []engine.Delivery) (int, error) {
	_, err := e.Receive(ctx)
	return 0, err
}

// TestRunEndsCleanWithItsEngine: when Run's ctx ends and the engine it runs on ends with it,
// Run returns nil (its contract for an ended ctx), not the engine's ErrNotRunning. This checks
// the contract; the race stripebed's TestHarness hit in CI (the engine, watching the parent
// ctx, ended and Receive said ErrNotRunning before Run's derived ctx was cancelled) cannot be
// forced from here: Run now decides by the ctx it was given, which the engine shares.
func TestRunEndsCleanWithItsEngine(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	ns := lab.NewNetns(t)
	pa, _ := newPipes()
	var tun *tunnel.Tunnel
	if err := ns.Do(func() (err error) {
		tun, err = tunnel.Open(t.Context(), tunnel.Config{Name: "st0", Addr: netip.MustParsePrefix("10.79.1.1/24"), Engine: endingEngine{pa}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tun.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tun.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after its ctx ended with its engine: %v, want nil", err)
	}
}
