package flowbed

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// NetFlow v5 sizes.
const (
	// V5HeaderLen is the datagram header.
	V5HeaderLen = 24
	// V5RecordLen is one flow record.
	V5RecordLen = 48
	// V5MaxRecords is the most records a datagram carries.
	V5MaxRecords = 30
)

// V5Header is a NetFlow v5 datagram's header.
type V5Header struct {
	Count        int
	SysUptimeMS  uint32
	UnixSecs     uint32
	UnixNsecs    uint32
	FlowSequence uint32
	EngineType   uint8
	EngineID     uint8
	Sampling     uint16
}

// V5Record is one NetFlow v5 flow record (the fields the bed compares).
type V5Record struct {
	Src, Dst      netip.AddrPort
	NextHop       netip.Addr
	Input, Output uint16
	Packets       uint32 // dPkts
	Octets        uint32 // dOctets
	FirstMS       uint32 // sysUptime at the first packet
	LastMS        uint32 // sysUptime at the last packet
	TCPFlags      uint8
	Proto         uint8
	ToS           uint8
}

// DecodeV5 decodes one NetFlow v5 datagram: the version must be 5, the count 1..30 and the
// length exactly 24 + 48×count.
func DecodeV5(b []byte) (V5Header, []V5Record, error) {
	var h V5Header
	if len(b) < V5HeaderLen {
		return h, nil, fmt.Errorf("netflow v5: datagram of %d bytes is shorter than the %d-byte header", len(b), V5HeaderLen)
	}
	if v := binary.BigEndian.Uint16(b); v != 5 {
		return h, nil, fmt.Errorf("netflow v5: version %d", v)
	}
	h.Count = int(binary.BigEndian.Uint16(b[2:]))
	if h.Count < 1 || h.Count > V5MaxRecords || len(b) != V5HeaderLen+h.Count*V5RecordLen {
		return h, nil, fmt.Errorf("netflow v5: count %d does not match %d bytes (want 1..%d records of %d bytes after the header)",
			h.Count, len(b), V5MaxRecords, V5RecordLen)
	}
	h.SysUptimeMS = binary.BigEndian.Uint32(b[4:])
	h.UnixSecs = binary.BigEndian.Uint32(b[8:])
	h.UnixNsecs = binary.BigEndian.Uint32(b[12:])
	h.FlowSequence = binary.BigEndian.Uint32(b[16:])
	h.EngineType, h.EngineID = b[20], b[21]
	h.Sampling = binary.BigEndian.Uint16(b[22:])
	recs := make([]V5Record, h.Count)
	for i := range recs {
		r := b[V5HeaderLen+i*V5RecordLen:]
		recs[i] = V5Record{
			Src:      netip.AddrPortFrom(addr4(r[0:4]), binary.BigEndian.Uint16(r[32:])),
			Dst:      netip.AddrPortFrom(addr4(r[4:8]), binary.BigEndian.Uint16(r[34:])),
			NextHop:  addr4(r[8:12]),
			Input:    binary.BigEndian.Uint16(r[12:]),
			Output:   binary.BigEndian.Uint16(r[14:]),
			Packets:  binary.BigEndian.Uint32(r[16:]),
			Octets:   binary.BigEndian.Uint32(r[20:]),
			FirstMS:  binary.BigEndian.Uint32(r[24:]),
			LastMS:   binary.BigEndian.Uint32(r[28:]),
			TCPFlags: r[37],
			Proto:    r[38],
			ToS:      r[39],
		}
	}
	return h, recs, nil
}

// addr4 returns the IPv4 address in b[0:4].
func addr4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }
