package jsonrpc

import (
	"errors"
	"fmt"
	"io"
)

// Default bounds (design §3.3). Options fields of zero select them.
const (
	// DefaultMaxToken bounds one run of input between two structural bytes ({ } [ ] , :) outside
	// strings: one string, number or literal with the whitespace around it. It is what bounds
	// the decoder's buffer on the table-updates path.
	DefaultMaxToken = 1 << 20
	// DefaultMaxMessage bounds one JSON-RPC message, counted from the end of the previous one.
	DefaultMaxMessage = 1 << 30
	// DefaultMaxDepth bounds the nesting of objects and arrays within a message (the message
	// object is depth 1; an update2 notification needs 10).
	DefaultMaxDepth = 16
	// DefaultMaxReply bounds a reply's "result" or "error" read whole (anything but a
	// table-updates object streamed into the Sink), and so the decoder's buffer while reading
	// it.
	DefaultMaxReply = 16 << 20
	// DefaultMaxNotification bounds what is read whole of a request or notification: its "id",
	// "method", and its "params" but for a table-updates object streamed into the Sink.
	DefaultMaxNotification = 64 << 10
)

// ErrTooLarge is matched (errors.Is) by every *LimitError.
var ErrTooLarge = errors.New("too large")

// What a LimitError reports as crossed.
const (
	LimitToken        = "token"
	LimitMessage      = "message"
	LimitDepth        = "nesting depth"
	LimitReply        = "reply value"
	LimitNotification = "request or notification value"
)

// A LimitError is a bound of Options crossed by the peer's input. The connection ends with it:
// the message it was found in is abandoned (its table-updates discarded).
type LimitError struct {
	// What was crossed: one of the Limit* constants.
	What string
	// Limit is the bound, in bytes (in levels for LimitDepth).
	Limit int64
	// Offset is the input offset, in bytes from the start of the connection, at which the
	// bound was found crossed.
	Offset int64
}

func (e *LimitError) Error() string {
	unit := "bytes"
	if e.What == LimitDepth {
		unit = "levels"
	}
	return fmt.Sprintf("jsonrpc: %s exceeds the limit of %d %s (at input offset %d)", e.What, e.Limit, unit, e.Offset)
}

// Is reports ErrTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// meter is the io.Reader under the decoder. It counts the bytes it passes on and scans them
// (strings, structural bytes) to enforce, before the decoder ever buffers them:
//   - the token bound: the run of bytes since the last structural byte outside a string;
//   - the depth bound, counting '{' and '[' outside strings;
//   - the message bound: bytes since the message's start offset;
//   - an optional value window: bytes since a value's start offset, while the read loop reads
//     one value whole (ReadValue), so that the buffer holding it is bounded too.
//
// The scan only tracks string boundaries and nesting; the decoder validates the grammar. Up to
// the first byte the decoder rejects, both agree, so the bounds hold for everything the decoder
// accepts. Only the read goroutine uses a meter.
type meter struct {
	r io.Reader

	n int64 // bytes passed on so far: the offset of the next byte

	inString, escaped bool
	run               int64
	depth             int

	maxRun   int64
	maxDepth int

	msgStart, maxMsg int64

	valOn            bool
	valStart, valMax int64
	valWhat          string

	err     error       // sticky: the first bound crossed, or the first read error
	limited *LimitError // the bound crossed, if any
}

// startMessage opens the message window at offset off (the decoder's InputOffset after the
// previous message).
func (m *meter) startMessage(off int64) { m.msgStart = off }

// openValue opens the value window at offset off for a value of at most max bytes.
func (m *meter) openValue(off, max int64, what string) {
	m.valOn, m.valStart, m.valMax, m.valWhat = true, off, max, what
}

func (m *meter) closeValue() { m.valOn = false }

func (m *meter) fail(what string, limit int64) error {
	m.limited = &LimitError{What: what, Limit: limit, Offset: m.n}
	m.err = m.limited
	return m.err
}

// Read passes on at most as many bytes as the message and value windows allow (one more than
// their bounds, so that a value of exactly the bound can be seen to end), and stops before the
// first byte that crosses the token or depth bound.
func (m *meter) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	room := m.msgStart + m.maxMsg + 1 - m.n
	what, limit := LimitMessage, m.maxMsg
	if m.valOn {
		if v := m.valStart + m.valMax + 1 - m.n; v < room {
			room, what, limit = v, m.valWhat, m.valMax
		}
	}
	if room <= 0 {
		return 0, m.fail(what, limit)
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	for i, b := range p[:n] {
		if !m.scan(b) {
			m.n += int64(i)
			return i, m.err
		}
	}
	m.n += int64(n)
	if err != nil && err != io.EOF {
		m.err = err
	}
	return n, err
}

// scan advances the scanner over b; false when b crosses a bound (m.err is then set).
func (m *meter) scan(b byte) bool {
	if m.inString {
		switch {
		case m.escaped:
			m.escaped = false
		case b == '\\':
			m.escaped = true
		case b == '"':
			m.inString = false
		}
	} else {
		switch b {
		case '"':
			m.inString = true
		case '{', '[':
			m.run = 0
			m.depth++
			if m.depth > m.maxDepth {
				m.fail(LimitDepth, int64(m.maxDepth))
				return false
			}
			return true
		case '}', ']':
			m.run = 0
			if m.depth > 0 {
				m.depth--
			}
			return true
		case ',', ':':
			m.run = 0
			return true
		}
	}
	m.run++
	if m.run > m.maxRun {
		m.fail(LimitToken, m.maxRun)
		return false
	}
	return true
}
