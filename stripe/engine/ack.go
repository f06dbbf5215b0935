package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/reorder"
)

// AckLen is the payload length of an ack control frame.
const AckLen = 8

// Conn names a connection: the data frames' service and ports, as the sender writes them.
type Conn struct {
	Service, SrcPort, DstPort uint16
}

// Ack is a cumulative acknowledgement: the receiver From expects sequence number Next of
// connection Conn from node To. With Reset it is a reset request instead; the frame carries
// FlagControl|FlagReset. Either the receiver has no state for Conn (it restarted since the
// sender's sequence space began) and Next is the sequence number of the frame that showed it,
// or the receiver got a new space starting below the one it follows (the sender restarted with
// its clock stepped back) and Next is the start of the followed space. A sender tells them
// apart by its state: its space unacknowledged and below Next is the second case.
type Ack struct {
	From, To uint32
	Conn     Conn
	Next     uint64
	Reset    bool
}

// AppendAck appends the control frame of a to dst.
func AppendAck(dst []byte, a Ack) ([]byte, error) {
	if a.From == 0 || a.To == 0 {
		return dst, fmt.Errorf("engine: ack from node %d to node %d: node ids start at 1", a.From, a.To)
	}
	if a.Next >= reorder.MaxSeq {
		return dst, fmt.Errorf("engine: ack of sequence number %d: want below 2^63", a.Next)
	}
	var p [AckLen]byte
	p[0] = byte(discovery.MsgAck)
	binary.BigEndian.PutUint16(p[2:], a.Conn.Service)
	binary.BigEndian.PutUint16(p[4:], a.Conn.SrcPort)
	binary.BigEndian.PutUint16(p[6:], a.Conn.DstPort)
	flags := frame.FlagControl
	if a.Reset {
		flags |= frame.FlagReset
	}
	return frame.Append(dst, frame.Header{Flags: flags, Service: discovery.ControlService,
		SrcNode: a.From, DstNode: a.To, Seq: a.Next}, p[:])
}

// DecodeAck decodes an ack (or, with FlagReset, a reset request) from a decoded frame. It
// fails, wrapping discovery.ErrControl, when the frame is not a control frame (FlagControl,
// optionally with FlagReset, and discovery.ControlService), not an ack,
// not AckLen bytes, has a non-zero reserved byte or port field, a node id of 0, or a sequence
// number of 2^63 or more.
func DecodeAck(h frame.Header, payload []byte) (Ack, error) {
	if (h.Flags != frame.FlagControl && h.Flags != frame.FlagControl|frame.FlagReset) || h.Service != discovery.ControlService {
		return Ack{}, fmt.Errorf("engine: flags %#02x service %#04x: not a control frame: %w", uint8(h.Flags), h.Service, discovery.ErrControl)
	}
	if len(payload) != AckLen || payload[0] != byte(discovery.MsgAck) || payload[1] != 0 {
		return Ack{}, fmt.Errorf("engine: control payload of %d bytes is not an ack: %w", len(payload), discovery.ErrControl)
	}
	if h.SrcNode == 0 || h.DstNode == 0 || h.SrcPort != 0 || h.DstPort != 0 || h.Seq >= reorder.MaxSeq {
		return Ack{}, fmt.Errorf("engine: ack from node %d to node %d, ports %d→%d, next %d: %w", h.SrcNode, h.DstNode, h.SrcPort, h.DstPort, h.Seq, discovery.ErrControl)
	}
	return Ack{From: h.SrcNode, To: h.DstNode, Next: h.Seq, Reset: h.Flags&frame.FlagReset != 0, Conn: Conn{
		Service: binary.BigEndian.Uint16(payload[2:]),
		SrcPort: binary.BigEndian.Uint16(payload[4:]),
		DstPort: binary.BigEndian.Uint16(payload[6:]),
	}}, nil
}
