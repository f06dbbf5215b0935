package collect

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/netsampler/goflow2/v2/decoders/netflowlegacy"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
)

func v5Datagram() []byte {
	return nftest.AppendV5(nil, nftest.V5Header{SysUptime: 1e6, UnixSecs: exportSec}, records(30, false))
}

// BenchmarkGoflow2V5 is the anchor: goflow2's NetFlow v5 decoder alone, 30 records a datagram.
func BenchmarkGoflow2V5(b *testing.B) {
	dg := v5Datagram()
	var p netflowlegacy.PacketNetFlowV5
	b.ReportAllocs()
	for b.Loop() {
		if err := netflowlegacy.DecodeMessageVersion(bytes.NewBuffer(dg), &p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(30*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeV5 is the collector's decode (goflow2 plus conversion to flow.Record, sequence
// tracking and counters) into a reused slice.
func BenchmarkDecodeV5(b *testing.B) {
	dg := v5Datagram()
	d := NewState(Limits{}, &Counters{}).NewDecoder()
	out := make([]flow.Record, 0, 30)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if out, err = d.Decode(exporterA, 1, dg, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(30*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPipelineV5 is decode + resolve + Writer.Write + an asynchronous append to a store
// that discards, in one goroutine feeding the writer's: the CPU cost per record of everything
// but the socket and the store.
func BenchmarkPipelineV5(b *testing.B) {
	dg := v5Datagram()
	c := &Counters{}
	st := newFakeStore()
	st.discard = true
	w, err := NewWriter(st, WriterConfig{Instance: "bench", BatchAge: time.Hour}, c)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	res, err := NewOVSResolver([]HostFacts{{Bridges: []BridgeFacts{{Name: "br0", NetFlow: &NetFlowFacts{}, Ports: map[string]uint32{"p1": 1, "p2": 2}}}}})
	if err != nil {
		b.Fatal(err)
	}
	k := &worker{d: NewState(Limits{}, c).NewDecoder(), res: res, w: w}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k.Datagram(exporterA, 1, dg)
		if i%8 == 7 {
			k.EndBatch()
		}
	}
	k.EndBatch()
	if err := w.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(30*b.N)/b.Elapsed().Seconds(), "records/s")
	if s := c.Snapshot(); s.Stored != uint64(30*b.N) {
		b.Fatalf("stored %d of %d", s.Stored, 30*b.N)
	}
}
