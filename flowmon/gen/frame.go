package gen

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header sizes of a generated frame.
const (
	// EthHeaderLen is the Ethernet header without VLAN tag.
	EthHeaderLen = 14
	// IPv4HeaderLen is the IPv4 header without options.
	IPv4HeaderLen = 20
	// UDPHeaderLen is the UDP header.
	UDPHeaderLen = 8
	// HeaderLen is the payload header: Magic (4), flow index (4), sequence number (6), send time
	// (8), all big endian.
	HeaderLen = 22
	// Magic marks a generated frame's payload ("FMg1").
	Magic uint32 = 0x464d6731
	// payloadOff is where the payload header starts in a frame.
	payloadOff = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen
	// maxSeq is the largest sequence number the 48-bit field holds.
	maxSeq = 1<<48 - 1
	// ipDF is the IPv4 don't-fragment flag.
	ipDF = 0x4000
	// protoUDP is IPv4's protocol number of UDP.
	protoUDP = 17
	// etherTypeIPv4 is Ethernet's type of IPv4.
	etherTypeIPv4 = 0x0800
)

// Header is the payload header of a generated frame.
type Header struct {
	// Flow is the flow's index in its Spec.
	Flow uint32
	// Seq is the flow's sequence number: 0, 1, 2… per flow, 48 bits.
	Seq uint64
	// SentNanos is the send time, in nanoseconds since the Unix epoch.
	SentNanos int64
}

// Parsed is what ParseFrame found in a generated frame.
type Parsed struct {
	Header
	// Key is the frame's 5-tuple.
	Key FlowKey
	// L3Len is the IPv4 total length (the L3 bytes NetFlow counts).
	L3Len int
}

// Errors of ParseFrame, for errors.Is.
var (
	// ErrForeign: the frame is not a generated one (not UDP/IPv4, too short, wrong magic).
	ErrForeign = errors.New("not a generated frame")
	// ErrCorrupt: the frame carries the magic but its lengths or checksums are wrong.
	ErrCorrupt = errors.New("corrupt generated frame")
)

// template holds one flow's prebuilt headers (Ethernet, IPv4, UDP with a zero checksum) and the
// partial UDP checksum over the pseudo-header and UDP header.
type template struct {
	hdr     [payloadOff]byte
	partial uint32
}

// newTemplate builds flow i's headers for a valid spec.
func newTemplate(s Spec, i int) template {
	var t template
	k := s.FlowKey(i)
	b := t.hdr[:]
	copy(b[0:6], s.DstMAC)
	copy(b[6:12], s.SrcMAC)
	binary.BigEndian.PutUint16(b[12:], etherTypeIPv4)
	ip := b[EthHeaderLen:]
	l3 := s.FrameSize - EthHeaderLen
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(l3))
	binary.BigEndian.PutUint16(ip[6:], ipDF)
	ip[8] = 64
	ip[9] = protoUDP
	src, dst := k.Src.Addr().As4(), k.Dst.Addr().As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum16(ip[:IPv4HeaderLen], 0)))
	udp := ip[IPv4HeaderLen:]
	udpLen := l3 - IPv4HeaderLen
	binary.BigEndian.PutUint16(udp[0:], k.Src.Port())
	binary.BigEndian.PutUint16(udp[2:], k.Dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	// Pseudo-header (addresses, protocol, UDP length) plus the UDP header with checksum 0.
	p := sum16(ip[12:20], 0) + protoUDP + uint32(udpLen)
	t.partial = sum16(udp[:UDPHeaderLen], p)
	return t
}

// write fills frame (len FrameSize, bytes past the payload header already zero) with the
// template, the payload header and the UDP checksum.
func (t *template) write(frame []byte, h Header) {
	copy(frame, t.hdr[:])
	pl := frame[payloadOff : payloadOff+HeaderLen]
	putHeader(pl, h)
	c := ^fold(sum16(pl, t.partial))
	if c == 0 {
		c = 0xffff // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(frame[EthHeaderLen+IPv4HeaderLen+6:], c)
}

// putHeader writes h into b (HeaderLen bytes).
func putHeader(b []byte, h Header) {
	binary.BigEndian.PutUint32(b[0:], Magic)
	binary.BigEndian.PutUint32(b[4:], h.Flow)
	binary.BigEndian.PutUint16(b[8:], uint16(h.Seq>>32))
	binary.BigEndian.PutUint32(b[10:], uint32(h.Seq))
	binary.BigEndian.PutUint64(b[14:], uint64(h.SentNanos))
}

// ParseFrame parses an Ethernet frame as received. It returns ErrForeign for frames that are not
// generated ones and ErrCorrupt (wrapped, with the reason) for generated frames whose IPv4 or
// UDP lengths or checksums are wrong.
func ParseFrame(frame []byte) (Parsed, error) {
	var p Parsed
	if len(frame) < MinFrameSize || binary.BigEndian.Uint16(frame[12:]) != etherTypeIPv4 {
		return p, ErrForeign
	}
	ip := frame[EthHeaderLen:]
	if ip[0] != 0x45 || ip[9] != protoUDP ||
		binary.BigEndian.Uint32(frame[payloadOff:]) != Magic {
		return p, ErrForeign
	}
	l3 := int(binary.BigEndian.Uint16(ip[2:]))
	if l3 < IPv4HeaderLen+UDPHeaderLen+HeaderLen || l3 > len(ip) {
		return p, fmt.Errorf("%w: IPv4 total length %d, frame holds %d L3 bytes", ErrCorrupt, l3, len(ip))
	}
	if c := fold(sum16(ip[:IPv4HeaderLen], 0)); c != 0xffff {
		return p, fmt.Errorf("%w: bad IPv4 header checksum", ErrCorrupt)
	}
	udp := ip[IPv4HeaderLen:l3]
	if int(binary.BigEndian.Uint16(udp[4:])) != len(udp) {
		return p, fmt.Errorf("%w: UDP length %d, IPv4 payload %d", ErrCorrupt, binary.BigEndian.Uint16(udp[4:]), len(udp))
	}
	if binary.BigEndian.Uint16(udp[6:]) != 0 {
		s := sum16(ip[12:20], 0) + protoUDP + uint32(len(udp))
		if fold(sum16(udp, s)) != 0xffff {
			return p, fmt.Errorf("%w: bad UDP checksum", ErrCorrupt)
		}
	}
	pl := udp[UDPHeaderLen:]
	p.Flow = binary.BigEndian.Uint32(pl[4:])
	p.Seq = uint64(binary.BigEndian.Uint16(pl[8:]))<<32 | uint64(binary.BigEndian.Uint32(pl[10:]))
	p.SentNanos = int64(binary.BigEndian.Uint64(pl[14:]))
	p.L3Len = l3
	var src, dst [4]byte
	copy(src[:], ip[12:16])
	copy(dst[:], ip[16:20])
	p.Key = FlowKey{
		Src: addrPort(src, binary.BigEndian.Uint16(udp[0:])),
		Dst: addrPort(dst, binary.BigEndian.Uint16(udp[2:])),
	}
	return p, nil
}

// sum16 adds b as big-endian 16-bit words (a trailing odd byte padded with zero) to s.
func sum16(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// fold folds a 32-bit one's-complement sum to 16 bits.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
