package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire format of a probe packet (big-endian), HeaderLen bytes then zero padding:
//
//	0  "OVLP"   magic
//	4  1        version
//	5  type     TypeEcho, TypeReply, TypeTrain or TypeTrainReply
//	6  index    packet index within a train (0 for echoes)
//	8  seq      the sender's sequence number (echo) or train id (train)
//	16 count    packets in the train (0 for echoes)
//	18 0        reserved, must be zero
//	24 …        padding (zeros), to the packet's size
//
// A responder answers an echo (train packet) with a reply (train reply) of the same size and
// fields, only the type changed: no amplification, and nothing of the sender's is interpreted.
const (
	// HeaderLen is the length of the fixed header.
	HeaderLen = 24
	// MaxPacketLen bounds a probe packet (one unfragmented IPv4 datagram on a 1500 MTU).
	MaxPacketLen = 1472
	// EchoLen is the size of echo packets.
	EchoLen = 64
	// TrainPacketLen is the size of bandwidth train packets.
	TrainPacketLen = 1200
	// version is the wire version.
	version = 1
)

// Packet types.
const (
	TypeEcho       = 1
	TypeReply      = 2
	TypeTrain      = 3
	TypeTrainReply = 4
)

// errBad marks a malformed packet.
var errBad = errors.New("malformed probe packet")

// Packet is a decoded probe packet.
type Packet struct {
	Type  uint8
	Index uint16
	Seq   uint64
	Count uint16
	Len   int // size on the wire
}

// Marshal writes p into buf (at least p.Len bytes, HeaderLen ≤ p.Len ≤ MaxPacketLen) and
// returns the packet.
func (p Packet) Marshal(buf []byte) ([]byte, error) {
	if p.Len < HeaderLen || p.Len > MaxPacketLen || len(buf) < p.Len {
		return nil, fmt.Errorf("probe packet of %d bytes: give %d to %d", p.Len, HeaderLen, MaxPacketLen)
	}
	b := buf[:p.Len]
	clear(b)
	copy(b, "OVLP")
	b[4], b[5] = version, p.Type
	binary.BigEndian.PutUint16(b[6:], p.Index)
	binary.BigEndian.PutUint64(b[8:], p.Seq)
	binary.BigEndian.PutUint16(b[16:], p.Count)
	return b, nil
}

// Parse decodes and checks a probe packet: size, magic, version, type, reserved bytes, and
// train index below count.
func Parse(b []byte) (Packet, error) {
	if len(b) < HeaderLen || len(b) > MaxPacketLen {
		return Packet{}, fmt.Errorf("%w: %d bytes, want %d to %d", errBad, len(b), HeaderLen, MaxPacketLen)
	}
	if string(b[:4]) != "OVLP" || b[4] != version {
		return Packet{}, fmt.Errorf("%w: bad magic or version", errBad)
	}
	p := Packet{Type: b[5], Index: binary.BigEndian.Uint16(b[6:]), Seq: binary.BigEndian.Uint64(b[8:]),
		Count: binary.BigEndian.Uint16(b[16:]), Len: len(b)}
	if p.Type < TypeEcho || p.Type > TypeTrainReply {
		return Packet{}, fmt.Errorf("%w: type %d", errBad, p.Type)
	}
	if binary.BigEndian.Uint32(b[18:]) != 0 || b[22] != 0 || b[23] != 0 {
		return Packet{}, fmt.Errorf("%w: reserved bytes set", errBad)
	}
	train := p.Type == TypeTrain || p.Type == TypeTrainReply
	if train && (p.Count < 2 || p.Index >= p.Count) || !train && (p.Count != 0 || p.Index != 0) {
		return Packet{}, fmt.Errorf("%w: index %d of %d", errBad, p.Index, p.Count)
	}
	return p, nil
}
