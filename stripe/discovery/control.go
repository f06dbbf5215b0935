// Package discovery learns which NICs (MACs) each stripe node has, by an ARP-like hello
// exchange over every link, and keeps them in a bounded table with expiry.
//
// # Control frames
//
// Discovery and the engine talk in control frames: stripe frames (stripe/frame) with
// FlagControl set, Service ControlService and a payload whose first byte is the message type.
// This package decodes every type it defines and leaves the rest to the engine:
//
//	type  name           payload (big endian)                     header
//	1     hello request  type, 0, link index (2), MAC (6)         dst node 0 (any), to ff:ff:ff:ff:ff:ff
//	2     hello reply    type, 0, link index (2), MAC (6)         dst node = the requester, unicast
//	3     ack            type only (the engine's; see stripe/engine)
//
// A hello names the sender's node (header SrcNode), the index of the sender's link it left by
// and that link's MAC, which must equal the Ethernet source address it arrived from. A node
// sends a request on every link every hello interval and answers each request it hears with a
// reply on the link it arrived on; both teach the receiver the sender's MAC. Node id 0 means
// "any node" and is never a node's own id.
//
// # Table
//
// The table maps node id → the NICs heard from that node: (the sender's link index, its MAC,
// the local link it was heard on, when it was last heard). An entry expires TTL after it was last
// heard, so a NIC that goes quiet (down, unplugged, node gone) disappears and one that speaks
// again comes back. The table is bounded: at most Config.MaxNodes nodes and Config.MaxNICs NICs
// per node; a hello beyond either bound is refused and counted after expired entries were
// dropped. Snapshot returns a sorted copy for vsctl and the API. Time is injected on every call.
package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"github.com/ovsplane/ovsplane/stripe/frame"
)

// ControlService is the header Service of every control frame.
const ControlService = 0xffff

// MsgType is a control message type, the first payload byte of a control frame.
type MsgType uint8

// The control message types.
const (
	MsgHelloRequest MsgType = 1
	MsgHelloReply   MsgType = 2
	// MsgAck is the engine's cumulative acknowledgement; see stripe/engine.
	MsgAck MsgType = 3
)

// HelloLen is the payload length of a hello request or reply.
const HelloLen = 10

// MaxLinks bounds link indexes in hellos (and the links of one node).
const MaxLinks = 256

// ErrControl is wrapped by every decoding failure of this package.
var ErrControl = errors.New("bad control frame")

// Broadcast is the Ethernet broadcast address hello requests go to.
func Broadcast() net.HardwareAddr { return net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }

// Hello is a hello request or reply.
type Hello struct {
	Reply bool             // a reply (MsgHelloReply), else a request
	Node  uint32           // the sender's node id (header SrcNode), ≥ 1
	To    uint32           // header DstNode: 0 for a request, the requester for a reply
	Link  int              // the sender's link index, 0..MaxLinks−1
	MAC   net.HardwareAddr // the sender link's MAC: 6 bytes, unicast, not zero
}

// Type returns the message type of a control frame's payload.
func Type(payload []byte) (MsgType, error) {
	if len(payload) == 0 {
		return 0, fmt.Errorf("discovery: control frame without a message type: %w", ErrControl)
	}
	return MsgType(payload[0]), nil
}

// checkMAC validates a NIC address: 6 bytes, unicast, not all zero.
func checkMAC(mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("discovery: MAC %v: want 6 bytes: %w", mac, ErrControl)
	}
	if mac[0]&1 != 0 {
		return fmt.Errorf("discovery: MAC %v is a group address, not a NIC: %w", mac, ErrControl)
	}
	if bytes.Equal(mac, make([]byte, 6)) {
		return fmt.Errorf("discovery: MAC %v is zero: %w", mac, ErrControl)
	}
	return nil
}

// AppendHello appends the whole control frame of h (header and payload) to dst. It fails on a
// node id of 0, a link index out of range, a bad MAC, or a reply without a requester.
func AppendHello(dst []byte, h Hello) ([]byte, error) {
	if h.Node == 0 {
		return dst, fmt.Errorf("discovery: hello from node 0: node ids start at 1")
	}
	if h.Link < 0 || h.Link >= MaxLinks {
		return dst, fmt.Errorf("discovery: hello from link %d: want 0 to %d", h.Link, MaxLinks-1)
	}
	if err := checkMAC(h.MAC); err != nil {
		return dst, err
	}
	t := MsgHelloRequest
	if h.Reply {
		t = MsgHelloReply
		if h.To == 0 {
			return dst, fmt.Errorf("discovery: hello reply to node 0: name the requester")
		}
	}
	var p [HelloLen]byte
	p[0] = byte(t)
	p[2], p[3] = byte(h.Link>>8), byte(h.Link)
	copy(p[4:], h.MAC)
	return frame.Append(dst, frame.Header{Flags: frame.FlagControl, Service: ControlService, SrcNode: h.Node, DstNode: h.To}, p[:])
}

// DecodeHello decodes a hello from a decoded control frame's header and payload. It fails, with
// ErrControl, when the frame is not a control frame of ControlService (FlagControl alone), the type is not a hello,
// the payload is not HelloLen bytes or its reserved byte is not zero, the sender is node 0, a
// request names a destination node or a reply none, the sequence number or a port is not 0, or
// the link index or MAC is invalid.
func DecodeHello(h frame.Header, payload []byte) (Hello, error) {
	if h.Flags != frame.FlagControl || h.Service != ControlService {
		return Hello{}, fmt.Errorf("discovery: flags %#02x service %#04x: not a control frame: %w", uint8(h.Flags), h.Service, ErrControl)
	}
	t, err := Type(payload)
	if err != nil {
		return Hello{}, err
	}
	if t != MsgHelloRequest && t != MsgHelloReply {
		return Hello{}, fmt.Errorf("discovery: message type %d is not a hello: %w", t, ErrControl)
	}
	if len(payload) != HelloLen || payload[1] != 0 {
		return Hello{}, fmt.Errorf("discovery: hello of %d bytes (reserved %#02x): want %d bytes, reserved 0: %w", len(payload), payload[min(1, len(payload)-1)], HelloLen, ErrControl)
	}
	out := Hello{Reply: t == MsgHelloReply, Node: h.SrcNode, To: h.DstNode,
		Link: int(payload[2])<<8 | int(payload[3]), MAC: net.HardwareAddr(append([]byte(nil), payload[4:10]...))}
	switch {
	case out.Node == 0:
		return Hello{}, fmt.Errorf("discovery: hello from node 0: %w", ErrControl)
	case out.Reply && out.To == 0:
		return Hello{}, fmt.Errorf("discovery: hello reply to node 0: %w", ErrControl)
	case !out.Reply && out.To != 0:
		return Hello{}, fmt.Errorf("discovery: hello request to node %d: requests go to node 0: %w", out.To, ErrControl)
	case out.Link >= MaxLinks:
		return Hello{}, fmt.Errorf("discovery: hello from link %d: want 0 to %d: %w", out.Link, MaxLinks-1, ErrControl)
	case h.Seq != 0 || h.SrcPort != 0 || h.DstPort != 0:
		return Hello{}, fmt.Errorf("discovery: hello with sequence number %d, ports %d→%d: want all 0: %w", h.Seq, h.SrcPort, h.DstPort, ErrControl)
	}
	if err := checkMAC(out.MAC); err != nil {
		return Hello{}, err
	}
	return out, nil
}
