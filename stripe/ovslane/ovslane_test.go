package ovslane

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
)

// bed is a bridge with two NICs and two lanes of plugin "stripe", plus a port of another plugin.
func bed() api.BridgeFacts {
	return api.BridgeFacts{Name: "br0", DatapathType: "netdev", Ports: []api.BridgePort{
		{Port: "dpdk0", Interface: "dpdk0", Type: "dpdk", Ofport: 1, Owner: api.OwnerOvsplane},
		{Port: "dpdk1", Interface: "dpdk1", Type: "dpdk", Ofport: 2, Owner: api.OwnerOvsplane},
		{Port: "stl0", Interface: "stl0", Type: "internal", Ofport: 7, Owner: api.OwnerPlugin, Plugin: "stripe"},
		{Port: "stl0", Interface: "stl1", Type: "internal", Ofport: 8, Owner: api.OwnerPlugin, Plugin: "stripe"},
		{Port: "vf3", Interface: "vf3", Type: "dpdk", Ofport: 9, Owner: api.OwnerPlugin, Plugin: "vdpa"},
		{Port: "new", Interface: "new", Type: "dpdk", Ofport: 0, Owner: api.OwnerOvsplane},
	}}
}

func spec() Spec {
	return Spec{Bridge: "br0", Bindings: []Binding{{NIC: "dpdk0", Lane: "stl0"}, {NIC: "dpdk1", Lane: "stl1"}}}
}

func TestFlows(t *testing.T) {
	got, err := Flows(spec(), bed(), "stripe")
	if err != nil {
		t.Fatal(err)
	}
	want := []api.Flow{
		{Priority: 40000, Match: "in_port=7,dl_type=0x88b5", Actions: "output:1"},
		{Priority: 39999, Match: "in_port=7", Actions: "drop"},
		{Priority: 40000, Match: "in_port=1,dl_type=0x88b5", Actions: "output:7"},
		{Priority: 40000, Match: "in_port=8,dl_type=0x88b5", Actions: "output:2"},
		{Priority: 39999, Match: "in_port=8", Actions: "drop"},
		{Priority: 40000, Match: "in_port=2,dl_type=0x88b5", Actions: "output:8"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d flows %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("flows[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	// The daemon's own check of a plugin's answer accepts them.
	cookies := api.CookieRange{Value: 0xa5000100_00000000, Mask: 0xffffff00_00000000}
	if err := api.ValidateFlowSet(cookies, api.GroupRange{First: 1 << 16, Count: 1 << 16}, api.FlowSet{Flows: got}); err != nil {
		t.Errorf("ValidateFlowSet: %v", err)
	}
	s := spec()
	s.EtherType, s.Priority = 0x88b6, 100
	got, err = Flows(s, bed(), "stripe")
	if err != nil || got[0].Match != "in_port=7,dl_type=0x88b6" || got[1].Priority != 99 {
		t.Errorf("ethertype 0x88b6, priority 100: %+v, %v", got, err)
	}
}

func TestFlowsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		mod     func(*Spec)
		bridge  string
		want    string
		class   error
		noClass bool
	}{
		{name: "nic missing", mod: func(s *Spec) { s.Bindings[1].NIC = "dpdk9" }, want: "NIC dpdk9 is not on bridge br0 (its interfaces: dpdk0, dpdk1, new, stl0, stl1, vf3)", class: ErrRefused},
		{name: "lane missing", mod: func(s *Spec) { s.Bindings[0].Lane = "stl5" }, want: "lane stl5 is not on bridge br0", class: ErrRefused},
		{name: "nic of another plugin", mod: func(s *Spec) { s.Bindings[0].NIC = "vf3" }, want: `NIC vf3 on bridge br0 is already owned by plugin "vdpa"`, class: ErrRefused},
		{name: "lane of another plugin", mod: func(s *Spec) { s.Bindings[0].Lane = "vf3" }, want: `lane vf3 on bridge br0 is already owned by plugin "vdpa"`, class: ErrRefused},
		{name: "nic is a lane", mod: func(s *Spec) { s.Bindings[0] = Binding{NIC: "stl1", Lane: "stl0"}; s.Bindings = s.Bindings[:1] }, want: "NIC stl1 on bridge br0 is a lane", class: ErrRefused},
		{name: "no ofport", mod: func(s *Spec) { s.Bindings[1].NIC = "new" }, want: "NIC new on bridge br0 has no ofport yet", class: ErrNotReady},
		{name: "other bridge", bridge: "br1", want: "the stripe's links are on bridge br0", noClass: true},
		{name: "twice", mod: func(s *Spec) { s.Bindings[1].NIC = "dpdk0" }, want: "binding 1's NIC dpdk0 is also binding 0's NIC", noClass: true},
		{name: "nic as lane", mod: func(s *Spec) { s.Bindings[1].Lane = "dpdk0" }, want: "binding 1's lane dpdk0 is also binding 0's NIC", noClass: true},
		{name: "none", mod: func(s *Spec) { s.Bindings = nil }, want: "0 bindings", noClass: true},
		{name: "bad name", mod: func(s *Spec) { s.Bindings[0].Lane = "a/b" }, want: "binding 0 lane", noClass: true},
		{name: "length", mod: func(s *Spec) { s.EtherType = 0x05dc }, want: "802.3 length", noClass: true},
		{name: "priority", mod: func(s *Spec) { s.Priority = 1 }, want: "priority 1", noClass: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spec()
			if c.mod != nil {
				c.mod(&s)
			}
			br := bed()
			if c.bridge != "" {
				br.Name = c.bridge
			}
			got, err := Flows(s, br, "stripe")
			if err == nil || !strings.Contains(err.Error(), c.want) || got != nil {
				t.Fatalf("Flows = %+v, %v; want no flows and an error containing %q", got, err, c.want)
			}
			if c.noClass && (errors.Is(err, ErrRefused) || errors.Is(err, ErrNotReady)) {
				t.Errorf("%v: a spec error wraps a bridge class", err)
			}
			if c.class != nil && !errors.Is(err, c.class) {
				t.Errorf("%v: want it to wrap %v", err, c.class)
			}
		})
	}
}

// fakeLink records the frames sent.
type fakeLink struct {
	mu   sync.Mutex
	sent int
}

func (*fakeLink) Name() string          { return "fake0" }
func (*fakeLink) MAC() net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }
func (*fakeLink) MTU() int              { return 1500 }
func (f *fakeLink) Send(context.Context, net.HardwareAddr, []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent++
	return nil
}
func (*fakeLink) Recv(ctx context.Context, _ []byte) (int, net.HardwareAddr, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (*fakeLink) Stats() link.Stats          { return link.Stats{} }
func (*fakeLink) State() (link.State, error) { return link.State{Up: true, Running: true}, nil }
func (*fakeLink) Close() error               { return nil }
func (f *fakeLink) count() int               { f.mu.Lock(); defer f.mu.Unlock(); return f.sent }

// TestPace: at 1 byte/s the bucket holds one burst (one 1500-byte frame with its Ethernet
// header); the next data frame waits until ctx ends and is not sent, while control frames
// never wait.
func TestPace(t *testing.T) {
	f := &fakeLink{}
	p, err := Pace(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1486)
	data[0] = 1
	ctx := t.Context()
	if err := p.Send(ctx, nil, data); err != nil {
		t.Fatalf("first frame (within the burst): %v", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Send(ended, nil, data); !errors.Is(err, context.Canceled) {
		t.Fatalf("second frame: %v, want it to wait for tokens until ctx ends", err)
	}
	if p.Waits() != 1 || f.count() != 1 {
		t.Errorf("waits %d, sent %d: want 1 and 1", p.Waits(), f.count())
	}
	ctl, err := frame.Append(nil, frame.Header{Flags: frame.FlagControl, Service: 0xffff, SrcNode: 1}, []byte{3, 0, 0, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := p.Send(ended, nil, ctl); err != nil {
			t.Fatalf("control frame: %v", err)
		}
	}
	if f.count() != 4 {
		t.Errorf("sent %d frames, want the 3 control frames to pass", f.count())
	}
	// A frame longer than the MTU goes to the link, which refuses it; no waiting.
	if err := p.Send(ended, nil, make([]byte, 1600)); err != nil || f.count() != 5 {
		t.Errorf("oversized frame: %v (the fake accepts it; the real link refuses it)", err)
	}
	if p.Rate() != 1 {
		t.Errorf("rate %v", p.Rate())
	}
	for _, r := range []float64{0, -1, 2e11} {
		if _, err := Pace(f, r); err == nil {
			t.Errorf("Pace at %v bytes/s accepted", r)
		}
	}
	if _, err := Pace(nil, 1); err == nil {
		t.Error("Pace(nil) accepted")
	}
}

// batchLink is a fakeLink that also takes frames in batches, recording each batch's size.
type batchLink struct {
	fakeLink
	batches []int
}

func (b *batchLink) SendBatch(_ context.Context, frames []link.Outgoing) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent += len(frames)
	b.batches = append(b.batches, len(frames))
	return len(frames), nil
}

// TestPaceBatch: a paced batch goes to a batching link in as few calls as the tokens allow:
// the whole batch at once when the bucket holds it; otherwise what fits, then (after a wait
// for the next frames, not one per frame) the rest; a wait ends with ctx; control frames never
// wait; on a link without batches every frame goes through Send.
func TestPaceBatch(t *testing.T) {
	data := make([]byte, 986) // 1,000 bytes with the Ethernet header
	data[0] = 1
	frames := func(n int) []link.Outgoing {
		out := make([]link.Outgoing, n)
		for i := range out {
			out[i] = link.Outgoing{B: data}
		}
		return out
	}
	// 1 MB/s: the burst is 2 ms = 2,000 bytes, two frames.
	bl := &batchLink{}
	p, err := Pace(bl, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.SendBatch(t.Context(), frames(2))
	if err != nil || n != 2 || len(bl.batches) != 1 || bl.batches[0] != 2 {
		t.Fatalf("SendBatch of a burst = %d, %v; batches %v: want one batch of 2", n, err, bl.batches)
	}
	n, err = p.SendBatch(t.Context(), frames(6))
	if err != nil || n != 6 || bl.count() != 8 {
		t.Fatalf("SendBatch of 6 = %d, %v (sent %d): want all 6", n, err, bl.count())
	}
	if len(bl.batches) > 1+6 || p.Waits() == 0 || p.Waits() > 6 {
		t.Errorf("batches %v, waits %d: want the 6 frames in at most 6 calls after waiting for tokens", bl.batches, p.Waits())
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	ctl, err := frame.Append(nil, frame.Header{Flags: frame.FlagControl, Service: 0xffff, SrcNode: 1}, []byte{3, 0, 0, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	// The bucket is dry: control frames pass, the data frame behind them waits until ctx ends.
	n, err = p.SendBatch(ended, []link.Outgoing{{B: ctl}, {B: ctl}, {B: data}})
	if n != 2 || !errors.Is(err, context.Canceled) {
		t.Errorf("SendBatch on a dry bucket = %d, %v: want the 2 control frames and context.Canceled", n, err)
	}
	// Without batches, frames go one by one through Send.
	f := &fakeLink{}
	q, err := Pace(f, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := q.SendBatch(t.Context(), frames(3)); n != 3 || err != nil || f.count() != 3 {
		t.Errorf("SendBatch on a link without batches = %d, %v, sent %d: want 3", n, err, f.count())
	}
}
