package collect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netsampler/goflow2/v2/decoders/netflow"
	"github.com/netsampler/goflow2/v2/decoders/netflowlegacy"

	"github.com/ovsplane/ovsplane/flowmon/flow"
)

// MaxDatagram is the largest datagram the collector accepts: a NetFlow/IPFIX length field is
// 16 bits.
const MaxDatagram = 65535

// Limits bound the decoder's state. Zero fields take the defaults (DefaultLimits).
type Limits struct {
	// MaxExporters is how many exporters (source address and port: an IPFIX transport
	// session) the collector keeps templates and sequence numbers for. At the limit, a new
	// exporter replaces those idle for ExporterIdle; if none is, its datagrams are dropped
	// (ErrExporterLimit).
	MaxExporters int
	// ExporterIdle is how long an exporter may send nothing before a new one may take its
	// place at the MaxExporters limit (default 30 minutes: longer than OVS's 10-minute
	// IPFIX template interval).
	ExporterIdle time.Duration
	// MaxDomains is how many (version, observation domain) pairs one exporter may have
	// templates for.
	MaxDomains int
	// MaxTemplates is how many templates one exporter and domain may define.
	MaxTemplates int
	// MaxFields is how many fields one template may have (scope and option fields together).
	MaxFields int
}

// DefaultLimits returns the limits a zero Limits field takes: 4096 exporters, 64 domains per
// exporter, 256 templates per domain, 128 fields per template, 30 minutes' idleness.
func DefaultLimits() Limits {
	return Limits{MaxExporters: 4096, MaxDomains: 64, MaxTemplates: 256, MaxFields: 128, ExporterIdle: 30 * time.Minute}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int }{
		{&l.MaxExporters, &d.MaxExporters}, {&l.MaxDomains, &d.MaxDomains},
		{&l.MaxTemplates, &d.MaxTemplates}, {&l.MaxFields, &d.MaxFields},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.ExporterIdle <= 0 {
		l.ExporterIdle = d.ExporterIdle
	}
	return l
}

// State is what decoding shares across worker goroutines: per exporter templates and sequence
// numbers, and the counters. It is safe for concurrent use; each goroutine uses its own
// Decoder on it.
type State struct {
	lim       Limits
	c         *Counters
	mu        sync.Mutex
	exporters map[netip.AddrPort]*exporterState
}

type seqKey struct {
	domain uint32
	proto  flow.Protocol
}

type seqState struct {
	next  uint32
	known bool
}

type exporterState struct {
	lastSeen  atomic.Int64 // Unix ns of its last datagram
	templates *templateSystem
	mu        sync.Mutex
	seq       map[seqKey]*seqState
}

// NewState returns decoding state bounded by lim, counting into c.
func NewState(lim Limits, c *Counters) *State {
	return &State{lim: lim.withDefaults(), c: c, exporters: make(map[netip.AddrPort]*exporterState)}
}

// exporter returns a's state, creating it; at the MaxExporters limit it first forgets the
// exporters idle for ExporterIdle at now (Unix ns), and returns nil if there is none.
func (s *State) exporter(a netip.AddrPort, now int64) *exporterState {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.exporters[a]
	if !ok {
		if len(s.exporters) >= s.lim.MaxExporters {
			for k, old := range s.exporters {
				if now-old.lastSeen.Load() > int64(s.lim.ExporterIdle) {
					delete(s.exporters, k)
				}
			}
			if len(s.exporters) >= s.lim.MaxExporters {
				return nil
			}
		}
		e = &exporterState{templates: newTemplateSystem(s.lim), seq: make(map[seqKey]*seqState)}
		s.exporters[a] = e
	}
	e.lastSeen.Store(now)
	return e
}

// sequence checks seq against what the exporter's last datagram in (domain, proto) led to
// expect and records the next expectation, seq+n. A forward jump is loss: records for v5 and
// IPFIX, datagrams for v9. A backward step or a jump of 2^31 or more is an exporter restart (or
// reordering) and resynchronises. complete=false (the datagram was not fully decoded, so n is
// unknown) makes the next datagram resynchronise instead of being checked.
func (s *State) sequence(e *exporterState, k seqKey, seq, n uint32, complete bool) {
	e.mu.Lock()
	st, ok := e.seq[k]
	if !ok {
		if len(e.seq) >= s.lim.MaxDomains*3 {
			e.mu.Unlock()
			return
		}
		st = &seqState{}
		e.seq[k] = st
	}
	gap := seq - st.next
	known := st.known
	st.next, st.known = seq+n, complete
	e.mu.Unlock()
	switch {
	case !known || gap == 0:
	case gap >= 1<<31:
		s.c.seqResets.Add(1)
	case k.proto == flow.NetFlowV9:
		s.c.lostDatagrams.Add(uint64(gap))
	default:
		s.c.drop(DropSequenceGap, int(gap))
	}
}

// Decoder decodes datagrams into records. It is used by one goroutine at a time and reuses its
// buffers across calls.
type Decoder struct {
	s     *State
	buf   bytes.Buffer
	v5    netflowlegacy.PacketNetFlowV5
	v9    netflow.NFv9Packet
	ipfix netflow.IPFIXPacket
	names map[string]string // interned interface names (IPFIX interfaceName), bounded by maxNames
}

// NewDecoder returns a decoder on s.
func (s *State) NewDecoder() *Decoder { return &Decoder{s: s, names: make(map[string]string)} }

// Decode decodes one datagram that exporter (source address and port) sent and the collector
// received at received (Unix ns), appends its records to out and returns it. Templates and
// sequence numbers are kept per exporter address and port (an IPFIX transport session; each
// OVS bridge exports from its own socket) and observation domain. It counts the datagram, its records
// and, on failure, the reason (the returned error is a DecodeError, possibly wrapped). A
// datagram whose data sets lack their template is decoded for the rest and counted under
// ErrNoTemplate.
func (d *Decoder) Decode(exporter netip.AddrPort, received int64, dgram []byte, out []flow.Record) ([]flow.Record, error) {
	c := d.s.c
	c.datagrams.Add(1)
	c.bytes.Add(uint64(len(dgram)))
	n0 := len(out)
	out, err := d.decode(netip.AddrPortFrom(exporter.Addr().Unmap(), exporter.Port()), received, dgram, out)
	var de DecodeError
	switch {
	case err == nil:
		c.decoded.Add(1)
	case errors.As(err, &de):
		c.decodeError(de)
	default:
		c.decodeError(ErrMalformed)
	}
	c.records.Add(uint64(len(out) - n0))
	return out, err
}

func (d *Decoder) decode(exporter netip.AddrPort, received int64, dgram []byte, out []flow.Record) ([]flow.Record, error) {
	if len(dgram) > MaxDatagram {
		return out, ErrOversized
	}
	if len(dgram) < 2 {
		return out, ErrTruncated
	}
	switch v := binary.BigEndian.Uint16(dgram); v {
	case 5:
		return d.decodeV5(exporter, received, dgram, out)
	case 9, 10:
		return d.decodeTemplated(exporter, received, v, dgram, out)
	default:
		return out, fmt.Errorf("version %d from %v: %w", v, exporter, ErrVersion)
	}
}

const (
	v5Header    = 24
	v5Record    = 48
	v9Header    = 20
	ipfixHeader = 16
)

func (d *Decoder) decodeV5(exporter netip.AddrPort, received int64, dgram []byte, out []flow.Record) ([]flow.Record, error) {
	if len(dgram) < v5Header {
		return out, ErrTruncated
	}
	count := int(binary.BigEndian.Uint16(dgram[2:]))
	if len(dgram) != v5Header+count*v5Record {
		return out, fmt.Errorf("netflow v5 from %v: count %d needs %d bytes, datagram has %d: %w",
			exporter, count, v5Header+count*v5Record, len(dgram), ErrLengthMismatch)
	}
	e := d.s.exporter(exporter, received)
	if e == nil {
		return out, ErrExporterLimit
	}
	d.buf = *bytes.NewBuffer(dgram)
	p := &d.v5
	if err := netflowlegacy.DecodeMessageVersion(&d.buf, p); err != nil {
		return out, fmt.Errorf("netflow v5 from %v: %w (%w)", exporter, ErrMalformed, err)
	}
	// The exporter's clock: unix time at sysUptime; a record's First/Last are sysUptime ms.
	now := int64(p.UnixSecs)*1e9 + int64(p.UnixNSecs)
	domain := uint32(p.EngineType)<<8 | uint32(p.EngineId)
	rate := uint32(p.SamplingInterval & 0x3fff)
	for i := range p.Records {
		r := &p.Records[i]
		out = append(out, flow.Record{
			Received:     received,
			Start:        now - int64(p.SysUptime-r.First)*1e6,
			End:          now - int64(p.SysUptime-r.Last)*1e6,
			Exporter:     exporter.Addr(),
			Protocol:     flow.NetFlowV5,
			Domain:       domain,
			SamplingRate: rate,
			Src:          v4(uint32(r.SrcAddr)),
			Dst:          v4(uint32(r.DstAddr)),
			Proto:        r.Proto,
			SrcPort:      r.SrcPort,
			DstPort:      r.DstPort,
			TCPFlags:     r.TCPFlags,
			ToS:          r.Tos,
			Bytes:        uint64(r.DOctets),
			Packets:      uint64(r.DPkts),
			InIf:         uint32(r.Input),
			OutIf:        uint32(r.Output),
		})
	}
	d.s.sequence(e, seqKey{domain, flow.NetFlowV5}, p.FlowSequence, uint32(count), true)
	return out, nil
}

func v4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// prescan checks a v9/IPFIX datagram's structure before goflow2 sees it: set lengths inside
// the datagram, template field counts within MaxFields and inside their set. It returns the
// number of sets.
func (d *Decoder) prescan(version uint16, body []byte) (int, error) {
	sets := 0
	for len(body) >= 4 {
		id := binary.BigEndian.Uint16(body)
		l := int(binary.BigEndian.Uint16(body[2:]))
		if l < 4 || l > len(body) {
			return sets, fmt.Errorf("set %d length %d with %d bytes left: %w", id, l, len(body), ErrSetLength)
		}
		set := body[4:l]
		body = body[l:]
		sets++
		var err error
		switch {
		case version == 9 && id == 0, version == 10 && id == 2:
			err = d.scanTemplates(version, set)
		case version == 9 && id == 1:
			err = d.scanV9Options(set)
		case version == 10 && id == 3:
			err = d.scanIPFIXOptions(set)
		case id < 256:
			err = fmt.Errorf("set id %d is reserved: %w", id, ErrMalformed)
		}
		if err != nil {
			return sets, err
		}
	}
	if version == 10 && len(body) != 0 {
		return sets, fmt.Errorf("%d bytes after the last set: %w", len(body), ErrSetLength)
	}
	return sets, nil
}

func (d *Decoder) scanTemplates(version uint16, set []byte) error {
	for len(set) >= 4 {
		id := binary.BigEndian.Uint16(set)
		n := int(binary.BigEndian.Uint16(set[2:]))
		if n > d.s.lim.MaxFields {
			return fmt.Errorf("template %d has %d fields, limit %d: %w", id, n, d.s.lim.MaxFields, ErrTemplateLimit)
		}
		if id < 256 && n > 0 {
			return fmt.Errorf("template id %d is reserved: %w", id, ErrMalformed)
		}
		set = set[4:]
		for range n {
			if len(set) < 4 {
				return fmt.Errorf("template %d runs past its set: %w", id, ErrSetLength)
			}
			enterprise := version == 10 && set[0]&0x80 != 0
			set = set[4:]
			if enterprise {
				if len(set) < 4 {
					return fmt.Errorf("template %d runs past its set: %w", id, ErrSetLength)
				}
				set = set[4:]
			}
		}
	}
	return nil
}

func (d *Decoder) scanV9Options(set []byte) error {
	for len(set) >= 6 {
		scope, opt := int(binary.BigEndian.Uint16(set[2:])), int(binary.BigEndian.Uint16(set[4:]))
		if scope%4 != 0 || opt%4 != 0 || (scope+opt)/4 > d.s.lim.MaxFields {
			return fmt.Errorf("options template with %d+%d field bytes: %w", scope, opt, ErrTemplateLimit)
		}
		if 6+scope+opt > len(set) {
			return fmt.Errorf("options template runs past its set: %w", ErrSetLength)
		}
		set = set[6+scope+opt:]
		// v9 pads option template sets to 4 bytes.
		if len(set) < 6 {
			break
		}
	}
	return nil
}

func (d *Decoder) scanIPFIXOptions(set []byte) error {
	for len(set) >= 6 {
		n := int(binary.BigEndian.Uint16(set[2:]))
		if n > d.s.lim.MaxFields {
			return fmt.Errorf("options template with %d fields, limit %d: %w", n, d.s.lim.MaxFields, ErrTemplateLimit)
		}
		set = set[6:]
		for range n {
			if len(set) < 4 {
				return fmt.Errorf("options template runs past its set: %w", ErrSetLength)
			}
			enterprise := set[0]&0x80 != 0
			set = set[4:]
			if enterprise {
				if len(set) < 4 {
					return fmt.Errorf("options template runs past its set: %w", ErrSetLength)
				}
				set = set[4:]
			}
		}
	}
	return nil
}

// header holds what a v9/IPFIX header says about time, for converting record times.
type header struct {
	exportNs int64  // export time, Unix ns
	uptimeMs uint32 // v9: the exporter's sysUptime at export time
	hasUp    bool
}

func (d *Decoder) decodeTemplated(exporter netip.AddrPort, received int64, version uint16, dgram []byte, out []flow.Record) ([]flow.Record, error) {
	hl, proto := v9Header, flow.NetFlowV9
	if version == 10 {
		hl, proto = ipfixHeader, flow.IPFIX
	}
	if len(dgram) < hl {
		return out, ErrTruncated
	}
	if version == 10 {
		if l := int(binary.BigEndian.Uint16(dgram[2:])); l != len(dgram) {
			return out, fmt.Errorf("ipfix from %v: length %d, datagram %d bytes: %w", exporter, l, len(dgram), ErrLengthMismatch)
		}
	}
	sets, err := d.prescan(version, dgram[hl:])
	if err != nil {
		return out, fmt.Errorf("%v from %v: %w", proto, exporter, err)
	}
	if version == 9 && int(binary.BigEndian.Uint16(dgram[2:])) < sets {
		return out, fmt.Errorf("netflow v9 from %v: count %d below its %d flowsets: %w",
			exporter, binary.BigEndian.Uint16(dgram[2:]), sets, ErrLengthMismatch)
	}
	e := d.s.exporter(exporter, received)
	if e == nil {
		return out, ErrExporterLimit
	}
	d.buf = *bytes.NewBuffer(dgram)
	d.v9.FlowSets, d.ipfix.FlowSets = nil, nil
	gerr := netflow.DecodeMessageVersion(&d.buf, e.templates, &d.v9, &d.ipfix)
	noTemplate := false
	if gerr != nil {
		switch {
		case errors.Is(gerr, ErrTemplateLimit):
			return out, fmt.Errorf("%v from %v: %w", proto, exporter, ErrTemplateLimit)
		case errors.Is(gerr, netflow.ErrorTemplateNotFound) && !hasOtherError(gerr):
			noTemplate = true
		default:
			return out, fmt.Errorf("%v from %v: %w (%w)", proto, exporter, ErrMalformed, gerr)
		}
	}
	var h header
	var domain, seq uint32
	var flowSets []any
	if version == 9 {
		h = header{exportNs: int64(d.v9.UnixSeconds) * 1e9, uptimeMs: d.v9.SystemUptime, hasUp: true}
		domain, seq, flowSets = d.v9.SourceId, d.v9.SequenceNumber, d.v9.FlowSets
	} else {
		h = header{exportNs: int64(d.ipfix.ExportTime) * 1e9}
		domain, seq, flowSets = d.ipfix.ObservationDomainId, d.ipfix.SequenceNumber, d.ipfix.FlowSets
	}
	var dataRecords uint32
	for _, fs := range flowSets {
		switch fs := fs.(type) {
		case netflow.DataFlowSet:
			for i := range fs.Records {
				out = append(out, flow.Record{Received: received, Exporter: exporter.Addr(), Protocol: proto, Domain: domain})
				d.fillRecord(&out[len(out)-1], fs.Records[i].Values, h)
			}
			dataRecords += uint32(len(fs.Records))
		case netflow.OptionsDataFlowSet:
			dataRecords += uint32(len(fs.Records))
		case netflow.RawFlowSet:
			noTemplate = true
		}
	}
	n := dataRecords
	if version == 9 {
		n = 1
	}
	d.s.sequence(e, seqKey{domain, proto}, seq, n, !noTemplate)
	if noTemplate {
		return out, fmt.Errorf("%v from %v domain %d: data before its template: %w", proto, exporter, domain, ErrNoTemplate)
	}
	return out, nil
}

// hasOtherError reports whether a joined goflow2 error holds anything but missing templates.
func hasOtherError(err error) bool {
	type unwrapper interface{ Unwrap() []error }
	for {
		if j, ok := err.(unwrapper); ok {
			for _, e := range j.Unwrap() {
				if !errors.Is(e, netflow.ErrorTemplateNotFound) {
					return true
				}
			}
			return false
		}
		u := errors.Unwrap(err)
		if u == nil {
			return !errors.Is(err, netflow.ErrorTemplateNotFound)
		}
		err = u
	}
}

// The IPFIX information elements (and their NetFlow v9 equivalents, same numbers) the
// collector reads.
const (
	ieOctetDelta       = 1
	iePacketDelta      = 2
	ieProtocol         = 4
	ieToS              = 5
	ieTCPFlags         = 6
	ieSrcPort          = 7
	ieSrcV4            = 8
	ieIngressIf        = 10
	ieDstPort          = 11
	ieDstV4            = 12
	ieEgressIf         = 14
	ieEndSysUp         = 21
	ieStartSysUp       = 22
	ieSrcV6            = 27
	ieDstV6            = 28
	ieICMPv4           = 32
	ieSamplingInterval = 34
	ieSamplerRandom    = 50
	ieOctetTotal       = 85
	iePacketTotal      = 86
	ieICMPv6           = 139
	ieStartSec         = 150
	ieEndSec           = 151
	ieStartMs          = 152
	ieEndMs            = 153
	ieStartUs          = 154
	ieEndUs            = 155
	ieStartNs          = 156
	ieEndNs            = 157
	ieStartDeltaUs     = 158
	ieEndDeltaUs       = 159
	ieSysInitMs        = 160
	ieFlowDirection    = 61
	ieInterfaceName    = 82
	ieL2OctetDelta     = 352
)

// maxNames bounds a decoder's interned interface names; the table restarts when full.
const maxNames = 4096

// uintBE reads a big-endian unsigned integer of 1 to 8 bytes (IPFIX reduced-size encoding).
func uintBE(b []byte) uint64 {
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// ntpNs converts an NTP 64-bit timestamp (seconds since 1900, 2^-32 fractions) to Unix ns.
func ntpNs(v uint64) int64 {
	const ntpToUnix = 2208988800
	sec := int64(v>>32) - ntpToUnix
	frac := int64((v & 0xffffffff) * 1e9 >> 32)
	return sec*1e9 + frac
}

// intern returns b as a string, shared with earlier records of the same name.
func (d *Decoder) intern(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	if len(d.names) >= maxNames {
		clear(d.names)
	}
	s := string(b)
	d.names[s] = s
	return s
}

// fillRecord sets r's flow fields from one decoded v9/IPFIX data record, with h for the
// relative times. The time fields in order of preference: absolute (ns, us, ms, s), delta from
// export time (OVS's flowStart/EndDeltaMicroseconds), sysUptime with systemInitTime (IPFIX) or
// with the v9 header's uptime; else the export time. Counters: the delta counts, else the
// totals (OVS sends both; a total is cumulative over the flow's life), and for bytes, the
// layer-2 delta when no layer-3 count is present (OVS's non-IP flows). OVS's IPFIX names the
// observed interface (interfaceName) and says with flowDirection whether it is the ingress
// (InPort) or egress (OutPort) one.
func (d *Decoder) fillRecord(r *flow.Record, vals []netflow.DataField, h header) {
	var start, end int64
	var startUp, endUp, initMs uint64
	var hasStartUp, hasEndUp, hasInit bool
	var icmp uint16
	var octTotal, pktTotal, l2Delta uint64
	var hasOctDelta, hasPktDelta, hasOctTotal, hasPktTotal, hasL2 bool
	var ifName []byte
	egress := false
	for i := range vals {
		f := &vals[i]
		if f.PenProvided {
			continue
		}
		b, _ := f.Value.([]byte)
		if len(b) == 0 {
			continue
		}
		switch f.Type {
		case ieOctetDelta:
			r.Bytes, hasOctDelta = uintBE(b), true
		case iePacketDelta:
			r.Packets, hasPktDelta = uintBE(b), true
		case ieOctetTotal:
			octTotal, hasOctTotal = uintBE(b), true
		case iePacketTotal:
			pktTotal, hasPktTotal = uintBE(b), true
		case ieL2OctetDelta:
			l2Delta, hasL2 = uintBE(b), true
		case ieFlowDirection:
			egress = uintBE(b) == 1
		case ieInterfaceName:
			ifName = b
		case ieProtocol:
			r.Proto = uint8(uintBE(b))
		case ieToS:
			r.ToS = uint8(uintBE(b))
		case ieTCPFlags:
			r.TCPFlags = uint8(uintBE(b))
		case ieSrcPort:
			r.SrcPort = uint16(uintBE(b))
		case ieDstPort:
			r.DstPort = uint16(uintBE(b))
		case ieSrcV4, ieSrcV6, ieDstV4, ieDstV6:
			a, ok := netip.AddrFromSlice(b)
			if !ok {
				continue
			}
			if f.Type == ieSrcV4 || f.Type == ieSrcV6 {
				r.Src = a.Unmap()
			} else {
				r.Dst = a.Unmap()
			}
		case ieIngressIf:
			r.InIf = uint32(uintBE(b))
		case ieEgressIf:
			r.OutIf = uint32(uintBE(b))
		case ieICMPv4, ieICMPv6:
			icmp = uint16(uintBE(b))
		case ieSamplingInterval, ieSamplerRandom:
			r.SamplingRate = uint32(uintBE(b))
		case ieStartSec:
			start = int64(uintBE(b)) * 1e9
		case ieEndSec:
			end = int64(uintBE(b)) * 1e9
		case ieStartMs:
			start = int64(uintBE(b)) * 1e6
		case ieEndMs:
			end = int64(uintBE(b)) * 1e6
		case ieStartUs, ieStartNs:
			start = ntpNs(uintBE(b))
		case ieEndUs, ieEndNs:
			end = ntpNs(uintBE(b))
		case ieStartDeltaUs:
			start = h.exportNs - int64(uintBE(b))*1e3
		case ieEndDeltaUs:
			end = h.exportNs - int64(uintBE(b))*1e3
		case ieStartSysUp:
			startUp, hasStartUp = uintBE(b), true
		case ieEndSysUp:
			endUp, hasEndUp = uintBE(b), true
		case ieSysInitMs:
			initMs, hasInit = uintBE(b), true
		}
	}
	up := func(ms uint64) int64 {
		if hasInit {
			return int64(initMs+ms) * 1e6
		}
		if h.hasUp {
			return h.exportNs - int64(h.uptimeMs-uint32(ms))*1e6
		}
		return h.exportNs
	}
	if start == 0 && hasStartUp {
		start = up(startUp)
	}
	if end == 0 && hasEndUp {
		end = up(endUp)
	}
	if end == 0 {
		end = h.exportNs
	}
	if start == 0 {
		start = end
	}
	r.Start, r.End = start, end
	switch {
	case hasOctDelta:
	case hasOctTotal:
		r.Bytes = octTotal
	case hasL2:
		r.Bytes = l2Delta
	}
	if !hasPktDelta && hasPktTotal {
		r.Packets = pktTotal
	}
	if len(ifName) > 0 {
		if egress {
			r.OutPort = d.intern(ifName)
		} else {
			r.InPort = d.intern(ifName)
		}
	}
	if icmp != 0 && r.DstPort == 0 {
		r.DstPort = icmp
	}
}
