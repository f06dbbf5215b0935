package udprelay

import (
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// rig is a relay on loopback with a client socket facing A and a server socket facing B.
type rig struct {
	r              *Relay
	client, server *net.UDPConn
	aAddr, bAddr   net.Addr
}

// listen opens a UDP socket on a free loopback port.
func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	return c
}

func addrPort(c *net.UDPConn) netip.AddrPort {
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// newRig starts a relay whose APeer is the client and BPeer the server.
func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	g := &rig{client: listen(t), server: listen(t)}
	t.Cleanup(func() { g.client.Close(); g.server.Close() })
	a, b := listen(t), listen(t)
	g.aAddr, g.bAddr = a.LocalAddr(), b.LocalAddr()
	cfg.A, cfg.B, cfg.APeer, cfg.BPeer = a, b, addrPort(g.client), addrPort(g.server)
	r, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	g.r = r
	return g
}

// stamp is a datagram carrying its sequence number and send time.
func stamp(seq int, size int) []byte {
	b := make([]byte, max(size, 16))
	binary.BigEndian.PutUint64(b, uint64(seq))
	binary.BigEndian.PutUint64(b[8:], uint64(time.Now().UnixNano()))
	return b
}

// arrival is a received stamp.
type arrival struct {
	seq     int
	from    net.Addr
	transit time.Duration
	at      time.Time
}

// collect reads n stamped datagrams from c (or fewer when 10 s pass without one).
func collect(t *testing.T, c *net.UDPConn, n int) []arrival {
	t.Helper()
	var got []arrival
	buf := make([]byte, 70000)
	for len(got) < n {
		if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		m, from, err := c.ReadFrom(buf)
		if err != nil {
			break
		}
		if m < 16 {
			t.Fatalf("datagram of %d bytes, want at least 16", m)
		}
		now := time.Now()
		sent := time.Unix(0, int64(binary.BigEndian.Uint64(buf[8:])))
		got = append(got, arrival{seq: int(binary.BigEndian.Uint64(buf)), from: from, transit: now.Sub(sent), at: now})
	}
	return got
}

func TestDelayBothDirections(t *testing.T) {
	g := newRig(t, Config{AToB: Shape{Delay: 30 * time.Millisecond}, BToA: Shape{Delay: 12 * time.Millisecond, Jitter: 5 * time.Millisecond}})
	const n = 20
	for i := range n {
		if _, err := g.client.WriteTo(stamp(i, 100), g.aAddr); err != nil {
			t.Fatal(err)
		}
		if _, err := g.server.WriteTo(stamp(i, 100), g.bAddr); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		sink   *net.UDPConn
		from   net.Addr
		floor  time.Duration
		counts Counters
	}{
		{"a->b", g.server, g.bAddr, 30 * time.Millisecond, g.r.Counters(AToB)},
		{"b->a", g.client, g.aAddr, 12 * time.Millisecond, g.r.Counters(BToA)},
	} {
		got := collect(t, c.sink, n)
		if len(got) != n {
			t.Fatalf("%s: %d datagrams arrived, want %d", c.name, len(got), n)
		}
		for i, a := range got {
			if a.transit < c.floor {
				t.Errorf("%s: datagram %d took %v, want at least the configured %v", c.name, a.seq, a.transit, c.floor)
			}
			if a.seq != i {
				t.Errorf("%s: datagram %d arrived in position %d: the relay reordered", c.name, a.seq, i)
			}
			if a.from.String() != c.from.String() {
				t.Errorf("%s: datagram came from %v, want the relay's other socket %v", c.name, a.from, c.from)
			}
		}
	}
	for _, d := range []Direction{AToB, BToA} {
		if c := g.r.Counters(d); c.Received != n || c.Forwarded != n || c.Bytes != n*100 || c.Lost+c.QueueDrops+c.SendErrors != 0 {
			t.Errorf("%v counters %+v, want %d received and forwarded (%d bytes), nothing dropped", d, c, n, n*100)
		}
	}
}

func TestSetShapeAtRunTime(t *testing.T) {
	g := newRig(t, Config{})
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := g.client.WriteTo(stamp(i, 64), g.aAddr); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 5)
	if got := collect(t, g.server, 5); len(got) != 5 {
		t.Fatalf("%d of 5 datagrams arrived before the change", len(got))
	}
	degraded := Shape{Delay: 60 * time.Millisecond}
	if err := g.r.SetShape(AToB, degraded); err != nil {
		t.Fatal(err)
	}
	if s := g.r.Shape(AToB); s != degraded {
		t.Fatalf("Shape(AToB) = %+v after SetShape, want %+v", s, degraded)
	}
	if s := g.r.Shape(BToA); s != (Shape{}) {
		t.Fatalf("Shape(BToA) = %+v, want it untouched", s)
	}
	send(5, 15)
	got := collect(t, g.server, 10)
	if len(got) != 10 {
		t.Fatalf("%d of 10 datagrams arrived after the change", len(got))
	}
	for _, a := range got {
		if a.transit < degraded.Delay {
			t.Errorf("datagram %d sent after SetShape took %v, want at least %v", a.seq, a.transit, degraded.Delay)
		}
	}
}

func TestLossCounterMatches(t *testing.T) {
	g := newRig(t, Config{AToB: Shape{Loss: 0.3}, Seed: 7})
	const n = 2000
	for i := range n {
		if _, err := g.client.WriteTo(stamp(i, 200), g.aAddr); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 { // let the relay keep up so the kernel's socket buffers drop nothing
			waitFor(t, func() bool { return g.r.Counters(AToB).Received == uint64(i+1) })
		}
	}
	waitFor(t, func() bool { c := g.r.Counters(AToB); return c.Received == n && c.Lost+c.Forwarded+c.QueueDrops == n })
	c := g.r.Counters(AToB)
	got := collect(t, g.server, int(c.Forwarded))
	if c.Received != n {
		t.Fatalf("relay received %d of %d datagrams", c.Received, n)
	}
	if c.Lost+c.Forwarded != n || c.QueueDrops+c.SendErrors+c.Oversize != 0 {
		t.Errorf("counters %+v: lost + forwarded should be %d with no other drop", c, n)
	}
	if uint64(len(got)) != c.Forwarded {
		t.Errorf("%d datagrams arrived, the relay counted %d forwarded", len(got), c.Forwarded)
	}
	// 2000 draws at 0.3: 600 expected, σ ≈ 20.5; ±6σ is a check on the draw, not on timing.
	if math.Abs(float64(c.Lost)-600) > 125 {
		t.Errorf("lost %d of %d at loss 0.3, want about 600", c.Lost, n)
	}
	seen := map[int]bool{}
	for _, a := range got {
		if seen[a.seq] {
			t.Errorf("datagram %d arrived twice", a.seq)
		}
		seen[a.seq] = true
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRateLimitAndQueueBound(t *testing.T) {
	const rate = 800_000 // 100 kB/s
	g := newRig(t, Config{AToB: Shape{RateBitsPerSec: rate}, QueueLimit: 30})
	const n, size = 50, 1000
	start := time.Now()
	for i := range n {
		if _, err := g.client.WriteTo(stamp(i, size), g.aAddr); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { c := g.r.Counters(AToB); return c.Received == n && c.Forwarded+c.QueueDrops == n })
	c := g.r.Counters(AToB)
	got := collect(t, g.server, int(c.Forwarded))
	if c.QueueDrops == 0 || c.Forwarded+c.QueueDrops != n || uint64(len(got)) != c.Forwarded {
		t.Fatalf("counters %+v, %d arrived: want queue drops (a burst of %d into a queue of 30), and forwarded + dropped = %d",
			c, len(got), n, n)
	}
	// The relay serialises each forwarded datagram at the rate: the last one cannot arrive
	// before all forwarded bytes have passed at 800 kbit/s.
	floor := time.Duration(int64(c.Forwarded) * size * 8 * int64(time.Second) / rate)
	if span := got[len(got)-1].at.Sub(start); span < floor {
		t.Errorf("%d datagrams of %d bytes crossed in %v, want at least %v at %d bit/s", c.Forwarded, size, span, floor, rate)
	}
}

func TestRefusesBadConfig(t *testing.T) {
	a, b := listen(t), listen(t)
	defer a.Close()
	defer b.Close()
	peer := netip.MustParseAddrPort("127.0.0.1:9")
	base := Config{A: a, B: b, APeer: peer, BPeer: peer}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"same socket", func(c *Config) { c.B = a }, "two distinct sockets"},
		{"no peer", func(c *Config) { c.BPeer = netip.AddrPort{} }, "Config.BPeer"},
		{"port zero", func(c *Config) { c.APeer = netip.MustParseAddrPort("127.0.0.1:0") }, "Config.APeer"},
		{"negative delay", func(c *Config) { c.AToB.Delay = -1 }, "delay -1ns outside"},
		{"long jitter", func(c *Config) { c.BToA.Jitter = time.Minute }, "jitter 1m0s outside"},
		{"loss above one", func(c *Config) { c.AToB.Loss = 1.5 }, "loss 1.5 outside"},
		{"loss NaN", func(c *Config) { c.AToB.Loss = math.NaN() }, "loss NaN outside"},
		{"rate too low", func(c *Config) { c.AToB.RateBitsPerSec = 10 }, "rate 10 bit/s outside"},
		{"queue too long", func(c *Config) { c.QueueLimit = MaxQueueLimit + 1 }, "queue limit"},
	} {
		cfg := base
		c.mod(&cfg)
		r, err := Start(t.Context(), cfg)
		if err == nil {
			r.Close()
			t.Errorf("%s: Start accepted %+v", c.name, cfg)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to mention %q", c.name, err, c.want)
		}
	}
	r, err := Start(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetShape(Direction(5), Shape{}); err == nil {
		t.Error("SetShape accepted direction 5")
	}
	if err := r.SetShapes(Shape{Loss: -0.1}); err == nil {
		t.Error("SetShapes accepted loss -0.1")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := a.ReadFrom(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("socket A after Close: read error %v, want net.ErrClosed", err)
	}
}
