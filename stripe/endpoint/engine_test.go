//go:build linux

package endpoint_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/fair"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// rates are the test links' speeds in Mbit/s, uneven on purpose (as stripe/engine's tests).
var rates = [4]int{100, 200, 300, 400}

// vmaxScale is the fraction of each link's rate the endpoints share out, so that pacing, not
// the links or the CPU, bounds the applications in the fairness test.
const vmaxScale = 1.0 / 8

// enginePair builds two namespaces joined by four veth pairs shaped with tbf in both
// directions (the setup of stripe/engine's tests), runs an engine in each and waits until
// each knows the other's MAC on every link.
func enginePair(t *testing.T) (a, b *engine.Engine, vmax []float64) {
	t.Helper()
	nsA, nsB := lab.NewNetns(t), lab.NewNetns(t)
	var pairs []*lab.VethPair
	for _, mbit := range rates {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: nsA, BNetns: nsB})
		burst := max(64<<10, mbit*1e6/8/50)
		for _, end := range []lab.VethEnd{p.A, p.B} {
			end.Netns.Run(t, "tc", "qdisc", "replace", "dev", end.Name, "root", "tbf",
				"rate", strconv.Itoa(mbit)+"mbit", "burst", strconv.Itoa(burst), "latency", "20ms")
		}
		pairs = append(pairs, p)
		vmax = append(vmax, float64(mbit)*1e6/8*vmaxScale)
	}
	open := func(ns *lab.Netns, aSide bool) []link.Link {
		var links []link.Link
		err := ns.Do(func() error {
			for _, p := range pairs {
				name := p.B.Name
				if aSide {
					name = p.A.Name
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
			t.Fatalf("open links in %s: %v", ns, err)
		}
		return links
	}
	mk := func(self, peer uint32, ns *lab.Netns, aSide bool) *engine.Engine {
		e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: open(ns, aSide), Vmax: vmax,
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
	a, b = mk(1, 2, nsA, true), mk(2, 1, nsB, false)
	for _, e := range []*engine.Engine{a, b} {
		lab.WaitFor(t, 10*time.Second, "discovery of every peer link", func(context.Context) error {
			if p := e.Peers(); len(p) != 1 || len(p[0].NICs) != len(rates) {
				return fmt.Errorf("peers %+v", p)
			}
			return nil
		})
	}
	return a, b, vmax
}

func TestOverRealEngines(t *testing.T) {
	ea, eb, vmax := enginePair(t)
	a := startEndpoint(t, ea, 2, vmax, nil)
	b := startEndpoint(t, eb, 1, vmax, nil)
	for _, kind := range []string{"unix", "tcp", "udp"} {
		t.Run(kind, func(t *testing.T) {
			maxSize, n := endpoint.DefaultMaxMessage, 300
			if kind == "udp" {
				maxSize, n = 1000, 100 // loopback UDP drops what overflows a socket buffer
			}
			exchange(t, serve(t, a, kind), serve(t, b, kind), 1, 2, n, maxSize)
		})
	}
	if s := b.Stats(); s.Gaps != 0 || s.Broken != 0 || s.Unroutable != 0 {
		t.Errorf("receiving endpoint: %+v", s)
	}
	if s := eb.Stats(); s.Lost != 0 {
		t.Errorf("receiving engine lost %d frames", s.Lost)
	}
	// The five applications leave messages in flight when they deregister: those count as
	// unroutable, so this runs last.
	t.Run("five applications share fairly", func(t *testing.T) { fiveApps(t, a, b) })
}

// fiveApps runs five applications sending as fast as they can, with message sizes from 1 kB to
// 60 kB (so an unpaced endpoint would favour the large ones), until 10 MiB arrived in all, and
// checks Jain's index over the bytes each received.
func fiveApps(t *testing.T, a, b *endpoint.Endpoint) {
	sizes := []int{1000, 4000, 16000, 32000, 60000}
	const total = 10 << 20
	da, db := serve(t, a, "tcp"), serve(t, b, "tcp")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	sendCtx, stop := context.WithCancel(ctx)
	defer stop()
	var received atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	names := map[string]bool{}
	// All register first, then all start together: an application registered alone gets the
	// whole capacity until the next one arrives.
	start := make(chan struct{})
	for i, size := range sizes {
		snd, rcv := da(t), db(t)
		sid, err := snd.Register(ctx, endpoint.Registration{Name: fmt.Sprint("tx", i), Service: 9, LocalPort: uint16(100 + i), PeerNode: 2, PeerPort: uint16(200 + i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rcv.Register(ctx, endpoint.Registration{Name: fmt.Sprint("rx", i), Service: 9, LocalPort: uint16(200 + i), PeerNode: 1, PeerPort: uint16(100 + i)}); err != nil {
			t.Fatal(err)
		}
		names[fmt.Sprint("rx", i)] = true
		wg.Go(func() {
			msg := make([]byte, size)
			<-start
			for tag := uint32(0); sendCtx.Err() == nil; tag++ {
				if snd.Send(sendCtx, sid, tag, msg) != nil {
					return
				}
			}
		})
		wg.Go(func() {
			for {
				m, err := rcv.Next(sendCtx)
				if err != nil {
					return
				}
				received.Add(int64(len(m.Payload)))
			}
		})
	}
	close(start)
	waitFor(t, "10 MiB received by the five applications", func() error {
		if n := received.Load(); n < total {
			return fmt.Errorf("%d bytes", n)
		}
		return nil
	})
	rs, ss := b.Stats(), a.Stats()
	stop()
	var got, shares []float64
	for _, ap := range rs.Apps {
		if names[ap.Name] {
			got = append(got, float64(ap.ReceivedBytes))
		}
	}
	var waits uint64
	for _, ap := range ss.Apps {
		shares = append(shares, ap.Share)
		waits += ap.Backpressure
		t.Logf("%s: share %.0f B/s, sent %d messages, %d bytes; waited for queue room %d times", ap.Name, ap.Share, ap.SentMessages, ap.SentBytes, ap.Backpressure)
	}
	jb, err := fair.Jain(got)
	if err != nil {
		t.Fatal(err)
	}
	js, err := fair.Jain(shares)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("received bytes %v: Jain %.4f; shares Jain %.4f; capacity %.0f B/s, applications' rate %.0f B/s",
		got, jb, js, ss.Peers[0].Capacity, ss.Peers[0].AppRate)
	if len(got) != len(sizes) || jb < 0.98 {
		t.Errorf("Jain's index over the received bytes %v is %.4f, want ≥ 0.98", got, jb)
	}
	if len(shares) != len(sizes) || js < 0.999 {
		t.Errorf("shares %v (Jain %.4f): want equal", shares, js)
	}
	if waits == 0 {
		t.Errorf("no sender ever waited for its queue: pacing did not bound the applications")
	}
}
