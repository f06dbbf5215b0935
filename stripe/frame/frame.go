// Package frame encodes and decodes the stripe frame header: the seed's fields (service type,
// source and destination node id, source and destination endpoint port, length) plus a version,
// flags and a sequence number.
//
// # Layout
//
// HeaderLen (28) bytes, big endian, followed by Length bytes of payload:
//
//	offset  size  field     meaning
//	0       1     version   Version (1); anything else is rejected
//	1       1     flags     Flags; unknown bits are rejected
//	2       2     service   service type (the seed's ptype)
//	4       4     src node  source node id
//	8       4     dst node  destination node id
//	12      2     src port  source application endpoint port
//	14      2     dst port  destination application endpoint port
//	16      8     seq       sequence number of the frame within its flow
//	24      2     length    payload bytes that follow the header (0..MaxPayload)
//	26      2     reserved  must be 0
//
// Bytes 2..15 are, byte for byte, the flow tuple that stripe/toeplitz hashes to pick the send NIC.
// The 64-bit sequence number never wraps in practice (2^64 frames), so receivers compare
// sequence numbers as plain integers.
//
// Decode accepts a buffer longer than HeaderLen+Length (Ethernet pads short frames) and returns
// the payload without the padding; it never panics and never reads past the buffer.
package frame

import (
	"encoding/binary"
	"fmt"
)

// Version is the only header version this package writes and reads.
const Version = 1

// HeaderLen is the encoded header size in bytes.
const HeaderLen = 28

// MaxPayload is the largest payload a header can describe (the length field is 16 bits).
const MaxPayload = 0xffff

// Flags are the header's flag bits.
type Flags uint8

// The defined flags. Decode rejects any other bit.
const (
	// FlagControl marks a frame whose payload is a stripe control message (discovery, keepalive),
	// not application data.
	FlagControl Flags = 1 << 0
	// FlagReset says the sender restarted this flow's sequence space; the receiver drops its
	// reorder state for the flow and starts again at this frame's sequence number.
	FlagReset Flags = 1 << 1

	knownFlags = FlagControl | FlagReset
)

// Error is a decoding or encoding failure class; errors returned by this package wrap one of
// the constants below, so errors.Is(err, frame.ErrTruncated) works.
type Error string

// Error returns the class's text.
func (e Error) Error() string { return string(e) }

// The failure classes.
const (
	ErrTruncated = Error("truncated frame")         // fewer bytes than the header or its length field says
	ErrVersion   = Error("unsupported version")     // version byte is not Version
	ErrFlags     = Error("unknown flags")           // a flag bit this version does not define
	ErrReserved  = Error("reserved bytes not zero") // bytes 26..27 are not zero
	ErrTooLong   = Error("payload too long")        // encoding a payload over MaxPayload bytes
)

// Header is a decoded stripe frame header. Length is the payload length in bytes.
type Header struct {
	Flags   Flags
	Service uint16
	SrcNode uint32
	DstNode uint32
	SrcPort uint16
	DstPort uint16
	Seq     uint64
	Length  uint16
}

// Put writes h into the first HeaderLen bytes of dst, with Version and zero reserved bytes. It
// fails when dst is shorter than HeaderLen or h has unknown flags.
func (h Header) Put(dst []byte) error {
	if len(dst) < HeaderLen {
		return fmt.Errorf("frame: encode header into %d bytes: need %d: %w", len(dst), HeaderLen, ErrTruncated)
	}
	if h.Flags&^knownFlags != 0 {
		return fmt.Errorf("frame: encode header with flags %#02x: defined flags are %#02x: %w", uint8(h.Flags), uint8(knownFlags), ErrFlags)
	}
	dst[0] = Version
	dst[1] = byte(h.Flags)
	binary.BigEndian.PutUint16(dst[2:], h.Service)
	binary.BigEndian.PutUint32(dst[4:], h.SrcNode)
	binary.BigEndian.PutUint32(dst[8:], h.DstNode)
	binary.BigEndian.PutUint16(dst[12:], h.SrcPort)
	binary.BigEndian.PutUint16(dst[14:], h.DstPort)
	binary.BigEndian.PutUint64(dst[16:], h.Seq)
	binary.BigEndian.PutUint16(dst[24:], h.Length)
	dst[26], dst[27] = 0, 0
	return nil
}

// Append appends the frame made of h and payload to dst and returns the extended slice. It sets
// the header's length from len(payload) (h.Length is ignored) and fails when the payload is longer
// than MaxPayload or h has unknown flags; dst is then returned unchanged.
func Append(dst []byte, h Header, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return dst, fmt.Errorf("frame: payload of %d bytes: at most %d fit one frame; split it: %w", len(payload), MaxPayload, ErrTooLong)
	}
	h.Length = uint16(len(payload))
	n := len(dst)
	out := append(dst, make([]byte, HeaderLen)...)
	if err := h.Put(out[n:]); err != nil {
		return dst, err
	}
	return append(out, payload...), nil
}

// Decode parses the frame in b and returns its header and payload, b[HeaderLen:HeaderLen+Length]
// (a sub-slice of b, not a copy); bytes after the payload are ignored. It fails when b is shorter
// than the header or than the length field says, the version is not Version, an unknown flag is
// set or the reserved bytes are not zero.
func Decode(b []byte) (Header, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, fmt.Errorf("frame: %d bytes: a header needs %d: %w", len(b), HeaderLen, ErrTruncated)
	}
	if b[0] != Version {
		return Header{}, nil, fmt.Errorf("frame: version %d: this node speaks version %d: %w", b[0], Version, ErrVersion)
	}
	h := Header{
		Flags:   Flags(b[1]),
		Service: binary.BigEndian.Uint16(b[2:]),
		SrcNode: binary.BigEndian.Uint32(b[4:]),
		DstNode: binary.BigEndian.Uint32(b[8:]),
		SrcPort: binary.BigEndian.Uint16(b[12:]),
		DstPort: binary.BigEndian.Uint16(b[14:]),
		Seq:     binary.BigEndian.Uint64(b[16:]),
		Length:  binary.BigEndian.Uint16(b[24:]),
	}
	if h.Flags&^knownFlags != 0 {
		return Header{}, nil, fmt.Errorf("frame: flags %#02x: defined flags are %#02x: %w", b[1], uint8(knownFlags), ErrFlags)
	}
	if b[26] != 0 || b[27] != 0 {
		return Header{}, nil, fmt.Errorf("frame: reserved bytes %#02x%02x: must be zero: %w", b[26], b[27], ErrReserved)
	}
	end := HeaderLen + int(h.Length)
	if len(b) < end {
		return Header{}, nil, fmt.Errorf("frame: length field says %d payload bytes, %d present: %w", h.Length, len(b)-HeaderLen, ErrTruncated)
	}
	return h, b[HeaderLen:end:end], nil
}
