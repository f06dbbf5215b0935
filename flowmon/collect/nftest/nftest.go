// Package nftest encodes NetFlow v5, NetFlow v9 and IPFIX datagrams from flow.Record values,
// for tests and benchmarks of the collector: what a test sends is a flow.Record, so it can
// compare what the collector decoded with it field by field. It is test support: product code
// must not import it.
package nftest

import (
	"encoding/binary"
	"net/netip"

	"github.com/ovsplane/ovsplane/flowmon/flow"
)

// V5Header is a NetFlow v5 header. UnixSecs/UnixNSecs is the export time and SysUptime the
// exporter's uptime (ms) at that time; records' First/Last are derived from their Start/End.
type V5Header struct {
	SysUptime, UnixSecs, UnixNSecs, FlowSequence uint32
	EngineType, EngineID                         uint8
	SamplingInterval                             uint16
}

// AppendV5 appends a NetFlow v5 datagram carrying recs (IPv4 only; times with ms precision;
// counters truncated to 32 bits, interfaces to 16) to b.
func AppendV5(b []byte, h V5Header, recs []flow.Record) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 5)
	b = be.AppendUint16(b, uint16(len(recs)))
	b = be.AppendUint32(b, h.SysUptime)
	b = be.AppendUint32(b, h.UnixSecs)
	b = be.AppendUint32(b, h.UnixNSecs)
	b = be.AppendUint32(b, h.FlowSequence)
	b = append(b, h.EngineType, h.EngineID)
	b = be.AppendUint16(b, h.SamplingInterval)
	now := int64(h.UnixSecs)*1e9 + int64(h.UnixNSecs)
	for i := range recs {
		r := &recs[i]
		b = append(b, v4(r.Src)...)
		b = append(b, v4(r.Dst)...)
		b = append(b, 0, 0, 0, 0) // nexthop
		b = be.AppendUint16(b, uint16(r.InIf))
		b = be.AppendUint16(b, uint16(r.OutIf))
		b = be.AppendUint32(b, uint32(r.Packets))
		b = be.AppendUint32(b, uint32(r.Bytes))
		b = be.AppendUint32(b, h.SysUptime-uint32((now-r.Start)/1e6))
		b = be.AppendUint32(b, h.SysUptime-uint32((now-r.End)/1e6))
		b = be.AppendUint16(b, r.SrcPort)
		b = be.AppendUint16(b, r.DstPort)
		b = append(b, 0, r.TCPFlags, r.Proto, r.ToS)
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // src_as, dst_as, masks, pad2
	}
	return b
}

func v4(a netip.Addr) []byte {
	if !a.Is4() {
		return []byte{0, 0, 0, 0}
	}
	s := a.As4()
	return s[:]
}

// Field is one template field: an information element number, its length and, when
// Enterprise is not 0 (IPFIX only), its private enterprise number.
type Field struct {
	Type, Length uint16
	Enterprise   uint32
}

// Template is a v9/IPFIX template (ID ≥ 256).
type Template struct {
	ID     uint16
	Fields []Field
}

// Set is one v9 flowset or IPFIX set: either Templates (a template set), or Data with Records
// encoded under it (a data set), or Raw bytes sent as the set's body under RawID (for bad
// input).
type Set struct {
	Templates []Template
	Data      *Template
	Records   []flow.Record
	RawID     uint16
	Raw       []byte
}

// Message is a NetFlow v9 (Version 9) or IPFIX (Version 10) datagram. ExportTime is Unix
// seconds; SysUptime (v9 only) the exporter's uptime in ms at ExportTime; Sequence the header's
// sequence number; Domain the v9 source id or IPFIX observation domain. Count, when not 0,
// overrides v9's computed record count (for bad input).
type Message struct {
	Version                                 uint16
	ExportTime, SysUptime, Sequence, Domain uint32
	Sets                                    []Set
	Count                                   uint16
}

// Append appends the encoded message to b.
func (m Message) Append(b []byte) []byte {
	be := binary.BigEndian
	start := len(b)
	b = be.AppendUint16(b, m.Version)
	b = be.AppendUint16(b, 0) // count (v9) or length (IPFIX), set below
	if m.Version == 9 {
		b = be.AppendUint32(b, m.SysUptime)
	}
	b = be.AppendUint32(b, m.ExportTime)
	b = be.AppendUint32(b, m.Sequence)
	b = be.AppendUint32(b, m.Domain)
	count := 0
	for _, s := range m.Sets {
		setStart := len(b)
		switch {
		case s.Templates != nil:
			id := uint16(2)
			if m.Version == 9 {
				id = 0
			}
			b = be.AppendUint16(b, id)
			b = be.AppendUint16(b, 0)
			for _, t := range s.Templates {
				b = be.AppendUint16(b, t.ID)
				b = be.AppendUint16(b, uint16(len(t.Fields)))
				for _, f := range t.Fields {
					typ := f.Type
					if f.Enterprise != 0 {
						typ |= 0x8000
					}
					b = be.AppendUint16(b, typ)
					b = be.AppendUint16(b, f.Length)
					if f.Enterprise != 0 {
						b = be.AppendUint32(b, f.Enterprise)
					}
				}
				count++
			}
		case s.Data != nil:
			b = be.AppendUint16(b, s.Data.ID)
			b = be.AppendUint16(b, 0)
			for i := range s.Records {
				b = m.appendRecord(b, s.Data, &s.Records[i])
				count++
			}
		default:
			b = be.AppendUint16(b, s.RawID)
			b = be.AppendUint16(b, 0)
			b = append(b, s.Raw...)
			count++
		}
		be.PutUint16(b[setStart+2:], uint16(len(b)-setStart))
	}
	if m.Version == 9 {
		if m.Count != 0 {
			count = int(m.Count)
		}
		be.PutUint16(b[start+2:], uint16(count))
	} else {
		be.PutUint16(b[start+2:], uint16(len(b)-start))
	}
	return b
}

// The information elements appendRecord knows (IANA IPFIX numbers, the same in v9).
const (
	OctetDelta      = 1
	PacketDelta     = 2
	Protocol        = 4
	ToS             = 5
	TCPFlags        = 6
	SrcPort         = 7
	SrcV4           = 8
	IngressIf       = 10
	DstPort         = 11
	DstV4           = 12
	EgressIf        = 14
	EndSysUptime    = 21
	StartSysUptime  = 22
	SrcV6           = 27
	DstV6           = 28
	SamplingInt     = 34
	FlowDirection   = 61
	InterfaceName   = 82
	OctetTotal      = 85
	PacketTotal     = 86
	L2OctetDelta    = 352
	StartMillis     = 152
	EndMillis       = 153
	StartDeltaMicro = 158
	EndDeltaMicro   = 159
	SysInitMillis   = 160
)

// appendRecord encodes r under t: each known element from r's fields (big-endian, truncated to
// the field length), unknown and enterprise elements as zeros. Times: *Millis absolute,
// *DeltaMicro relative to ExportTime, *SysUptime relative to the v9 header's SysUptime (or, in
// IPFIX, to SysInitMillis, which is encoded as ExportTime*1000 - SysUptime). OctetTotal and
// PacketTotal are the deltas plus 1<<40 (a cumulative count, as OVS sends next to the delta),
// L2OctetDelta the bytes plus 14 per packet. Like OVS, a record names one interface: with
// FlowDirection egress (1) when r has an OutPort and no InPort, else ingress (0) with InPort;
// InterfaceName must be variable-length (Length 0xffff).
func (m Message) appendRecord(b []byte, t *Template, r *flow.Record) []byte {
	exportNs := int64(m.ExportTime) * 1e9
	egress := r.InPort == "" && r.OutPort != ""
	name := r.InPort
	if egress {
		name = r.OutPort
	}
	initMs := uint64(m.ExportTime)*1000 - uint64(m.SysUptime)
	for _, f := range t.Fields {
		var v uint64
		var raw []byte
		if f.Enterprise == 0 {
			switch f.Type {
			case OctetDelta:
				v = r.Bytes
			case PacketDelta:
				v = r.Packets
			case Protocol:
				v = uint64(r.Proto)
			case ToS:
				v = uint64(r.ToS)
			case TCPFlags:
				v = uint64(r.TCPFlags)
			case SrcPort:
				v = uint64(r.SrcPort)
			case DstPort:
				v = uint64(r.DstPort)
			case IngressIf:
				v = uint64(r.InIf)
			case EgressIf:
				v = uint64(r.OutIf)
			case SamplingInt:
				v = uint64(r.SamplingRate)
			case SrcV4, SrcV6:
				raw = r.Src.AsSlice()
			case DstV4, DstV6:
				raw = r.Dst.AsSlice()
			case StartMillis:
				v = uint64(r.Start / 1e6)
			case EndMillis:
				v = uint64(r.End / 1e6)
			case StartDeltaMicro:
				v = uint64((exportNs - r.Start) / 1e3)
			case EndDeltaMicro:
				v = uint64((exportNs - r.End) / 1e3)
			case StartSysUptime:
				v = uint64(m.SysUptime) - uint64((exportNs-r.Start)/1e6)
			case EndSysUptime:
				v = uint64(m.SysUptime) - uint64((exportNs-r.End)/1e6)
			case SysInitMillis:
				v = initMs
			case OctetTotal:
				v = r.Bytes + 1<<40
			case PacketTotal:
				v = r.Packets + 1<<40
			case L2OctetDelta:
				v = r.Bytes + 14*r.Packets
			case FlowDirection:
				if egress {
					v = 1
				}
			}
		}
		if f.Length == 0xffff {
			var val []byte
			if f.Enterprise == 0 && f.Type == InterfaceName {
				val = []byte(name)
			}
			if len(val) < 255 {
				b = append(b, byte(len(val)))
			} else {
				b = append(b, 255, byte(len(val)>>8), byte(len(val)))
			}
			b = append(b, val...)
			continue
		}
		if raw != nil && len(raw) == int(f.Length) {
			b = append(b, raw...)
			continue
		}
		for i := int(f.Length) - 1; i >= 0; i-- {
			if i >= 8 {
				b = append(b, 0)
				continue
			}
			b = append(b, byte(v>>(8*i)))
		}
	}
	return b
}
