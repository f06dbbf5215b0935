//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// rates are the test links' speeds in Mbit/s, uneven on purpose.
var rates = [4]int{100, 200, 300, 400}

const (
	nodeA, nodeB = 1, 2
	totalBytes   = 20 << 20
)

// testbed is two namespaces joined by four veth pairs shaped with tbf in both directions.
type testbed struct {
	a, b  *lab.Netns
	pairs []*lab.VethPair
}

func newTestbed(t *testing.T) *testbed {
	t.Helper()
	tb := &testbed{a: lab.NewNetns(t), b: lab.NewNetns(t)}
	for _, mbit := range rates {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: tb.a, BNetns: tb.b})
		// burst ≥ one 64 KiB offload segment and ≈ 20 ms at the rate; 20 ms of queue.
		burst := max(64<<10, mbit*1e6/8/50)
		for _, end := range []lab.VethEnd{p.A, p.B} {
			end.Netns.Run(t, "tc", "qdisc", "replace", "dev", end.Name, "root", "tbf",
				"rate", strconv.Itoa(mbit)+"mbit", "burst", strconv.Itoa(burst), "latency", "20ms")
		}
		tb.pairs = append(tb.pairs, p)
	}
	return tb
}

// open opens one end of every pair (a or b side) inside its namespace.
func (tb *testbed) open(t *testing.T, aSide, ring bool) []link.Link {
	t.Helper()
	ns := tb.b
	if aSide {
		ns = tb.a
	}
	var links []link.Link
	err := ns.Do(func() error {
		for _, p := range tb.pairs {
			name := p.B.Name
			if aSide {
				name = p.A.Name
			}
			l, err := link.Open(t.Context(), link.Config{Interface: name, RxRing: ring})
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

// node is a running engine.
type node struct {
	e     *engine.Engine
	links []link.Link
}

// arm is one configuration of the engines under test.
type arm struct {
	kind policy.Kind
	pace float64 // > 0: pace each link to pace times its rate (its Vmax)
	ring bool    // receive through TPACKET_V3 rings
}

func (a arm) String() string {
	s := string(a.kind)
	if a.pace > 0 {
		s += "+paced"
	}
	if a.ring {
		s += "+rx-ring"
	}
	return s
}

// start builds and runs the engines of both nodes as arm says; they stop at cleanup.
func (tb *testbed) start(t *testing.T, arm arm) (a, b node) {
	t.Helper()
	vmax := make([]float64, len(rates))
	capa := make([]uint64, len(rates))
	for i, r := range rates {
		vmax[i] = float64(r) * 1e6 / 8
		if arm.pace > 0 {
			vmax[i] *= arm.pace
		}
		capa[i] = uint64(r)
	}
	mk := func(self, peer uint32, aSide bool) node {
		links := tb.open(t, aSide, arm.ring)
		e, err := engine.New(engine.Config{Node: self, Peer: peer, Links: links, Vmax: vmax,
			Policy: policy.Config{Kind: arm.kind, Delta: 0.1, Capacities: capa}, Pace: arm.pace > 0})
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
		return node{e: e, links: links}
	}
	a, b = mk(nodeA, nodeB, true), mk(nodeB, nodeA, false)
	waitDiscovered(t, a, b, nodeB)
	waitDiscovered(t, b, a, nodeA)
	return a, b
}

// waitDiscovered waits until n knows peer's MAC on every link, and checks it is the right one.
func waitDiscovered(t *testing.T, n, peer node, peerID uint32) {
	t.Helper()
	lab.WaitFor(t, 10*time.Second, "discovery of every peer link", func(context.Context) error {
		nodes := n.e.Peers()
		if len(nodes) != 1 || nodes[0].ID != peerID || len(nodes[0].NICs) != len(rates) {
			return fmt.Errorf("peers %+v", nodes)
		}
		return nil
	})
	for i, nic := range n.e.Peers()[0].NICs {
		if nic.Via != i || nic.Link != i || !bytes.Equal(nic.MAC, peer.links[i].MAC()) {
			t.Fatalf("NIC %d of node %d: %+v, want link %d MAC %v", i, peerID, nic, i, peer.links[i].MAC())
		}
	}
}

// pattern is the byte at offset o of the test stream.
func pattern(o int) byte { return byte(o ^ o>>8 ^ o>>16) }

func chunk(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(off + i)
	}
	return b
}

// received is what the receiver saw.
type received struct {
	bytes int
	err   error
}

// receiveAll reads total bytes from e and checks order, exactly-once and content. The first
// delivery starts a sequence space: its number is a multiple of 2^16 (the engine's
// alignment); the following ones go up by one.
func receiveAll(ctx context.Context, e *engine.Engine, conn engine.Conn, total int) received {
	var r received
	want, first := uint64(0), true
	for r.bytes < total {
		d, err := e.Receive(ctx)
		if err != nil {
			r.err = fmt.Errorf("after %d bytes: %w", r.bytes, err)
			return r
		}
		if d.Conn != conn {
			r.err = fmt.Errorf("delivery of connection %+v, want %+v", d.Conn, conn)
			return r
		}
		if first {
			if d.Seq%(1<<16) != 0 {
				r.err = fmt.Errorf("first delivery of sequence number %d: not the start of a sequence space", d.Seq)
				return r
			}
			want, first = d.Seq, false
		}
		if d.Seq != want {
			r.err = fmt.Errorf("delivery of sequence number %d, want %d (out of order, duplicate or gap)", d.Seq, want)
			return r
		}
		if !bytes.Equal(d.Payload, chunk(r.bytes, len(d.Payload))) {
			r.err = fmt.Errorf("frame %d: payload differs from the stream at offset %d", d.Seq, r.bytes)
			return r
		}
		want++
		r.bytes += len(d.Payload)
	}
	return r
}

// transfer sends total bytes from a to b, calling at(offset) before the chunk at each offset,
// and waits for b to receive all of it.
func transfer(t *testing.T, a, b node, conn engine.Conn, at func(off int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var got received
	wg.Go(func() { got = receiveAll(ctx, b.e, conn, totalBytes) })
	const step = 256 << 10
	for off := 0; off < totalBytes; off += step {
		if at != nil {
			at(off)
		}
		if err := a.e.Send(ctx, engine.Message{Conn: conn, Payload: chunk(off, min(step, totalBytes-off))}); err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("send at offset %d: %v", off, err)
		}
	}
	wg.Wait()
	if got.err != nil || got.bytes != totalBytes {
		t.Fatalf("received %d of %d bytes: %v\nsender %+v\nreceiver %+v", got.bytes, totalBytes, got.err, a.e.Stats(), b.e.Stats())
	}
	lab.WaitFor(t, 10*time.Second, "every frame acknowledged", func(context.Context) error {
		if s := a.e.Stats(); s.Unacked != 0 {
			return fmt.Errorf("%d frames unacknowledged", s.Unacked)
		}
		return nil
	})
	if s := b.e.Stats(); s.Lost != 0 || s.DeliveredBytes != totalBytes {
		t.Fatalf("receiver counted %d lost, %d bytes delivered: %+v", s.Lost, s.DeliveredBytes, s)
	}
}

func TestBulkTransfer(t *testing.T) {
	tb := newTestbed(t)
	for _, arm := range []struct {
		arm
		// minSharePct is the share of the bytes every link must carry: round robin gives each
		// 25 %, weighted at least 10 %; the seed policy's adjusts move the flow between links
		// period by period (runs here gave the slowest link 6–9 %), so it only has to use all.
		minSharePct int
	}{
		{arm{kind: policy.KindRoundRobin}, 20},
		{arm{kind: policy.KindSeed, ring: true}, 1},
		// Paced to an eighth of the rates (125 Mbit/s in all), so pacing is what limits.
		{arm{kind: policy.KindWeighted, pace: 0.125}, 8},
	} {
		t.Run(arm.String(), func(t *testing.T) {
			a, b := tb.start(t, arm.arm)
			conn := engine.Conn{Service: 7, SrcPort: 1000, DstPort: 2000}
			transfer(t, a, b, conn, nil)
			s := a.e.Stats()
			var used int
			for i, l := range s.Links {
				t.Logf("link %d (%d Mbit/s): %d frames, %d bytes, load %.2f, kernel drops %d", i, rates[i], l.TxFrames, l.TxBytes, l.TxLoad, l.KernelDrops)
				if l.TxBytes > totalBytes*uint64(arm.minSharePct)/100 {
					used++
				}
			}
			t.Logf("sender: max ack delay %v, srtt %v, rto %v, retransmits %d, skips %d, adjusts %d; receiver: max reorder depth %d, reordered %d, duplicates %d",
				s.MaxAckDelay, s.SRTT, s.RTO, s.Retransmits, s.Skips, s.Policy.Adjusts, b.e.Stats().MaxReorderDepth, b.e.Stats().Reordered, b.e.Stats().Duplicates+b.e.Stats().TooOld)
			if used != len(rates) {
				t.Fatalf("%d of %d links carried more than %d%% of the bytes: %+v", used, len(rates), arm.minSharePct, s.Links)
			}
			if arm.pace > 0 && s.PaceWaits == 0 {
				t.Fatalf("paced at the link rates, no send waited for tokens: %+v", s)
			}
			if arm.pace == 0 && s.PaceWaits != 0 {
				t.Fatalf("not paced, yet %d sends waited for tokens", s.PaceWaits)
			}
		})
	}
}

func TestLinkDownMidTransfer(t *testing.T) {
	// Down on the sender's end: its sends fail with ENETDOWN. Down on the receiver's end: the
	// sender's end loses its carrier and the kernel drops what is sent to it without an error.
	for _, side := range []string{"sender", "receiver"} {
		t.Run("down at the "+side, func(t *testing.T) { testLinkDownMidTransfer(t, side == "sender") })
	}
}

func testLinkDownMidTransfer(t *testing.T, senderSide bool) {
	tb := newTestbed(t)
	a, b := tb.start(t, arm{kind: policy.KindRoundRobin})
	const down = 1
	ns, dev := tb.a, tb.pairs[down].A.Name
	if !senderSide {
		ns, dev = tb.b, tb.pairs[down].B.Name
	}
	var atUp uint64
	downed := make(chan error, 1)
	var atDown uint64
	conn := engine.Conn{Service: 9, SrcPort: 1, DstPort: 2}
	transfer(t, a, b, conn, func(off int) {
		switch off {
		case 6 << 20:
			// Down while the sender is busy, so frames are queued on the link when it goes.
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if _, err := ns.Exec(ctx, "ip", "link", "set", "dev", dev, "down"); err != nil {
					downed <- err
					return
				}
				for a.e.Stats().Links[down].Usable {
					select {
					case <-ctx.Done():
						downed <- fmt.Errorf("the engine still finds link %d usable: %w", down, ctx.Err())
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
				// A sender that chose the link just before the engine marked it may still put
				// its frame on it: count from when the counter has settled.
				atDown = a.e.Stats().Links[down].TxBytes
				for {
					select {
					case <-ctx.Done():
						downed <- fmt.Errorf("link %d kept sending after the engine found it unusable: %w", down, ctx.Err())
						return
					case <-time.After(100 * time.Millisecond):
					}
					now := a.e.Stats().Links[down].TxBytes
					if now == atDown {
						break
					}
					atDown = now
				}
				downed <- nil
			}()
		case 12 << 20:
			if err := <-downed; err != nil {
				t.Fatal(err)
			}
			if got := a.e.Stats().Links[down].TxBytes; got != atDown {
				t.Errorf("link %d sent %d bytes while down", down, got-atDown)
			}
			ns.Run(t, "ip", "link", "set", "dev", dev, "up")
			lab.WaitFor(t, 10*time.Second, "link usable again", func(context.Context) error {
				if l := a.e.Stats().Links[down]; !l.Usable || l.PeerMACs == 0 {
					return fmt.Errorf("link %d: %+v", down, l)
				}
				return nil
			})
			atUp = a.e.Stats().Links[down].TxBytes
		}
	})
	s := a.e.Stats()
	l := s.Links[down]
	rs := b.e.Stats()
	t.Logf("link %d: downs %d ups %d; sender retransmits %d skips %d; receiver duplicates %d too old %d max reorder depth %d",
		down, l.Downs, l.Ups, s.Retransmits, s.Skips, rs.Duplicates, rs.TooOld, rs.MaxReorderDepth)
	if l.Downs < 1 || l.Ups < 2 {
		t.Errorf("link %d went down %d times and up %d times: want ≥ 1 and ≥ 2 (the first sample counts)", down, l.Downs, l.Ups)
	}
	// Round robin gives the link a quarter of the last 8 MiB; demand at least an eighth.
	if sent := l.TxBytes - atUp; sent < (totalBytes-12<<20)/8 {
		t.Errorf("link %d sent %d bytes after it came back up, want at least %d", down, sent, (totalBytes-12<<20)/8)
	}
}

func TestBadFramesAreCountedAndDropped(t *testing.T) {
	tb := newTestbed(t)
	a, b := tb.start(t, arm{kind: policy.KindRoundRobin})
	// A second socket on node b's end of link 0 forges frames towards node a.
	var forger link.Link
	if err := tb.b.Do(func() error {
		var err error
		forger, err = link.Open(t.Context(), link.Config{Interface: tb.pairs[0].B.Name})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	data := func(h frame.Header, payload []byte) []byte {
		b, err := frame.Append(nil, h, payload)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := frame.Header{Service: 1, SrcNode: nodeB, DstNode: nodeA, SrcPort: 5, DstPort: 6}
	version2 := data(good, []byte("x"))
	version2[0] = 2
	longer := data(good, make([]byte, 10))
	longer[24], longer[25] = 0x03, 0xe8 // the length field says 1000 bytes
	fromStranger, toStranger := good, good
	fromStranger.SrcNode, toStranger.DstNode = 99, 5
	unknownType := data(frame.Header{Flags: frame.FlagControl, Service: discovery.ControlService, SrcNode: nodeB, DstNode: nodeA}, []byte{77})
	strangerAck, err := engine.AppendAck(nil, engine.Ack{From: 99, To: nodeA, Conn: engine.Conn{Service: 1}, Next: 1})
	if err != nil {
		t.Fatal(err)
	}
	forgedHello, err := discovery.AppendHello(nil, discovery.Hello{Node: 42, MAC: net.HardwareAddr{2, 0, 0, 0, 0, 42}})
	if err != nil {
		t.Fatal(err)
	}
	before := a.e.Stats()
	for _, f := range [][]byte{
		[]byte("garbage"), version2, longer, unknownType, // 4 bad
		data(fromStranger, []byte("x")), data(toStranger, []byte("x")), strangerAck, // 3 foreign
		forgedHello, // 1 refused by discovery: its MAC is not the sender's
	} {
		if err := forger.Send(t.Context(), a.links[0].MAC(), f); err != nil {
			t.Fatal(err)
		}
	}
	lab.WaitFor(t, 10*time.Second, "the forged frames counted", func(context.Context) error {
		s := a.e.Stats()
		if s.BadFrames-before.BadFrames != 4 || s.Foreign-before.Foreign != 3 || s.Discovery.Refused-before.Discovery.Refused != 1 {
			return fmt.Errorf("bad %d, foreign %d, refused hellos %d", s.BadFrames-before.BadFrames,
				s.Foreign-before.Foreign, s.Discovery.Refused-before.Discovery.Refused)
		}
		return nil
	})
	if s := a.e.Stats(); s.RecvFlows != 0 || s.DeliveredFrames != 0 || len(a.e.Peers()) != 1 {
		t.Fatalf("forged frames reached a connection or the table: %+v, peers %+v", s, a.e.Peers())
	}
	// The engine still carries traffic.
	conn := engine.Conn{Service: 3, SrcPort: 4, DstPort: 5}
	if err := b.e.Send(t.Context(), engine.Message{Conn: conn, Payload: chunk(0, 10000)}); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t.Context(), a.e, conn, 10000); got.err != nil || got.bytes != 10000 {
		t.Fatalf("after the forged frames: received %d bytes, %v", got.bytes, got.err)
	}
}
