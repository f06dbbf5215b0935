// Package udprelay is a userspace UDP relay that degrades a path the way netem would, for
// testbeds on kernels without sch_netem: it forwards datagrams between two sockets with a
// one-way delay, random jitter, random loss and a rate limit per direction, each changeable
// while it runs, through bounded queues, and counts what it forwarded and dropped.
//
// A relay joins two sides. Datagrams read on socket A (from anyone) are sent from socket B to
// BPeer; datagrams read on socket B are sent from socket A to APeer. A UDP tunnel endpoint that
// sends to A's address therefore reaches BPeer, which sees the datagram come from B's address:
// the relay is the path, and each endpoint names the relay's address facing it as its peer.
//
// The relay is test support. The caller opens the sockets (in any network namespace, see
// test/lab.Netns.Do) and hands them over; Close closes them.
package udprelay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a Shape and a Config.
const (
	// MaxDelay bounds Shape.Delay and Shape.Jitter.
	MaxDelay = 10 * time.Second
	// MinRate and MaxRate bound a non-zero Shape.RateBitsPerSec.
	MinRate, MaxRate = 8_000, 100_000_000_000
	// DefaultQueueLimit is Config.QueueLimit's default: enough packets in flight for
	// 200 Mbit/s of 1500-byte datagrams over 400 ms.
	DefaultQueueLimit = 8192
	// MaxQueueLimit bounds Config.QueueLimit.
	MaxQueueLimit = 1 << 20
	// MaxDatagram is the largest datagram forwarded; a longer one is truncated by the read and
	// counted as Oversize, not forwarded.
	MaxDatagram = 65507
)

// Shape is how one direction degrades the datagrams it forwards. The zero value forwards at
// once, without loss or limit.
type Shape struct {
	// Delay is added to every datagram's trip, 0 to MaxDelay.
	Delay time.Duration
	// Jitter adds a uniformly random extra delay in [0, Jitter] to each datagram, 0 to MaxDelay.
	// Datagrams keep their order: one is never released before the datagram read before it.
	Jitter time.Duration
	// Loss is the probability, in [0, 1], that a datagram is dropped on arrival (counted as Lost).
	Loss float64
	// RateBitsPerSec limits the direction to this many bits per second of UDP payload
	// (0: unlimited; otherwise MinRate to MaxRate). Datagrams wait for the link in the queue,
	// before their delay, like a serialising link followed by propagation.
	RateBitsPerSec int64
}

// Validate checks the shape's bounds and says which value is wrong and what is allowed.
func (s Shape) Validate() error {
	switch {
	case s.Delay < 0 || s.Delay > MaxDelay:
		return fmt.Errorf("udprelay shape: delay %v outside [0, %v]", s.Delay, MaxDelay)
	case s.Jitter < 0 || s.Jitter > MaxDelay:
		return fmt.Errorf("udprelay shape: jitter %v outside [0, %v]", s.Jitter, MaxDelay)
	case !(s.Loss >= 0 && s.Loss <= 1): // also refuses NaN
		return fmt.Errorf("udprelay shape: loss %v outside [0, 1]", s.Loss)
	case s.RateBitsPerSec != 0 && (s.RateBitsPerSec < MinRate || s.RateBitsPerSec > MaxRate):
		return fmt.Errorf("udprelay shape: rate %d bit/s outside [%d, %d] (0 for unlimited)", s.RateBitsPerSec, MinRate, MaxRate)
	}
	return nil
}

// Direction names one of a relay's two directions.
type Direction int

const (
	// AToB carries datagrams read on socket A to BPeer.
	AToB Direction = iota
	// BToA carries datagrams read on socket B to APeer.
	BToA
)

// String returns "a->b" or "b->a".
func (d Direction) String() string {
	switch d {
	case AToB:
		return "a->b"
	case BToA:
		return "b->a"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Config describes a relay.
type Config struct {
	// A and B are the relay's sockets; required, distinct. The relay owns them from Start on.
	A, B net.PacketConn
	// APeer receives what is read on B (sent from A); BPeer receives what is read on A (sent
	// from B). Both required and valid.
	APeer, BPeer netip.AddrPort
	// AToB and BToA are the directions' initial shapes.
	AToB, BToA Shape
	// QueueLimit bounds each direction's queue in datagrams (0: DefaultQueueLimit; at most
	// MaxQueueLimit). A datagram arriving at a full queue is dropped and counted as QueueDrops.
	QueueLimit int
	// Seed seeds the loss and jitter draws (0: a random seed). Equal seeds and equal arrival
	// sequences give equal drop decisions.
	Seed uint64
}

// Counters are one direction's totals since Start.
type Counters struct {
	// Received counts datagrams read from the input socket.
	Received uint64
	// Forwarded counts datagrams written to the peer; Bytes their payload bytes. Both count a
	// datagram before its write returns, so a receiver that got it already finds it counted.
	Forwarded, Bytes uint64
	// Lost counts datagrams dropped by the loss draw.
	Lost uint64
	// QueueDrops counts datagrams dropped because the queue was full.
	QueueDrops uint64
	// Oversize counts datagrams longer than MaxDatagram, dropped.
	Oversize uint64
	// SendErrors counts writes to the peer that failed (the datagram is gone).
	SendErrors uint64
}

// Relay forwards datagrams between two sockets. Its methods are safe for concurrent use.
type Relay struct {
	dirs   [2]*direction
	cancel context.CancelFunc
	wg     sync.WaitGroup
	conns  [2]net.PacketConn

	closeOnce sync.Once
}

// packet is a datagram waiting for its release time.
type packet struct {
	buf     *[]byte
	n       int
	release time.Time
}

// direction is one direction's state: an input socket, an output socket, a queue between.
type direction struct {
	in, out net.PacketConn
	peer    net.Addr
	shape   atomic.Pointer[Shape]
	queue   chan packet
	pool    *sync.Pool

	received, forwarded, bytes, lost, queueDrops, oversize, sendErrors atomic.Uint64

	// Touched by the reader goroutine only.
	rng         *rand.Rand
	lastRelease time.Time
	linkFree    time.Time
}

// Start validates cfg and starts forwarding in both directions until ctx ends or Close is
// called. On error nothing was started and the sockets are left open.
func Start(ctx context.Context, cfg Config) (*Relay, error) {
	if cfg.A == nil || cfg.B == nil || cfg.A == cfg.B {
		return nil, errors.New("udprelay: Config.A and Config.B must be two distinct sockets")
	}
	for _, p := range []struct {
		name string
		ap   netip.AddrPort
	}{{"APeer", cfg.APeer}, {"BPeer", cfg.BPeer}} {
		if !p.ap.IsValid() || p.ap.Port() == 0 {
			return nil, fmt.Errorf("udprelay: Config.%s %v is not an address with a port", p.name, p.ap)
		}
	}
	for _, s := range []Shape{cfg.AToB, cfg.BToA} {
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	limit := cfg.QueueLimit
	if limit == 0 {
		limit = DefaultQueueLimit
	}
	if limit < 1 || limit > MaxQueueLimit {
		return nil, fmt.Errorf("udprelay: queue limit %d outside [1, %d]", cfg.QueueLimit, MaxQueueLimit)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	pool := &sync.Pool{New: func() any { b := make([]byte, MaxDatagram+1); return &b }}
	mk := func(in, out net.PacketConn, peer netip.AddrPort, s Shape, stream uint64) *direction {
		d := &direction{in: in, out: out, peer: net.UDPAddrFromAddrPort(peer), queue: make(chan packet, limit),
			pool: pool, rng: rand.New(rand.NewPCG(seed, stream))}
		d.shape.Store(&s)
		return d
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Relay{cancel: cancel, conns: [2]net.PacketConn{cfg.A, cfg.B}}
	r.dirs[AToB] = mk(cfg.A, cfg.B, cfg.BPeer, cfg.AToB, 1)
	r.dirs[BToA] = mk(cfg.B, cfg.A, cfg.APeer, cfg.BToA, 2)
	for _, d := range r.dirs {
		r.wg.Add(2)
		go func() { defer r.wg.Done(); d.read(ctx) }()
		go func() { defer r.wg.Done(); d.send(ctx) }()
	}
	go func() {
		<-ctx.Done()
		r.closeConns()
	}()
	return r, nil
}

// SetShape changes a direction's shape from the next datagram read on. Datagrams already
// queued keep the release time they were given.
func (r *Relay) SetShape(d Direction, s Shape) error {
	if d != AToB && d != BToA {
		return fmt.Errorf("udprelay: set shape: %v is not a direction", d)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	r.dirs[d].shape.Store(&s)
	return nil
}

// SetShapes sets both directions to s (a symmetric path).
func (r *Relay) SetShapes(s Shape) error {
	if err := s.Validate(); err != nil {
		return err
	}
	for _, d := range r.dirs {
		d.shape.Store(&s)
	}
	return nil
}

// Shape returns a direction's current shape (the zero Shape for an unknown direction).
func (r *Relay) Shape(d Direction) Shape {
	if d != AToB && d != BToA {
		return Shape{}
	}
	return *r.dirs[d].shape.Load()
}

// Counters returns a direction's counters (zero for an unknown direction).
func (r *Relay) Counters(d Direction) Counters {
	if d != AToB && d != BToA {
		return Counters{}
	}
	x := r.dirs[d]
	return Counters{Received: x.received.Load(), Forwarded: x.forwarded.Load(), Bytes: x.bytes.Load(),
		Lost: x.lost.Load(), QueueDrops: x.queueDrops.Load(), Oversize: x.oversize.Load(),
		SendErrors: x.sendErrors.Load()}
}

// Close stops forwarding, closes both sockets and waits for the relay's goroutines to end.
// Queued datagrams are discarded. Closing twice is harmless.
func (r *Relay) Close() error {
	r.cancel()
	err := r.closeConns()
	r.wg.Wait()
	return err
}

// closeConns closes both sockets once.
func (r *Relay) closeConns() error {
	var err error
	r.closeOnce.Do(func() {
		err = errors.Join(r.conns[0].Close(), r.conns[1].Close())
	})
	return err
}

// read reads datagrams, draws loss and release times, and queues them until the socket closes.
func (d *direction) read(ctx context.Context) {
	for {
		bp := d.pool.Get().(*[]byte)
		n, _, err := d.in.ReadFrom(*bp)
		now := time.Now()
		if err != nil {
			d.pool.Put(bp)
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error (an ICMP error reported on the socket): keep reading
		}
		d.received.Add(1)
		if n > MaxDatagram {
			d.oversize.Add(1)
			d.pool.Put(bp)
			continue
		}
		s := d.shape.Load()
		if s.Loss > 0 && d.rng.Float64() < s.Loss {
			d.lost.Add(1)
			d.pool.Put(bp)
			continue
		}
		if len(d.queue) == cap(d.queue) {
			d.queueDrops.Add(1)
			d.pool.Put(bp)
			continue
		}
		sent := now
		if s.RateBitsPerSec > 0 {
			sent = later(now, d.linkFree).Add(time.Duration(int64(n) * 8 * int64(time.Second) / s.RateBitsPerSec))
			d.linkFree = sent
		}
		release := sent.Add(s.Delay)
		if s.Jitter > 0 {
			release = release.Add(time.Duration(d.rng.Int64N(int64(s.Jitter) + 1)))
		}
		release = later(release, d.lastRelease)
		d.lastRelease = release
		select {
		case d.queue <- packet{buf: bp, n: n, release: release}:
		default: // only this goroutine sends, so the queue had room; keep the accounting honest anyway
			d.queueDrops.Add(1)
			d.pool.Put(bp)
		}
	}
}

// send writes queued datagrams to the peer at their release times until ctx ends.
func (d *direction) send(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var p packet
		select {
		case <-ctx.Done():
			return
		case p = <-d.queue:
		}
		if wait := time.Until(p.release); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		// Counted before the write, so that whoever received the datagram finds it counted;
		// taken back if the write fails.
		d.forwarded.Add(1)
		d.bytes.Add(uint64(p.n))
		if _, err := d.out.WriteTo((*p.buf)[:p.n], d.peer); err != nil {
			d.forwarded.Add(^uint64(0))
			d.bytes.Add(^uint64(p.n - 1))
			d.sendErrors.Add(1)
		}
		d.pool.Put(p.buf)
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
