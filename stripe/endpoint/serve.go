package endpoint

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// outItem is one message waiting to be written to a client.
type outItem struct {
	app     *app
	b       []byte
	deliver bool // a delivery (counted in the app's received counters)
	bytes   int  // the delivered payload's size
}

// owner is one client: a stream connection or a datagram address. Its applications' deliveries
// wait in its queue, each application holding at most QueueDepth of them, and one goroutine
// writes them, so a client that does not read only fills its own queue.
type owner struct {
	write func([]byte) error
	apps  map[uint32]*app // guarded by Endpoint.mu

	mu     sync.Mutex
	q      []outItem
	sig    chan struct{}
	closed bool
	// wmu serialises writes of replies (by the reader) and deliveries (by the writer).
	wmu sync.Mutex
}

func newOwner(write func([]byte) error) *owner {
	return &owner{write: write, apps: map[uint32]*app{}, sig: make(chan struct{}, 1)}
}

// push queues it; false when the owner is closed.
func (o *owner) push(it outItem) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.q = append(o.q, it)
	select {
	case o.sig <- struct{}{}:
	default:
	}
	return true
}

func (o *owner) close() {
	o.mu.Lock()
	o.closed = true
	o.q = nil
	o.mu.Unlock()
	select {
	case o.sig <- struct{}{}:
	default:
	}
}

// send writes one reply now.
func (o *owner) send(b []byte) error {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	return o.write(b)
}

// writer writes the queued items until the owner is closed or ctx ends.
func (o *owner) writer(ctx context.Context) {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return
		}
		if len(o.q) == 0 {
			o.mu.Unlock()
			select {
			case <-o.sig:
			case <-ctx.Done():
				return
			}
			continue
		}
		it := o.q[0]
		o.q[0] = outItem{}
		o.q = o.q[1:]
		o.mu.Unlock()
		err := o.send(it.b)
		it.app.queued.Add(-1)
		switch {
		case err != nil && it.deliver:
			it.app.recvDrop.Add(1)
		case it.deliver:
			it.app.recvMsgs.Add(1)
			it.app.recvBytes.Add(uint64(it.bytes))
		}
	}
}

// maxWire is the largest message the endpoint accepts from a client, prefix included.
func (e *Endpoint) maxWire() int { return LenSize + overhead + e.cfg.MaxMessage }

// handle serves one decoded request of o and returns its reply, if any. wait says whether a
// full send queue makes the caller wait (stream) or refuses the message (datagram).
func (e *Endpoint) handle(ctx context.Context, o *owner, m Msg, wait bool) (Msg, bool) {
	fail := func(err *Error) (Msg, bool) {
		return Msg{Type: TypeError, Tag: m.Tag, Code: err.Code, Text: trimText(err.Msg)}, true
	}
	switch m.Type {
	case TypeRegister:
		a, err := e.register(m, o)
		if err != nil {
			return fail(err)
		}
		return Msg{Type: TypeRegistered, Tag: m.Tag, App: a.id}, true
	case TypeSend:
		a, err := e.lookup(o, m.App)
		if err != nil {
			return fail(err)
		}
		if len(m.Payload) == 0 {
			return fail(errorf(CodeInvalid, "application %q: empty message: send 1 to %d bytes", a.name, e.cfg.MaxMessage))
		}
		if len(m.Payload) > e.cfg.MaxMessage {
			return fail(errorf(CodeTooLarge, "application %q: message of %d bytes: at most %d, split it", a.name, len(m.Payload), e.cfg.MaxMessage))
		}
		if err := e.enqueueSend(ctx, a, sendItem{tag: m.Tag, payload: append([]byte(nil), m.Payload...)}, wait); err != nil {
			return fail(err)
		}
		return Msg{}, false
	case TypeDeregister:
		a, err := e.lookup(o, m.App)
		if err != nil {
			return fail(err)
		}
		e.remove(a)
		return Msg{Type: TypeOK, Tag: m.Tag}, true
	}
	return fail(errorf(CodeUnexpected, "a client may send register, send and deregister, not %v", m.Type))
}

// replyTo encodes and writes r to o, reporting failure to write.
func (e *Endpoint) replyTo(o *owner, r Msg) error {
	b, err := Append(nil, r)
	if err != nil {
		return err
	}
	return o.send(b)
}

// malformed is the reply to a message that did not decode.
func (e *Endpoint) malformed(err error) Msg {
	e.c.malformed.Add(1)
	code := CodeMalformed
	var te *Error
	if errors.As(err, &te) {
		code = te.Code
	}
	return Msg{Type: TypeError, Code: code, Text: trimText(err.Error())}
}

// ServeStream serves clients on a stream listener (a unix socket, or TCP; keep TCP on the
// loopback unless remote applications are meant to use the stripe) until ctx ends, and closes
// ln. Each connection may register several applications; they are deregistered when it
// closes. A message whose length prefix is above the bound is refused with TOO_LARGE and
// skipped; one that does not decode gets MALFORMED; the connection goes on in both cases.
func (e *Endpoint) ServeStream(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	conns := make(chan struct{}, e.cfg.MaxApps)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("endpoint: accept on %v: %w", ln.Addr(), err)
		}
		select {
		case conns <- struct{}{}:
		default:
			e.c.refused.Add(1)
			b, _ := Append(nil, Msg{Type: TypeError, Code: CodeTooManyApps, Text: fmt.Sprintf("already %d clients connected, the endpoint's maximum", e.cfg.MaxApps)})
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(b)
			_ = c.Close()
			continue
		}
		wg.Go(func() {
			defer func() { <-conns }()
			e.serveConn(ctx, c)
		})
	}
}

// serveConn serves one stream connection until it closes or ctx ends.
func (e *Endpoint) serveConn(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	defer c.Close()
	o := newOwner(func(b []byte) error { _, err := c.Write(b); return err })
	var wg sync.WaitGroup
	wg.Go(func() { o.writer(ctx) })
	defer func() {
		e.mu.Lock()
		apps := make([]*app, 0, len(o.apps))
		for _, a := range o.apps {
			apps = append(apps, a)
		}
		e.mu.Unlock()
		for _, a := range apps {
			e.remove(a)
		}
		o.close()
		cancel()
		wg.Wait()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var prefix [LenSize]byte
	buf := make([]byte, 0, 64<<10)
	for {
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(prefix[:])
		if n == 0 || uint64(n) > uint64(e.maxWire()-LenSize) {
			e.c.malformed.Add(1)
			code := CodeTooLarge
			if n == 0 {
				code = CodeMalformed
			}
			// The type and tag come first: the refusal carries the tag when there is one.
			var head [5]byte
			k := min(int(n), len(head))
			if _, err := io.ReadFull(r, head[:k]); err != nil {
				return
			}
			var tag uint32
			if k == len(head) && Type(head[0]) != TypeDeliver {
				tag = binary.BigEndian.Uint32(head[1:])
			}
			if e.replyTo(o, Msg{Type: TypeError, Tag: tag, Code: code, Text: fmt.Sprintf("message of %d bytes after the length prefix: want 1 to %d (payload at most %d)", n, e.maxWire()-LenSize, e.cfg.MaxMessage)}) != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, r, int64(n)-int64(k)); err != nil {
				return
			}
			continue
		}
		buf = append(buf[:0], prefix[:]...)
		buf = buf[:LenSize+int(n)]
		if _, err := io.ReadFull(r, buf[LenSize:]); err != nil {
			return
		}
		m, err := Decode(buf)
		var reply Msg
		ok := true
		if err != nil {
			reply = e.malformed(err)
		} else {
			reply, ok = e.handle(ctx, o, m, true)
		}
		if ok {
			if err := e.replyTo(o, reply); err != nil {
				return
			}
		}
		if cap(buf) > 64<<10 {
			buf = make([]byte, 0, 64<<10)
		}
	}
}

// ServeUDP serves datagram clients on pc until ctx ends, and closes pc. One datagram is one
// message; the client's address owns the applications it registers, and deliveries go to it
// as datagrams. A full send queue refuses a message with QUEUE_FULL instead of waiting, so
// one client never holds up another on the shared socket. UDP loses what the network or a
// full socket buffer drops; applications that need every message use a stream socket.
func (e *Endpoint) ServeUDP(ctx context.Context, pc net.PacketConn) error {
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	defer stop()
	owners := map[string]*owner{}
	var wg sync.WaitGroup
	defer func() {
		for _, o := range owners {
			e.dropOwner(o)
		}
		wg.Wait()
	}()
	buf := make([]byte, e.maxWire()+1)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("endpoint: receive on %v: %w", pc.LocalAddr(), err)
		}
		key := addr.String()
		o := owners[key]
		if o == nil {
			o = newOwner(func(b []byte) error { _, err := pc.WriteTo(b, addr); return err })
		}
		var reply Msg
		ok := true
		if n > e.maxWire() {
			e.c.malformed.Add(1)
			reply = Msg{Type: TypeError, Code: CodeTooLarge, Text: fmt.Sprintf("datagram of more than %d bytes: the payload is at most %d", e.maxWire(), e.cfg.MaxMessage)}
		} else if m, err := Decode(buf[:n]); err != nil {
			reply = e.malformed(err)
		} else {
			reply, ok = e.handle(ctx, o, m, false)
		}
		e.mu.Lock()
		has := len(o.apps) > 0
		e.mu.Unlock()
		switch {
		case has && owners[key] == nil:
			owners[key] = o
			wg.Go(func() { o.writer(ctx) })
		case !has && owners[key] != nil:
			delete(owners, key)
			o.close()
		}
		if ok {
			_ = e.replyTo(o, reply)
		}
	}
}

// dropOwner deregisters o's applications and stops its writer.
func (e *Endpoint) dropOwner(o *owner) {
	e.mu.Lock()
	apps := make([]*app, 0, len(o.apps))
	for _, a := range o.apps {
		apps = append(apps, a)
	}
	e.mu.Unlock()
	for _, a := range apps {
		e.remove(a)
	}
	o.close()
}
