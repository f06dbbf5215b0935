package probe

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

func TestPacketRoundTripAndRefusals(t *testing.T) {
	var buf [MaxPacketLen]byte
	for _, p := range []Packet{
		{Type: TypeEcho, Seq: 7, Len: EchoLen},
		{Type: TypeReply, Seq: 1 << 60, Len: HeaderLen},
		{Type: TypeTrain, Seq: 9, Index: 15, Count: 16, Len: TrainPacketLen},
		{Type: TypeTrainReply, Seq: 9, Index: 0, Count: 2, Len: MaxPacketLen},
	} {
		b, err := p.Marshal(buf[:])
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b)
		if err != nil || got != p {
			t.Errorf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
	if _, err := (Packet{Type: TypeEcho, Len: MaxPacketLen + 1}).Marshal(make([]byte, 2000)); err == nil {
		t.Error("oversized packet marshalled")
	}
	good, _ := Packet{Type: TypeTrain, Seq: 1, Index: 1, Count: 4, Len: 64}.Marshal(buf[:])
	mut := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for name, b := range map[string][]byte{
		"short":           good[:HeaderLen-1],
		"long":            make([]byte, MaxPacketLen+1),
		"magic":           mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":         mut(func(b []byte) []byte { b[4] = 2; return b }),
		"type 0":          mut(func(b []byte) []byte { b[5] = 0; return b }),
		"type 5":          mut(func(b []byte) []byte { b[5] = 5; return b }),
		"reserved":        mut(func(b []byte) []byte { b[20] = 1; return b }),
		"index ≥ count":   mut(func(b []byte) []byte { b[7] = 4; return b }),
		"train count 1":   mut(func(b []byte) []byte { b[17], b[7] = 1, 0; return b }),
		"echo with count": mut(func(b []byte) []byte { b[5] = TypeEcho; return b }),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParse(f *testing.F) {
	var buf [MaxPacketLen]byte
	b, _ := Packet{Type: TypeTrain, Seq: 1, Index: 1, Count: 4, Len: 64}.Marshal(buf[:])
	f.Add(b)
	f.Add([]byte("OVLP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		var out [MaxPacketLen]byte
		again, err := p.Marshal(out[:])
		if err != nil {
			t.Fatalf("accepted %x but cannot marshal %+v: %v", b, p, err)
		}
		if p2, err := Parse(again); err != nil || p2 != p {
			t.Fatalf("%+v does not round-trip: %+v %v", p, p2, err)
		}
	})
}

func node(name string, k fabric.Kind, carriers []string, underlay ...string) fabric.NodeState {
	return fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: name, Kind: k, Carriers: carriers, Underlay: underlay}}
}

func TestTargets(t *testing.T) {
	nodes := []fabric.NodeState{
		node("a", fabric.KindOrdinary, []string{"c1"}, "10.1.0.2"),
		node("b", fabric.KindOrdinary, []string{"c1"}, "10.1.0.3"),
		node("s1", fabric.KindSuper, []string{"c1", "c2"}, "10.2.0.1", "10.1.0.1:7000"),
		node("s2", fabric.KindSuper, []string{"c2"}, "10.2.0.2"),
		node("s3", fabric.KindSuper, []string{"c1"}, "fd00::3"),
		node("s0", fabric.KindSuper, []string{"c1"}, "10.1.0.9"),
	}
	names := func(ts []Target) []string {
		var out []string
		for _, x := range ts {
			out = append(out, x.Peer+"@"+x.Addr.String())
		}
		return out
	}
	local := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	// Ordinary a: its supers on c1 (not b: two ordinary nodes never link; not s2: no common
	// carrier; not s3: no IPv4 address), at the address nearest its own, s1 at its port.
	a := Config{Self: nodes[0].NodeSpec, Local: local("10.1.0.2")}
	if got, want := names(Targets(a, nodes)), []string{"s0@10.1.0.9:7471", "s1@10.1.0.1:7000"}; !slices.Equal(got, want) {
		t.Errorf("a probes %v, want %v", got, want)
	}
	// Super s1 reports only to supers sorting after it; never to ordinary nodes.
	s1 := Config{Self: nodes[2].NodeSpec, Local: local("10.2.0.1", "10.1.0.1"), Port: 9}
	if got, want := names(Targets(s1, nodes)), []string{"s2@10.2.0.2:9"}; !slices.Equal(got, want) {
		t.Errorf("s1 probes %v, want %v", got, want)
	}
	// Via pins an address.
	s0 := Config{Self: nodes[5].NodeSpec, Local: local("10.1.0.9"), Via: map[string]netip.Addr{"s1": netip.MustParseAddr("10.2.0.1")}}
	if got, want := names(Targets(s0, nodes)), []string{"s1@10.2.0.1:7471"}; !slices.Equal(got, want) {
		t.Errorf("s0 probes %v, want %v", got, want)
	}
}

// fakeFabric records reports.
type fakeFabric struct {
	mu      sync.Mutex
	nodes   []fabric.NodeState
	reports []fabric.LinkReport
}

func (f *fakeFabric) Nodes(context.Context) ([]fabric.NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nodes), nil
}

func (f *fakeFabric) ReportLink(_ context.Context, l fabric.LinkReport) error {
	if err := l.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, l)
	return nil
}

func (f *fakeFabric) last(self, peer string) (fabric.LinkReport, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r fabric.LinkReport
	n := 0
	for _, x := range f.reports {
		if x.A == self && x.B == peer {
			r = x
			n++
		}
	}
	return r, n
}

// TestProbeLoopback runs an ordinary node's prober against a super's responder on loopback
// (the super on a port of its own) and a second super that never answers: the live link is
// reported with no loss, a latency below a second and a bandwidth within the cap; the silent
// one is reported dead (bandwidth 0, 100 % loss). Malformed packets sent to the responder are
// counted and not answered.
func TestProbeLoopback(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	superConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	superPort := superConn.LocalAddr().(*net.UDPAddr).Port
	silentPort := silent.LocalAddr().(*net.UDPAddr).Port
	ff := &fakeFabric{nodes: []fabric.NodeState{
		node("a", fabric.KindOrdinary, []string{"c1"}, "127.0.0.1"),
		node("s1", fabric.KindSuper, []string{"c1"}, netip.AddrPortFrom(lo, uint16(superPort)).String()),
		node("s2", fabric.KindSuper, []string{"c1"}, netip.AddrPortFrom(lo, uint16(silentPort)).String()),
	}}
	super, err := New(Config{Self: ff.nodes[1].NodeSpec, Local: []netip.Addr{lo}, Fabric: ff, Interval: 20 * time.Millisecond, Window: 5})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Self: ff.nodes[0].NodeSpec, Local: []netip.Addr{lo}, Fabric: ff, Interval: 20 * time.Millisecond, Window: 5,
		MaxBandwidthKbps: 5_000_000})
	if err != nil {
		t.Fatal(err)
	}
	aConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = super.Run(ctx, superConn) })
	wg.Go(func() { _ = a.Run(ctx, aConn) })
	defer func() { cancel(); wg.Wait() }()

	// Garbage at the super's responder.
	junk, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: superPort})
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Close()
	for range 3 {
		if _, err := junk.Write([]byte("PING:PING:")); err != nil {
			t.Fatal(err)
		}
	}
	for {
		r1, n1 := ff.last("a", "s1")
		r2, n2 := ff.last("a", "s2")
		if n1 >= 3 && n2 >= 3 {
			if r1.LossPPM != 0 || r1.BandwidthKbps < 1 || r1.BandwidthKbps > 5_000_000 || r1.LatencyUs > 1_000_000 || r1.A != "a" {
				t.Errorf("live link report %+v", r1)
			}
			if r2.BandwidthKbps != 0 || r2.LossPPM != 1_000_000 {
				t.Errorf("silent link report %+v: want dead (bandwidth 0, loss 100 %%)", r2)
			}
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("reports: s1 %d, s2 %d", n1, n2)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if s := super.Stats(); s.Bad < 3 || s.Answered == 0 {
		t.Errorf("super's responder: answered %d, bad %d (3 junk packets sent)", s.Answered, s.Bad)
	}
	// s1 measures s2 (a super sorting after it), not a (an ordinary node reports its own links).
	if s := super.Stats(); len(s.Links) != 1 || s.Links[0].Peer != "s2" {
		t.Errorf("super s1 measures %+v, want only s2", s.Links)
	}

	// An echo and a train packet from an address no node registered are refused (counted),
	// not reflected.
	stranger, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: superPort})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	var pb [TrainPacketLen]byte
	before := super.Stats()
	for _, pkt := range []Packet{{Type: TypeEcho, Seq: 1, Len: EchoLen}, {Type: TypeTrain, Seq: 2, Count: TrainLen, Len: TrainPacketLen}} {
		b, err := pkt.Marshal(pb[:])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stranger.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// A junk packet after them: once it is counted bad, the two probes before it (same
	// socket, in order) have been handled.
	if _, err := stranger.Write([]byte("PING:PING:")); err != nil {
		t.Fatal(err)
	}
	for super.Stats().Bad == before.Bad {
		select {
		case <-t.Context().Done():
			t.Fatal("the super never handled the stranger's packets")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got := super.Stats().Refused - before.Refused; got != 2 {
		t.Errorf("super's responder refused %d of the stranger's 2 probes", got)
	}
}

// TestProbeReplyFromAnotherAddress: a peer registered with two addresses whose responder
// answers from the other one (an unbound socket: the kernel picks the source) is alive.
func TestProbeReplyFromAnotherAddress(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	probed, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 3)})
	if err != nil {
		t.Fatal(err)
	}
	defer probed.Close()
	port := probed.LocalAddr().(*net.UDPAddr).Port
	other, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 4), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// The peer's responder: receives on 127.0.0.3, answers from 127.0.0.4 (same port).
	go func() {
		buf := make([]byte, MaxPacketLen)
		for {
			n, from, err := probed.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n > 5 {
				buf[5]++ // the reply type
				_, _ = other.WriteToUDPAddrPort(buf[:n], from)
			}
		}
	}()
	ff := &fakeFabric{nodes: []fabric.NodeState{
		node("a", fabric.KindOrdinary, []string{"c1"}, "127.0.0.1"),
		node("s1", fabric.KindSuper, []string{"c1"}, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.3"), uint16(port)).String(), "127.0.0.4"),
	}}
	a, err := New(Config{Self: ff.nodes[0].NodeSpec, Local: []netip.Addr{lo}, Fabric: ff, Interval: 20 * time.Millisecond, Window: 5})
	if err != nil {
		t.Fatal(err)
	}
	aConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx, aConn) })
	defer func() { cancel(); wg.Wait() }()
	for {
		r, n := ff.last("a", "s1")
		if n >= 2 {
			if r.BandwidthKbps == 0 || r.LossPPM == 1_000_000 {
				t.Errorf("s1 answering from its other address is reported dead: %+v (prober %+v)", r, a.Stats())
			}
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("reports of a-s1: %d", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestSignificant(t *testing.T) {
	base := fabric.LinkReport{A: "a", B: "s", BandwidthKbps: 100_000, LatencyUs: 20_000, LossPPM: 0}
	with := func(f func(r *fabric.LinkReport)) fabric.LinkReport { r := base; f(&r); return r }
	for _, c := range []struct {
		name string
		now  fabric.LinkReport
		want bool
	}{
		{"same", base, false},
		{"latency +5 %", with(func(r *fabric.LinkReport) { r.LatencyUs = 21_000 }), false},
		{"latency +15 %", with(func(r *fabric.LinkReport) { r.LatencyUs = 23_000 }), true},
		{"bandwidth −10 %", with(func(r *fabric.LinkReport) { r.BandwidthKbps = 90_000 }), false},
		{"bandwidth −30 %", with(func(r *fabric.LinkReport) { r.BandwidthKbps = 70_000 }), true},
		{"loss 0.5 %", with(func(r *fabric.LinkReport) { r.LossPPM = 5_000 }), false},
		{"loss 2 %", with(func(r *fabric.LinkReport) { r.LossPPM = 20_000 }), true},
		{"dead", with(func(r *fabric.LinkReport) { r.BandwidthKbps = 0 }), true},
	} {
		if got := Significant(base, c.now, true); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !Significant(fabric.LinkReport{}, base, false) {
		t.Error("first report not significant")
	}
	// A tiny latency change on a fast link (0.5 ms on 1 ms) is below the 1 ms floor.
	fast := with(func(r *fabric.LinkReport) { r.LatencyUs = 1_000 })
	if Significant(fast, with(func(r *fabric.LinkReport) { r.LatencyUs = 1_500 }), true) {
		t.Error("0.5 ms change written")
	}
}
