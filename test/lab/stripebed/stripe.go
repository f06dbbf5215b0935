//go:build linux

package stripebed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Addresses and device of the stripe arms' tunnels.
const (
	stripeTun       = "stripe0"
	stripeDiscovery = 10 * time.Second
)

// stripePrefix is the tunnel subnet: A is .1, B is .2.
func stripePrefix(host byte) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 78, 0, host}), 24)
}

// StripeNode is one node's stripe engine and tunnel.
type StripeNode struct {
	// Engine carries the tunnel; Tunnel is the node's tun device.
	Engine *engine.Engine
	Tunnel *tunnel.Tunnel
	// Links are the engine's links (the node's ends of the bed's links, in bed order).
	Links []link.Link
}

// Stripe is the stripe engine running in kernel-NIC mode on both nodes of a bed, with a tun
// device on each (A 10.78.0.1/24, B 10.78.0.2/24) carried by it.
type Stripe struct {
	// A and B are the nodes.
	A, B StripeNode
	// AAddr and BAddr are the tunnel addresses.
	AAddr, BAddr netip.Addr

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	once   sync.Once
	closes []func() error
}

// StartStripe starts on both nodes a stripe engine over all the bed's links with the policy
// kind (Vmax: rates, the links' measured bit/s), and a tun device carried by it; it waits
// until each engine knows its peer on every link. Stop (or the test's cleanup) ends it.
func (b *Bed) StartStripe(t testing.TB, kind policy.Kind, rates []float64) *Stripe {
	t.Helper()
	return b.StartStripeWith(t, StripeOptions{Policy: kind}, rates)
}

// StripeOptions choose how StartStripeWith runs the engines.
type StripeOptions struct {
	// Policy is the send-NIC policy.
	Policy policy.Kind
	// Pace paces every link to its measured rate (engine.Config.Pace).
	Pace bool
	// RxRing receives through TPACKET_V3 rings (link.Config.RxRing).
	RxRing bool
	// NoOffload opens the tun devices without segmentation offloads (tunnel.Config.NoOffload).
	NoOffload bool
	// SendBufferMs, when not 0, sizes every link's socket send buffer (link.Config.SendBuffer)
	// to that many milliseconds at the link's rate, doubled for the kernel's per-frame overhead:
	// the bytes queued in the socket and the tbf are then about the same time on every link,
	// instead of the kernel default's 200 KiB (17 ms at 100 Mbit/s, 4 ms at 400).
	SendBufferMs int
	// TunQueueLen is the tun devices' transmit queue in packets (0: 4096).
	TunQueueLen int
	// RetransmitTimeout is the engines' least retransmit timeout (0: the engine's default).
	RetransmitTimeout time.Duration
	// RingMs, when not 0, sizes every link's receive ring (RxRing) to hold that many
	// milliseconds at the link's rate, at least link.RingBlocks blocks (0: link.RingBlocks
	// whatever the rate). A ring that fills while the receivers are kept from running (a busy
	// host) drops frames, which the engine then retransmits after its timeout.
	RingMs int
}

// ringBlocks is the receive ring for a link of vmax bytes/s under o (link.Config.RingBlocks).
func (o StripeOptions) ringBlocks(vmax float64) int {
	ms := o.RingMs
	if ms <= 0 {
		return 0
	}
	// a frame takes about 10 % more room in the ring than on the wire (its header, alignment)
	need := int(math.Ceil(vmax * 1.1 * float64(ms) / 1000 / link.RingBlockSize))
	return min(link.MaxRingBlocks, max(link.RingBlocks, need))
}

// StartStripeWith is StartStripe with the engine options o.
func (b *Bed) StartStripeWith(t testing.TB, o StripeOptions, rates []float64) *Stripe {
	t.Helper()
	if len(rates) != len(b.Links) || len(b.Links) == 0 {
		t.Fatalf("stripebed: %d rates for %d links", len(rates), len(b.Links))
	}
	vmax := make([]float64, len(rates))
	capa := make([]uint64, len(rates))
	for i, r := range rates {
		if !(r > 0) {
			t.Fatalf("stripebed: link %d rate %v bit/s", i, r)
		}
		vmax[i] = r / 8
		capa[i] = uint64(max(1, b.Links[i].RateMbit))
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	s := &Stripe{AAddr: stripePrefix(1).Addr(), BAddr: stripePrefix(2).Addr(), cancel: cancel}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stripebed: %v", err)
		}
	})
	var err error
	if s.A, err = s.startNode(ctx, b.A, 1, 2, b.ends(true), vmax, capa, o, stripePrefix(1)); err != nil {
		t.Fatalf("stripebed: node A: %v", err)
	}
	if s.B, err = s.startNode(ctx, b.B, 2, 1, b.ends(false), vmax, capa, o, stripePrefix(2)); err != nil {
		t.Fatalf("stripebed: node B: %v", err)
	}
	for _, n := range []struct {
		e    *engine.Engine
		peer uint32
	}{{s.A.Engine, 2}, {s.B.Engine, 1}} {
		lab.WaitFor(t, stripeDiscovery, "stripe discovery of the peer on every link", func(context.Context) error {
			nodes := n.e.Peers()
			if len(nodes) != 1 || nodes[0].ID != n.peer || len(nodes[0].NICs) != len(b.Links) {
				return fmt.Errorf("peers %+v", nodes)
			}
			return nil
		})
	}
	return s
}

// ends names the bed's link ends of node A (a) or B.
func (b *Bed) ends(a bool) []string {
	names := make([]string, len(b.Links))
	for i, l := range b.Links {
		names[i] = l.B.Name
		if a {
			names[i] = l.A.Name
		}
	}
	return names
}

// startNode opens the links and the tun device in ns and runs the engine and the tunnel.
func (s *Stripe) startNode(ctx context.Context, ns *lab.Netns, self, peer uint32, ends []string, vmax []float64,
	capa []uint64, o StripeOptions, addr netip.Prefix) (StripeNode, error) {
	var n StripeNode
	err := ns.Do(func() error {
		for i, name := range ends {
			sndbuf := 0
			if o.SendBufferMs > 0 {
				sndbuf = min(link.MaxSocketBuffer, max(link.MinSocketBuffer, int(2*vmax[i]*float64(o.SendBufferMs)/1000)))
			}
			l, err := link.Open(ctx, link.Config{Interface: name, RxRing: o.RxRing, SendBuffer: sndbuf, RingBlocks: o.ringBlocks(vmax[i])})
			if err != nil {
				return err
			}
			n.Links = append(n.Links, l)
			s.closes = append(s.closes, l.Close)
		}
		e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: n.Links, Vmax: vmax, Pace: o.Pace, RetransmitTimeout: o.RetransmitTimeout,
			Policy: policy.Config{Kind: o.Policy, Delta: 0.1, Capacities: capa}})
		if err != nil {
			return err
		}
		n.Engine = e
		s.run(func() error { return e.Run(ctx) })
		// The tunnel waits for the engine's Run itself (Tunnel.Run).
		n.Tunnel, err = tunnel.Open(ctx, tunnel.Config{Name: stripeTun, Addr: addr, Engine: e, TxQueueLen: cmp.Or(o.TunQueueLen, 4096), NoOffload: o.NoOffload})
		if err != nil {
			return err
		}
		s.closes = append(s.closes, n.Tunnel.Close)
		return nil
	})
	if err != nil {
		return n, err
	}
	s.run(func() error { return n.Tunnel.Run(ctx) })
	return n, nil
}

// run runs fn on a goroutine and keeps its error.
func (s *Stripe) run(fn func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
		}
	}()
}

// Stop ends the engines and tunnels, closes the devices and links, and returns what failed
// meanwhile. Stopping twice returns nil the second time.
func (s *Stripe) Stop() error {
	var err error
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.mu.Lock()
		errs := s.errs
		s.mu.Unlock()
		for i := len(s.closes) - 1; i >= 0; i-- {
			if cerr := s.closes[i](); cerr != nil {
				errs = append(errs, cerr)
			}
		}
		err = errors.Join(errs...)
	})
	return err
}

// StripeArm measures the stripe engine with the policy kind in kernel-NIC mode: one TCP
// connection and one UDP stream between the nodes' tunnel addresses, as RunPair. The links
// receive through TPACKET_V3 rings (in BenchmarkStripeTunnel at load 8 they took less CPU and
// kept the latency at half load at 1.3–2.8 ms p50 against 10–11 ms). The note adds the
// engine's retransmits and losses on A and the reordering on B.
func (b *Bed) StripeArm(t testing.TB, load Load, rates []float64, kind policy.Kind) ([]Result, error) {
	t.Helper()
	s := b.StartStripeWith(t, StripeOptions{Policy: kind, RxRing: true}, rates)
	rs, err := b.RunPair(t.Context(), load, rates, Pair{Arm: "stripe " + string(kind), Src: s.AAddr, Dst: s.BAddr, UDP: true})
	a, bs := s.A.Engine.Stats(), s.B.Engine.Stats()
	if serr := s.Stop(); err == nil && serr != nil {
		err = serr
	}
	for i := range rs {
		rs[i].Note += fmt.Sprintf("; engine (both protos): A resent %d frames, B lost %d, reordered %d (max depth %d)",
			a.Retransmits, bs.Lost, bs.Reordered, bs.MaxReorderDepth)
	}
	return rs, err
}
