package ethudp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

type testLink struct {
	*Link
	ticks chan time.Time
}

func openLink(t *testing.T, cfg Config) testLink {
	t.Helper()
	if !cfg.Local.IsValid() {
		cfg.Local = loopback
	}
	ticks := make(chan time.Time)
	cfg.Ticks = ticks
	l, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return testLink{l, ticks}
}

func (l testLink) tick(t *testing.T) {
	t.Helper()
	select {
	case l.ticks <- time.Now():
	case <-t.Context().Done():
		t.Fatal("tick not taken")
	}
}

// waitFor polls cond until it holds or the test's context ends (no timing assertion: the only
// bound is the test deadline).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("never: %s", what)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// pair opens two links with fixed peers on loopback. a is bound first so that b knows it.
func pair(t *testing.T, o Options) (a, b testLink) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bAddr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	_ = pc.Close()
	a = openLink(t, Config{Remote: bAddr, Codec: o})
	b = openLink(t, Config{Local: bAddr, Remote: a.LocalAddr(), Codec: o})
	return a, b
}

func recvFrame(t *testing.T, l testLink) []byte {
	t.Helper()
	f, err := l.Recv(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLinkOptionMatrix sends the matrix payloads both ways over loopback for every option
// combination and checks the counters.
func TestLinkOptionMatrix(t *testing.T) {
	for _, lz := range []int{0, 1} {
		for _, ci := range allCiphers {
			for _, mtu := range []int{0, 1036} {
				t.Run(fmt.Sprintf("lz4=%d/%v/mtu=%d", lz, ci, mtu), func(t *testing.T) {
					a, b := pair(t, Options{LZ4: lz, Cipher: ci, MTU: mtu})
					for _, dir := range [][2]testLink{{a, b}, {b, a}} {
						for name, p := range matrixPayloads() {
							if err := dir[0].Send(t.Context(), p); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if got := recvFrame(t, dir[1]); !bytes.Equal(got, p) {
								t.Fatalf("%s: received %d bytes, want the %d sent", name, len(got), len(p))
							}
						}
					}
					ca := a.Counters()
					if ca.FramesSent != 3 || ca.FramesReceived != 3 {
						t.Fatalf("counters %+v", ca)
					}
					if lz > 0 && ca.Compressed != 1 {
						t.Errorf("compressed %d, want 1", ca.Compressed)
					}
					if wantFrag := map[bool]uint64{true: 2, false: 0}[mtu > 0]; lz > 0 && mtu > 0 {
						if ca.Fragmented != 1 || ca.Reassembled != 1 {
							t.Errorf("fragmented %d reassembled %d, want 1 and 1", ca.Fragmented, ca.Reassembled)
						}
					} else if ca.Fragmented != wantFrag || ca.Reassembled != wantFrag {
						t.Errorf("fragmented %d reassembled %d, want %d", ca.Fragmented, ca.Reassembled, wantFrag)
					}
					if len(ca.Dropped) != 0 {
						t.Errorf("drops %v", ca.Dropped)
					}
				})
			}
		}
	}
}

func TestLinkStateTransitions(t *testing.T) {
	a, b := pair(t, Options{LZ4: 1, Cipher: CipherAES128, Key: "k"})
	if a.State() != StateDown {
		t.Fatal("a starts up")
	}
	a.tick(t) // tick 1: PING → b answers PONG
	waitFor(t, "a gets a PONG", func() bool { return a.Counters().PongsReceived == 1 })
	if c := b.Counters(); c.PingsReceived != 1 || c.PongsSent != 1 {
		t.Fatalf("b counters %+v", c)
	}
	a.tick(t) // tick 2 < 1+4: up; its PING gets a PONG too
	waitFor(t, "a up", func() bool { return a.State() == StateUp })
	waitFor(t, "second PONG", func() bool { return a.Counters().PongsReceived == 2 })
	// b goes away: no more PONGs after the one of tick 2. Up through tick 7 (= 2+5), down at 8.
	_ = b.Close()
	for range 5 { // ticks 3..7
		a.tick(t)
	}
	a.tick(t) // tick 8 is taken only after tick 7 was processed
	waitFor(t, "a down", func() bool { return a.State() == StateDown })
	if c := a.Counters(); c.StateChanges != 2 || c.PingsSent != 8 {
		t.Fatalf("counters %+v", c)
	}
}

func TestLinkNATPassword(t *testing.T) {
	const pw = "s3cret"
	o := Options{Cipher: CipherXOR, Key: "xk"}
	// the NAT side listens with an unspecified remote: it learns its peer from the password
	nat := openLink(t, Config{Remote: netip.MustParseAddrPort("0.0.0.0:0"), Codec: o, Password: pw})
	if _, ok := nat.Peer(); ok {
		t.Fatal("peer known before any datagram")
	}
	if err := nat.Send(t.Context(), frame([]byte("x"))); err == nil {
		t.Fatal("send without a peer accepted")
	}

	wrong := openLink(t, Config{Remote: nat.LocalAddr(), Codec: o, Password: "guess"})
	wrong.tick(t) // PASSWORD:guess then PING
	if err := wrong.Send(t.Context(), frame([]byte("intruder"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "wrong password and unknown peer counted", func() bool {
		d := nat.Counters().Dropped
		return d["wrong-password"] == 1 && d["unknown-peer"] == 2 // the PING and the frame
	})
	if _, ok := nat.Peer(); ok {
		t.Fatal("wrong password latched a peer")
	}

	good := openLink(t, Config{Remote: nat.LocalAddr(), Codec: o, Password: pw})
	good.tick(t)
	waitFor(t, "peer latched", func() bool { p, ok := nat.Peer(); return ok && p == good.LocalAddr() })
	waitFor(t, "PONG back to the good peer", func() bool { return good.Counters().PongsReceived == 1 })
	f := frame([]byte("from the good peer"))
	if err := good.Send(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	if got := recvFrame(t, nat); !bytes.Equal(got, f) {
		t.Fatalf("got %q", got)
	}
	back := frame([]byte("reply through NAT"))
	if err := nat.Send(t.Context(), back); err != nil {
		t.Fatal(err)
	}
	if got := recvFrame(t, good); !bytes.Equal(got, back) {
		t.Fatalf("got %q", got)
	}
	if c := nat.Counters(); c.PasswordsAccepted != 1 || c.PeerChanges != 1 || c.Dropped["wrong-password"] != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestLinkNATNoPassword(t *testing.T) {
	nat := openLink(t, Config{Codec: Options{LZ4: 1}})
	peer := openLink(t, Config{Remote: nat.LocalAddr(), Codec: Options{LZ4: 1}})
	f := frame([]byte("first datagram latches"))
	if err := peer.Send(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	if got := recvFrame(t, nat); !bytes.Equal(got, f) {
		t.Fatalf("got %q", got)
	}
	if p, ok := nat.Peer(); !ok || p != peer.LocalAddr() {
		t.Fatalf("peer %v %v", p, ok)
	}
	// a restricted NAT remote (port fixed) refuses other sources
	restricted := openLink(t, Config{Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 1), Codec: Options{LZ4: 1}})
	other := openLink(t, Config{Remote: restricted.LocalAddr(), Codec: Options{LZ4: 1}})
	if err := other.Send(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "refused source counted", func() bool { return restricted.Counters().Dropped["unknown-peer"] == 1 })
}

func TestLinkDropsBadInput(t *testing.T) {
	a, b := pair(t, Options{LZ4: 1, MTU: 1036})
	stranger, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(a.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Write(append(frame(nil), 0xaa)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stranger dropped", func() bool { return a.Counters().Dropped["unknown-peer"] == 1 })
	for _, bad := range [][]byte{
		append(frame(nil), 0x01), // bad flag
		{0xaa},                   // empty payload
		[]byte("UDPFRG\x00"),     // truncated half
	} {
		if err := b.sendRaw(bad); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "drops counted", func() bool {
		d := a.Counters().Dropped
		return d["bad-flag"] == 1 && d["truncated"] == 2
	})
	for _, n := range []int{0, 13, MaxFrameSize + 1} {
		err := a.Send(t.Context(), make([]byte, n))
		if r, ok := ReasonOf(err); !ok || r != DropOversize {
			t.Errorf("send %d bytes: %v", n, err)
		}
	}
}

// sendRaw writes a datagram as is to the peer (tests only).
func (l testLink) sendRaw(d []byte) error {
	p, _ := l.Peer()
	_, err := l.conn.WriteToUDPAddrPort(d, p)
	return err
}

func TestLinkStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	l, err := Open(ctx, Config{Local: loopback, Ticks: make(chan time.Time)})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-l.Done()
	if _, err := l.Recv(t.Context()); err == nil {
		t.Fatal("recv on a stopped link succeeded")
	}
	if _, err := Open(t.Context(), Config{}); err == nil {
		t.Fatal("no local address accepted")
	}
	if _, err := Open(t.Context(), Config{Local: loopback, RecvQueue: MaxRecvQueue + 1}); err == nil {
		t.Fatal("huge queue accepted")
	}
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestLinkReassembly sends UDPFRG halves by hand: second half first (joined), then a pair whose
// halves are 1.5 s apart on the receiver's clock (the first is dropped as stale, counted).
func TestLinkReassembly(t *testing.T) {
	o := Options{LZ4: 1, Cipher: CipherAES256, Key: "k", MTU: 1100}
	clock := &fakeClock{t: time.Unix(5000, 0)}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bAddr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	_ = pc.Close()
	a := openLink(t, Config{Remote: bAddr, Codec: o, Now: clock.now})
	b := openLink(t, Config{Local: bAddr, Remote: a.LocalAddr(), Codec: o})

	enc := mustCodec(t, o).NewEncoder(100)
	f := matrixPayloads()["incompressible"]
	out, err := enc.Encode(f)
	if err != nil || !out.Fragmented {
		t.Fatalf("encode: fragmented=%v err=%v", out.Fragmented, err)
	}
	if err := b.sendRaw(out.Datagrams[1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "second half received", func() bool { return a.Counters().DatagramsReceived == 1 })
	if err := b.sendRaw(out.Datagrams[0]); err != nil {
		t.Fatal(err)
	}
	if got := recvFrame(t, a); !bytes.Equal(got, f) {
		t.Fatalf("joined frame differs (%d bytes)", len(got))
	}

	out, err = enc.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.sendRaw(out.Datagrams[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "first half received", func() bool { return a.Counters().DatagramsReceived == 3 })
	clock.add(1500 * time.Millisecond)
	if err := b.sendRaw(out.Datagrams[1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stale half counted", func() bool { return a.Counters().Dropped["stale-half"] == 1 })
	c := a.Counters()
	if c.Reassembled != 1 || c.FramesReceived != 1 {
		t.Fatalf("counters %+v", c)
	}
}
