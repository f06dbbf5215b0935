package tunnel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// tcpPacket builds an IPv4 (or IPv6) TCP packet with the given sequence number, flags, TCP
// options and payload; its checksum field holds the pseudo-header sum (NEEDS_CSUM).
func tcpPacket(v6 bool, seq uint32, flags byte, opts, payload []byte) []byte {
	ipLen := 20
	if v6 {
		ipLen = 40
	}
	thl := 20 + len(opts)
	p := make([]byte, ipLen+thl+len(payload))
	if v6 {
		p[0], p[6], p[7] = 0x60, protoTCP, 64
		p[8+15], p[24+15] = 1, 2
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
	} else {
		p[0], p[6], p[8], p[9] = 0x45, 0x40, 64, protoTCP
		copy(p[12:], []byte{10, 78, 0, 1, 10, 78, 0, 2})
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		binary.BigEndian.PutUint16(p[4:], 0x1234)
	}
	t := p[ipLen:]
	binary.BigEndian.PutUint16(t[0:], 40000)
	binary.BigEndian.PutUint16(t[2:], 5201)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], 777)
	t[12], t[13] = byte(thl/4)<<4, flags
	binary.BigEndian.PutUint16(t[14:], 512)
	copy(t[20:], opts)
	copy(t[thl:], payload)
	x, _ := parseL4(p)
	setPseudo(p, x)
	fixIP(p, x, ipID(p, x))
	return p
}

// udpPacket builds an IPv4 UDP datagram with the pseudo-header sum in its checksum field.
func udpPacket(sport uint16, payload []byte) []byte {
	p := make([]byte, 28+len(payload))
	p[0], p[8], p[9] = 0x45, 64, protoUDP
	copy(p[12:], []byte{10, 78, 0, 1, 10, 78, 0, 2})
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[20:], sport)
	binary.BigEndian.PutUint16(p[22:], 9000)
	binary.BigEndian.PutUint16(p[24:], uint16(8+len(payload)))
	copy(p[28:], payload)
	x, _ := parseL4(p)
	setPseudo(p, x)
	fixIP(p, x, 0)
	return p
}

// checkPacket fails unless p is a well-formed TCP/UDP packet whose IPv4 header checksum is
// right and whose L4 checksum field holds its pseudo-header sum.
func checkPacket(t *testing.T, p []byte) l4 {
	t.Helper()
	x, ok := parseL4(p)
	if !ok {
		t.Fatalf("packet % x: not a well-formed TCP/UDP packet", p[:min(len(p), 60)])
	}
	if !x.v6 && fold(sum16(p[:x.ipLen], 0)) != 0xffff {
		t.Errorf("IPv4 header checksum wrong")
	}
	q := bytes.Clone(p)
	setPseudo(q, x)
	if !bytes.Equal(q, p) {
		t.Errorf("L4 checksum field %#04x, want the pseudo-header sum %#04x", binary.BigEndian.Uint16(p[x.ipLen+x.csumOffset():]),
			binary.BigEndian.Uint16(q[x.ipLen+x.csumOffset():]))
	}
	return x
}

func payloadOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

// TestSplitCoalesceTCP cuts a TSO super-packet into MTU-sized segments (IPv4 and IPv6, with
// FIN, PSH and CWR) and coalesces them back into the same super-packet.
func TestSplitCoalesceTCP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		opts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2} // NOP NOP timestamps
		data := payloadOf(10000)
		super := tcpPacket(v6, 1000, tcpACK|tcpPSH|tcpCWR, opts, data)
		x, _ := parseL4(super)
		orig := bytes.Clone(super)
		gso := uint8(gsoTCPv4)
		if v6 {
			gso = gsoTCPv6
		}
		const mtu = 1500
		s := &splitter{mtu: mtu}
		segs, err := s.split(vnetHdr{flags: vnetNeedsCsum, gsoType: gso, gsoSize: 1448, csumStart: uint16(x.ipLen), csumOffset: 16}, super)
		if err != nil {
			t.Fatal(err)
		}
		seg := mtu - x.hdrLen // the MTU is smaller than gso_size here
		if want := (len(data) + seg - 1) / seg; len(segs) != want {
			t.Fatalf("v6 %v: %d segments, want %d", v6, len(segs), want)
		}
		var got []byte
		for i, p := range segs {
			checkPacket(t, p)
			if len(p) > mtu {
				t.Errorf("segment %d: %d bytes, MTU %d", i, len(p), mtu)
			}
			if s := binary.BigEndian.Uint32(p[x.ipLen+4:]); s != 1000+uint32(len(got)) {
				t.Errorf("segment %d: seq %d, want %d", i, s, 1000+len(got))
			}
			f := p[x.ipLen+13]
			last := i == len(segs)-1
			if (f&tcpPSH != 0) != last || (f&tcpCWR != 0) != (i == 0) || f&tcpACK == 0 {
				t.Errorf("segment %d of %d: flags %#02x", i, len(segs), f)
			}
			if !v6 && binary.BigEndian.Uint16(p[4:]) != 0x1234+uint16(i) {
				t.Errorf("segment %d: IP id %#x", i, binary.BigEndian.Uint16(p[4:]))
			}
			got = append(got, p[x.hdrLen:]...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("v6 %v: the segments' payloads differ from the super-packet's", v6)
		}
		// coalesce (CWR only on the first: it can start a bundle only without CWR, so clear it).
		segs[0][x.ipLen+13] &^= tcpCWR
		var writes [][]byte
		c := newCoalescer(false, func(b []byte) error { writes = append(writes, bytes.Clone(b)); return nil })
		for _, p := range segs {
			if _, err := c.add(bytes.Clone(p)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.flush(); err != nil {
			t.Fatal(err)
		}
		if len(writes) != 1 {
			t.Fatalf("v6 %v: %d writes, want 1 super-packet", v6, len(writes))
		}
		h, _ := decodeVnetHdr(writes[0])
		if h.gsoType != gso || int(h.gsoSize) != seg || int(h.hdrLen) != x.hdrLen || h.flags != vnetNeedsCsum || int(h.csumStart) != x.ipLen || h.csumOffset != 16 {
			t.Errorf("v6 %v: header %+v", v6, h)
		}
		p := writes[0][vnetHdrLen:]
		checkPacket(t, p)
		orig[x.ipLen+13] &^= tcpCWR
		if !bytes.Equal(p, orig) {
			t.Errorf("v6 %v: coalesced packet differs from the original super-packet", v6)
		}
	}
}

// TestCoalesceRules checks what does not coalesce: a gap in the sequence, another ACK number,
// other options, a segment after a short one, a SYN, other flows (each kept in order), and UDP
// without USO; and what does: UDP datagrams of one flow with USO.
func TestCoalesceRules(t *testing.T) {
	opts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}
	seg := func(seq uint32, n int) []byte { return tcpPacket(false, seq, tcpACK, opts, payloadOf(n)) }
	otherAck := seg(3000, 1000)
	binary.BigEndian.PutUint32(otherAck[28:], 778)
	otherOpts := tcpPacket(false, 3000, tcpACK, []byte{1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 2}, payloadOf(1000))
	otherFlow := seg(1000, 1000)
	binary.BigEndian.PutUint16(otherFlow[20:], 40001)
	cases := []struct {
		name   string
		pkts   [][]byte
		udp    bool
		writes int
	}{
		{"consecutive", [][]byte{seg(1000, 1000), seg(2000, 1000), seg(3000, 500)}, false, 1},
		{"gap", [][]byte{seg(1000, 1000), seg(2500, 1000)}, false, 2},
		{"other ack", [][]byte{seg(1000, 1000), seg(2000, 1000), otherAck}, false, 2},
		{"other options", [][]byte{seg(1000, 1000), seg(2000, 1000), otherOpts}, false, 2},
		{"after a short one", [][]byte{seg(1000, 500), seg(1500, 500), seg(2000, 500), seg(2500, 400), seg(2900, 400)}, false, 2},
		{"larger than the first", [][]byte{seg(1000, 500), seg(1500, 1000)}, false, 2},
		{"syn", [][]byte{seg(1000, 1000), tcpPacket(false, 2000, tcpSYN, nil, nil), seg(2000, 1000)}, false, 3},
		{"two flows", [][]byte{seg(1000, 1000), otherFlow, seg(2000, 1000)}, false, 2},
		{"udp without uso", [][]byte{udpPacket(1, payloadOf(100)), udpPacket(1, payloadOf(100))}, false, 2},
		{"udp with uso", [][]byte{udpPacket(1, payloadOf(100)), udpPacket(1, payloadOf(100)), udpPacket(1, payloadOf(60)), udpPacket(2, payloadOf(10))}, true, 2},
		{"not tcp or udp", [][]byte{seg(1000, 1000), {0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, seg(2000, 1000)}, false, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var writes [][]byte
			c := newCoalescer(tc.udp, func(b []byte) error { writes = append(writes, bytes.Clone(b)); return nil })
			var want []byte
			for _, p := range tc.pkts {
				if x, ok := parseL4(p); ok {
					want = append(want, p[x.hdrLen:]...)
				}
				if _, err := c.add(bytes.Clone(p)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.flush(); err != nil {
				t.Fatal(err)
			}
			if len(writes) != tc.writes {
				t.Errorf("%d writes, want %d", len(writes), tc.writes)
			}
			// every write re-splits into the packets that went in: nothing lost, reordered or
			// changed within a flow (the cases' flows are written in their order here).
			var got []byte
			s := &splitter{mtu: maxIPPacket}
			for _, w := range writes {
				h, err := decodeVnetHdr(w)
				if err != nil {
					t.Fatal(err)
				}
				segs, err := s.split(vnetHdr{gsoType: h.gsoType, gsoSize: h.gsoSize}, bytes.Clone(w[vnetHdrLen:]))
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range segs {
					if x, ok := parseL4(p); ok {
						checkPacket(t, p)
						got = append(got, p[x.hdrLen:]...)
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("payloads after coalescing and splitting differ: %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// TestSplitRefuses checks the refusals: a packet above the MTU without GSO, GSO on what is not
// TCP/UDP or on the wrong IP version, UFO, no segment size, too many segments.
func TestSplitRefuses(t *testing.T) {
	big := tcpPacket(false, 1, tcpACK, nil, payloadOf(3000))
	cases := []struct {
		name string
		h    vnetHdr
		p    []byte
	}{
		{"above the MTU", vnetHdr{}, big},
		{"GSO on ICMP", vnetHdr{gsoType: gsoTCPv4, gsoSize: 100}, []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"TCPv6 on IPv4", vnetHdr{gsoType: gsoTCPv6, gsoSize: 1000}, big},
		{"UDP_L4 on TCP", vnetHdr{gsoType: gsoUDPL4, gsoSize: 1000}, big},
		{"UFO", vnetHdr{gsoType: 3, gsoSize: 1000}, big},
		{"no segment size", vnetHdr{gsoType: gsoTCPv4}, big},
		{"too many segments", vnetHdr{gsoType: gsoTCPv4, gsoSize: 1}, big},
		{"checksum outside", vnetHdr{flags: vnetNeedsCsum, csumStart: 10, csumOffset: 100}, []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}},
	}
	s := &splitter{mtu: 1500}
	for _, tc := range cases {
		if _, err := s.split(tc.h, bytes.Clone(tc.p)); !errors.Is(err, errOffload) {
			t.Errorf("%s: %v, want errOffload", tc.name, err)
		}
	}
	// a NEEDS_CSUM packet the receiver cannot recompute gets its checksum completed here.
	icmp := []byte{0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 0, 0, 0, 0, 1, 0, 2}
	segs, err := s.split(vnetHdr{flags: vnetNeedsCsum, csumStart: 20, csumOffset: 2}, icmp)
	if err != nil || len(segs) != 1 || fold(sum16(segs[0][20:], 0)) != 0xffff {
		t.Errorf("ICMP with NEEDS_CSUM: %v, %d packets, checksum not completed", err, len(segs))
	}
}

// FuzzSplit feeds arbitrary headers and packets to the splitter: it never panics, and what it
// returns fits the MTU and, for GSO, is well-formed TCP/UDP.
func FuzzSplit(f *testing.F) {
	p := tcpPacket(false, 1, tcpACK, nil, payloadOf(4000))
	h := make([]byte, vnetHdrLen)
	vnetHdr{flags: vnetNeedsCsum, gsoType: gsoTCPv4, gsoSize: 1400, csumStart: 20, csumOffset: 16}.put(h)
	f.Add(append(h, p...), 1500)
	f.Add(append(make([]byte, vnetHdrLen), udpPacket(1, payloadOf(50))...), 576)
	f.Fuzz(func(t *testing.T, b []byte, mtu int) {
		if mtu < MinMTU || mtu > MaxMTU || len(b) > vnetHdrLen+maxIPPacket {
			return
		}
		h, err := decodeVnetHdr(b)
		if err != nil {
			return
		}
		s := &splitter{mtu: mtu}
		segs, err := s.split(h, b[vnetHdrLen:])
		if err != nil {
			return
		}
		for _, p := range segs {
			if len(p) > mtu {
				t.Fatalf("segment of %d bytes, MTU %d", len(p), mtu)
			}
			if h.gsoType != gsoNone {
				if _, ok := parseL4(p); !ok {
					t.Fatalf("GSO segment % x is not well-formed", p)
				}
			}
		}
	})
}

// FuzzCoalesce feeds arbitrary packet sequences (split out of one byte string) to the
// coalescer: it never panics, every write has a valid header and re-splits, and the TCP/UDP
// payload bytes written equal those that went in.
func FuzzCoalesce(f *testing.F) {
	var seed []byte
	for _, p := range [][]byte{tcpPacket(false, 1, tcpACK, nil, payloadOf(100)), tcpPacket(false, 101, tcpACK, nil, payloadOf(100)),
		udpPacket(1, payloadOf(30)), udpPacket(1, payloadOf(30))} {
		seed = binary.BigEndian.AppendUint16(seed, uint16(len(p)))
		seed = append(seed, p...)
	}
	f.Add(seed, true)
	f.Fuzz(func(t *testing.T, b []byte, udp bool) {
		var want, got int
		var writes [][]byte
		c := newCoalescer(udp, func(w []byte) error { writes = append(writes, bytes.Clone(w)); return nil })
		for len(b) >= 2 {
			n := int(binary.BigEndian.Uint16(b))
			b = b[2:]
			if n > len(b) {
				break
			}
			p := bytes.Clone(b[:n])
			b = b[n:]
			if x, ok := parseL4(p); ok {
				want += len(p) - x.hdrLen
			}
			if _, err := c.add(p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.flush(); err != nil {
			t.Fatal(err)
		}
		s := &splitter{mtu: maxIPPacket}
		for _, w := range writes {
			h, err := decodeVnetHdr(w)
			if err != nil {
				t.Fatal(err)
			}
			if h.gsoType == gsoNone {
				if x, ok := parseL4(w[vnetHdrLen:]); ok {
					got += len(w) - vnetHdrLen - x.hdrLen
				}
				continue
			}
			segs, err := s.split(vnetHdr{gsoType: h.gsoType, gsoSize: h.gsoSize}, bytes.Clone(w[vnetHdrLen:]))
			if err != nil {
				t.Fatalf("written super-packet does not split: %v", err)
			}
			for _, p := range segs {
				x, _ := parseL4(p)
				got += len(p) - x.hdrLen
			}
		}
		if got != want {
			t.Fatalf("%d payload bytes written, %d went in", got, want)
		}
	})
}

// TestFinishCsum: a packet whose checksum field holds the pseudo-header sum (a sender with
// offloads), a complete checksum or garbage gets the complete checksum: the one's complement
// sum over pseudo-header and segment folds to 0xffff, and the result is the same whatever the
// field held.
func TestFinishCsum(t *testing.T) {
	for _, p := range [][]byte{tcpPacket(false, 7, tcpACK, nil, payloadOf(999)), tcpPacket(true, 7, tcpACK|tcpPSH, nil, payloadOf(1001)),
		udpPacket(53, payloadOf(301))} {
		x, ok := parseL4(p)
		if !ok {
			t.Fatal("test packet does not parse")
		}
		at := x.ipLen + x.csumOffset()
		finishCsum(p)
		first := binary.BigEndian.Uint16(p[at:])
		var s uint64
		if x.v6 {
			s = sum16(p[8:40], 0)
		} else {
			s = sum16(p[12:20], 0)
		}
		s += uint64(x.proto) + uint64(len(p)-x.ipLen)
		if got := fold(sum16(p[x.ipLen:], s)); got != 0xffff {
			t.Errorf("IPv%d proto %d: checksum %#04x does not verify (sum %#04x)", ipVersion(x), x.proto, first, got)
		}
		binary.BigEndian.PutUint16(p[at:], 0xbeef)
		finishCsum(p)
		if again := binary.BigEndian.Uint16(p[at:]); again != first {
			t.Errorf("IPv%d proto %d: checksum %#04x over a garbage field, %#04x before", ipVersion(x), x.proto, again, first)
		}
	}
	icmp := []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	before := bytes.Clone(icmp)
	finishCsum(icmp)
	if !bytes.Equal(icmp, before) {
		t.Error("finishCsum changed a packet that is not TCP or UDP")
	}
}
