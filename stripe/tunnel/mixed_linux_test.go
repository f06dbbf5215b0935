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
	"time"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
	"github.com/ovsplane/ovsplane/test/lab"
)

// enginePair runs a real engine in each of two namespaces over two veth links between them,
// until the test ends.
type enginePair struct {
	nsA, nsB *lab.Netns
	a, b     *engine.Engine
}

// newEnginePair builds the namespaces and links and starts both engines' Run. When waitRun is
// false it returns at once (Run may not run yet), else once both run.
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
		ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine %d: Run: %v", self, err)
			}
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
