package jsonrpc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
)

// wantLimit checks that c ended with a *LimitError for what, at limit.
func wantLimit(t *testing.T, c *Conn, what string, limit int64) {
	t.Helper()
	err := waitDone(t, c)
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Err %v, want a *LimitError", err)
	}
	if le.What != what || le.Limit != limit {
		t.Fatalf("LimitError %+v, want What %q, Limit %d", le, what, limit)
	}
	if !strings.Contains(err.Error(), what) {
		t.Fatalf("error %q does not name %q", err, what)
	}
}

func TestLimitToken(t *testing.T) {
	for name, in := range map[string]string{
		"string":     `{"method":"x","params":["` + strings.Repeat("a", 100) + `"]}`,
		"number":     `{"method":"x","params":[` + strings.Repeat("1", 100) + `]}`,
		"whitespace": `{"method":"x","params":[` + strings.Repeat(" ", 100) + `1]}`,
		"name":       `{"` + strings.Repeat("a", 100) + `":1}`,
		"escapes":    `{"method":"x","params":["` + strings.Repeat(`\"`, 50) + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, p := newPair(t, Options{MaxToken: 64})
			p.sendAsync(in)
			wantLimit(t, c, LimitToken, 64)
		})
	}
	// Just below the bound: fine.
	notes := make(chan Notification, 1)
	_, p := newPair(t, Options{MaxToken: 64, OnNotification: func(n Notification) { notes <- n }})
	p.send(`{"method":"x","params":["` + strings.Repeat("a", 62) + `"]}`)
	if n := wait(t, notes); len(n.Params) != 66 {
		t.Fatalf("params %s", n.Params)
	}
}

// The token bound holds inside table-updates streamed into the Sink.
func TestLimitTokenInTableUpdates(t *testing.T) {
	sink := &tokenSink{}
	c, p := newPair(t, Options{Sink: sink, MaxToken: 64})
	startMonitor(t, c, p, `{"T":{}}`)
	p.sendAsync(`{"method":"update2","params":["m",{"T":{"u":{"insert":{"name":"` + strings.Repeat("x", 100) + `"}}}}]}`)
	wantLimit(t, c, LimitToken, 64)
	if sink.commits != 1 {
		t.Fatalf("%d commits, want only the initial one", sink.commits)
	}
}

func TestLimitDepth(t *testing.T) {
	c, p := newPair(t, Options{MaxDepth: 4})
	p.sendAsync(`{"method":"x","params":[[[[1]]]]}`)
	wantLimit(t, c, LimitDepth, 4)

	// Four levels are fine.
	notes := make(chan Notification, 1)
	_, p = newPair(t, Options{MaxDepth: 4, OnNotification: func(n Notification) { notes <- n }})
	p.send(`{"method":"x","params":[[[1]]]}`)
	if n := wait(t, notes); string(n.Params) != "[[[1]]]" {
		t.Fatalf("params %s", n.Params)
	}
}

func TestLimitMessage(t *testing.T) {
	sink := &tokenSink{}
	c, p := newPair(t, Options{Sink: sink, MaxMessage: 1000})
	startMonitor(t, c, p, `{"T":{}}`)
	// Many small tokens in a streamed update2: only the message bound applies.
	var b strings.Builder
	b.WriteString(`{"method":"update2","params":["m",{"T":{`)
	for i := range 100 {
		fmt.Fprintf(&b, `"u%d":{"delete":null},`, i)
	}
	b.WriteString(`"v":{"delete":null}}}]}`)
	p.sendAsync(b.String())
	wantLimit(t, c, LimitMessage, 1000)
	if sink.commits != 1 {
		t.Fatalf("%d commits, want only the initial one", sink.commits)
	}
}

// Several messages adding up to more than the message bound are fine.
func TestLimitMessageIsPerMessage(t *testing.T) {
	notes := make(chan Notification, 100)
	c, p := newPair(t, Options{MaxMessage: 100, OnNotification: func(n Notification) { notes <- n }})
	msg := `{"method":"x","params":["` + strings.Repeat("a", 60) + `"]}` + "\n" // 86 bytes
	p.send(strings.Repeat(msg, 20))
	for range 20 {
		wait(t, notes)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestLimitReply(t *testing.T) {
	c, p := newPair(t, Options{MaxReply: 100})
	errc := asyncCall(testCtx(t), c, "transact", nil, nil)
	p.recv()
	p.sendAsync(`{"id":1,"error":null,"result":[` + strings.Repeat(`{},`, 50) + `{}]}`)
	wantLimit(t, c, LimitReply, 100)
	var ce *CallError
	if err := wait(t, errc); !errors.As(err, &ce) || !ce.Written || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Call: %v", err)
	}
}

func TestLimitNotification(t *testing.T) {
	for name, params := range map[string]string{
		"one value":    `[` + strings.Repeat(`1,`, 60) + `1]`,
		"many values":  `[` + strings.Repeat(`[1,2,3,4,5],`, 20) + `1]`,
		"not an array": `{"a":"` + strings.Repeat("b", 60) + `","c":"` + strings.Repeat("d", 60) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, p := newPair(t, Options{MaxNotification: 100})
			p.sendAsync(`{"method":"locked","params":` + params + `}`)
			wantLimit(t, c, LimitNotification, 100)
		})
	}
}

// TestLargeMonitorReplyRetainedHeap streams a monitor_cond reply of more than 8 MB through a
// Sink that reads it token by token and keeps nothing, and samples the live heap (after a GC)
// while the reply is being read. Had any buffer grown to the message, the samples would show
// it. The bound is far below both failures seen when the test was written (about 44 KiB
// measured): a Sink taking the reply with ReadValue (16 MiB of buffer) and a decoder without
// AllowDuplicateNames (1.9 MiB of recorded member names).
func TestLargeMonitorReplyRetainedHeap(t *testing.T) {
	const rows = 14000
	const maxRetained = 512 << 10

	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)

	var peak uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base.HeapAlloc && ms.HeapAlloc-base.HeapAlloc > peak {
			peak = ms.HeapAlloc - base.HeapAlloc
		}
	}
	sink := &tokenSink{sampleEvery: 100000, sample: sample}
	a, b := net.Pipe()
	c := New(a, Options{Sink: sink})
	t.Cleanup(func() { c.Close(); b.Close() })

	errc := make(chan error, 1)
	go func() { errc <- c.Monitor(testCtx(t), "Open_vSwitch", "m", map[string]any{}) }()
	p := &peer{t: t, nc: b}
	p.dec = json.NewDecoder(b)
	req := p.recv()

	sent := make(chan int64, 1)
	go func() {
		w := &countWriter{w: b}
		bw := bufio.NewWriterSize(w, 32<<10)
		writeReply(bw, string(req["id"]), rows)
		bw.Flush()
		sent <- w.n
	}()
	if err := wait(t, errc); err != nil {
		t.Fatal(err)
	}
	n := wait(t, sent)
	sample()
	if n < 8<<20 {
		t.Fatalf("reply of %d bytes; the test needs at least 8 MiB", n)
	}
	if sink.commits != 1 {
		t.Fatalf("%d commits", sink.commits)
	}
	t.Logf("monitor reply of %.1f MB (%d rows, %d tokens): retained heap at most %d KiB above the start, over %d samples",
		float64(n)/1e6, rows, sink.tokens, peak>>10, sink.tokens/sink.sampleEvery+1)
	if peak > maxRetained {
		t.Fatalf("retained heap reached %d bytes while reading a %d-byte reply; bound %d", peak, n, maxRetained)
	}
}

type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (w *countWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// writeReply writes a monitor_cond reply shaped like the daemon's: one bridge holding every
// port, and per port a Port and an Interface row with the daemon's tags.
func writeReply(w *bufio.Writer, id string, rows int) {
	uuid := func(kind, i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, i) }
	fmt.Fprintf(w, `{"id":%s,"result":{"Bridge":{"%s":{"initial":{"name":"br-int","ports":["set",[`, id, uuid(1, 0))
	for i := range rows {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `["uuid","%s"]`, uuid(2, i))
	}
	w.WriteString(`]]}}},"Port":{`)
	for i := range rows {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `"%s":{"initial":{"name":"port-%06d","interfaces":["uuid","%s"],"external_ids":["map",[["ovsplane-owner","ovsplane"],["ovsplane-generation","%d"],["ovsplane-origin","api"],["ovsplane-spec","{\"name\":\"port-%06d\",\"bridge\":\"br-int\",\"type\":\"internal\",\"mtu\":1500,\"tags\":{\"team\":\"net\",\"zone\":\"a\"}}"]]]}}`,
			uuid(2, i), i, uuid(3, i), i, i)
	}
	w.WriteString(`},"Interface":{`)
	for i := range rows {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `"%s":{"initial":{"name":"port-%06d","type":"internal","ofport":%d,"mtu":1500,"link_state":"up","admin_state":"up","mac_in_use":"02:00:00:%02x:%02x:%02x","external_ids":["map",[["ovsplane-owner","ovsplane"]]]}}`,
			uuid(3, i), i, i+1, i>>16&0xff, i>>8&0xff, i&0xff)
	}
	w.WriteString(`}},"error":null}` + "\n")
}
