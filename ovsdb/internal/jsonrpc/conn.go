// Package jsonrpc is one OVSDB JSON-RPC connection (RFC 7047 §4) over a net.Conn, whose read
// side streams the table-updates of a monitor_cond reply and of update2 notifications into a
// Sink token by token, so that no buffer grows to the size of the largest message
// (docs/design/compact-read-path.md §3).
//
// A message's members are handled in whatever order they come: ovsdb-server writes them in
// hash order (3.1 writes "id","result","error" and "id","method","params", as TestRealServer
// logs), the embedded and libovsdb test servers in their own. Table-updates met before the
// member that says what the message is are read into a Pending, committed only once the whole
// message turns out to be the monitor's reply or an update2 for it.
//
// It does not dial, reconnect, or choose a server: a Conn lives as long as its net.Conn, and
// ends for good at the first transport error, bound crossed, malformed message or Close.
package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// A Sink receives table-updates2 objects as they are read. Its methods are called on the
// connection's read goroutine, one at a time and in arrival order; they must not wait for a
// reply on the same Conn (only the read goroutine could deliver it).
type Sink interface {
	// ReadTableUpdates reads one <table-updates2> JSON object from dec, positioned just before
	// its '{', and returns it not yet visible. initial: it is a monitor_cond reply (the whole
	// state, to become a new generation); otherwise it is the diff of one update2.
	//
	// It must consume exactly that value, and should read it token by token (ReadToken, and
	// ReadValue for atoms only): ReadValue or SkipValue of a composite value holds all of it
	// in the decoder's buffer. Values read are valid only until the next read. dec's reads
	// fail with an error wrapping a *LimitError when the peer crosses a bound; the Sink should
	// wrap dec's errors with %w (the connection reports the bound in any case). On error it
	// returns a nil Pending; the connection then ends with the error (wrapped).
	ReadTableUpdates(dec *jsontext.Decoder, initial bool) (Pending, error)
}

// Pending is a table-updates object read but not yet visible. Exactly one of its methods is
// called, once, on the read goroutine.
type Pending interface {
	// Commit makes it visible. It is called only when the whole message was read well and is
	// the monitor's reply or an update2 for the monitor. An error means the replica is
	// inconsistent: the connection ends with it (wrapped).
	Commit() error
	// Discard drops it: the message was cut, malformed, or not for the monitor, or the
	// connection ended before the message did.
	Discard()
}

// Notification is a request without id from the peer, other than an update2 for the
// monitor: "locked", "stolen", an "update" or "update2" for another monitor id, and so on.
type Notification struct {
	Method string
	// Params as received (a copy). Nil when they were [<this Conn's monitor id>,
	// <table-updates>] but the message was not an update2 for the monitor: that object went to
	// the Sink and was discarded.
	Params json.RawMessage
}

// Options configure a Conn. Zero bounds select the Default* constants.
type Options struct {
	// Sink receives the monitor's table-updates. Monitor fails without one.
	Sink Sink
	// OnNotification, if set, is called on the read goroutine for every Notification; like
	// the Sink, it must not wait for a reply on the same Conn.
	OnNotification func(Notification)

	MaxToken        int64 // see DefaultMaxToken
	MaxMessage      int64 // see DefaultMaxMessage
	MaxDepth        int   // see DefaultMaxDepth
	MaxReply        int64 // see DefaultMaxReply
	MaxNotification int64 // see DefaultMaxNotification
}

// Conn is one JSON-RPC connection. Its methods may be called from any goroutine, and calls
// may be outstanding concurrently; requests are written whole, one at a time.
type Conn struct {
	nc   net.Conn
	opts Options

	// Owned by the read goroutine.
	meter meter
	dec   *jsontext.Decoder

	wmu  sync.Mutex // guards the write side: wbuf, enc and nc.Write
	wbuf bytes.Buffer
	enc  *json.Encoder

	mu     sync.Mutex
	nextID int64
	calls  map[int64]*call
	mon    *monitor // the monitor registered by Monitor, if any
	cause  error    // why the connection is being closed, when not found by the read goroutine
	err    error    // why it ended; set when done is closed
	done   chan struct{}

	// trace, set by tests before any input, receives the member names of each message in
	// the order they came.
	trace func(members []string)
}

type call struct {
	method string
	ch     chan reply // buffered: the read goroutine never blocks on it
}

type reply struct {
	result []byte // a copy of the "result" member; nil for a monitor_cond
	err    error
}

type monitor struct {
	id     string
	reqID  int64
	active bool // its reply was committed; update2s for it are committed
}

// writeBufferKeep is the capacity of the write buffer kept between writes; a larger buffer
// (a large transact) is released after use.
const writeBufferKeep = 64 << 10

// New starts a Conn on nc and its read goroutine, which owns nc's read side until the
// connection ends. The Conn closes nc when it ends.
func New(nc net.Conn, opts Options) *Conn {
	c := newConn(nc, opts)
	go c.readLoop()
	return c
}

// newConn is New without starting the read goroutine.
func newConn(nc net.Conn, opts Options) *Conn {
	if opts.MaxToken <= 0 {
		opts.MaxToken = DefaultMaxToken
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxReply <= 0 {
		opts.MaxReply = DefaultMaxReply
	}
	if opts.MaxNotification <= 0 {
		opts.MaxNotification = DefaultMaxNotification
	}
	c := &Conn{
		nc:    nc,
		opts:  opts,
		calls: map[int64]*call{},
		done:  make(chan struct{}),
	}
	c.meter = meter{r: nc, maxRun: opts.MaxToken, maxDepth: opts.MaxDepth, maxMsg: opts.MaxMessage}
	// Without AllowDuplicateNames the decoder would record every member name of every open
	// object (10,000 uuids per table object) to reject duplicates.
	c.dec = jsontext.NewDecoder(&c.meter, jsontext.AllowDuplicateNames(true))
	c.enc = json.NewEncoder(&c.wbuf)
	c.enc.SetEscapeHTML(false)
	return c
}

// Close closes the connection: calls waiting for a reply fail with a *CallError, and Err
// becomes ErrClosed unless the connection had already ended. It does not wait for the read
// goroutine (a Sink or OnNotification may call it); Done is closed once that has ended.
// It returns the error of closing the net.Conn, or nil if it was closed already.
func (c *Conn) Close() error {
	return c.abort(ErrClosed)
}

// abort records cause as the reason the connection ends (unless one is recorded already)
// and closes the net.Conn, which ends the read goroutine.
func (c *Conn) abort(cause error) error {
	c.mu.Lock()
	first := c.cause == nil
	if first {
		c.cause = cause
	}
	c.mu.Unlock()
	if !first {
		return nil
	}
	return c.nc.Close()
}

// Done is closed when the connection has ended and its read goroutine has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it has not: ErrClosed after Close; a
// *LimitError (ErrTooLarge) for a bound crossed; ErrMalformed for input that is not a valid
// message; an error wrapping io.EOF when the peer closed the connection; a Sink's error; or
// the transport's error.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a request for method with params (nil is sent as []) and a fresh id, waits for
// its reply and decodes its "result" into result (if not nil) with encoding/json. A reply
// whose "error" is not null is an *RPCError. When no reply comes because ctx ended, the
// connection ended or the request could not be written, the error is a *CallError saying
// whether the request had been written (its outcome is then unknown). Call must not be
// called from a Sink or OnNotification.
func (c *Conn) Call(ctx context.Context, method string, params []any, result any) error {
	raw, err := c.roundTrip(ctx, method, params, nil)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if raw == nil {
		raw = []byte("null")
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("jsonrpc: %s: decoding result: %w", method, err)
	}
	return nil
}

// Monitor sends monitor_cond for database db with monitor id monitorID and requests (the
// <monitor-cond-requests> object, encoded with encoding/json) and streams its reply's
// table-updates into the Sink as a new generation (initial true), committed before Monitor
// returns nil. From then on, every update2 notification for monitorID streams into the Sink
// and is committed when its message has been read whole. A Conn has at most one monitor.
//
// Errors are as Call's. If ctx ends after the request was written, the monitor stays
// registered: a reply arriving later is still committed, so the Sink stays consistent with
// the server. A reply with an error unregisters it.
func (c *Conn) Monitor(ctx context.Context, db, monitorID string, requests any) error {
	if c.opts.Sink == nil {
		return errors.New("jsonrpc: monitor_cond: Options.Sink is nil")
	}
	_, err := c.roundTrip(ctx, "monitor_cond", []any{db, monitorID, requests}, &monitor{id: monitorID})
	return err
}

type request struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params []any  `json:"params"`
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
}

// roundTrip sends one request and waits for its reply. With mon, the request is a
// monitor_cond registering mon.
func (c *Conn) roundTrip(ctx context.Context, method string, params []any, mon *monitor) ([]byte, error) {
	if params == nil {
		params = []any{}
	}
	if err := ctx.Err(); err != nil {
		return nil, &CallError{Method: method, Err: err}
	}
	c.mu.Lock()
	select {
	case <-c.done:
		err := c.err
		c.mu.Unlock()
		return nil, &CallError{Method: method, Err: err}
	default:
	}
	if mon != nil && c.mon != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("jsonrpc: %s: monitor %q is already registered on this connection", method, c.mon.id)
	}
	c.nextID++
	id := c.nextID
	cl := &call{method: method, ch: make(chan reply, 1)}
	c.calls[id] = cl
	if mon != nil {
		mon.reqID = id
		c.mon = mon
	}
	c.mu.Unlock()

	if written, err := c.send(ctx, request{ID: id, Method: method, Params: params}); err != nil {
		c.mu.Lock()
		delete(c.calls, id)
		if mon != nil && !written && c.mon == mon {
			c.mon = nil
		}
		c.mu.Unlock()
		return nil, &CallError{Method: method, Written: written, Err: err}
	}

	select {
	case r := <-cl.ch:
		return r.result, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
		select {
		case r := <-cl.ch:
			return r.result, r.err
		default:
		}
		return nil, &CallError{Method: method, Written: true, Err: ctx.Err()}
	case <-c.done:
		select {
		case r := <-cl.ch:
			return r.result, r.err
		default:
		}
		return nil, &CallError{Method: method, Written: true, Err: c.Err()}
	}
}

// send encodes v and writes it as one Write; ctx's end interrupts a blocked Write (the read
// goroutine passes context.Background()). written reports whether all of it was written. A write
// that failed after some bytes, or for another reason than ctx, ends the connection.
func (c *Conn) send(ctx context.Context, v any) (written bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	defer func() {
		if c.wbuf.Cap() > writeBufferKeep {
			c.wbuf = bytes.Buffer{}
		}
	}()
	c.wbuf.Reset()
	if err := c.enc.Encode(v); err != nil {
		return false, fmt.Errorf("jsonrpc: encoding request: %w", err)
	}
	b := c.wbuf.Bytes()
	var stop func() bool
	fired := make(chan struct{})
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() {
			c.nc.SetWriteDeadline(time.Unix(1, 0)) // passed: a blocked Write returns
			close(fired)
		})
	}
	n, err := c.nc.Write(b)
	if stop != nil && !stop() {
		<-fired
		c.nc.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		return true, nil
	}
	if n == 0 && ctx.Err() != nil {
		return false, ctx.Err()
	}
	err = fmt.Errorf("jsonrpc: write (%d of %d bytes written): %w", n, len(b), err)
	c.abort(err)
	return n == len(b), err
}

// readLoop is the read goroutine.
func (c *Conn) readLoop() {
	var err error
	for err == nil {
		c.meter.startMessage(c.dec.InputOffset())
		err = c.readMessage()
	}
	c.mu.Lock()
	switch {
	case c.cause != nil:
		err = c.cause
	case c.meter.limited != nil:
		// The bound is the cause, whatever a Sink made of the read error it caused.
		if !errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("%w (%v)", c.meter.limited, err)
		}
	}
	c.err = err
	close(c.done)
	c.mu.Unlock()
	c.nc.Close()
}

// Member bits of a message.
const (
	hasID = 1 << iota
	hasMethod
	hasParams
	hasResult
	hasError
)

// message is what the read goroutine keeps of one message until its end. Values are copies.
type message struct {
	seen     uint8
	id       []byte
	method   string
	params   []byte
	result   []byte
	errv     []byte
	pending  Pending // streamed table-updates, committed or discarded at the message's end
	streamID string  // the monitor id of streamed params
	extra    bool    // streamed params had more than two elements
	members  []string
}

// readMessage reads and handles one message.
func (c *Conn) readMessage() error {
	var m message
	defer func() {
		if m.pending != nil {
			m.pending.Discard()
		}
	}()
	tok, err := c.dec.ReadToken()
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("jsonrpc: connection closed by peer: %w", io.EOF)
		}
		return c.inputErr(err)
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("%w: message is a JSON %v, not an object", ErrMalformed, tok.Kind())
	}
	for {
		tok, err := c.dec.ReadToken()
		if err != nil {
			return c.inputErr(err)
		}
		if tok.Kind() == '}' {
			break
		}
		if err := c.readMember(&m, tok.String()); err != nil {
			return err
		}
	}
	if c.trace != nil {
		c.trace(m.members)
	}
	return c.dispatch(&m)
}

// inputErr classifies an error of the decoder.
func (c *Conn) inputErr(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, ErrTooLarge):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("jsonrpc: connection closed by peer within a message: %w", io.EOF)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	default:
		return fmt.Errorf("jsonrpc: read: %w", err)
	}
}

func (c *Conn) readMember(m *message, name string) error {
	if c.trace != nil {
		m.members = append(m.members, name)
	}
	var bit uint8
	switch name {
	case "id":
		bit = hasID
	case "method":
		bit = hasMethod
	case "params":
		bit = hasParams
	case "result":
		bit = hasResult
	case "error":
		bit = hasError
	default:
		// Composite values are skipped token by token.
		if err := c.dec.SkipValue(); err != nil {
			return c.inputErr(err)
		}
		return nil
	}
	if m.seen&bit != 0 {
		return fmt.Errorf("%w: member %q twice in one message", ErrMalformed, name)
	}
	m.seen |= bit
	switch bit {
	case hasID:
		v, err := c.readWhole(c.opts.MaxNotification, LimitNotification)
		m.id = bytes.Clone(v)
		return err
	case hasMethod:
		v, err := c.readWhole(c.opts.MaxNotification, LimitNotification)
		if err != nil {
			return err
		}
		if v.Kind() != '"' {
			return fmt.Errorf("%w: method is a JSON %v, not a string", ErrMalformed, v.Kind())
		}
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return fmt.Errorf("%w: method: %w", ErrMalformed, err)
		}
		m.method = string(s)
		return nil
	case hasParams:
		return c.readParams(m)
	case hasResult:
		return c.readResult(m)
	default: // hasError
		v, err := c.readWhole(c.opts.MaxReply, LimitReply)
		m.errv = bytes.Clone(v)
		return err
	}
}

// readWhole reads the next value whole, at most max bytes (whitespace before it counted): the
// meter passes on no more, so the decoder's buffer holding it stays within that too.
func (c *Conn) readWhole(max int64, what string) (jsontext.Value, error) {
	c.meter.openValue(c.dec.InputOffset(), max, what)
	v, err := c.dec.ReadValue()
	c.meter.closeValue()
	if err != nil {
		return nil, c.inputErr(err)
	}
	if int64(len(v)) > max {
		return nil, c.meter.fail(what, max)
	}
	return v, nil
}

// readResult reads a "result" member: streamed into the Sink when it is an object that may be
// the reply to the registered monitor_cond (its id is the monitor's, or not read yet while the
// monitor's reply is awaited), read whole otherwise.
func (c *Conn) readResult(m *message) error {
	if c.dec.PeekKind() == '{' && m.seen&hasMethod == 0 {
		c.mu.Lock()
		mon := c.mon
		stream := mon != nil && !mon.active
		if stream && m.seen&hasID != 0 {
			id, ok := ourID(m.id)
			stream = ok && id == mon.reqID
		}
		c.mu.Unlock()
		if stream {
			p, err := c.readTableUpdates(true)
			m.pending = p
			return err
		}
	}
	v, err := c.readWhole(c.opts.MaxReply, LimitReply)
	m.result = bytes.Clone(v)
	return err
}

// readParams reads a "params" member. [<monitor id>, <object>] for the registered monitor's
// id has its object streamed into the Sink; everything else is read whole, within
// MaxNotification in all.
func (c *Conn) readParams(m *message) error {
	if c.dec.PeekKind() != '[' {
		v, err := c.readWhole(c.opts.MaxNotification, LimitNotification)
		m.params = bytes.Clone(v)
		return err
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return c.inputErr(err)
	}
	buf := []byte{'['}
	for i := 0; c.dec.PeekKind() != ']'; i++ {
		v, err := c.readWhole(c.opts.MaxNotification, LimitNotification)
		if err != nil {
			return err
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		start := len(buf)
		buf = append(buf, v...) // v is valid only until the next read
		if int64(len(buf))+1 > c.opts.MaxNotification {
			return c.meter.fail(LimitNotification, c.opts.MaxNotification)
		}
		if i == 0 && buf[start] == '"' && c.dec.PeekKind() == '{' {
			if id, ok := c.monitorParams(buf[start:]); ok {
				return c.streamParams(m, id)
			}
		}
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return c.inputErr(err)
	}
	m.params = append(buf, ']')
	return nil
}

// monitorParams reports whether quoted, a JSON string, is the registered monitor's id.
func (c *Conn) monitorParams(quoted []byte) (string, bool) {
	s, err := jsontext.AppendUnquote(nil, quoted)
	if err != nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mon == nil || c.mon.id != string(s) {
		return "", false
	}
	return c.mon.id, true
}

// streamParams streams the params' second element, an object, into the Sink and skips the
// rest of the params.
func (c *Conn) streamParams(m *message, id string) error {
	p, err := c.readTableUpdates(false)
	m.pending, m.streamID = p, id
	if err != nil {
		return err
	}
	for c.dec.PeekKind() != ']' {
		m.extra = true
		if err := c.dec.SkipValue(); err != nil {
			return c.inputErr(err)
		}
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return c.inputErr(err)
	}
	return nil
}

// readTableUpdates has the Sink read the next value and checks that it read exactly that.
func (c *Conn) readTableUpdates(initial bool) (Pending, error) {
	depth := c.dec.StackDepth()
	_, before := c.dec.StackIndex(depth)
	p, err := c.opts.Sink.ReadTableUpdates(c.dec, initial)
	if err != nil {
		if p != nil {
			p.Discard()
		}
		return nil, fmt.Errorf("jsonrpc: reading table-updates: %w", err)
	}
	if p == nil {
		return nil, errors.New("jsonrpc: reading table-updates: the Sink returned no Pending")
	}
	if _, after := c.dec.StackIndex(depth); c.dec.StackDepth() != depth || after != before+1 {
		p.Discard()
		return nil, errors.New("jsonrpc: reading table-updates: the Sink did not read exactly one value")
	}
	return p, nil
}

// ourID parses an id we sent: a JSON integer.
func ourID(raw []byte) (int64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	return id, err == nil
}

// dispatch handles a message read whole.
func (c *Conn) dispatch(m *message) error {
	idSet := m.seen&hasID != 0 && string(m.id) != "null"
	switch {
	case m.seen&hasMethod != 0 && m.seen&(hasResult|hasError) != 0:
		return fmt.Errorf("%w: message has both a method and a result or error", ErrMalformed)
	case m.seen&hasMethod != 0 && idSet && m.method == "update2" && m.pending != nil:
		// An update2 sent as a request (libovsdb's server does; ovsdb-server sends it as a
		// notification): applied as one, then acknowledged with an empty array, as libovsdb's
		// client answers (its server's rpc2 codec takes a null result for an invalid reply and
		// drops the connection).
		if err := c.notification(m); err != nil {
			return err
		}
		_, err := c.send(context.Background(), response{ID: m.id, Result: json.RawMessage("[]")})
		return err
	case m.seen&hasMethod != 0 && idSet:
		return c.answer(m)
	case m.seen&hasMethod != 0:
		return c.notification(m)
	case m.seen&(hasResult|hasError) != 0:
		return c.reply(m, idSet)
	default:
		return fmt.Errorf("%w: message has neither a method nor a result nor an error", ErrMalformed)
	}
}

// answer answers a request from the peer: echo with its params, anything else with the error
// ovsdb-server gives an unknown method.
func (c *Conn) answer(m *message) error {
	r := response{ID: m.id, Result: json.RawMessage("null"), Error: "unknown method"}
	if m.method == "echo" {
		r.Result, r.Error = m.params, nil
		if r.Result == nil {
			r.Result = json.RawMessage("[]")
		}
	}
	_, err := c.send(context.Background(), r)
	return err
}

// notification commits an update2 for the monitor and hands anything else to OnNotification.
func (c *Conn) notification(m *message) error {
	if m.pending != nil && m.method == "update2" && !m.extra {
		c.mu.Lock()
		active := c.mon != nil && c.mon.id == m.streamID && c.mon.active
		c.mu.Unlock()
		if !active {
			return fmt.Errorf("%w: update2 for monitor %q before the reply to its monitor_cond", ErrMalformed, m.streamID)
		}
		p := m.pending
		m.pending = nil
		if err := p.Commit(); err != nil {
			return fmt.Errorf("jsonrpc: committing update2 for monitor %q: %w", m.streamID, err)
		}
		return nil
	}
	if c.opts.OnNotification != nil {
		c.opts.OnNotification(Notification{Method: m.method, Params: m.params})
	}
	return nil
}

// reply delivers a reply to its call and, for the monitor's, commits its table-updates.
// Replies to no call of ours (another id, or a call given up) are dropped.
func (c *Conn) reply(m *message, idSet bool) error {
	if !idSet {
		return nil
	}
	id, ok := ourID(m.id)
	if !ok {
		return nil
	}
	c.mu.Lock()
	cl := c.calls[id]
	delete(c.calls, id)
	mon := c.mon
	if mon == nil || mon.active || mon.reqID != id {
		mon = nil
	}
	c.mu.Unlock()
	errNull := m.seen&hasError == 0 || string(m.errv) == "null"
	var r reply
	switch {
	case mon != nil && !errNull:
		r.err = newRPCError("monitor_cond", m.errv)
		c.dropMonitor(mon)
	case mon != nil && m.pending != nil:
		p := m.pending
		m.pending = nil
		if err := p.Commit(); err != nil {
			return fmt.Errorf("jsonrpc: committing the monitor_cond reply for monitor %q: %w", mon.id, err)
		}
		c.mu.Lock()
		mon.active = true
		c.mu.Unlock()
	case mon != nil:
		r.err = fmt.Errorf("jsonrpc: monitor_cond: %w: its result is not a table-updates object", ErrMalformed)
		c.dropMonitor(mon)
	case cl == nil:
		return nil
	case m.pending != nil:
		// Only a peer writing "result" before "id" while the monitor's reply is awaited.
		r.err = fmt.Errorf("jsonrpc: %s: %w: its object result came before its id and was taken for the monitor's table-updates", cl.method, ErrMalformed)
	case !errNull:
		r.err = newRPCError(cl.method, m.errv)
	default:
		r.result = m.result
	}
	if cl != nil {
		cl.ch <- r
	}
	return nil
}

func (c *Conn) dropMonitor(mon *monitor) {
	c.mu.Lock()
	if c.mon == mon {
		c.mon = nil
	}
	c.mu.Unlock()
}
