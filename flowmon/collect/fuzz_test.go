package collect

import (
	"errors"
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
)

var fuzzTemplate = nftest.Template{ID: 256, Fields: ipfixV4.Fields[:11]} // no enterprise field: valid in v9 too

// fuzzSetup is what every fuzz input is decoded after: templates for v9 and IPFIX in domain 1,
// so mutated data sets reach the record conversion.
func fuzzSetup() [][]byte {
	t := fuzzTemplate
	return [][]byte{
		nftest.Message{Version: 9, ExportTime: exportSec, Domain: 1, Sets: []nftest.Set{{Templates: []nftest.Template{t}}}}.Append(nil),
		ipfix(0, 1, nftest.Set{Templates: []nftest.Template{t}}),
	}
}

// FuzzDatagram feeds arbitrary datagrams to the decoder: it must not panic, must count every
// datagram as decoded or under exactly one error reason, must keep its output and its
// template state within bounds, and must reject what the header contradicts.
func FuzzDatagram(f *testing.F) {
	t := fuzzTemplate
	v5 := nftest.AppendV5(nil, nftest.V5Header{SysUptime: 5000, UnixSecs: exportSec}, records(3, false))
	v9 := nftest.Message{Version: 9, ExportTime: exportSec, SysUptime: 1000, Domain: 1, Sets: []nftest.Set{
		{Templates: []nftest.Template{t}}, {Data: &t, Records: records(4, false)}}}.Append(nil)
	ipx := ipfix(3, 1, nftest.Set{Templates: []nftest.Template{ipfixV4}}, nftest.Set{Data: &t, Records: records(4, false)})
	bomb := ipfix(0, 1, nftest.Set{Templates: []nftest.Template{{ID: 300, Fields: make([]nftest.Field, 1000)}}})
	zero := ipfix(0, 1, nftest.Set{Templates: []nftest.Template{{ID: 301, Fields: []nftest.Field{{Type: 1}}}}})
	for _, seed := range [][]byte{
		v5, v9, ipx, bomb, zero,
		v5[:len(v5)-7], v9[:len(v9)-3], ipx[:20], // truncated
		{0, 9}, {0, 10, 0, 16}, {0, 1, 2, 3}, // headers only, wrong version
		append(append([]byte(nil), v5...), 0, 0, 0), // count/length mismatch
		nftest.Message{Version: 9, Domain: 1, Sets: []nftest.Set{{RawID: 256, Raw: make([]byte, 200)}}}.Append(nil),
		ipfix(0, 1, nftest.Set{RawID: 256, Raw: []byte{1}}), // a data set shorter than a record
	} {
		f.Add(seed)
	}
	lim := Limits{MaxExporters: 2, MaxDomains: 4, MaxTemplates: 8, MaxFields: 64}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &Counters{}
		s := NewState(lim, c)
		d := s.NewDecoder()
		for _, m := range fuzzSetup() {
			if _, err := d.Decode(exporterA, 1, m, nil); err != nil {
				t.Fatalf("setup: %v", err)
			}
		}
		before := c.Snapshot()
		out, err := d.Decode(exporterA, 1, b, nil)
		after := c.Snapshot()
		if after.Datagrams != before.Datagrams+1 {
			t.Fatalf("datagram not counted: %+v", after)
		}
		errs := after.DecodeErrorTotal() - before.DecodeErrorTotal()
		decoded := after.Decoded - before.Decoded
		if err == nil && (decoded != 1 || errs != 0) || err != nil && (decoded != 0 || errs != 1) {
			t.Fatalf("err %v counted as %d decoded, %d errors", err, decoded, errs)
		}
		var de DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error without a reason: %v", err)
		}
		// Every record takes at least one byte of the datagram.
		if len(out) > len(b) {
			t.Fatalf("%d records from %d bytes", len(out), len(b))
		}
		if after.Records-before.Records != uint64(len(out)) {
			t.Fatalf("records counted %d, returned %d", after.Records-before.Records, len(out))
		}
		if n := s.exporter(exporterA, 1).templates.count(); n > lim.MaxDomains*lim.MaxTemplates {
			t.Fatalf("%d templates stored, bound %d", n, lim.MaxDomains*lim.MaxTemplates)
		}
		for _, tpl := range s.exporter(exporterA, 1).templates.GetTemplates() {
			if n, advances := templateShape(tpl); n > lim.MaxFields || !advances {
				t.Fatalf("stored template with %d fields (advances %v)", n, advances)
			}
		}
		if len(b) > MaxDatagram && !errors.Is(err, ErrOversized) {
			t.Fatalf("%d bytes accepted", len(b))
		}
	})
}
