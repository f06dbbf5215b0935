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
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
	"github.com/ovsplane/ovsplane/test/lab"
)

// enginePair is a real engine in each of two namespaces over two veth links between them.
type enginePair struct {
	nsA, nsB *lab.Netns
	a, b     *engine.Engine
	run      []func() // start each engine's Run, which lasts until the test ends
}

// start starts both engines' Run and returns at once (Run may not run yet).
func (p *enginePair) start() {
	for _, r := range p.run {
		r()
	}
}

// newEnginePair builds the namespaces, links and engines; start runs them.
func newEnginePair(t *testing.T) *enginePair {
	t.Helper()
	p := &enginePair{nsA: lab.NewNetns(t), nsB: lab.NewNetns(t)}
	var pairs []*lab.VethPair
	for range 2 {
		pairs = append(pairs, lab.NewVethPair(t, lab.VethSpec{ANetns: p.nsA, BNetns: p.nsB}))
	}
	start := func(ns *lab.Netns, self, peer uint32, aSide bool) *engine.Engine {
		var links []link.Link
		err := ns.Do(func() error {
			for _, vp := range pairs {
				name := vp.B.Name
				if aSide {
					name = vp.A.Name
				}
				l, err := link.Open(t.Context(), link.Config{Interface: name})
				if err != nil {
					return err
				}
				links = append(links, l)
			}
			return nil
		})
		t.Cleanup(func() {
			for _, l := range links {
				_ = l.Close()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: links, Vmax: []float64{125e6, 125e6},
			Policy: policy.Config{Kind: policy.KindRoundRobin}})
		if err != nil {
			t.Fatal(err)
		}
		p.run = append(p.run, func() {
			ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("engine %d: Run: %v", self, err)
				}
			})
		})
		return e
	}
	p.a, p.b = start(p.nsA, 1, 2, true), start(p.nsB, 2, 1, false)
	return p
}

// openTunnel opens tunnel st0 with address addr in ns on engine e.
func openTunnel(t *testing.T, ns *lab.Netns, addr string, e tunnel.Engine, noOffload bool) *tunnel.Tunnel {
	t.Helper()
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

// transfer sends n bytes over one TCP connection from src to a listener at dstIP in dst and
// checks they arrive whole; it also checks the reply direction with a shorter answer.
func transfer(ctx context.Context, src, dst *lab.Netns, dstIP string, n int) error {
	var ln net.Listener
	if err := dst.Do(func() (err error) { ln, err = net.Listen("tcp", dstIP+":0"); return err }); err != nil {
		return err
	}
	defer ln.Close()
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*131 + i>>9)
	}
	answer := want[:n/4]
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			errc <- fmt.Errorf("server read: %w", err)
			return
		}
		if !bytes.Equal(b, want) {
			errc <- errors.New("server received other bytes than sent")
			return
		}
		_, err = c.Write(answer)
		errc <- err
	}()
	err := src.Do(func() error {
		d := net.Dialer{Timeout: 30 * time.Second}
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(want); err != nil {
			return err
		}
		b := make([]byte, len(answer))
		if _, err := io.ReadFull(c, b); err != nil {
			return fmt.Errorf("client read of the answer: %w", err)
		}
		if !bytes.Equal(b, answer) {
			return errors.New("client received another answer than sent")
		}
		return nil
	})
	if err != nil {
		return err
	}
	return <-errc
}

// TestMixedOffloadPeers: one node's tunnel runs with segmentation offloads, the other's
// without, over a real engine pair. A TCP connection each way carries its bytes intact: the
// side with offloads sends partial checksums (the pseudo-header sum), which the side without
// completes before its kernel sees them; the side without sends complete ones, which the side
// with offloads writes as partial.
func TestMixedOffloadPeers(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	p := newEnginePair(t)
	p.start()
	ta := openTunnel(t, p.nsA, "10.79.1.1/24", p.a, false) // offloads
	tb := openTunnel(t, p.nsB, "10.79.1.2/24", p.b, true)  // none
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 2)
	for _, tun := range []*tunnel.Tunnel{ta, tb} {
		go func() { done <- tun.Run(ctx) }()
	}
	// From the side with offloads (super-packets split, partial checksums) to the side
	// without, then the other way.
	if err := transfer(ctx, p.nsA, p.nsB, "10.79.1.2", 2<<20); err != nil {
		t.Fatalf("TCP from the tunnel with offloads to the one without: %v (A %+v, B %+v)", err, ta.Stats(), tb.Stats())
	}
	if err := transfer(ctx, p.nsB, p.nsA, "10.79.1.1", 2<<20); err != nil {
		t.Fatalf("TCP from the tunnel without offloads to the one with: %v (A %+v, B %+v)", err, ta.Stats(), tb.Stats())
	}
	sa, sb := ta.Stats(), tb.Stats()
	if !sa.Offload || sb.Offload || sa.WriteErrors+sb.WriteErrors+sa.Malformed+sb.Malformed != 0 {
		t.Errorf("A %+v, B %+v: want offloads on A only, and no write error or malformed packet", sa, sb)
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestRunWaitsForTheEngine: the tunnels are handed engines whose Run has not started, and run
// first. A TCP connection's SYN is queued in A's device before the engines start; the tunnels
// wait for the engines instead of ending on engine.ErrNotRunning, and once the engines run the
// connection carries its bytes. A tunnel handed an engine whose Run has ended ends with
// ErrNotRunning, and one whose context ends while it waits returns nil.
func TestRunWaitsForTheEngine(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	p := newEnginePair(t)
	ta := openTunnel(t, p.nsA, "10.79.2.1/24", p.a, false)
	tb := openTunnel(t, p.nsB, "10.79.2.2/24", p.b, false)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 2)
	for _, tun := range []*tunnel.Tunnel{ta, tb} {
		go func() { done <- tun.Run(ctx) }()
	}
	res := make(chan error, 1)
	go func() { res <- transfer(ctx, p.nsA, p.nsB, "10.79.2.2", 1<<20) }()
	// The kernel routed the SYN into A's device: the packet that used to beat the engine.
	lab.WaitFor(t, 30*time.Second, "A's connection in SYN-SENT (its SYN in A's tun device)", func(context.Context) error {
		return p.nsA.Do(func() error {
			// this thread's namespace's sockets: connect sent the SYN through the device, which
			// queued it for the tunnel to read.
			b, err := os.ReadFile("/proc/thread-self/net/tcp")
			if err != nil {
				return err
			}
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(line)
				if len(f) > 3 && strings.HasPrefix(f[2], "02024F0A:") && f[3] == "02" { // 10.79.2.2, SYN-SENT
					return nil
				}
			}
			return errors.New("no connection in SYN-SENT yet")
		})
	})
	select {
	case err := <-done:
		t.Fatalf("a tunnel's Run ended before its engine ran: %v", err)
	default:
	}
	p.start()
	if err := <-res; err != nil {
		t.Fatalf("TCP through tunnels started before their engines: %v (A %+v, B %+v)", err, ta.Stats(), tb.Stats())
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}

	// An engine that ran and ended: the tunnel ends with ErrNotRunning at once.
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	stopped := newEnginePair(t)
	tc := openTunnel(t, stopped.nsA, "10.79.3.1/24", stopped.a, true)
	qctx, qcancel := context.WithCancel(t.Context())
	qcancel()
	if err := tc.Run(qctx); err != nil {
		t.Errorf("Run waiting for an engine, its context cancelled: %v, want nil", err)
	}
	ectx, ecancel := context.WithCancel(t.Context())
	edone := make(chan error, 1)
	go func() { edone <- stopped.a.Run(ectx) }()
	if err := stopped.a.WaitRunning(wctx); err != nil {
		t.Fatal(err)
	}
	ecancel()
	if err := <-edone; err != nil {
		t.Fatal(err)
	}
	if err := tc.Run(wctx); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("Run on an engine whose Run ended: %v, want ErrNotRunning", err)
	}
}
