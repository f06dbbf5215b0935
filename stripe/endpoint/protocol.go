package endpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Type is a protocol message's type byte.
type Type uint8

// Message types. Requests go from the application to the endpoint, replies and deliveries back.
const (
	TypeRegister   Type = 1 // request: register an application
	TypeRegistered Type = 2 // reply: the application's id
	TypeSend       Type = 3 // request: send a message to the application's peer
	TypeDeliver    Type = 4 // delivery: a message from the peer, in order
	TypeDeregister Type = 5 // request: deregister an application
	TypeOK         Type = 6 // reply: the request succeeded (deregister)
	TypeError      Type = 7 // reply: the request failed
)

func (t Type) String() string {
	switch t {
	case TypeRegister:
		return "register"
	case TypeRegistered:
		return "registered"
	case TypeSend:
		return "send"
	case TypeDeliver:
		return "deliver"
	case TypeDeregister:
		return "deregister"
	case TypeOK:
		return "ok"
	case TypeError:
		return "error"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// Code names why a request failed; it travels in TypeError replies.
type Code uint16

// Error codes.
const (
	CodeMalformed         Code = 1  // the message does not decode; fix the client's encoder
	CodeTooLarge          Code = 2  // the message or payload exceeds the endpoint's bound
	CodeUnknownApp        Code = 3  // no application with that id is registered by this client
	CodeAlreadyRegistered Code = 4  // the name or (service, local port) is taken
	CodeTooManyApps       Code = 5  // the endpoint's application limit is reached
	CodeUnknownPeer       Code = 6  // no engine carries traffic to that peer node
	CodeInvalid           Code = 7  // a field is out of range (empty name, port 0, reserved service)
	CodeQueueFull         Code = 8  // the application's send queue is full (datagram clients)
	CodeSendFailed        Code = 9  // the engine refused the message
	CodeUnexpected        Code = 10 // a reply or delivery type sent by a client
	CodeNotRunning        Code = 11 // the endpoint is not running (starting or stopping)
)

func (c Code) String() string {
	switch c {
	case CodeMalformed:
		return "MALFORMED"
	case CodeTooLarge:
		return "TOO_LARGE"
	case CodeUnknownApp:
		return "UNKNOWN_APP"
	case CodeAlreadyRegistered:
		return "ALREADY_REGISTERED"
	case CodeTooManyApps:
		return "TOO_MANY_APPS"
	case CodeUnknownPeer:
		return "UNKNOWN_PEER"
	case CodeInvalid:
		return "INVALID"
	case CodeQueueFull:
		return "QUEUE_FULL"
	case CodeSendFailed:
		return "SEND_FAILED"
	case CodeUnexpected:
		return "UNEXPECTED"
	case CodeNotRunning:
		return "NOT_RUNNING"
	}
	return fmt.Sprintf("CODE_%d", uint16(c))
}

// Protocol bounds.
const (
	// LenSize is the size of the length prefix in front of every message.
	LenSize = 4
	// MaxName bounds an application's name in bytes (UTF-8, no control characters).
	MaxName = 64
	// MaxErrorText bounds the text of an error reply in bytes.
	MaxErrorText = 512
	// MaxMessageLimit is the largest Config.MaxMessage: the largest payload of one message.
	MaxMessageLimit = 1 << 20
	// overhead is the most bytes a message has besides its payload (a Send: type, tag, app).
	overhead = 1 + 4 + 4
	// MaxWire is the largest encoded message, length prefix included.
	MaxWire = LenSize + overhead + MaxMessageLimit
)

// ErrMalformed is wrapped by Decode for every message it refuses.
var ErrMalformed = errors.New("malformed endpoint message")

// Msg is one protocol message, decoded. Which fields are meaningful depends on Type:
//
//	Register:   Tag, Name, Service, LocalPort, PeerNode, PeerPort, Rate
//	Registered: Tag, App
//	Send:       Tag, App, Payload
//	Deliver:    App, Payload
//	Deregister: Tag, App
//	OK:         Tag
//	Error:      Tag, Code, Text
type Msg struct {
	Type Type
	// Tag is chosen by the client and echoed in the reply to the request.
	Tag uint32
	// App is the application's id, given by the endpoint in the Registered reply.
	App uint32
	// Name is the application's name, unique on the endpoint.
	Name string
	// Service is the stripe service type, LocalPort the application's port on this node,
	// PeerNode and PeerPort the peer application it talks to.
	Service, LocalPort uint16
	PeerNode           uint32
	PeerPort           uint16
	// Rate is the demanded rate in bytes per second; 0 asks for as much as the fair share gives.
	Rate uint64
	// Code and Text say why a request failed.
	Code Code
	Text string
	// Payload is the message of a Send or Deliver.
	Payload []byte
}

// bodyLen is the encoded size of m without the length prefix.
func (m *Msg) bodyLen() (int, error) {
	switch m.Type {
	case TypeRegister:
		return 1 + 4 + 2 + 2 + 4 + 2 + 8 + 1 + len(m.Name), nil
	case TypeRegistered, TypeDeregister:
		return 1 + 4 + 4, nil
	case TypeSend:
		return 1 + 4 + 4 + len(m.Payload), nil
	case TypeDeliver:
		return 1 + 4 + len(m.Payload), nil
	case TypeOK:
		return 1 + 4, nil
	case TypeError:
		return 1 + 4 + 2 + len(m.Text), nil
	}
	return 0, fmt.Errorf("endpoint: encode %v: unknown message type", m.Type)
}

// Append encodes m after b: a 4-byte big-endian length of the rest, the type byte, then the
// type's fields big-endian in the order of the protocol table (docs/stripe.md). It refuses what
// Decode would refuse (names, texts and payloads beyond their bounds).
func Append(b []byte, m Msg) ([]byte, error) {
	if err := check(&m); err != nil {
		return b, err
	}
	n, err := m.bodyLen()
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, byte(m.Type))
	switch m.Type {
	case TypeRegister:
		b = binary.BigEndian.AppendUint32(b, m.Tag)
		b = binary.BigEndian.AppendUint16(b, m.Service)
		b = binary.BigEndian.AppendUint16(b, m.LocalPort)
		b = binary.BigEndian.AppendUint32(b, m.PeerNode)
		b = binary.BigEndian.AppendUint16(b, m.PeerPort)
		b = binary.BigEndian.AppendUint64(b, m.Rate)
		b = append(b, byte(len(m.Name)))
		b = append(b, m.Name...)
	case TypeRegistered, TypeDeregister:
		b = binary.BigEndian.AppendUint32(b, m.Tag)
		b = binary.BigEndian.AppendUint32(b, m.App)
	case TypeSend:
		b = binary.BigEndian.AppendUint32(b, m.Tag)
		b = binary.BigEndian.AppendUint32(b, m.App)
		b = append(b, m.Payload...)
	case TypeDeliver:
		b = binary.BigEndian.AppendUint32(b, m.App)
		b = append(b, m.Payload...)
	case TypeOK:
		b = binary.BigEndian.AppendUint32(b, m.Tag)
	case TypeError:
		b = binary.BigEndian.AppendUint32(b, m.Tag)
		b = binary.BigEndian.AppendUint16(b, uint16(m.Code))
		b = append(b, m.Text...)
	}
	return b, nil
}

// check applies the bounds both Append and Decode enforce.
func check(m *Msg) error {
	switch m.Type {
	case TypeRegister:
		if err := CheckName(m.Name); err != nil {
			return err
		}
		if m.Rate > math.MaxInt64 {
			return fmt.Errorf("%w: register %q: rate %d bytes/s above %d", ErrMalformed, m.Name, m.Rate, int64(math.MaxInt64))
		}
	case TypeSend, TypeDeliver:
		if len(m.Payload) > MaxMessageLimit {
			return fmt.Errorf("%w: %v of %d bytes: at most %d", ErrMalformed, m.Type, len(m.Payload), MaxMessageLimit)
		}
	case TypeError:
		if len(m.Text) > MaxErrorText || !utf8.ValidString(m.Text) {
			return fmt.Errorf("%w: error text of %d bytes: want valid UTF-8 of at most %d", ErrMalformed, len(m.Text), MaxErrorText)
		}
	}
	return nil
}

// CheckName checks an application name: 1 to MaxName bytes of UTF-8 without control characters.
func CheckName(name string) error {
	if len(name) < 1 || len(name) > MaxName || !utf8.ValidString(name) {
		return fmt.Errorf("%w: application name of %d bytes: want 1 to %d bytes of UTF-8", ErrMalformed, len(name), MaxName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: application name %q has a control character", ErrMalformed, name)
		}
	}
	return nil
}

// Frame returns the length of the first message in b (prefix included) once b holds all of
// it: 0 when more bytes are needed, an error wrapping ErrMalformed when the length prefix is 0
// or above max bytes (the stream cannot be resynchronised then).
func Frame(b []byte, max int) (int, error) {
	if len(b) < LenSize {
		return 0, nil
	}
	n := binary.BigEndian.Uint32(b)
	if n == 0 || uint64(n) > uint64(max) {
		return 0, fmt.Errorf("%w: length prefix %d: want 1 to %d", ErrMalformed, n, max)
	}
	if len(b) < LenSize+int(n) {
		return 0, nil
	}
	return LenSize + int(n), nil
}

// Decode decodes exactly one message, length prefix included, from b (a datagram, or what
// Frame delimited). It never panics; every refusal wraps ErrMalformed and says what is wrong.
// The payload aliases b.
func Decode(b []byte) (Msg, error) {
	var m Msg
	if len(b) < LenSize+1 {
		return m, fmt.Errorf("%w: %d bytes: shorter than a length prefix and a type", ErrMalformed, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) != uint64(len(b)-LenSize) {
		return m, fmt.Errorf("%w: length prefix %d with %d bytes after it", ErrMalformed, n, len(b)-LenSize)
	}
	m.Type = Type(b[LenSize])
	p := b[LenSize+1:]
	need := func(k int) error {
		if len(p) < k {
			return fmt.Errorf("%w: %v message of %d bytes: want at least %d", ErrMalformed, m.Type, len(b), len(b)-len(p)+k)
		}
		return nil
	}
	exact := func(k int) error {
		if len(p) != k {
			return fmt.Errorf("%w: %v message of %d bytes: want %d", ErrMalformed, m.Type, len(b), len(b)-len(p)+k)
		}
		return nil
	}
	switch m.Type {
	case TypeRegister:
		if err := need(23); err != nil {
			return m, err
		}
		m.Tag = binary.BigEndian.Uint32(p)
		m.Service = binary.BigEndian.Uint16(p[4:])
		m.LocalPort = binary.BigEndian.Uint16(p[6:])
		m.PeerNode = binary.BigEndian.Uint32(p[8:])
		m.PeerPort = binary.BigEndian.Uint16(p[12:])
		m.Rate = binary.BigEndian.Uint64(p[14:])
		nl := int(p[22])
		p = p[23:]
		if err := exact(nl); err != nil {
			return m, err
		}
		m.Name = string(p)
	case TypeRegistered, TypeDeregister:
		if err := exact(8); err != nil {
			return m, err
		}
		m.Tag = binary.BigEndian.Uint32(p)
		m.App = binary.BigEndian.Uint32(p[4:])
	case TypeSend:
		if err := need(8); err != nil {
			return m, err
		}
		m.Tag = binary.BigEndian.Uint32(p)
		m.App = binary.BigEndian.Uint32(p[4:])
		m.Payload = p[8:]
	case TypeDeliver:
		if err := need(4); err != nil {
			return m, err
		}
		m.App = binary.BigEndian.Uint32(p)
		m.Payload = p[4:]
	case TypeOK:
		if err := exact(4); err != nil {
			return m, err
		}
		m.Tag = binary.BigEndian.Uint32(p)
	case TypeError:
		if err := need(6); err != nil {
			return m, err
		}
		m.Tag = binary.BigEndian.Uint32(p)
		m.Code = Code(binary.BigEndian.Uint16(p[4:]))
		m.Text = string(p[6:])
	default:
		return m, fmt.Errorf("%w: unknown message type %d", ErrMalformed, uint8(m.Type))
	}
	if err := check(&m); err != nil {
		return Msg{}, err
	}
	return m, nil
}
