package jsonrpc

import (
	"context"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait of the unit tests.
const testTimeout = 10 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// peer is the server's end of a net.Pipe.
type peer struct {
	t   testing.TB
	nc  net.Conn
	dec *json.Decoder
}

// newPair starts a Conn on one end of a net.Pipe and returns the other end.
func newPair(t testing.TB, opts Options) (*Conn, *peer) {
	t.Helper()
	a, b := net.Pipe()
	c := New(a, opts)
	t.Cleanup(func() {
		c.Close()
		b.Close()
	})
	return c, &peer{t: t, nc: b, dec: json.NewDecoder(b)}
}

// send writes s; it fails the test if the Conn does not read it.
func (p *peer) send(s string) {
	p.t.Helper()
	p.nc.SetWriteDeadline(time.Now().Add(testTimeout))
	if _, err := p.nc.Write([]byte(s)); err != nil {
		p.t.Fatalf("peer: write %.80q: %v", s, err)
	}
}

// sendAsync writes s from another goroutine, ignoring errors (for input that ends the Conn).
func (p *peer) sendAsync(s string) {
	go func() {
		p.nc.SetWriteDeadline(time.Now().Add(testTimeout))
		p.nc.Write([]byte(s))
	}()
}

// recv reads one message the Conn sent.
func (p *peer) recv() map[string]json.RawMessage {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(testTimeout))
	var m map[string]json.RawMessage
	if err := p.dec.Decode(&m); err != nil {
		p.t.Fatalf("peer: read: %v", err)
	}
	return m
}

// asyncCall runs c.Call in a goroutine; the result arrives on the channel.
func asyncCall(ctx context.Context, c *Conn, method string, params []any, result any) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Call(ctx, method, params, result) }()
	return ch
}

func wait[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// waitDone waits for c to end and returns its Err.
func waitDone(t testing.TB, c *Conn) error {
	t.Helper()
	select {
	case <-c.Done():
		return c.Err()
	case <-time.After(testTimeout):
		t.Fatal("connection did not end")
		return nil
	}
}

// recSink records what it reads (ReadValue: fine for small test input) and what becomes of it.
type recSink struct {
	mu        sync.Mutex
	events    []string
	commitErr error
	changed   chan struct{} // receives after every Commit or Discard
}

func newRecSink() *recSink { return &recSink{changed: make(chan struct{}, 100)} }

func (s *recSink) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (Pending, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	kind := "update"
	if initial {
		kind = "initial"
	}
	s.log("read " + kind + " " + string(v))
	return &recPending{s: s, what: kind + " " + string(v)}, nil
}

func (s *recSink) log(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *recSink) Events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

// next waits for the next Commit or Discard and returns the last event.
func (s *recSink) next(t testing.TB) string {
	t.Helper()
	wait(t, s.changed)
	ev := s.Events()
	return ev[len(ev)-1]
}

type recPending struct {
	s    *recSink
	what string
	used bool
}

func (p *recPending) Commit() error {
	if p.used {
		panic("Pending used twice")
	}
	p.used = true
	p.s.log("commit " + p.what)
	p.s.changed <- struct{}{}
	return p.s.commitErr
}

func (p *recPending) Discard() {
	if p.used {
		panic("Pending used twice")
	}
	p.used = true
	p.s.log("discard " + p.what)
	p.s.changed <- struct{}{}
}

// startMonitor runs Monitor for monitor id "m" and answers it with initial, returning once
// it is committed.
func startMonitor(t testing.TB, c *Conn, p *peer, initial string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Monitor(testCtx(t), "Open_vSwitch", "m", map[string]any{"T": []any{map[string]any{}}})
	}()
	req := p.recv()
	if got := string(req["method"]); got != `"monitor_cond"` {
		t.Fatalf("method %s, want monitor_cond", got)
	}
	if got := string(req["params"]); got != `["Open_vSwitch","m",{"T":[{}]}]` {
		t.Fatalf("params %s", got)
	}
	p.send(fmt.Sprintf(`{"id":%s,"result":%s,"error":null}`, req["id"], initial))
	if err := wait(t, errc); err != nil {
		t.Fatalf("Monitor: %v", err)
	}
}

// tokenSink reads table-updates token by token, as the replica does, discarding them. It
// checks that no atom is longer than maxAtom and no depth beyond maxDepth is seen, and calls
// sample (if set) every sampleEvery tokens.
type tokenSink struct {
	maxAtom     int
	maxDepth    int
	violation   error
	tokens      int
	sampleEvery int
	sample      func()
	commitErr   error
	commits     int
}

func (s *tokenSink) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (Pending, error) {
	if dec.PeekKind() != '{' {
		return nil, errors.New("table-updates is not an object")
	}
	depth := dec.StackDepth()
	for {
		switch dec.PeekKind() {
		case '{', '[', '}', ']':
			if _, err := dec.ReadToken(); err != nil {
				return nil, err
			}
		default:
			v, err := dec.ReadValue() // an atom
			if err != nil {
				return nil, err
			}
			if s.maxAtom > 0 && len(v) > s.maxAtom && s.violation == nil {
				s.violation = fmt.Errorf("atom of %d bytes seen, bound %d", len(v), s.maxAtom)
			}
		}
		if s.maxDepth > 0 && dec.StackDepth() > s.maxDepth && s.violation == nil {
			s.violation = fmt.Errorf("depth %d seen, bound %d", dec.StackDepth(), s.maxDepth)
		}
		s.tokens++
		if s.sample != nil && s.tokens%s.sampleEvery == 0 {
			s.sample()
		}
		if dec.StackDepth() == depth {
			return tokenPending{s}, nil
		}
	}
}

type tokenPending struct{ s *tokenSink }

func (p tokenPending) Commit() error { p.s.commits++; return p.s.commitErr }
func (p tokenPending) Discard()      {}
