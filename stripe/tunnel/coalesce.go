package tunnel

import (
	"bytes"
	"encoding/binary"
)

// maxBundles is how many flows a coalescer gathers at once; a further flow writes out the
// oldest bundle.
const maxBundles = 8

// coalescer writes the packets of one batch from the peer to the device, gathering consecutive
// in-order TCP segments of one flow (and, with udp, UDP datagrams of one flow) into one
// super-packet with a GSO header, as the kernel's GRO would. Packets of one flow stay in their
// order; packets of different flows may be written in another order than they came. Flush
// writes what is gathered; call it at the end of every batch.
type coalescer struct {
	udp   bool
	write func(b []byte) error // writes one virtio_net_hdr and packet to the device
	open  []*bundle            // the bundles gathering, oldest first
	free  []*bundle
	one   []byte // a single packet behind its header
}

// bundle is one flow's packets gathered into one super-packet.
type bundle struct {
	buf    []byte // virtio_net_hdr space, then the packet
	x      l4
	id     uint16 // the first packet's IPv4 identification
	seg    int    // payload bytes of every segment but the last
	last   int    // payload bytes of the last segment
	segs   int
	next   uint32 // TCP: the sequence number that continues the bundle
	closed bool   // nothing may follow (a short segment, PSH)
}

// newCoalescer returns a coalescer writing with write; udp allows UDP super-packets (the
// device took USO).
func newCoalescer(udp bool, write func([]byte) error) *coalescer {
	return &coalescer{udp: udp, write: write, one: make([]byte, vnetHdrLen+maxIPPacket)}
}

// add takes one packet from the peer (the coalescer may change its bytes). It returns the
// first write error of the packets it wrote meanwhile, if any, with how many writes failed.
func (c *coalescer) add(p []byte) (failed int, err error) {
	x, ok := parseL4(p)
	if !ok {
		f, err := c.flush() // keep the order of what the coalescer cannot read
		f2, err2 := c.writeOne(p, x, false)
		return f + f2, firstErr(err, err2)
	}
	var failedB int
	var errB error
	b := c.find(p, x)
	if b != nil {
		if b.join(p, x) {
			return 0, nil
		}
		failedB, errB = c.writeBundle(b)
	}
	if !c.startable(p, x) {
		f, err := c.writeOne(p, x, true)
		return failedB + f, firstErr(errB, err)
	}
	if len(c.open) == maxBundles {
		f, err := c.writeBundle(c.open[0])
		failedB, errB = failedB+f, firstErr(errB, err)
	}
	c.start(p, x)
	return failedB, errB
}

// startable reports whether packet p may begin a bundle: TCP with payload and no flag but
// ACK (and PSH), or UDP when UDP bundles are allowed.
func (c *coalescer) startable(p []byte, x l4) bool {
	if len(p) == x.hdrLen || len(p) > maxIPPacket {
		return false
	}
	if x.proto == protoUDP {
		return c.udp
	}
	return p[x.ipLen+13]&^tcpPSH == tcpACK
}

// find returns the open bundle of p's flow, or nil.
func (c *coalescer) find(p []byte, x l4) *bundle {
	for _, b := range c.open {
		q := b.buf[vnetHdrLen:]
		if b.x.v6 != x.v6 || b.x.proto != x.proto {
			continue
		}
		if x.v6 {
			if !bytes.Equal(q[8:40], p[8:40]) {
				continue
			}
		} else if !bytes.Equal(q[12:20], p[12:20]) {
			continue
		}
		if bytes.Equal(q[b.x.ipLen:b.x.ipLen+4], p[x.ipLen:x.ipLen+4]) {
			return b
		}
	}
	return nil
}

// start opens a bundle with packet p.
func (c *coalescer) start(p []byte, x l4) {
	var b *bundle
	if n := len(c.free); n > 0 {
		b, c.free = c.free[n-1], c.free[:n-1]
	} else {
		b = &bundle{buf: make([]byte, vnetHdrLen, vnetHdrLen+maxIPPacket)}
	}
	b.buf = append(b.buf[:vnetHdrLen], p...)
	b.x, b.id, b.segs, b.closed = x, ipID(p, x), 1, false
	b.seg = len(p) - x.hdrLen
	b.last = b.seg
	if x.proto == protoTCP {
		b.next = binary.BigEndian.Uint32(p[x.ipLen+4:]) + uint32(b.seg)
		b.closed = p[x.ipLen+13]&tcpPSH != 0
	}
	c.open = append(c.open, b)
}

// join appends packet p of the bundle's flow when it continues the bundle, as GRO would take
// it: the same IP and TCP header fields (but lengths, identification, checksum, sequence
// number and PSH), the next sequence number, at most the first segment's payload, and the
// super-packet within 64 KiB.
func (b *bundle) join(p []byte, x l4) bool {
	q := b.buf[vnetHdrLen:]
	n := len(p) - x.hdrLen
	if b.x != x || b.closed || b.last != b.seg || n == 0 || n > b.seg || len(q)+n > maxIPPacket || b.segs >= maxSegments {
		return false
	}
	if x.v6 {
		if !bytes.Equal(q[:4], p[:4]) || q[7] != p[7] {
			return false
		}
	} else if q[1] != p[1] || q[6]&0xe0 != p[6]&0xe0 || q[8] != p[8] || !bytes.Equal(q[20:x.ipLen], p[20:x.ipLen]) {
		return false
	}
	t := x.ipLen
	if x.proto == protoTCP {
		if binary.BigEndian.Uint32(p[t+4:]) != b.next || !bytes.Equal(q[t+8:t+13], p[t+8:t+13]) ||
			p[t+13]&^tcpPSH != tcpACK || !bytes.Equal(q[t+14:t+16], p[t+14:t+16]) ||
			!bytes.Equal(q[t+20:x.hdrLen], p[t+20:x.hdrLen]) {
			return false
		}
		b.next += uint32(n)
		if p[t+13]&tcpPSH != 0 {
			b.buf[vnetHdrLen+t+13] |= tcpPSH
			b.closed = true
		}
	}
	b.buf = append(b.buf, p[x.hdrLen:]...)
	b.segs++
	b.last = n
	if n < b.seg {
		b.closed = true
	}
	return true
}

// flush writes every open bundle, oldest first, and returns how many writes failed and the
// first error.
func (c *coalescer) flush() (failed int, err error) {
	for len(c.open) > 0 {
		f, e := c.writeBundle(c.open[0])
		failed, err = failed+f, firstErr(err, e)
	}
	return failed, err
}

// writeBundle writes bundle b (a single packet or a super-packet) and frees it.
func (c *coalescer) writeBundle(b *bundle) (int, error) {
	for i, o := range c.open {
		if o == b {
			c.open = append(c.open[:i], c.open[i+1:]...)
			break
		}
	}
	c.free = append(c.free, b)
	p := b.buf[vnetHdrLen:]
	h := vnetHdr{flags: vnetNeedsCsum, csumStart: uint16(b.x.ipLen), csumOffset: uint16(b.x.csumOffset())}
	if b.segs > 1 {
		h.hdrLen, h.gsoSize = uint16(b.x.hdrLen), uint16(b.seg)
		switch {
		case b.x.proto == protoUDP:
			h.gsoType = gsoUDPL4
		case b.x.v6:
			h.gsoType = gsoTCPv6
		default:
			h.gsoType = gsoTCPv4
		}
	}
	setPseudo(p, b.x)
	fixIP(p, b.x, b.id)
	h.put(b.buf)
	if err := c.write(b.buf); err != nil {
		return 1, err
	}
	return 0, nil
}

// writeOne writes packet p alone: a TCP or UDP packet (l4ok) with NEEDS_CSUM and its
// pseudo-header sum, anything else as it is.
func (c *coalescer) writeOne(p []byte, x l4, l4ok bool) (int, error) {
	if len(p) > maxIPPacket {
		return 1, errOffload
	}
	h := vnetHdr{}
	if l4ok {
		h = vnetHdr{flags: vnetNeedsCsum, csumStart: uint16(x.ipLen), csumOffset: uint16(x.csumOffset())}
		setPseudo(p, x)
	}
	b := c.one[:vnetHdrLen+len(p)]
	h.put(b)
	copy(b[vnetHdrLen:], p)
	if err := c.write(b); err != nil {
		return 1, err
	}
	return 0, nil
}

// firstErr returns a if not nil, else b.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
