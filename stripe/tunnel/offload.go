package tunnel

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Segmentation offload between the tun device and the engine.
//
// With IFF_VNET_HDR every read from the device starts with a struct virtio_net_hdr (10 bytes,
// host byte order), and every write must start with one. With TUNSETOFFLOAD the kernel may hand
// over a TCP (TSO) or UDP (USO) "super-packet" of up to 64 KiB whose header says how to cut it:
// split does that in software into packets that each fit one engine frame. On the other side,
// coalescer puts consecutive in-order packets of one flow back into one super-packet (as the
// kernel's GRO does) and writes it with a GSO header, so the receiving kernel handles one large
// packet instead of dozens.
//
// Checksums. The kernel reads packets from the device with the TCP/UDP checksum left for the
// "device" (VIRTIO_NET_HDR_F_NEEDS_CSUM: the field holds the folded pseudo-header sum). split
// keeps it that way: every plain TCP/UDP packet it returns carries the pseudo-header sum of its
// own length when the original needed a checksum; any other packet that needed one gets its
// complete checksum (completeCsum). So on the wire the L4 checksum of a plain TCP/UDP packet
// is either complete (a sender without offloads) or partial (a sender with them), and the
// receiver owns it: the receiving coalescer writes every TCP and UDP packet with NEEDS_CSUM
// and its pseudo-header sum recomputed, so the receiving kernel treats the payload as checked
// (CHECKSUM_PARTIAL) and, when it forwards the packet, completes the checksum itself; a
// receiver without offloads, whose device cannot take a partial checksum, computes the
// complete one on every TCP/UDP packet (finishCsum) before it writes it. Peers may therefore
// differ in their offloads. Between two peers with offloads neither side sums the payload:
// the frames' integrity is the links' (the Ethernet FCS), as between a virtio guest and its
// host. The IPv4 header checksum, which the kernel always verifies, is recomputed on every
// packet either side changes.

// virtio_net_hdr fields (include/uapi/linux/virtio_net.h).
const (
	vnetHdrLen    = 10
	vnetNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM

	gsoNone   = 0 // VIRTIO_NET_HDR_GSO_NONE
	gsoTCPv4  = 1
	gsoTCPv6  = 4
	gsoUDPL4  = 5
	gsoECNBit = 0x80

	protoTCP = 6
	protoUDP = 17

	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpURG = 0x20
	tcpECE = 0x40
	tcpCWR = 0x80

	// maxSegments bounds the packets one super-packet is split into (64 KiB in segments of
	// 64 bytes).
	maxSegments = 1024
	// maxIPPacket is the largest IP packet: IPv4's and IPv6's 16-bit length fields.
	maxIPPacket = 65535
)

// errOffload is wrapped by split for a super-packet it cannot cut.
var errOffload = errors.New("bad offload packet")

// vnetHdr is a decoded struct virtio_net_hdr.
type vnetHdr struct {
	flags, gsoType                         uint8
	hdrLen, gsoSize, csumStart, csumOffset uint16
}

// decodeVnetHdr reads the header at the start of b.
func decodeVnetHdr(b []byte) (vnetHdr, error) {
	if len(b) < vnetHdrLen {
		return vnetHdr{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte virtio_net_hdr", errOffload, len(b), vnetHdrLen)
	}
	return vnetHdr{flags: b[0], gsoType: b[1], hdrLen: binary.NativeEndian.Uint16(b[2:]),
		gsoSize: binary.NativeEndian.Uint16(b[4:]), csumStart: binary.NativeEndian.Uint16(b[6:]),
		csumOffset: binary.NativeEndian.Uint16(b[8:])}, nil
}

// put writes h at the start of b (at least vnetHdrLen bytes).
func (h vnetHdr) put(b []byte) {
	b[0], b[1] = h.flags, h.gsoType
	binary.NativeEndian.PutUint16(b[2:], h.hdrLen)
	binary.NativeEndian.PutUint16(b[4:], h.gsoSize)
	binary.NativeEndian.PutUint16(b[6:], h.csumStart)
	binary.NativeEndian.PutUint16(b[8:], h.csumOffset)
}

// l4 describes an IP packet carrying TCP or UDP directly (no IPv6 extension headers, not a
// fragment).
type l4 struct {
	v6     bool
	proto  byte
	ipLen  int // IP header length: where the TCP/UDP header starts
	hdrLen int // IP plus TCP/UDP header length: where the payload starts
}

// parseL4 parses p as an IPv4 or IPv6 packet of exactly len(p) bytes carrying TCP or UDP; ok is
// false for anything else.
func parseL4(p []byte) (l4, bool) {
	var x l4
	if len(p) < 20 {
		return x, false
	}
	switch p[0] >> 4 {
	case 4:
		x.ipLen = int(p[0]&0x0f) * 4
		if x.ipLen < 20 || len(p) < x.ipLen || int(binary.BigEndian.Uint16(p[2:])) != len(p) {
			return x, false
		}
		if p[6]&0x20 != 0 || (int(p[6]&0x1f)<<8|int(p[7])) != 0 { // MF or an offset
			return x, false
		}
		x.proto = p[9]
	case 6:
		if len(p) < 40 || int(binary.BigEndian.Uint16(p[4:]))+40 != len(p) {
			return x, false
		}
		x.v6, x.proto, x.ipLen = true, p[6], 40
	default:
		return x, false
	}
	switch x.proto {
	case protoTCP:
		if len(p) < x.ipLen+20 {
			return x, false
		}
		x.hdrLen = x.ipLen + int(p[x.ipLen+12]>>4)*4
		if x.hdrLen < x.ipLen+20 || x.hdrLen > len(p) {
			return x, false
		}
	case protoUDP:
		if len(p) < x.ipLen+8 || int(binary.BigEndian.Uint16(p[x.ipLen+4:])) != len(p)-x.ipLen {
			return x, false
		}
		x.hdrLen = x.ipLen + 8
	default:
		return x, false
	}
	return x, true
}

// csumOffset is where the TCP or UDP checksum sits in its header.
func (x l4) csumOffset() int {
	if x.proto == protoTCP {
		return 16
	}
	return 6
}

// sum16 adds b as big-endian 16-bit words (a last odd byte padded with zero) to s.
func sum16(b []byte, s uint64) uint64 {
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint16(b)) + uint64(binary.BigEndian.Uint16(b[2:])) +
			uint64(binary.BigEndian.Uint16(b[4:])) + uint64(binary.BigEndian.Uint16(b[6:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// fold folds a one's complement sum into 16 bits.
func fold(s uint64) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// fixIP sets the IP length fields of packet p (of length len(p), header x) and, for IPv4, the
// identification id and the header checksum.
func fixIP(p []byte, x l4, id uint16) {
	if x.v6 {
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		return
	}
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[4:], id)
	p[10], p[11] = 0, 0
	binary.BigEndian.PutUint16(p[10:], ^fold(sum16(p[:x.ipLen], 0)))
}

// setPseudo stores in p's TCP/UDP checksum field the folded pseudo-header sum (addresses,
// protocol, L4 length): the partial checksum NEEDS_CSUM asks for.
func setPseudo(p []byte, x l4) {
	var s uint64
	if x.v6 {
		s = sum16(p[8:40], 0)
	} else {
		s = sum16(p[12:20], 0)
	}
	s += uint64(x.proto) + uint64(len(p)-x.ipLen)
	if x.proto == protoUDP {
		binary.BigEndian.PutUint16(p[x.ipLen+4:], uint16(len(p)-x.ipLen))
	}
	binary.BigEndian.PutUint16(p[x.ipLen+x.csumOffset():], fold(s))
}

// splitter cuts the device's packets into packets of at most mtu bytes. The packets of
// several calls accumulate in its buffers until reset, which reuses them.
type splitter struct {
	mtu     int
	scratch []byte
	segs    [][]byte
}

// splitScratch is the least size of a splitter's segment buffer.
const splitScratch = 256 << 10

// reset forgets every packet split so far; the slices returned before are no longer valid.
func (s *splitter) reset() {
	s.scratch, s.segs = s.scratch[:0], s.segs[:0]
}

// split returns the packets that pkt (read from the device with header h) stands for, each
// at most s.mtu bytes. A packet without GSO is returned as it is (it must fit the MTU). The
// returned slices are valid until reset.
func (s *splitter) split(h vnetHdr, pkt []byte) ([][]byte, error) {
	first := len(s.segs)
	gso := h.gsoType &^ gsoECNBit
	if gso == gsoNone && h.gsoType != gsoNone {
		return nil, fmt.Errorf("%w: GSO type %#02x: the ECN bit without a type", errOffload, h.gsoType)
	}
	if gso == gsoNone {
		if len(pkt) > s.mtu {
			return nil, fmt.Errorf("%w: %d bytes without segmentation, MTU %d", errOffload, len(pkt), s.mtu)
		}
		if h.flags&vnetNeedsCsum != 0 {
			if err := completeCsum(h, pkt); err != nil {
				return nil, err
			}
		}
		s.segs = append(s.segs, pkt)
		return s.segs[first:], nil
	}
	x, ok := parseL4(pkt)
	if !ok && len(pkt) >= 20 && pkt[0]>>4 == 4 && len(pkt) <= maxIPPacket {
		// IPv4's length field of a super-packet is not always its length: parse with it fixed.
		binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
		x, ok = parseL4(pkt)
	}
	if !ok && len(pkt) >= 40 && pkt[0]>>4 == 6 && len(pkt)-40 <= maxIPPacket {
		binary.BigEndian.PutUint16(pkt[4:], uint16(len(pkt)-40))
		x, ok = parseL4(pkt)
	}
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: GSO type %d on a packet that is not plain IPv4/IPv6 TCP or UDP", errOffload, h.gsoType)
	case gso != gsoTCPv4 && gso != gsoTCPv6 && gso != gsoUDPL4:
		return nil, fmt.Errorf("%w: GSO type %d not supported", errOffload, h.gsoType)
	case gso == gsoTCPv4 && (x.proto != protoTCP || x.v6), gso == gsoTCPv6 && (x.proto != protoTCP || !x.v6),
		gso == gsoUDPL4 && x.proto != protoUDP:
		return nil, fmt.Errorf("%w: GSO type %d on an IPv%d packet of protocol %d", errOffload, h.gsoType, ipVersion(x), x.proto)
	case h.gsoSize == 0:
		return nil, fmt.Errorf("%w: GSO without a segment size", errOffload)
	}
	seg := min(int(h.gsoSize), s.mtu-x.hdrLen)
	payload := len(pkt) - x.hdrLen
	if seg <= 0 {
		return nil, fmt.Errorf("%w: %d bytes of headers leave no room in the MTU %d", errOffload, x.hdrLen, s.mtu)
	}
	n := (payload + seg - 1) / seg
	if n > maxSegments {
		return nil, fmt.Errorf("%w: %d segments of %d bytes, more than %d", errOffload, n, seg, maxSegments)
	}
	if n <= 1 {
		setPseudo(pkt, x)
		fixIP(pkt, x, ipID(pkt, x))
		s.segs = append(s.segs, pkt)
		return s.segs[first:], nil
	}
	need := n*x.hdrLen + payload
	base := len(s.scratch)
	if cap(s.scratch)-base < need {
		// a new buffer: the packets already returned keep the old one
		s.scratch, base = make([]byte, 0, max(need, splitScratch)), 0
	}
	s.scratch = s.scratch[:base+need]
	buf := s.scratch[base:]
	id := ipID(pkt, x)
	var seq uint32
	var flags byte
	if x.proto == protoTCP {
		seq = binary.BigEndian.Uint32(pkt[x.ipLen+4:])
		flags = pkt[x.ipLen+13]
	}
	off := 0
	for i := range n {
		lo := x.hdrLen + i*seg
		hi := min(len(pkt), lo+seg)
		p := buf[off : off+x.hdrLen+hi-lo]
		off += len(p)
		copy(p, pkt[:x.hdrLen])
		copy(p[x.hdrLen:], pkt[lo:hi])
		if x.proto == protoTCP {
			binary.BigEndian.PutUint32(p[x.ipLen+4:], seq+uint32(i*seg))
			f := flags
			if i < n-1 {
				f &^= tcpFIN | tcpPSH
			}
			if i > 0 {
				f &^= tcpCWR
			}
			p[x.ipLen+13] = f
		}
		setPseudo(p, x)
		fixIP(p, x, id+uint16(i))
		s.segs = append(s.segs, p)
	}
	return s.segs[first:], nil
}

// ipVersion is 4 or 6.
func ipVersion(x l4) int {
	if x.v6 {
		return 6
	}
	return 4
}

// ipID is an IPv4 packet's identification (0 for IPv6).
func ipID(p []byte, x l4) uint16 {
	if x.v6 {
		return 0
	}
	return binary.BigEndian.Uint16(p[4:])
}

// finishCsum writes the complete TCP or UDP checksum into packet p when p is plain TCP or UDP
// over IPv4 or IPv6 (parseL4), whatever its checksum field held: the pseudo-header sum a
// sender with offloads left (NEEDS_CSUM), a complete checksum, or garbage. A tunnel without
// offloads calls it on every packet from the peer, because its device cannot take a partial
// checksum and the kernel would drop the packet. Other packets are left as they are (the
// sender completed theirs: completeCsum).
func finishCsum(p []byte) {
	x, ok := parseL4(p)
	if !ok {
		return
	}
	at := x.ipLen + x.csumOffset()
	p[at], p[at+1] = 0, 0
	var s uint64
	if x.v6 {
		s = sum16(p[8:40], 0)
	} else {
		s = sum16(p[12:20], 0)
	}
	s += uint64(x.proto) + uint64(len(p)-x.ipLen)
	c := ^fold(sum16(p[x.ipLen:], s))
	if c == 0 && x.proto == protoUDP {
		c = 0xffff // UDP's 0 means "no checksum"
	}
	binary.BigEndian.PutUint16(p[at:], c)
}

// completeCsum computes the checksum a NEEDS_CSUM packet left to the device, for packets whose
// receiver cannot recompute the partial sum (not plain TCP/UDP over IPv4/IPv6); plain TCP/UDP
// packets keep the partial sum, which the receiving tunnel rewrites anyway.
func completeCsum(h vnetHdr, pkt []byte) error {
	if x, ok := parseL4(pkt); ok && int(h.csumStart) == x.ipLen && int(h.csumOffset) == x.csumOffset() {
		return nil
	}
	start, at := int(h.csumStart), int(h.csumStart)+int(h.csumOffset)
	if start > len(pkt) || at+2 > len(pkt) {
		return fmt.Errorf("%w: checksum at %d+%d outside the %d-byte packet", errOffload, h.csumStart, h.csumOffset, len(pkt))
	}
	binary.BigEndian.PutUint16(pkt[at:], ^fold(sum16(pkt[start:], 0)))
	return nil
}
