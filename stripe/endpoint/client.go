package endpoint

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Registration is what an application registers with.
type Registration struct {
	// Name is unique on the endpoint (1 to MaxName bytes of UTF-8).
	Name string
	// Service is the stripe service type (not 0xffff); LocalPort the application's port,
	// unique per service on the endpoint; PeerNode and PeerPort the peer application.
	Service, LocalPort uint16
	PeerNode           uint32
	PeerPort           uint16
	// Rate is the demanded rate in bytes per second, 0 for as much as the fair share gives.
	Rate uint64
}

// maxPending bounds the messages a Client keeps while it waits for a reply.
const maxPending = 4096

// Client is a Go application's side of the protocol over one connection: a stream (unix or
// TCP) or a connected UDP socket. It is not safe for concurrent use, except that Send may be
// called while another goroutine is in Next.
type Client struct {
	c       net.Conn
	packet  bool
	r       *bufio.Reader
	tag     uint32
	pending []Msg
	buf     []byte
}

// NewClient wraps c; packet says that c is a datagram socket (one message per datagram).
func NewClient(c net.Conn, packet bool) *Client {
	return &Client{c: c, packet: packet, r: bufio.NewReaderSize(c, 64<<10)}
}

// Close closes the connection; a stream endpoint deregisters its applications.
func (c *Client) Close() error { return c.c.Close() }

// deadline makes c's reads (or writes) end with ctx; call the returned function when done.
func deadline(ctx context.Context, set func(time.Time) error) func() bool {
	d, _ := ctx.Deadline() // zero: none
	_ = set(d)
	return context.AfterFunc(ctx, func() { _ = set(time.Now()) })
}

func (c *Client) write(ctx context.Context, m Msg) error {
	b, err := Append(nil, m)
	if err != nil {
		return err
	}
	defer deadline(ctx, c.c.SetWriteDeadline)()
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("endpoint client: write %v: %w", m.Type, err)
	}
	return nil
}

// read reads one message.
func (c *Client) read(ctx context.Context) (Msg, error) {
	defer deadline(ctx, c.c.SetReadDeadline)()
	if c.packet {
		if len(c.buf) < MaxWire+1 {
			c.buf = make([]byte, MaxWire+1)
		}
		n, err := c.c.Read(c.buf)
		if err != nil {
			return Msg{}, fmt.Errorf("endpoint client: read: %w", err)
		}
		m, err := Decode(c.buf[:n])
		if err != nil {
			return Msg{}, err
		}
		m.Payload = append([]byte(nil), m.Payload...)
		return m, nil
	}
	head, err := c.r.Peek(LenSize)
	if err != nil {
		return Msg{}, fmt.Errorf("endpoint client: read: %w", err)
	}
	n := binary.BigEndian.Uint32(head)
	if n == 0 || n > MaxWire-LenSize {
		return Msg{}, fmt.Errorf("%w: length prefix %d from the endpoint", ErrMalformed, n)
	}
	b := make([]byte, LenSize+int(n))
	if _, err := io.ReadFull(c.r, b); err != nil {
		return Msg{}, fmt.Errorf("endpoint client: read: %w", err)
	}
	return Decode(b)
}

// reply waits for the reply to tag, keeping other messages for Next.
func (c *Client) reply(ctx context.Context, tag uint32) (Msg, error) {
	for {
		m, err := c.read(ctx)
		if err != nil {
			return Msg{}, err
		}
		if m.Tag == tag && (m.Type == TypeRegistered || m.Type == TypeOK || m.Type == TypeError) {
			if m.Type == TypeError {
				return m, &Error{Code: m.Code, Msg: m.Text}
			}
			return m, nil
		}
		if len(c.pending) >= maxPending {
			return Msg{}, errors.New("endpoint client: more than 4096 messages arrived before the reply: call Next")
		}
		c.pending = append(c.pending, m)
	}
}

// Register registers an application and returns its id. A refusal is an *Error.
func (c *Client) Register(ctx context.Context, r Registration) (uint32, error) {
	c.tag++
	if err := c.write(ctx, Msg{Type: TypeRegister, Tag: c.tag, Name: r.Name, Service: r.Service, LocalPort: r.LocalPort,
		PeerNode: r.PeerNode, PeerPort: r.PeerPort, Rate: r.Rate}); err != nil {
		return 0, err
	}
	m, err := c.reply(ctx, c.tag)
	if err != nil {
		return 0, err
	}
	return m.App, nil
}

// Deregister deregisters application app.
func (c *Client) Deregister(ctx context.Context, app uint32) error {
	c.tag++
	if err := c.write(ctx, Msg{Type: TypeDeregister, Tag: c.tag, App: app}); err != nil {
		return err
	}
	_, err := c.reply(ctx, c.tag)
	return err
}

// Send sends payload from application app to its peer. Success has no reply: a refusal
// arrives later through Next as a TypeError message with the returned tag.
func (c *Client) Send(ctx context.Context, app uint32, tag uint32, payload []byte) error {
	return c.write(ctx, Msg{Type: TypeSend, Tag: tag, App: app, Payload: payload})
}

// Next returns the next delivery or asynchronous error reply.
func (c *Client) Next(ctx context.Context) (Msg, error) {
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		return m, nil
	}
	return c.read(ctx)
}

// Conn returns the client's connection.
func (c *Client) Conn() net.Conn { return c.c }
