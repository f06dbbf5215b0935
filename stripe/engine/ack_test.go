package engine_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/policy"
)

func TestAckRoundTrip(t *testing.T) {
	a := engine.Ack{From: 2, To: 1, Conn: engine.Conn{Service: 7, SrcPort: 1000, DstPort: 2000}, Next: 12345}
	b, err := engine.AppendAck(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	h, p, err := frame.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := engine.DecodeAck(h, p); err != nil || got != a {
		t.Fatalf("DecodeAck(AppendAck(%+v)) = %+v, %v", a, got, err)
	}
	// A reset request travels with FlagControl|FlagReset and decodes back to itself.
	r := engine.Ack{From: 2, To: 1, Conn: a.Conn, Next: 1 << 40, Reset: true}
	rb, err := engine.AppendAck(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	if h, p, err := frame.Decode(rb); err != nil || h.Flags != frame.FlagControl|frame.FlagReset {
		t.Fatalf("reset request header %+v, %v: want FlagControl|FlagReset", h, err)
	} else if got, err := engine.DecodeAck(h, p); err != nil || got != r {
		t.Fatalf("DecodeAck(AppendAck(%+v)) = %+v, %v", r, got, err)
	}
	for _, bad := range []engine.Ack{{From: 0, To: 1}, {From: 1, To: 0}, {From: 1, To: 2, Next: 1 << 63}} {
		if _, err := engine.AppendAck(nil, bad); err == nil {
			t.Errorf("AppendAck(%+v) succeeded", bad)
		}
	}
	// A hello is not an ack, and an ack with ports set in the header is refused.
	hello, err := discovery.AppendHello(nil, discovery.Hello{Node: 1, MAC: []byte{2, 0, 0, 0, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	h, p, _ = frame.Decode(hello)
	if _, err := engine.DecodeAck(h, p); !errors.Is(err, discovery.ErrControl) {
		t.Errorf("DecodeAck of a hello: %v, want ErrControl", err)
	}
	h, p, _ = frame.Decode(b)
	h.SrcPort = 1
	if _, err := engine.DecodeAck(h, p); !errors.Is(err, discovery.ErrControl) {
		t.Errorf("DecodeAck with a header port: %v, want ErrControl", err)
	}
}

// FuzzDecodeAck: whatever DecodeAck accepts re-encodes to the same frame; nothing panics.
func FuzzDecodeAck(f *testing.F) {
	b, err := engine.AppendAck(nil, engine.Ack{From: 2, To: 1, Conn: engine.Conn{Service: 1, SrcPort: 2, DstPort: 3}, Next: 9})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if b, err = engine.AppendAck(nil, engine.Ack{From: 2, To: 1, Conn: engine.Conn{Service: 1}, Next: 1 << 41, Reset: true}); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := frame.Decode(b)
		if err != nil {
			return
		}
		a, err := engine.DecodeAck(h, p)
		if err != nil {
			return
		}
		again, err := engine.AppendAck(nil, a)
		if err != nil {
			t.Fatalf("re-encode of accepted %+v: %v", a, err)
		}
		if want := b[:frame.HeaderLen+int(h.Length)]; !bytes.Equal(again, want) {
			t.Fatalf("re-encode\n got %x\nwant %x", again, want)
		}
	})
}

// idleLink is a link that never carries anything, for configuration tests.
type idleLink struct{ mtu int }

func (l idleLink) Name() string          { return "idle0" }
func (l idleLink) MAC() net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, 1} }
func (l idleLink) MTU() int              { return l.mtu }
func (l idleLink) Send(context.Context, net.HardwareAddr, []byte) error {
	return errors.New("idle link")
}
func (l idleLink) Recv(ctx context.Context, _ []byte) (int, net.HardwareAddr, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}
func (l idleLink) Stats() link.Stats          { return link.Stats{} }
func (l idleLink) State() (link.State, error) { return link.State{}, nil }
func (l idleLink) Close() error               { return nil }

func TestNewRejectsBadConfig(t *testing.T) {
	good := func() engine.Config {
		return engine.Config{Node: 1, Peer: 2, Links: []link.Link{idleLink{1500}}, Vmax: []float64{1e6},
			Policy: policy.Config{Kind: policy.KindRoundRobin}}
	}
	if _, err := engine.New(good()); err != nil {
		t.Fatalf("New(good config): %v", err)
	}
	for name, mut := range map[string]func(c *engine.Config){
		"no links":        func(c *engine.Config) { c.Links = nil },
		"same node":       func(c *engine.Config) { c.Peer = 1 },
		"node 0":          func(c *engine.Config) { c.Node = 0 },
		"nil link":        func(c *engine.Config) { c.Links = make([]link.Link, 1) },
		"tiny MTU":        func(c *engine.Config) { c.Links = []link.Link{idleLink{100}} },
		"two Vmax":        func(c *engine.Config) { c.Vmax = []float64{1, 2} },
		"zero Vmax":       func(c *engine.Config) { c.Vmax = []float64{0} },
		"huge Vmax":       func(c *engine.Config) { c.Vmax = []float64{engine.MaxVmax * 2} },
		"policy NICs":     func(c *engine.Config) { c.Policy.NICs = 2 },
		"no policy":       func(c *engine.Config) { c.Policy.Kind = "" },
		"period":          func(c *engine.Config) { c.Period = time.Hour },
		"TTL below hello": func(c *engine.Config) { c.PeerTTL = 50 * time.Millisecond },
		"loss below rto":  func(c *engine.Config) { c.LossTimeout = 100 * time.Millisecond },
		"ack above rto":   func(c *engine.Config) { c.AckInterval = time.Second },
		"window":          func(c *engine.Config) { c.Window = 1 << 20 },
		"flows":           func(c *engine.Config) { c.MaxFlows = -1 },
		"in flight":       func(c *engine.Config) { c.MaxInFlight = engine.MaxInFlight + 1 },
	} {
		c := good()
		mut(&c)
		if _, err := engine.New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestSendAndReceiveNeedRun(t *testing.T) {
	e, err := engine.New(engine.Config{Node: 1, Peer: 2, Links: []link.Link{idleLink{1500}}, Vmax: []float64{1e6},
		Policy: policy.Config{Kind: policy.KindRoundRobin}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.MaxPayload(); got != 1500-frame.HeaderLen {
		t.Fatalf("MaxPayload = %d", got)
	}
	conn := engine.Conn{Service: 1}
	if err := e.Send(t.Context(), engine.Message{Conn: conn, Payload: []byte("x")}); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Send before Run: %v, want ErrNotRunning", err)
	}
	for _, m := range []engine.Message{
		{Conn: conn},
		{Conn: engine.Conn{Service: discovery.ControlService}, Payload: []byte("x")},
		{Conn: conn, Payload: make([]byte, engine.MaxSend+1)},
	} {
		if err := e.Send(t.Context(), m); err == nil || errors.Is(err, engine.ErrNotRunning) {
			t.Errorf("Send(%d bytes, service %#x): %v, want a validation error", len(m.Payload), m.Conn.Service, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	// With no usable link, Send still takes frames up to the window: they wait for a link.
	for try := 0; ; try++ {
		if try == 10000 {
			t.Fatal("Run did not start within 10000 tries")
		}
		err := e.Send(t.Context(), engine.Message{Conn: conn, Payload: make([]byte, 3000)})
		if err == nil {
			break
		}
		if !errors.Is(err, engine.ErrNotRunning) {
			t.Fatalf("Send with no usable link: %v", err)
		}
		time.Sleep(time.Millisecond) // Run is starting
	}
	if s := e.Stats(); s.SentFrames != 3 || s.Unacked != 3 || s.Links[0].Usable {
		t.Fatalf("stats %+v: want 3 frames sent, unacknowledged, the link unusable", s)
	}
	if err := e.Run(t.Context()); err == nil {
		t.Error("a second Run succeeded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := e.Receive(t.Context()); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Receive after Run: %v, want ErrNotRunning", err)
	}
}

func TestSendWaitsWhenInFlightIsFull(t *testing.T) {
	e, err := engine.New(engine.Config{Node: 1, Peer: 2, Links: []link.Link{idleLink{1500}}, Vmax: []float64{1e6},
		Policy: policy.Config{Kind: policy.KindRoundRobin}, MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Two connections, one frame each, fill the engine-wide bound; a third frame waits.
	for try, port := 0, uint16(1); port <= 2; try++ {
		if try == 10000 {
			t.Fatal("Run did not start within 10000 tries")
		}
		err := e.Send(t.Context(), engine.Message{Conn: engine.Conn{Service: 1, SrcPort: port}, Payload: []byte("x")})
		if errors.Is(err, engine.ErrNotRunning) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		port++
	}
	sctx, scancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer scancel()
	err = e.Send(sctx, engine.Message{Conn: engine.Conn{Service: 1, SrcPort: 3}, Payload: []byte("x")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send beyond MaxInFlight: %v, want it to wait until its context ends", err)
	}
	if s := e.Stats(); s.Unacked != 2 || s.SentFrames != 2 {
		t.Fatalf("stats %+v: want 2 frames sent and unacknowledged", s)
	}
}
