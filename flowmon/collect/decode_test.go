package collect

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
)

// exporterA is the test exporter: an address and the port it sends from.
var exporterA = netip.MustParseAddrPort("192.0.2.1:40000")

const exportSec = 1_780_000_000 // an export time, Unix s

// records returns n distinct records with ms-aligned times before exportSec, in the shape
// proto can carry (v5: IPv4, 16-bit interfaces, 32-bit counters).
func records(n int, v6 bool) []flow.Record {
	out := make([]flow.Record, n)
	for i := range out {
		src := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		dst := netip.AddrFrom4([4]byte{10, 1, byte(i), 7})
		if v6 {
			src = netip.AddrFrom16([16]byte{0x20, 0x01, 0xd, 0xb8, 15: byte(i)})
			dst = netip.AddrFrom16([16]byte{0x20, 0x01, 0xd, 0xb8, 14: 1, 15: byte(i)})
		}
		end := int64(exportSec)*1e9 - int64(i+1)*1e6
		out[i] = flow.Record{
			Start: end - int64(1000+i)*1e6, End: end,
			Src: src, Dst: dst, Proto: 6 + uint8(i%2)*11,
			SrcPort: uint16(1000 + i), DstPort: uint16(80 + i),
			TCPFlags: uint8(i), ToS: uint8(i * 4),
			Bytes: uint64(64 * (i + 1)), Packets: uint64(i + 1),
			InIf: uint32(i%5 + 1), OutIf: uint32(i%3 + 2),
		}
	}
	return out
}

// stamp sets what the decoder adds to what was sent.
func stamp(recs []flow.Record, received int64, proto flow.Protocol, domain, rate uint32) []flow.Record {
	out := append([]flow.Record(nil), recs...)
	for i := range out {
		out[i].Received, out[i].Exporter, out[i].Protocol, out[i].Domain = received, exporterA.Addr(), proto, domain
		if out[i].SamplingRate == 0 {
			out[i].SamplingRate = rate
		}
	}
	return out
}

func equalRecords(t *testing.T, what string, got, want []flow.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: record %d\n got %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}

func newTestDecoder(lim Limits) (*Decoder, *Counters) {
	c := &Counters{}
	return NewState(lim, c).NewDecoder(), c
}

func TestDecodeV5FieldByFieldAndSequenceGap(t *testing.T) {
	d, c := newTestDecoder(Limits{})
	h := nftest.V5Header{SysUptime: 3_600_000, UnixSecs: exportSec, EngineType: 2, EngineID: 1, SamplingInterval: 0x4000 | 100}
	sent := records(30, false)
	const recv = 42
	got, err := d.Decode(exporterA, recv, nftest.AppendV5(nil, h, sent), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "v5", got, stamp(sent, recv, flow.NetFlowV5, 2<<8|1, 100))

	// The next datagram should carry flow_sequence 30; 60 means 30 records were lost.
	h.FlowSequence = 60
	if _, err := d.Decode(exporterA, recv, nftest.AppendV5(nil, h, sent[:2]), got[:0]); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	if s.Dropped["sequence_gap"] != 30 || s.Records != 32 || s.Decoded != 2 {
		t.Errorf("after a gap of 30: %+v", s)
	}
	// In order again (62): no new loss.
	h.FlowSequence = 62
	if _, err := d.Decode(exporterA, recv, nftest.AppendV5(nil, h, sent[:1]), nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Snapshot(); s.Dropped["sequence_gap"] != 30 {
		t.Errorf("in-order datagram counted as loss: %+v", s.Dropped)
	}
}

func TestDecodeV5RejectsCountLengthMismatch(t *testing.T) {
	d, c := newTestDecoder(Limits{})
	b := nftest.AppendV5(nil, nftest.V5Header{UnixSecs: exportSec}, records(3, false))
	b[3] = 4 // count 4, only 3 records
	if _, err := d.Decode(exporterA, 0, b, nil); !errors.Is(err, ErrLengthMismatch) {
		t.Fatalf("err = %v, want length mismatch", err)
	}
	if _, err := d.Decode(exporterA, 0, b[:30], nil); !errors.Is(err, ErrLengthMismatch) {
		t.Fatalf("truncated record: err = %v", err)
	}
	if n := c.Snapshot().DecodeErrors["length_mismatch"]; n != 2 {
		t.Errorf("length_mismatch = %d, want 2", n)
	}
}

// ipfixV4 is an OVS-like IPFIX template: delta-microsecond times from the export time.
var ipfixV4 = nftest.Template{ID: 256, Fields: []nftest.Field{
	{Type: nftest.SrcV4, Length: 4}, {Type: nftest.DstV4, Length: 4}, {Type: nftest.Protocol, Length: 1},
	{Type: nftest.SrcPort, Length: 2}, {Type: nftest.DstPort, Length: 2}, {Type: nftest.TCPFlags, Length: 1},
	{Type: nftest.ToS, Length: 1}, {Type: nftest.OctetDelta, Length: 8}, {Type: nftest.PacketDelta, Length: 8},
	{Type: nftest.IngressIf, Length: 4}, {Type: nftest.EgressIf, Length: 4},
	{Type: 891, Length: 1, Enterprise: 6876}, // a VMware tunnel element, ignored
	{Type: nftest.StartDeltaMicro, Length: 4}, {Type: nftest.EndDeltaMicro, Length: 4},
}}

// ipfixV6 is the same flow under another layout: IPv6, absolute ms times, reduced-size counters.
var ipfixV6 = nftest.Template{ID: 256, Fields: []nftest.Field{
	{Type: nftest.StartMillis, Length: 8}, {Type: nftest.EndMillis, Length: 8},
	{Type: nftest.SrcV6, Length: 16}, {Type: nftest.DstV6, Length: 16}, {Type: nftest.Protocol, Length: 1},
	{Type: nftest.SrcPort, Length: 2}, {Type: nftest.DstPort, Length: 2}, {Type: nftest.TCPFlags, Length: 1},
	{Type: nftest.ToS, Length: 1}, {Type: nftest.OctetDelta, Length: 4}, {Type: nftest.PacketDelta, Length: 4},
	{Type: nftest.IngressIf, Length: 4}, {Type: nftest.EgressIf, Length: 4}, {Type: nftest.SamplingInt, Length: 4},
}}

func ipfix(seq, domain uint32, sets ...nftest.Set) []byte {
	return nftest.Message{Version: 10, ExportTime: exportSec, Sequence: seq, Domain: domain, Sets: sets}.Append(nil)
}

func TestDecodeIPFIXLateTemplateAndChange(t *testing.T) {
	d, c := newTestDecoder(Limits{})
	sent := records(10, false)
	t1 := ipfixV4
	// Data before its template: counted, nothing decoded.
	got, err := d.Decode(exporterA, 1, ipfix(0, 7, nftest.Set{Data: &t1, Records: sent}), nil)
	if !errors.Is(err, ErrNoTemplate) || len(got) != 0 {
		t.Fatalf("data before template: %d records, err %v", len(got), err)
	}
	// Template then data in one message, then data alone.
	got, err = d.Decode(exporterA, 2, ipfix(10, 7, nftest.Set{Templates: []nftest.Template{t1}}, nftest.Set{Data: &t1, Records: sent}), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "ipfix after template", got, stamp(sent, 2, flow.IPFIX, 7, 0))
	got, err = d.Decode(exporterA, 3, ipfix(20, 7, nftest.Set{Data: &t1, Records: sent[:4]}), got[:0])
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "ipfix data alone", got, stamp(sent[:4], 3, flow.IPFIX, 7, 0))

	// Template change: same ID, IPv6 layout.
	sent6 := records(5, true)
	for i := range sent6 {
		sent6[i].SamplingRate = 400
	}
	t2 := ipfixV6
	got, err = d.Decode(exporterA, 4, ipfix(24, 7, nftest.Set{Templates: []nftest.Template{t2}}, nftest.Set{Data: &t2, Records: sent6}), got[:0])
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "ipfix changed template", got, stamp(sent6, 4, flow.IPFIX, 7, 0))

	s := c.Snapshot()
	if s.DecodeErrors["no_template"] != 1 || s.Records != 10+4+5 {
		t.Errorf("counters: %+v", s)
	}
	// The first message (no template) made the sequence unknown: no loss was counted.
	if s.Dropped["sequence_gap"] != 0 {
		t.Errorf("sequence_gap = %d, want 0", s.Dropped["sequence_gap"])
	}
	// IPFIX sequence counts data records: after 29 records, 40 means 11 lost.
	if _, err := d.Decode(exporterA, 5, ipfix(40, 7, nftest.Set{Data: &t2, Records: sent6[:1]}), nil); err != nil {
		t.Fatal(err)
	}
	if n := c.Snapshot().Dropped["sequence_gap"]; n != 11 {
		t.Errorf("sequence_gap = %d, want 11", n)
	}
}

func TestDecodeIPFIXDomainsAreSeparate(t *testing.T) {
	d, _ := newTestDecoder(Limits{})
	a, b := ipfixV4, ipfixV6 // the same template ID with different layouts in two domains
	d4, d6 := records(3, false), records(3, true)
	if _, err := d.Decode(exporterA, 1, ipfix(0, 1, nftest.Set{Templates: []nftest.Template{a}}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(exporterA, 1, ipfix(0, 2, nftest.Set{Templates: []nftest.Template{b}}), nil); err != nil {
		t.Fatal(err)
	}
	got, err := d.Decode(exporterA, 1, ipfix(0, 1, nftest.Set{Data: &a, Records: d4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "domain 1", got, stamp(d4, 1, flow.IPFIX, 1, 0))
	got, err = d.Decode(exporterA, 1, ipfix(0, 2, nftest.Set{Data: &b, Records: d6}), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "domain 2", got, stamp(d6, 1, flow.IPFIX, 2, 0))
	// Another exporter has no templates.
	if _, err := d.Decode(netip.MustParseAddrPort("[2001:db8::9]:40000"), 1, ipfix(0, 1, nftest.Set{Data: &a, Records: d4}), nil); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("other exporter: err = %v, want no template", err)
	}
}

func TestDecodeV9SysUptimeAndDatagramGaps(t *testing.T) {
	d, c := newTestDecoder(Limits{})
	tpl := nftest.Template{ID: 300, Fields: []nftest.Field{
		{Type: nftest.SrcV4, Length: 4}, {Type: nftest.DstV4, Length: 4}, {Type: nftest.Protocol, Length: 1},
		{Type: nftest.SrcPort, Length: 2}, {Type: nftest.DstPort, Length: 2}, {Type: nftest.TCPFlags, Length: 1},
		{Type: nftest.ToS, Length: 1}, {Type: nftest.OctetDelta, Length: 4}, {Type: nftest.PacketDelta, Length: 4},
		{Type: nftest.IngressIf, Length: 2}, {Type: nftest.EgressIf, Length: 2},
		{Type: nftest.StartSysUptime, Length: 4}, {Type: nftest.EndSysUptime, Length: 4},
	}}
	sent := records(8, false)
	msg := func(seq uint32, sets ...nftest.Set) []byte {
		return nftest.Message{Version: 9, ExportTime: exportSec, SysUptime: 7_200_000, Sequence: seq, Domain: 5, Sets: sets}.Append(nil)
	}
	got, err := d.Decode(exporterA, 9, msg(100, nftest.Set{Templates: []nftest.Template{tpl}}, nftest.Set{Data: &tpl, Records: sent}), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "v9", got, stamp(sent, 9, flow.NetFlowV9, 5, 0))
	// v9 sequence counts datagrams: 101 expected, 104 means 3 datagrams lost.
	if _, err := d.Decode(exporterA, 9, msg(104, nftest.Set{Data: &tpl, Records: sent[:1]}), nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Snapshot(); s.LostDatagrams != 3 || s.Dropped["sequence_gap"] != 0 {
		t.Errorf("lost datagrams %d, sequence_gap %d; want 3, 0", s.LostDatagrams, s.Dropped["sequence_gap"])
	}
}

func TestDecodeTemplateBombsAreCountedAndBounded(t *testing.T) {
	lim := Limits{MaxTemplates: 4, MaxFields: 16}
	d, c := newTestDecoder(lim)
	big := nftest.Template{ID: 256, Fields: make([]nftest.Field, 17)}
	for i := range big.Fields {
		big.Fields[i] = nftest.Field{Type: nftest.OctetDelta, Length: 4}
	}
	if _, err := d.Decode(exporterA, 0, ipfix(0, 1, nftest.Set{Templates: []nftest.Template{big}}), nil); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("17 fields: err = %v, want template limit", err)
	}
	// Five templates in one domain: the fifth is refused.
	var ts []nftest.Template
	for i := range 5 {
		ts = append(ts, nftest.Template{ID: uint16(256 + i), Fields: ipfixV4.Fields[:3]})
	}
	if _, err := d.Decode(exporterA, 0, ipfix(0, 1, nftest.Set{Templates: ts}), nil); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("5 templates: err = %v, want template limit", err)
	}
	// A template of zero-length fields would never advance through a data set.
	zero := nftest.Template{ID: 400, Fields: []nftest.Field{{Type: nftest.OctetDelta, Length: 0}}}
	if _, err := d.Decode(exporterA, 0, ipfix(0, 2, nftest.Set{Templates: []nftest.Template{zero}}), nil); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("zero-size template: err = %v", err)
	}
	e := d.s.exporter(exporterA, 0)
	if n := e.templates.count(); n > lim.MaxTemplates {
		t.Errorf("%d templates stored, limit %d", n, lim.MaxTemplates)
	}
	if n := c.Snapshot().DecodeErrors["template_limit"]; n != 3 {
		t.Errorf("template_limit = %d, want 3", n)
	}
}

func TestDecodeIPFIXTemplateWithdrawal(t *testing.T) {
	d, _ := newTestDecoder(Limits{})
	tpl := ipfixV4
	if _, err := d.Decode(exporterA, 0, ipfix(0, 1, nftest.Set{Templates: []nftest.Template{tpl}}), nil); err != nil {
		t.Fatal(err)
	}
	withdraw := nftest.Template{ID: tpl.ID}
	if _, err := d.Decode(exporterA, 0, ipfix(0, 1, nftest.Set{Templates: []nftest.Template{withdraw}}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(exporterA, 0, ipfix(0, 1, nftest.Set{Data: &tpl, Records: records(1, false)}), nil); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("after withdrawal: err = %v, want no template", err)
	}
}

func TestDecodeBadDatagramsAreCounted(t *testing.T) {
	good := ipfix(0, 1, nftest.Set{Templates: []nftest.Template{ipfixV4}})
	cases := map[string]struct {
		b    []byte
		want DecodeError
	}{
		"empty":         {nil, ErrTruncated},
		"one byte":      {[]byte{0}, ErrTruncated},
		"version 7":     {[]byte{0, 7, 0, 0}, ErrVersion},
		"v5 header cut": {[]byte{0, 5, 0, 1, 0}, ErrTruncated},
		"ipfix length":  {good[:len(good)-1], ErrLengthMismatch},
		"oversized":     {make([]byte, MaxDatagram+1), ErrOversized},
		"set past end": {func() []byte {
			b := append([]byte(nil), good...)
			b[ipfixHeader+3] += 8
			return b
		}(), ErrSetLength},
		"v9 count below sets": {nftest.Message{Version: 9, Count: 1, Sets: []nftest.Set{
			{Templates: []nftest.Template{{ID: 256, Fields: ipfixV4.Fields[:3]}}}, {RawID: 999, Raw: []byte{1, 2, 3, 4}}}}.Append(nil), ErrLengthMismatch},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, c := newTestDecoder(Limits{})
			if _, err := d.Decode(exporterA, 0, tc.b, nil); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			s := c.Snapshot()
			if s.DecodeErrors[tc.want.String()] != 1 || s.DecodeErrorTotal() != 1 || s.Datagrams != 1 {
				t.Errorf("counters %+v", s)
			}
		})
	}
}

func Example_decoder() {
	c := &Counters{}
	d := NewState(Limits{}, c).NewDecoder()
	b := nftest.AppendV5(nil, nftest.V5Header{SysUptime: 1000, UnixSecs: exportSec}, records(2, false))
	recs, err := d.Decode(exporterA, 0, b, nil)
	fmt.Println(len(recs), err, c.Snapshot().Records)
	// Output: 2 <nil> 2
}

func TestDecodeExporterLimit(t *testing.T) {
	d, c := newTestDecoder(Limits{MaxExporters: 1, ExporterIdle: time.Minute})
	b := nftest.AppendV5(nil, nftest.V5Header{UnixSecs: exportSec}, records(1, false))
	other := netip.MustParseAddrPort("192.0.2.1:40001") // same address, another socket: another exporter
	if _, err := d.Decode(exporterA, 0, b, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(other, int64(time.Minute), b, nil); !errors.Is(err, ErrExporterLimit) {
		t.Fatalf("second exporter while the first is active: err = %v, want exporter limit", err)
	}
	if _, err := d.Decode(exporterA, int64(time.Minute), b, nil); err != nil {
		t.Fatalf("known exporter refused: %v", err)
	}
	if n := c.Snapshot().DecodeErrors["exporter_limit"]; n != 1 {
		t.Errorf("exporter_limit = %d, want 1", n)
	}
	// Once the first has been idle for more than ExporterIdle, the second takes its place.
	if _, err := d.Decode(other, int64(2*time.Minute)+1, b, nil); err != nil {
		t.Fatalf("second exporter after the first went idle: %v", err)
	}
}

// ovsIPFIX has the shape of OVS's per-bridge IPFIX data records: observation point,
// direction, the observed interface (ifIndex, type, variable-length name and description),
// addresses and ports, delta-microsecond times, and delta and total counters side by side.
var ovsIPFIX = nftest.Template{ID: 256, Fields: []nftest.Field{
	{Type: 138, Length: 4}, {Type: nftest.FlowDirection, Length: 1},
	{Type: nftest.IngressIf, Length: 4}, {Type: 368, Length: 4}, {Type: nftest.InterfaceName, Length: 0xffff}, {Type: 83, Length: 0xffff},
	{Type: 60, Length: 1}, {Type: 192, Length: 1}, {Type: nftest.Protocol, Length: 1}, {Type: nftest.ToS, Length: 1},
	{Type: nftest.SrcV4, Length: 4}, {Type: nftest.DstV4, Length: 4},
	{Type: nftest.SrcPort, Length: 2}, {Type: nftest.DstPort, Length: 2},
	{Type: nftest.StartDeltaMicro, Length: 4}, {Type: nftest.EndDeltaMicro, Length: 4},
	{Type: nftest.PacketDelta, Length: 8}, {Type: nftest.PacketTotal, Length: 8},
	{Type: nftest.L2OctetDelta, Length: 8}, {Type: nftest.OctetDelta, Length: 8}, {Type: nftest.OctetTotal, Length: 8},
	{Type: 136, Length: 1},
}}

// TestDecodeOVSShapedIPFIX: delta counters win over totals, the interface name lands in
// InPort or OutPort by direction, and the names are shared between records (interned).
func TestDecodeOVSShapedIPFIX(t *testing.T) {
	d, _ := newTestDecoder(Limits{})
	sent := records(4, false)
	for i := range sent {
		sent[i].TCPFlags, sent[i].InIf, sent[i].OutIf = 0, 0, 0 // not in OVS's record (InIf: see below)
		if i%2 == 0 {
			sent[i].InPort = "dpdk0"
		} else {
			sent[i].OutPort = "vhu1"
		}
	}
	tpl := ovsIPFIX
	got, err := d.Decode(exporterA, 1, ipfix(0, 3, nftest.Set{Templates: []nftest.Template{tpl}}, nftest.Set{Data: &tpl, Records: sent}), nil)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, "ovs ipfix", got, stamp(sent, 1, flow.IPFIX, 3, 0))
	if unsafe.StringData(got[0].InPort) != unsafe.StringData(got[2].InPort) {
		t.Error("interface names not interned")
	}
}
