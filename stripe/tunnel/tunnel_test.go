package tunnel

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/engine"
)

// ipv4 builds an IPv4 header of protocol proto with ports (when l4) and fragment bits.
func ipv4(src, dst [4]byte, proto byte, sport, dport uint16, frag uint16) []byte {
	p := make([]byte, 28)
	p[0] = 0x45
	p[6], p[7] = byte(frag>>8), byte(frag)
	p[9] = proto
	copy(p[12:], src[:])
	copy(p[16:], dst[:])
	p[20], p[21], p[22], p[23] = byte(sport>>8), byte(sport), byte(dport>>8), byte(dport)
	return p
}

func TestConnOf(t *testing.T) {
	a, b := [4]byte{10, 78, 0, 1}, [4]byte{10, 78, 0, 2}
	const n = 1024
	c1, ok := connOf(ipv4(a, b, 6, 40000, 5201, 0), n)
	if !ok {
		t.Fatal("TCP packet: not recognized")
	}
	// the same flow maps to the same connection whatever the payload.
	p := append(ipv4(a, b, 6, 40000, 5201, 0), 1, 2, 3)
	if c, _ := connOf(p, n); c != c1 {
		t.Errorf("same flow, other payload: connection %d, want %d", c, c1)
	}
	// another port spreads over connections: of 64 flows, more than one connection.
	seen := map[int]bool{}
	for port := range uint16(64) {
		c, _ := connOf(ipv4(a, b, 6, 40000+port, 5201, 0), n)
		seen[c] = true
	}
	if len(seen) < 8 {
		t.Errorf("64 TCP flows on %d connections of %d, want them spread", len(seen), n)
	}
	// fragments of one datagram share a connection though only the first has ports.
	first, _ := connOf(ipv4(a, b, 17, 1, 2, 0x2000), n)  // MF
	second, _ := connOf(ipv4(a, b, 17, 9, 9, 0x00b9), n) // offset, no MF
	if first != second {
		t.Errorf("fragments on connections %d and %d, want one", first, second)
	}
	v6 := make([]byte, 48)
	v6[0], v6[6] = 0x60, 17
	if c, ok := connOf(v6, n); !ok || c < 0 || c >= n {
		t.Errorf("IPv6 UDP: %d, %v", c, ok)
	}
	for _, bad := range [][]byte{nil, make([]byte, 19), append([]byte{0x46}, make([]byte, 20)...), append([]byte{0x50}, make([]byte, 40)...), v6[:39:39]} {
		if _, ok := connOf(bad, n); ok {
			t.Errorf("connOf(% x): accepted", bad)
		}
	}
	if c, ok := connOf(ipv4(a, b, 6, 1, 2, 0), 1); !ok || c != 0 {
		t.Errorf("one connection: %d, %v", c, ok)
	}
}

func FuzzConnOf(f *testing.F) {
	f.Add(ipv4([4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 6, 1, 2, 0), 16)
	f.Fuzz(func(t *testing.T, p []byte, n int) {
		if n < 1 || n > MaxConns {
			return
		}
		if c, ok := connOf(p, n); ok && (c < 0 || c >= n) {
			t.Fatalf("connection %d of %d", c, n)
		}
	})
}

// fakeEngine has a fixed MaxPayload; the tunnel's checks need no more.
type fakeEngine struct{ mp int }

func (f fakeEngine) Send(context.Context, engine.Message) error { return nil }
func (f fakeEngine) Receive(ctx context.Context) (engine.Delivery, error) {
	<-ctx.Done()
	return engine.Delivery{}, ctx.Err()
}
func (f fakeEngine) MaxPayload() int { return f.mp }

func TestConfigCheck(t *testing.T) {
	good := Config{Name: "stripe0", Addr: netip.MustParsePrefix("10.78.0.1/24"), Engine: fakeEngine{1472}}
	c := good
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	if c.MTU != 1472 || c.Conns != DefaultConns || c.Service != DefaultService || c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Name = "" }, "device name"},
		{func(c *Config) { c.Name = strings.Repeat("x", 16) }, "device name"},
		{func(c *Config) { c.Name = "a/b" }, "not allowed"},
		{func(c *Config) { c.Name = ".." }, "not allowed"},
		{func(c *Config) { c.Addr = netip.Prefix{} }, "address"},
		{func(c *Config) { c.Addr = netip.MustParsePrefix("fd00::1/64") }, "IPv4"},
		{func(c *Config) { c.Addr = netip.MustParsePrefix("10.0.0.1/32") }, "prefix length"},
		{func(c *Config) { c.Engine = nil }, "no engine"},
		{func(c *Config) { c.Engine = fakeEngine{500} }, "larger MTU"},
		{func(c *Config) { c.MTU = 1473 }, "MaxPayload"},
		{func(c *Config) { c.MTU = 100 }, "MTU 100"},
		{func(c *Config) { c.Conns = MaxConns + 1 }, "connections"},
		{func(c *Config) { c.Conns = -1 }, "connections"},
		{func(c *Config) { c.TxQueueLen = -1 }, "transmit queue"},
	} {
		c := good
		bad.mod(&c)
		err := c.check()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("config %+v: error %v, want one saying %q", c, err, bad.want)
		}
	}
}

func TestNetmask(t *testing.T) {
	for bits, want := range map[int][4]byte{1: {128, 0, 0, 0}, 24: {255, 255, 255, 0}, 31: {255, 255, 255, 254}} {
		if got := netmask(bits); got != want {
			t.Errorf("netmask(%d) = %v, want %v", bits, got, want)
		}
	}
}
