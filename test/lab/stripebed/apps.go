//go:build linux

package stripebed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// Bounds of an AppsSpec.
const (
	// MaxArmApps bounds the applications of the applications arm.
	MaxArmApps = 64
	// maxArmDuration bounds how long they send.
	maxArmDuration = 5 * time.Minute
)

// DefaultAppSizes returns the message sizes of the applications arm's five applications
// (a new slice each call): uneven on purpose, so that an endpoint that did not pace would
// favour the large ones.
func DefaultAppSizes() []int { return []int{1000, 4000, 16000, 32000, 60000} }

// AppsSpec describes the applications arm: applications on node A, each sending as fast as it
// can to its own application on node B, all through one stripe engine per node and its
// endpoint (what a stripe job runs: stripe/engine plus stripe/endpoint on a unix socket).
type AppsSpec struct {
	// Policy is the engines' send policy (empty: weighted).
	Policy policy.Kind
	// Sizes are the applications' message sizes in bytes, one application each (empty:
	// DefaultAppSizes()); 1 to MaxArmApps entries of 2 to endpoint.DefaultMaxMessage (the first
	// two bytes number the message).
	Sizes []int
	// Duration is how long the applications send after they all started (0: 10 s; at most
	// 5 min). The first fifth is a warm-up left out of the rates.
	Duration time.Duration
	// Scale is the fraction of the measured link rates the endpoints share out as Vmax (0: 1):
	// below what the host's CPU can carry, the shares (pacing) bound the applications.
	Scale float64
}

func (s AppsSpec) normalize() (AppsSpec, error) {
	if s.Policy == "" {
		s.Policy = policy.KindWeighted
	}
	if len(s.Sizes) == 0 {
		s.Sizes = DefaultAppSizes()
	}
	if len(s.Sizes) > MaxArmApps {
		return s, fmt.Errorf("stripebed apps: %d applications, at most %d", len(s.Sizes), MaxArmApps)
	}
	for i, n := range s.Sizes {
		if n < 2 || n > endpoint.DefaultMaxMessage {
			return s, fmt.Errorf("stripebed apps: application %d message size %d: want 2 to %d", i, n, endpoint.DefaultMaxMessage)
		}
	}
	if s.Duration == 0 {
		s.Duration = 10 * time.Second
	}
	if s.Duration < 100*time.Millisecond || s.Duration > maxArmDuration {
		return s, fmt.Errorf("stripebed apps: duration %v outside [100ms, %v]", s.Duration, maxArmDuration)
	}
	if s.Scale == 0 {
		s.Scale = 1
	}
	if !(s.Scale > 0 && s.Scale <= 1) {
		return s, fmt.Errorf("stripebed apps: scale %v outside (0, 1]", s.Scale)
	}
	return s, nil
}

// AppResult is one application's measurement.
type AppResult struct {
	// Name is the receiving application's name; Size its sender's message size.
	Name string
	Size int
	// Bytes is what it received over the whole run, Measured over the measured window, and
	// BitsPerSecond the rate over that window.
	Bytes, Measured int64
	BitsPerSecond   float64
	// Share is the sender's pacing rate at the end, bits per second.
	Share float64
	// Messages counts the messages received; Gaps those not numbered one more than the one
	// before: a delivery the endpoint dropped because the client read too slowly (the
	// endpoint's ReceiveDrops), or one out of order.
	Messages, Gaps int64
}

// AppsResult is the applications arm's measurement.
type AppsResult struct {
	Policy policy.Kind
	Scale  float64
	// Apps are the applications, in registration order.
	Apps []AppResult
	// Seconds is the measured window; Jain Jain's index over the applications' rates in it.
	Seconds, Jain float64
	// CapacityBitsPerSecond is the sending endpoint's Σ(Vmax − V) at the end.
	CapacityBitsPerSecond float64
	// Retransmits, SendErrors and Unacked are A's engine's; Lost, Reordered and ReceiveDrops
	// (deliveries B's endpoint dropped for clients reading too slowly) B's side.
	Retransmits, SendErrors, Unacked, Lost, Reordered, ReceiveDrops uint64
}

// appsNode is one node of the arm: its engine and endpoint.
type appsNode struct {
	e    *engine.Engine
	ep   *endpoint.Endpoint
	sock string
}

// AppsArm runs the applications arm on the bed: an engine per node over all links (Vmax: rates,
// the links' measured bit/s, times the spec's scale), an endpoint on each serving a unix
// socket, len(spec.Sizes) applications on A sending concurrently to as many on B. It returns
// every application's throughput and Jain's index over them. Everything it starts ends before
// it returns.
func (b *Bed) AppsArm(t testing.TB, rates []float64, spec AppsSpec) (AppsResult, error) {
	t.Helper()
	spec, err := spec.normalize()
	if err != nil {
		return AppsResult{}, err
	}
	if len(rates) != len(b.Links) {
		return AppsResult{}, fmt.Errorf("stripebed apps: %d rates for %d links", len(rates), len(b.Links))
	}
	vmax := make([]float64, len(rates))
	capa := make([]uint64, len(rates))
	for i, r := range rates {
		if !(r > 0) {
			return AppsResult{}, fmt.Errorf("stripebed apps: link %d rate %v bit/s", i, r)
		}
		vmax[i] = r / 8 * spec.Scale
		capa[i] = uint64(max(1, b.Links[i].RateMbit))
	}
	dir, err := os.MkdirTemp("", "stripeapps-") // short: unix socket paths have 107 bytes
	if err != nil {
		return AppsResult{}, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var closes []func() error
	defer func() {
		cancel()
		wg.Wait()
		for _, c := range closes {
			_ = c()
		}
	}()
	start := func(ns *lab.Netns, self, peer uint32, aSide bool) (appsNode, error) {
		n := appsNode{sock: filepath.Join(dir, fmt.Sprintf("node%d.sock", self))}
		var links []link.Link
		err := ns.Do(func() error {
			for _, name := range b.ends(aSide) {
				l, err := link.Open(ctx, link.Config{Interface: name})
				if err != nil {
					return err
				}
				links = append(links, l)
				closes = append(closes, l.Close)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		if n.e, err = engine.New(engine.Config{Node: self, Peer: peer, Links: links, Vmax: vmax,
			Policy: policy.Config{Kind: spec.Policy, Delta: 0.1, Capacities: capa}}); err != nil {
			return n, err
		}
		if n.ep, err = endpoint.New(endpoint.Config{Peers: []endpoint.Peer{{Node: peer, Transport: n.e, Vmax: vmax}}}); err != nil {
			return n, err
		}
		ln, err := endpoint.ListenUnix(ctx, n.sock)
		if err != nil {
			return n, err
		}
		wg.Go(func() { _ = n.e.Run(ctx) })
		wg.Go(func() { _ = n.ep.Run(ctx) })
		wg.Go(func() { _ = n.ep.ServeStream(ctx, ln) })
		return n, nil
	}
	na, err := start(b.A, 1, 2, true)
	if err != nil {
		return AppsResult{}, fmt.Errorf("stripebed apps: node A: %w", err)
	}
	nb, err := start(b.B, 2, 1, false)
	if err != nil {
		return AppsResult{}, fmt.Errorf("stripebed apps: node B: %w", err)
	}
	for _, n := range []struct {
		e    *engine.Engine
		peer uint32
	}{{na.e, 2}, {nb.e, 1}} {
		lab.WaitFor(t, stripeDiscovery, "stripe discovery of the peer on every link", func(context.Context) error {
			if nodes := n.e.Peers(); len(nodes) != 1 || nodes[0].ID != n.peer || len(nodes[0].NICs) != len(b.Links) {
				return fmt.Errorf("peers %+v", nodes)
			}
			for _, ep := range []*endpoint.Endpoint{na.ep, nb.ep} {
				if !ep.Running() {
					return errors.New("endpoint not running yet")
				}
			}
			return nil
		})
	}
	return runApps(ctx, &wg, spec, na, nb)
}

// runApps registers the applications on both endpoints, runs them for spec.Duration and
// measures them.
func runApps(ctx context.Context, wg *sync.WaitGroup, spec AppsSpec, na, nb appsNode) (AppsResult, error) {
	dial := func(path string) (*endpoint.Client, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return nil, err
		}
		return endpoint.NewClient(c, false), nil
	}
	type counter struct {
		bytes, msgs, disorder atomic.Int64
	}
	counts := make([]*counter, len(spec.Sizes))
	sendCtx, stop := context.WithCancel(ctx)
	defer stop()
	begin := make(chan struct{})
	res := AppsResult{Policy: spec.Policy, Scale: spec.Scale}
	for i, size := range spec.Sizes {
		snd, err := dial(na.sock)
		if err != nil {
			return res, err
		}
		rcv, err := dial(nb.sock)
		if err != nil {
			_ = snd.Close()
			return res, err
		}
		wg.Go(func() { <-sendCtx.Done(); _ = snd.Close(); _ = rcv.Close() })
		name := fmt.Sprintf("app%d", i)
		id, err := snd.Register(ctx, endpoint.Registration{Name: "tx-" + name, Service: 0x4a41, LocalPort: uint16(1000 + i), PeerNode: 2, PeerPort: uint16(2000 + i)})
		if err != nil {
			return res, fmt.Errorf("register tx-%s: %w", name, err)
		}
		if _, err := rcv.Register(ctx, endpoint.Registration{Name: name, Service: 0x4a41, LocalPort: uint16(2000 + i), PeerNode: 1, PeerPort: uint16(1000 + i)}); err != nil {
			return res, fmt.Errorf("register %s: %w", name, err)
		}
		res.Apps = append(res.Apps, AppResult{Name: name, Size: size})
		c := &counter{}
		counts[i] = c
		wg.Go(func() {
			msg := make([]byte, size)
			<-begin
			for n := uint32(0); sendCtx.Err() == nil; n++ {
				msg[0], msg[1] = byte(n>>8), byte(n) // the low 16 bits of its number
				if snd.Send(sendCtx, id, n, msg) != nil {
					return
				}
			}
		})
		wg.Go(func() {
			var last uint16
			for first := true; ; first = false {
				m, err := rcv.Next(sendCtx)
				if err != nil {
					return
				}
				if m.Type != endpoint.TypeDeliver || len(m.Payload) < 2 {
					continue
				}
				n := uint16(m.Payload[0])<<8 | uint16(m.Payload[1])
				if !first && n != last+1 {
					c.disorder.Add(1)
				}
				last = n
				c.msgs.Add(1)
				c.bytes.Add(int64(len(m.Payload)))
			}
		})
	}
	close(begin)
	warm := spec.Duration / 5
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(warm):
	}
	from := make([]int64, len(counts))
	for i, c := range counts {
		from[i] = c.bytes.Load()
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(spec.Duration - warm):
	}
	res.Seconds = time.Since(t0).Seconds()
	rx := make([]float64, len(counts))
	for i, c := range counts {
		a := &res.Apps[i]
		a.Bytes = c.bytes.Load()
		a.Measured = a.Bytes - from[i]
		a.BitsPerSecond = float64(a.Measured) * 8 / res.Seconds
		a.Messages, a.Gaps = c.msgs.Load(), c.disorder.Load()
		rx[i] = a.BitsPerSecond
	}
	st := na.ep.Stats()
	for _, ap := range st.Apps {
		for i := range res.Apps {
			if ap.Name == "tx-"+res.Apps[i].Name {
				res.Apps[i].Share = ap.Share * 8
			}
		}
	}
	if len(st.Peers) == 1 {
		res.CapacityBitsPerSecond = st.Peers[0].Capacity * 8
	}
	ea, eb := na.e.Stats(), nb.e.Stats()
	res.Retransmits, res.SendErrors, res.Unacked, res.Lost, res.Reordered = ea.Retransmits, ea.SendErrors, ea.Unacked, eb.Lost, eb.Reordered
	for _, ap := range nb.ep.Stats().Apps {
		res.ReceiveDrops += ap.ReceiveDrops
	}
	stop()
	j, err := fair.Jain(rx)
	if err != nil {
		return res, fmt.Errorf("stripebed apps: Jain's index of %v: %w", rx, err)
	}
	res.Jain = j
	return res, nil
}

// Format renders r for a log or a report: one line per application, then Jain's index.
func (r AppsResult) Format() string {
	s := fmt.Sprintf("%d applications, policy %s, Vmax = %.2f × measured link rates, %.1f s measured; sender's Σ(Vmax − V) %.0f Mbit/s\n",
		len(r.Apps), r.Policy, r.Scale, r.Seconds, r.CapacityBitsPerSecond/1e6)
	for _, a := range r.Apps {
		s += fmt.Sprintf("  %-6s %6d-byte messages: %8.1f Mbit/s (share %7.1f Mbit/s), %d bytes, %d messages, %d gaps\n",
			a.Name, a.Size, a.BitsPerSecond/1e6, a.Share/1e6, a.Bytes, a.Messages, a.Gaps)
	}
	s += fmt.Sprintf("  engines: A resent %d frames, %d send errors, %d unacknowledged at the end; B lost %d, reordered %d; B's endpoint dropped %d deliveries for slow readers\n",
		r.Retransmits, r.SendErrors, r.Unacked, r.Lost, r.Reordered, r.ReceiveDrops)
	return s + fmt.Sprintf("  Jain's index over the applications' rates: %.4f\n", r.Jain)
}
