package jsonrpc

import (
	"context"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCallReply(t *testing.T) {
	c, p := newPair(t, Options{})
	var got map[string]int
	errc := asyncCall(testCtx(t), c, "get", []any{"a", 1}, &got)
	req := p.recv()
	if string(req["method"]) != `"get"` || string(req["params"]) != `["a",1]` || string(req["id"]) != "1" {
		t.Fatalf("request %v", req)
	}
	// Members in another order than OVS 3.1's, with whitespace.
	p.send(`{ "error" : null , "result" : {"x": 7}, "id" : 1 }` + "\n")
	if err := wait(t, errc); err != nil {
		t.Fatal(err)
	}
	if got["x"] != 7 {
		t.Fatalf("result %v", got)
	}

	// nil params are sent as [].
	errc = asyncCall(testCtx(t), c, "list_dbs", nil, nil)
	req = p.recv()
	if string(req["params"]) != "[]" || string(req["id"]) != "2" {
		t.Fatalf("request %v", req)
	}
	p.send(`{"id":2,"result":["Open_vSwitch"],"error":null}`)
	if err := wait(t, errc); err != nil {
		t.Fatal(err)
	}
}

// Replies whose id is of another JSON type, or another number, than one of ours are dropped;
// requests with ids of any type are answered with the same id.
func TestIDsOfAnyType(t *testing.T) {
	c, p := newPair(t, Options{})
	var got int
	errc := asyncCall(testCtx(t), c, "m", nil, &got)
	p.recv()
	for _, id := range []string{`"1"`, `1.0`, `[1]`, `{"id":1}`, `true`, `null`, `2`, `-1`, `99999999999999999999`} {
		p.send(fmt.Sprintf(`{"id":%s,"result":%s,"error":null}`, id, "100"))
	}
	p.send(`{"result":5,"id":1,"error":null}`)
	if err := wait(t, errc); err != nil || got != 5 {
		t.Fatalf("Call: %v, result %d; want 5", err, got)
	}
	for _, id := range []string{`"e"`, `7`, `-3.5e2`, `[1,{"a":[]}]`, `{"k":"v"}`, `true`, `false`, `"\u00e9\n"`} {
		p.send(fmt.Sprintf(`{"method":"echo","params":[%s],"id":%s}`, id, id))
		m := p.recv()
		var want, gotID any
		json.Unmarshal([]byte(id), &want)
		json.Unmarshal(m["id"], &gotID)
		if !reflect.DeepEqual(gotID, want) || string(m["error"]) != "null" {
			t.Errorf("echo with id %s answered %v", id, m)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestEchoAndUnknownRequest(t *testing.T) {
	c, p := newPair(t, Options{})
	p.send(`{"params":["a",{"b":[1,2]}],"id":"echo","method":"echo"}`)
	m := p.recv()
	if string(m["id"]) != `"echo"` || string(m["result"]) != `["a",{"b":[1,2]}]` || string(m["error"]) != "null" {
		t.Fatalf("echo reply %v", m)
	}
	p.send(`{"id":0,"method":"echo","params":[]}`)
	if m := p.recv(); string(m["id"]) != "0" || string(m["result"]) != "[]" {
		t.Fatalf("echo reply %v", m)
	}
	p.send(`{"id":9,"method":"transact","params":[]}`)
	if m := p.recv(); string(m["id"]) != "9" || string(m["error"]) != `"unknown method"` {
		t.Fatalf("reply to an unknown request: %v", m)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRPCError(t *testing.T) {
	c, p := newPair(t, Options{})
	errc := asyncCall(testCtx(t), c, "transact", []any{"db"}, nil)
	p.recv()
	p.send(`{"id":1,"result":null,"error":{"error":"syntax error","details":"bad op"}}`)
	err := wait(t, errc)
	var re *RPCError
	if !errors.As(err, &re) || re.Err != "syntax error" || re.Details != "bad op" || re.Method != "transact" {
		t.Fatalf("err %v (%T), want an RPCError", err, err)
	}
	errc = asyncCall(testCtx(t), c, "x", nil, nil)
	p.recv()
	p.send(`{"error":"unknown method","id":2}`)
	if err := wait(t, errc); !errors.As(err, &re) || re.Err != "unknown method" {
		t.Fatalf("err %v", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("connection ended: %v", err)
	}
}

func TestCallContext(t *testing.T) {
	c, p := newPair(t, Options{})

	// Not written: nobody reads the pipe.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Call(ctx, "a", nil, nil)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Written || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a CallError not written, deadline exceeded", err)
	}

	// Written, no reply.
	ctx, cancel = context.WithCancel(context.Background())
	errc := asyncCall(ctx, c, "b", nil, nil)
	req := p.recv()
	if string(req["method"]) != `"b"` {
		t.Fatalf("request %v: the unwritten one must not have been sent", req)
	}
	cancel()
	err = wait(t, errc)
	if !errors.As(err, &ce) || !ce.Written || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want a CallError written, canceled", err)
	}
	if !strings.Contains(err.Error(), "unknown") {
		t.Errorf("error %q does not say the outcome is unknown", err)
	}

	// A late reply is dropped; the connection goes on.
	p.send(fmt.Sprintf(`{"id":%s,"result":1,"error":null}`, req["id"]))
	var got int
	errc = asyncCall(testCtx(t), c, "c", nil, &got)
	req = p.recv()
	p.send(fmt.Sprintf(`{"id":%s,"result":3,"error":null}`, req["id"]))
	if err := wait(t, errc); err != nil || got != 3 {
		t.Fatalf("after a canceled call: %v, %d", err, got)
	}

	// Canceled before the call.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ctx, "d", nil, nil); !errors.As(err, &ce) || ce.Written {
		t.Fatalf("err %v", err)
	}
}

func TestConnectionEndsMidCall(t *testing.T) {
	c, p := newPair(t, Options{})
	errc := asyncCall(testCtx(t), c, "transact", nil, nil)
	p.recv()
	p.nc.Close()
	err := wait(t, errc)
	var ce *CallError
	if !errors.As(err, &ce) || !ce.Written || !errors.Is(err, io.EOF) {
		t.Fatalf("err %v, want a written CallError wrapping io.EOF", err)
	}
	if err := waitDone(t, c); !errors.Is(err, io.EOF) {
		t.Fatalf("Err %v", err)
	}
	err = c.Call(testCtx(t), "transact", nil, nil)
	if !errors.As(err, &ce) || ce.Written || !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v, want a CallError not written", err)
	}
}

func TestClose(t *testing.T) {
	c, p := newPair(t, Options{})
	errc := asyncCall(testCtx(t), c, "x", nil, nil)
	p.recv()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var ce *CallError
	if err := wait(t, errc); !errors.As(err, &ce) || !ce.Written || !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
	if err := waitDone(t, c); err != ErrClosed {
		t.Fatalf("Err %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMonitorMembersInAnyOrder(t *testing.T) {
	sink := newRecSink()
	var notes []Notification
	c, p := newPair(t, Options{Sink: sink, OnNotification: func(n Notification) { notes = append(notes, n) }})

	// The reply with its result before its id.
	errc := make(chan error, 1)
	go func() { errc <- c.Monitor(testCtx(t), "db", "m", map[string]any{}) }()
	req := p.recv()
	p.send(fmt.Sprintf(`{"result":{"T":{"u1":{"initial":{"a":1}}}},"error":null,"id":%s}`, req["id"]))
	if err := wait(t, errc); err != nil {
		t.Fatal(err)
	}
	if ev := sink.next(t); ev != `commit initial {"T":{"u1":{"initial":{"a":1}}}}` {
		t.Fatalf("event %q", ev)
	}

	// An update2 with params before method, and id null last.
	p.send(`{"params":["m",{"T":{"u1":{"modify":{"a":2}}}}],"method":"update2","id":null}`)
	if ev := sink.next(t); ev != `commit update {"T":{"u1":{"modify":{"a":2}}}}` {
		t.Fatalf("event %q", ev)
	}
	// Method first, as OVS sends it.
	p.send(`{"id":null,"method":"update2","params":["m",{"T":{"u2":{"insert":{}}}}]}`)
	if ev := sink.next(t); ev != `commit update {"T":{"u2":{"insert":{}}}}` {
		t.Fatalf("event %q", ev)
	}
	// An update2 sent as a request with an id (libovsdb's server does): applied, then
	// acknowledged with an empty array (libovsdb's server drops a connection that answers null).
	p.send(`{"id":"u-7","method":"update2","params":["m",{"T":{"u3":{"insert":{}}}}]}`)
	if ev := sink.next(t); ev != `commit update {"T":{"u3":{"insert":{}}}}` {
		t.Fatalf("event %q", ev)
	}
	if ack := p.recv(); string(ack["id"]) != `"u-7"` || string(ack["result"]) != "[]" || string(ack["error"]) != "null" {
		t.Fatalf("acknowledgement of an update2 request: %v", ack)
	}
	// Params for our monitor id, but the method turns out not to be update2: discarded.
	p.send(`{"params":["m",{"T":{}}],"method":"update"}`)
	if ev := sink.next(t); ev != `discard update {"T":{}}` {
		t.Fatalf("event %q", ev)
	}
	// More than two params: not an update2 as we asked for it.
	p.send(`{"params":["m",{"T":{}},"x"],"method":"update2"}`)
	if ev := sink.next(t); ev != `discard update {"T":{}}` {
		t.Fatalf("event %q", ev)
	}
	// A reply after all that still works, and flushes the read goroutine.
	callc := asyncCall(testCtx(t), c, "x", nil, nil)
	req = p.recv()
	p.send(fmt.Sprintf(`{"id":%s,"result":{},"error":null}`, req["id"]))
	if err := wait(t, callc); err != nil {
		t.Fatal(err)
	}
	want := []Notification{{Method: "update"}, {Method: "update2"}}
	if !reflect.DeepEqual(notes, want) {
		t.Fatalf("notifications %v, want %v", notes, want)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestNotificationForAnotherMonitor(t *testing.T) {
	sink := newRecSink()
	notes := make(chan Notification, 10)
	c, p := newPair(t, Options{Sink: sink, OnNotification: func(n Notification) { notes <- n }})
	startMonitor(t, c, p, `{}`)
	sink.next(t)

	p.send(`{"method":"update2","params":["other",{"T":{"u":{"insert":{}}}}],"id":null}`)
	n := wait(t, notes)
	if n.Method != "update2" || string(n.Params) != `["other",{"T":{"u":{"insert":{}}}}]` {
		t.Fatalf("notification %+v", n)
	}
	p.send(`{"method":"locked","params":["lock"],"id":null}`)
	if n := wait(t, notes); n.Method != "locked" || string(n.Params) != `["lock"]` {
		t.Fatalf("notification %+v", n)
	}
	p.send(`{"method":"update2","params":["m",{"T":{}}],"id":null}`)
	sink.next(t)
	want := []string{"read initial {}", "commit initial {}", `read update {"T":{}}`, `commit update {"T":{}}`}
	if got := sink.Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sink events %q, want %q (the other monitor's update must not reach it)", got, want)
	}
}

func TestMonitorErrors(t *testing.T) {
	sink := newRecSink()
	c, p := newPair(t, Options{Sink: sink})
	errc := make(chan error, 1)
	go func() { errc <- c.Monitor(testCtx(t), "db", "m", nil) }()
	req := p.recv()
	p.send(fmt.Sprintf(`{"id":%s,"result":null,"error":{"error":"unknown database"}}`, req["id"]))
	var re *RPCError
	if err := wait(t, errc); !errors.As(err, &re) || re.Method != "monitor_cond" {
		t.Fatalf("err %v", err)
	}
	// Unregistered: an update2 for "m" now goes nowhere near the sink, and Monitor can be
	// retried.
	p.send(`{"method":"update2","params":["m",{}],"id":null}`)

	// ctx ends after the request was written; the reply still commits.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { errc <- c.Monitor(ctx, "db", "m", nil) }()
	req = p.recv()
	cancel()
	var ce *CallError
	if err := wait(t, errc); !errors.As(err, &ce) || !ce.Written {
		t.Fatalf("err %v", err)
	}
	if err := c.Monitor(testCtx(t), "db", "n", nil); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second monitor: %v", err)
	}
	p.send(fmt.Sprintf(`{"id":%s,"result":{"T":{}},"error":null}`, req["id"]))
	if ev := sink.next(t); ev != `commit initial {"T":{}}` {
		t.Fatalf("event %q", ev)
	}
	p.send(`{"method":"update2","params":["m",{}],"id":null}`)
	if ev := sink.next(t); ev != `commit update {}` {
		t.Fatalf("event %q", ev)
	}
	if got := sink.Events(); len(got) != 4 {
		t.Fatalf("events %q", got)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateBeforeReplyIsMalformed(t *testing.T) {
	sink := newRecSink()
	c, p := newPair(t, Options{Sink: sink})
	go c.Monitor(testCtx(t), "db", "m", nil)
	p.recv()
	p.sendAsync(`{"method":"update2","params":["m",{}],"id":null}`)
	if err := waitDone(t, c); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Err %v", err)
	}
	if got := sink.Events(); !reflect.DeepEqual(got, []string{"read update {}", "discard update {}"}) {
		t.Fatalf("events %q", got)
	}
}

func TestCommitErrorDropsConnection(t *testing.T) {
	sink := newRecSink()
	c, p := newPair(t, Options{Sink: sink})
	startMonitor(t, c, p, `{}`)
	sink.next(t)
	errInconsistent := errors.New("modify of a row the replica does not hold")
	sink.mu.Lock()
	sink.commitErr = errInconsistent
	sink.mu.Unlock()
	p.sendAsync(`{"method":"update2","params":["m",{"T":{"u":{"modify":{}}}}],"id":null}`)
	if err := waitDone(t, c); !errors.Is(err, errInconsistent) {
		t.Fatalf("Err %v, want the Commit error", err)
	}
}

// A message cut or malformed after its table-updates were read is discarded.
func TestMalformedMessageDiscards(t *testing.T) {
	for name, tail := range map[string]string{
		"syntax":       `,"id":null,,}`,
		"cut":          `,"id":`,
		"method twice": `,"method":"update2"}`,
		"with result":  `,"result":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			sink := newRecSink()
			c, p := newPair(t, Options{Sink: sink})
			startMonitor(t, c, p, `{}`)
			sink.next(t)
			p.sendAsync(`{"method":"update2","params":["m",{"T":{}}]` + tail)
			if name == "cut" {
				time.Sleep(10 * time.Millisecond)
				p.nc.Close()
			}
			err := waitDone(t, c)
			if name == "cut" {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("Err %v", err)
				}
			} else if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Err %v", err)
			}
			if got := sink.Events(); got[len(got)-1] != `discard update {"T":{}}` {
				t.Fatalf("events %q", got)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"array":         `[1,2]`,
		"string":        `"x"`,
		"empty object":  `{}`,
		"method number": `{"method":1,"params":[]}`,
		"not json":      `{"id":1,"result":nope}`,
		"bad utf8":      "{\"method\":\"\xff\"}",
	} {
		t.Run(name, func(t *testing.T) {
			c, p := newPair(t, Options{})
			p.sendAsync(in)
			if err := waitDone(t, c); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Err %v, want ErrMalformed", err)
			}
		})
	}
}

// shortSink reads only the first token of the table-updates.
type shortSink struct{ *tokenSink }

func (s shortSink) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (Pending, error) {
	_, err := dec.ReadToken()
	return tokenPending{s.tokenSink}, err
}

func TestSinkMustReadOneValue(t *testing.T) {
	sink := &tokenSink{}
	c, p := newPair(t, Options{Sink: shortSink{sink}})
	go c.Monitor(testCtx(t), "db", "m", nil)
	req := p.recv()
	p.sendAsync(fmt.Sprintf(`{"id":%s,"result":{"T":{}},"error":null}`, req["id"]))
	if err := waitDone(t, c); err == nil || !strings.Contains(err.Error(), "exactly one value") {
		t.Fatalf("Err %v", err)
	}
}
