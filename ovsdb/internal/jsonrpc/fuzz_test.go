package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeConn is a net.Conn reading fixed input, once the first request has been written, and
// discarding what is written.
type fakeConn struct {
	in      *bytes.Reader
	wrote   chan struct{}
	once    sync.Once
	closed  chan struct{}
	closing sync.Once
}

func newFakeConn(in []byte) *fakeConn {
	return &fakeConn{in: bytes.NewReader(in), wrote: make(chan struct{}), closed: make(chan struct{})}
}

func (f *fakeConn) Read(p []byte) (int, error) {
	select {
	case <-f.wrote:
	case <-f.closed:
		return 0, net.ErrClosed
	}
	select {
	case <-f.closed:
		return 0, net.ErrClosed
	default:
	}
	// Small reads exercise the decoder's refills.
	if len(p) > 7 {
		p = p[:7]
	}
	return f.in.Read(p)
}

func (f *fakeConn) Write(p []byte) (int, error) {
	select {
	case <-f.closed:
		return 0, net.ErrClosed
	default:
	}
	f.once.Do(func() { close(f.wrote) })
	return len(p), nil
}

func (f *fakeConn) Close() error {
	f.closing.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeConn) LocalAddr() net.Addr                { return nil }
func (f *fakeConn) RemoteAddr() net.Addr               { return nil }
func (f *fakeConn) SetDeadline(t time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(t time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(t time.Time) error { return nil }

// The bounds FuzzMessage runs with.
const (
	fuzzToken        = 64
	fuzzDepth        = 8
	fuzzMessage      = 2048
	fuzzReply        = 512
	fuzzNotification = 256
)

// FuzzMessage feeds arbitrary bytes to a Conn whose monitor_cond (id 1, monitor "m") is
// awaiting its reply: it must not panic, must end (at the input's end at the latest), must
// keep its bounds (checked from the Sink's and OnNotification's side), and the Monitor call
// must return.
func FuzzMessage(f *testing.F) {
	reply := `{"id":1,"result":{"Port":{"u1":{"initial":{"name":"p","external_ids":["map",[["k","v"]]]}}}},"error":null}`
	update := `{"id":null,"method":"update2","params":["m",{"Port":{"u1":{"modify":{"name":"q"}},"u2":{"delete":null}}}]}`
	for _, s := range []string{
		reply,
		reply + update,
		reply + "\n" + update + "\n" + update,
		`{"result":{"Port":{}},"error":null,"id":1}` + `{"params":["m",{"Port":{}}],"method":"update2","id":null}`,
		`{"id":1,"result":null,"error":{"error":"unknown database","details":"x"}}`,
		`{"id":"e","method":"echo","params":[]}` + reply,
		`{"id":[1,{"a":null}],"method":"echo","params":["x",{"y":1}]}`,
		reply + `{"method":"update2","params":["other",{"Port":{}}]}{"method":"locked","params":["l"]}`,
		reply + `{"method":"update","params":["m",{"Port":{}}]}`,
		`{"method":"update2","params":["m",{}]}`,
		reply + `{"method":"update2","params":["m",{"Port":{"u":{"insert":{"a":[[[[[[[[[1]]]]]]]]]}}}}]}`,
		`{"id":1,"result":"` + strings.Repeat("x", 100) + `"}`,
		`{"id":1,"result":[` + strings.Repeat("1,", 300) + `1]}`,
		`{"id":1,"result":{"T":{"` + strings.Repeat(`\"`, 40) + `":{}}}}`,
		`{"id":1,"result":{"T":{}},"result":{"T":{}}}`,
		`{"id":1.0,"result":{}}{"id":"1","result":{}}{"id":1,"error":null}`,
		`[]`, `{}`, `{"id":1,"result":{}`, "\xff", `   `, `{"method":"echo","id":null,"params":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sink := &tokenSink{maxAtom: fuzzToken, maxDepth: fuzzDepth}
		var noteErr error
		c := New(newFakeConn(data), Options{
			Sink:            sink,
			MaxToken:        fuzzToken,
			MaxDepth:        fuzzDepth,
			MaxMessage:      fuzzMessage,
			MaxReply:        fuzzReply,
			MaxNotification: fuzzNotification,
			OnNotification: func(n Notification) {
				if len(n.Params) > fuzzNotification && noteErr == nil {
					noteErr = fmt.Errorf("notification params of %d bytes", len(n.Params))
				}
			},
		})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		monErr := make(chan error, 1)
		go func() { monErr <- c.Monitor(ctx, "db", "m", nil) }()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not end at the end of its input")
		}
		var err error
		select {
		case err = <-monErr:
		case <-time.After(10 * time.Second):
			t.Fatal("Monitor did not return after the connection ended")
		}
		if err == nil && sink.commits == 0 {
			t.Fatal("Monitor succeeded without a commit")
		}
		if c.Err() == nil {
			t.Fatal("ended without an error")
		}
		if sink.violation != nil {
			t.Fatal(sink.violation)
		}
		if noteErr != nil {
			t.Fatal(noteErr)
		}
		var le *LimitError
		if errors.As(c.Err(), &le) && !errors.Is(c.Err(), ErrTooLarge) {
			t.Fatal("a LimitError that is not ErrTooLarge")
		}
	})
}
