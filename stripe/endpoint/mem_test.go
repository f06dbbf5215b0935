package endpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
)

// memTransport is one end of an in-memory pair: what one end sends, the other receives, in
// order, with per-connection sequence numbers, as the engine delivers.
type memTransport struct {
	in         chan engine.Delivery
	peer       *memTransport
	maxPayload int

	mu    sync.Mutex
	seq   map[engine.Conn]uint64
	loads []float64
}

func memPair(maxPayload int, links int) (*memTransport, *memTransport) {
	a := &memTransport{in: make(chan engine.Delivery, 1<<16), maxPayload: maxPayload, seq: map[engine.Conn]uint64{}, loads: make([]float64, links)}
	b := &memTransport{in: make(chan engine.Delivery, 1<<16), maxPayload: maxPayload, seq: map[engine.Conn]uint64{}, loads: make([]float64, links)}
	a.peer, b.peer = b, a
	return a, b
}

func (m *memTransport) Send(ctx context.Context, msg engine.Message) error {
	if len(msg.Payload) == 0 || len(msg.Payload) > m.maxPayload {
		return fmt.Errorf("mem: payload of %d bytes", len(msg.Payload))
	}
	m.mu.Lock()
	seq := m.seq[msg.Conn]
	m.seq[msg.Conn]++
	m.mu.Unlock()
	select {
	case m.peer.in <- engine.Delivery{Conn: msg.Conn, Seq: seq, Payload: append([]byte(nil), msg.Payload...)}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memTransport) Receive(ctx context.Context) (engine.Delivery, error) {
	select {
	case d := <-m.in:
		return d, nil
	case <-ctx.Done():
		return engine.Delivery{}, ctx.Err()
	}
}

func (m *memTransport) setLoads(l []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.loads, l)
}

func (m *memTransport) Stats() engine.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s engine.Stats
	for _, l := range m.loads {
		s.Links = append(s.Links, engine.LinkStats{TxLoad: l})
	}
	return s
}

func (m *memTransport) MaxPayload() int { return m.maxPayload }

// startEndpoint runs an endpoint towards peer over tr until the test ends.
func startEndpoint(t *testing.T, tr endpoint.Transport, peer uint32, vmax []float64, tune func(*endpoint.Config)) *endpoint.Endpoint {
	t.Helper()
	cfg := endpoint.Config{Peers: []endpoint.Peer{{Node: peer, Transport: tr, Vmax: vmax}}}
	if tune != nil {
		tune(&cfg)
	}
	ep, err := endpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- ep.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("endpoint Run: %v", err)
		}
	})
	// Register only works once Run runs.
	waitFor(t, "endpoint running", func() error {
		if !ep.Running() {
			return errors.New("not yet")
		}
		return nil
	})
	return ep
}

// waitFor polls cond until it holds, failing the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve serves ep on a fresh socket of kind ("unix", "tcp" or "udp") and returns a dialer.
func serve(t *testing.T, ep *endpoint.Endpoint, kind string) func(t *testing.T) *endpoint.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	var addr string
	switch kind {
	case "unix", "tcp":
		var ln net.Listener
		var err error
		if kind == "unix" {
			dir, derr := os.MkdirTemp("", "ep")
			if derr != nil {
				t.Fatal(derr)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			ln, err = endpoint.ListenUnix(t.Context(), filepath.Join(dir, "s"))
		} else {
			ln, err = endpoint.ListenTCP(t.Context(), "127.0.0.1:0", false)
		}
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		go func() { done <- ep.ServeStream(ctx, ln) }()
	case "udp":
		pc, err := endpoint.ListenUDP(t.Context(), "127.0.0.1:0", false)
		if err != nil {
			t.Fatal(err)
		}
		addr = pc.LocalAddr().String()
		go func() { done <- ep.ServeUDP(ctx, pc) }()
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %s: %v", kind, err)
		}
	})
	return func(t *testing.T) *endpoint.Client {
		t.Helper()
		c, err := net.Dial(kind, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return endpoint.NewClient(c, kind == "udp")
	}
}

// payload is message i of a test stream: its size varies and its bytes name it.
func payload(i, maxSize int) []byte {
	n := 1 + (i*7919)%maxSize
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

// exchange registers an app on each side, sends n messages from a to b and checks that b
// receives each once, in order, intact.
func exchange(t *testing.T, da, db func(*testing.T) *endpoint.Client, nodeA, nodeB uint32, n, maxSize int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ca, cb := da(t), db(t)
	ida, err := ca.Register(ctx, endpoint.Registration{Name: "sender", Service: 5, LocalPort: 1000, PeerNode: nodeB, PeerPort: 2000})
	if err != nil {
		t.Fatal(err)
	}
	idb, err := cb.Register(ctx, endpoint.Registration{Name: "receiver", Service: 5, LocalPort: 2000, PeerNode: nodeA, PeerPort: 1000})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if err := ca.Send(ctx, ida, uint32(i), payload(i, maxSize)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range n {
		m, err := cb.Next(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.Type != endpoint.TypeDeliver || m.App != idb {
			t.Fatalf("message %d: got %+v", i, m)
		}
		if want := payload(i, maxSize); !bytes.Equal(m.Payload, want) {
			t.Fatalf("message %d: %d bytes, want %d (out of order, duplicate or damaged)", i, len(m.Payload), len(want))
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := ca.Deregister(ctx, ida); err != nil {
		t.Fatal(err)
	}
	if err := cb.Deregister(ctx, idb); err != nil {
		t.Fatal(err)
	}
}

func TestMemPairExchange(t *testing.T) {
	ta, tb := memPair(1400, 2)
	vmax := []float64{1e9, 1e9}
	a := startEndpoint(t, ta, 2, vmax, nil)
	b := startEndpoint(t, tb, 1, vmax, nil)
	for _, kind := range []string{"unix", "tcp", "udp"} {
		t.Run(kind, func(t *testing.T) {
			maxSize := endpoint.DefaultMaxMessage
			n := 300
			if kind == "udp" {
				maxSize, n = 1000, 100 // loopback UDP drops what overflows a socket buffer
			}
			exchange(t, serve(t, a, kind), serve(t, b, kind), 1, 2, n, maxSize)
		})
	}
	if s := b.Stats(); s.Gaps != 0 || s.Broken != 0 || s.Unroutable != 0 || len(s.Apps) != 0 {
		t.Fatalf("receiver stats %+v", s)
	}
}
