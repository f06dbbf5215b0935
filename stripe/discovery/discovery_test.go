package discovery_test

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/frame"
)

func mac(last byte) net.HardwareAddr { return net.HardwareAddr{0x02, 0, 0, 0, 0, last} }

func decode(t testing.TB, b []byte) (discovery.Hello, error) {
	t.Helper()
	h, p, err := frame.Decode(b)
	if err != nil {
		return discovery.Hello{}, err
	}
	return discovery.DecodeHello(h, p)
}

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []discovery.Hello{
		{Node: 1, Link: 0, MAC: mac(1)},
		{Reply: true, Node: 7, To: 3, Link: 255, MAC: mac(9)},
	} {
		b, err := discovery.AppendHello(nil, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != frame.HeaderLen+discovery.HelloLen {
			t.Fatalf("hello frame of %d bytes", len(b))
		}
		got, err := decode(t, b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Reply != h.Reply || got.Node != h.Node || got.To != h.To || got.Link != h.Link || !bytes.Equal(got.MAC, h.MAC) {
			t.Fatalf("decode(encode(%+v)) = %+v", h, got)
		}
	}
}

func TestAppendHelloRejects(t *testing.T) {
	for _, h := range []discovery.Hello{
		{Node: 0, MAC: mac(1)},
		{Node: 1, Link: -1, MAC: mac(1)},
		{Node: 1, Link: discovery.MaxLinks, MAC: mac(1)},
		{Node: 1, MAC: net.HardwareAddr{1, 2, 3}},
		{Node: 1, MAC: discovery.Broadcast()},
		{Node: 1, MAC: make(net.HardwareAddr, 6)},
		{Node: 1, Reply: true, MAC: mac(1)},
	} {
		if _, err := discovery.AppendHello(nil, h); err == nil {
			t.Errorf("AppendHello(%+v) succeeded", h)
		}
	}
}

func TestDecodeHelloRejects(t *testing.T) {
	good, err := discovery.AppendHello(nil, discovery.Hello{Node: 5, Link: 2, MAC: mac(5)})
	if err != nil {
		t.Fatal(err)
	}
	h, p, err := frame.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(h *frame.Header, p []byte) []byte) (frame.Header, []byte) {
		hh, pp := h, append([]byte(nil), p...)
		return hh, f(&hh, pp)
	}
	for name, f := range map[string]func(h *frame.Header, p []byte) []byte{
		"not control":   func(h *frame.Header, p []byte) []byte { h.Flags = 0; return p },
		"service":       func(h *frame.Header, p []byte) []byte { h.Service = 1; return p },
		"empty":         func(h *frame.Header, p []byte) []byte { return nil },
		"ack type":      func(h *frame.Header, p []byte) []byte { p[0] = byte(discovery.MsgAck); return p },
		"short":         func(h *frame.Header, p []byte) []byte { return p[:9] },
		"long":          func(h *frame.Header, p []byte) []byte { return append(p, 0) },
		"reserved":      func(h *frame.Header, p []byte) []byte { p[1] = 1; return p },
		"node 0":        func(h *frame.Header, p []byte) []byte { h.SrcNode = 0; return p },
		"request to 3":  func(h *frame.Header, p []byte) []byte { h.DstNode = 3; return p },
		"reply to 0":    func(h *frame.Header, p []byte) []byte { p[0] = byte(discovery.MsgHelloReply); return p },
		"link 256":      func(h *frame.Header, p []byte) []byte { p[2] = 1; return p },
		"group MAC":     func(h *frame.Header, p []byte) []byte { p[4] = 1; return p },
		"zero MAC":      func(h *frame.Header, p []byte) []byte { copy(p[4:], make([]byte, 6)); return p },
		"with sequence": func(h *frame.Header, p []byte) []byte { h.Seq = 1; return p },
	} {
		hh, pp := mutate(f)
		if _, err := discovery.DecodeHello(hh, pp); !errors.Is(err, discovery.ErrControl) {
			t.Errorf("%s: DecodeHello = %v, want ErrControl", name, err)
		}
	}
}

// FuzzDecodeHello: whatever the decoders accept re-encodes to the same frame; nothing panics.
func FuzzDecodeHello(f *testing.F) {
	for _, h := range []discovery.Hello{{Node: 1, MAC: mac(1)}, {Reply: true, Node: 2, To: 1, Link: 3, MAC: mac(2)}} {
		b, err := discovery.AppendHello(nil, h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1, 1, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := frame.Decode(b)
		if err != nil {
			return
		}
		if _, err := discovery.Type(p); err != nil && len(p) > 0 {
			t.Fatalf("Type failed on %d bytes: %v", len(p), err)
		}
		hello, err := discovery.DecodeHello(h, p)
		if err != nil {
			return
		}
		again, err := discovery.AppendHello(nil, hello)
		if err != nil {
			t.Fatalf("re-encode of accepted %+v: %v", hello, err)
		}
		if want := b[:frame.HeaderLen+int(h.Length)]; !bytes.Equal(again, want) {
			t.Fatalf("re-encode\n got %x\nwant %x", again, want)
		}
	})
}

func newTable(t *testing.T, cfg discovery.Config) *discovery.Table {
	t.Helper()
	tb, err := discovery.NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestNewTableRejects(t *testing.T) {
	for _, cfg := range []discovery.Config{
		{LocalLinks: 1},
		{Self: 1},
		{Self: 1, LocalLinks: discovery.MaxLinks + 1},
		{Self: 1, LocalLinks: 1, TTL: -time.Second},
		{Self: 1, LocalLinks: 1, MaxNodes: discovery.MaxMaxNodes + 1},
		{Self: 1, LocalLinks: 1, MaxNICs: -1},
	} {
		if _, err := discovery.NewTable(cfg); err == nil {
			t.Errorf("NewTable(%+v) succeeded", cfg)
		}
	}
}

func TestTableLearnsExpiresAndSnapshots(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tb := newTable(t, discovery.Config{Self: 1, LocalLinks: 4, TTL: time.Second})
	for link := range 4 {
		h := discovery.Hello{Node: 2, Link: link, MAC: mac(byte(0x20 + link))}
		if err := tb.Learn(t0, link, h.MAC, h); err != nil {
			t.Fatal(err)
		}
	}
	h9 := discovery.Hello{Node: 9, Link: 0, MAC: mac(0x90)}
	if err := tb.Learn(t0.Add(500*time.Millisecond), 3, h9.MAC, h9); err != nil {
		t.Fatal(err)
	}
	// Refreshing link 1 of node 2 keeps it past the others' expiry.
	h := discovery.Hello{Reply: true, To: 1, Node: 2, Link: 1, MAC: mac(0x21)}
	if err := tb.Learn(t0.Add(900*time.Millisecond), 1, h.MAC, h); err != nil {
		t.Fatal(err)
	}
	snap := tb.Snapshot(t0.Add(100 * time.Millisecond))
	if len(snap) != 2 || snap[0].ID != 2 || len(snap[0].NICs) != 4 || snap[1].ID != 9 {
		t.Fatalf("snapshot %+v: want node 2 with 4 NICs and node 9", snap)
	}
	for i, n := range snap[0].NICs {
		if n.Via != i || n.Link != i || !bytes.Equal(n.MAC, mac(byte(0x20+i))) {
			t.Fatalf("node 2 NIC %d: %+v", i, n)
		}
	}
	if got := tb.MACs(t0, 2, 2); len(got) != 1 || !bytes.Equal(got[0], mac(0x22)) {
		t.Fatalf("MACs(node 2, link 2) = %v", got)
	}
	later := t0.Add(1200 * time.Millisecond)
	if got := tb.MACs(later, 2, 2); len(got) != 0 {
		t.Fatalf("MACs after the TTL = %v, want none", got)
	}
	if got := tb.MACs(later, 2, 1); len(got) != 1 {
		t.Fatalf("refreshed NIC gone after %v: %v", later, got)
	}
	tb.Expire(later)
	st := tb.Stats()
	if st.Learned != 5 || st.Refreshed != 1 || st.Expired != 3 || st.Nodes != 2 || st.NICs != 2 {
		t.Fatalf("stats %+v", st)
	}
	tb.Expire(t0.Add(time.Hour))
	if snap := tb.Snapshot(t0.Add(time.Hour)); len(snap) != 0 {
		t.Fatalf("snapshot after everything expired: %+v", snap)
	}
}

func TestTableRefusesAndStaysBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tb := newTable(t, discovery.Config{Self: 1, LocalLinks: 2, MaxNodes: 3, MaxNICs: 2, TTL: time.Second})
	learn := func(now time.Time, node uint32, via int, m net.HardwareAddr, src net.HardwareAddr) error {
		return tb.Learn(now, via, src, discovery.Hello{Node: node, MAC: m})
	}
	if err := learn(t0, 1, 0, mac(1), mac(1)); err == nil {
		t.Error("hello from this node's own id accepted")
	}
	if err := learn(t0, 2, 2, mac(2), mac(2)); err == nil {
		t.Error("hello on local link 2 of 2 accepted")
	}
	if err := learn(t0, 2, 0, mac(2), mac(3)); err == nil {
		t.Error("hello whose MAC differs from its source accepted")
	}
	for node := uint32(2); node < 5; node++ {
		if err := learn(t0, node, 0, mac(byte(node)), mac(byte(node))); err != nil {
			t.Fatal(err)
		}
	}
	if err := learn(t0, 5, 0, mac(5), mac(5)); err == nil {
		t.Error("a fourth node accepted with MaxNodes 3")
	}
	if err := learn(t0, 2, 1, mac(0x12), mac(0x12)); err != nil {
		t.Fatal(err)
	}
	if err := learn(t0, 2, 1, mac(0x13), mac(0x13)); err == nil {
		t.Error("a third NIC accepted with MaxNICs 2")
	}
	// After the TTL, room is made by expiry.
	if err := learn(t0.Add(2*time.Second), 5, 0, mac(5), mac(5)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if st := tb.Stats(); st.Refused != 5 || st.Nodes != 1 {
		t.Fatalf("stats %+v: want 5 refused, 1 node", st)
	}
}
