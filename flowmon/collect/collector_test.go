package collect

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
)

// waitFor polls cond until it holds or the test's context ends (no deadline of its own).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("never: %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

func startCollector(t *testing.T, addr string, st *fakeStore, res Resolver) (*Collector, func() error) {
	t.Helper()
	col, err := New(t.Context(), Config{
		Receiver: ReceiverConfig{Addr: addr, Sockets: 3, RcvBuf: 1 << 20, Batch: 8},
		Writer:   WriterConfig{Instance: "test", BatchRecords: 64, BatchAge: time.Hour},
	}, st, res)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- col.Run(ctx) }()
	t.Cleanup(cancel)
	return col, func() error { cancel(); return <-errc }
}

// TestCollectorOverLoopback sends NetFlow v5 over real UDP sockets, IPv4 and IPv6, to a
// collector with three SO_REUSEPORT sockets and checks every record arrives in the store,
// decoded field by field and enriched, and that the counters add up.
func TestCollectorOverLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			st := newFakeStore()
			res, err := NewOVSResolver([]HostFacts{{Bridges: []BridgeFacts{{Name: "br0",
				NetFlow: &NetFlowFacts{EngineType: 1, EngineID: 2}, Ports: map[string]uint32{"p1": 1, "p2": 2}}}}})
			if err != nil {
				t.Fatal(err)
			}
			col, stop := startCollector(t, addr, st, res)
			if col.RcvBuf() < 1<<20 {
				t.Errorf("granted receive buffer %d, asked 1 MiB", col.RcvBuf())
			}
			// Several source sockets so SO_REUSEPORT spreads them.
			const senders, perSender, recsPer = 4, 25, 30
			sent := records(recsPer, false)
			for range senders {
				conn, err := net.DialUDP("udp", nil, col.Addr())
				if err != nil {
					t.Fatal(err)
				}
				for i := range perSender {
					h := nftest.V5Header{SysUptime: 1e6, UnixSecs: exportSec, FlowSequence: uint32(i * recsPer), EngineType: 1, EngineID: 2}
					if _, err := conn.Write(nftest.AppendV5(nil, h, sent)); err != nil {
						t.Fatal(err)
					}
				}
				_ = conn.Close()
			}
			c := col.Counters()
			total := uint64(senders * perSender)
			waitFor(t, "all datagrams received", func() bool {
				s := c.Snapshot()
				return s.Datagrams+s.SocketDrops >= total
			})
			if err := col.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			s := c.Snapshot()
			if s.SocketDrops != 0 {
				t.Fatalf("kernel dropped %d datagrams on loopback", s.SocketDrops)
			}
			// Each sender is its own exporter (address and port) with its own sequence: no
			// gaps, no resets, though they share an address and engine ids.
			if s.Dropped["sequence_gap"] != 0 || s.SequenceResets != 0 {
				t.Errorf("sequence gap %d, resets %d; want 0, 0", s.Dropped["sequence_gap"], s.SequenceResets)
			}
			if s.Decoded != total || s.Records != total*recsPer || s.Stored != total*recsPer || s.DecodeErrorTotal() != 0 {
				t.Fatalf("counters %+v", s)
			}
			st.mu.Lock()
			got := append([]flow.Record(nil), st.recs...)
			st.mu.Unlock()
			if len(got) != int(total*recsPer) {
				t.Fatalf("store holds %d records, want %d", len(got), total*recsPer)
			}
			loop := col.Addr().AddrPort().Addr().Unmap()
			names := map[uint32]string{1: "p1", 2: "p2"}
			perSrc := make(map[netip.Addr]int)
			for i, r := range got {
				// Datagrams from different sockets interleave in the store: match by source.
				w := findBySrc(sent, r.Src)
				w.Exporter, w.Protocol, w.Domain, w.Received = loop, flow.NetFlowV5, 1<<8|2, r.Received
				w.Bridge, w.InPort, w.OutPort = "br0", names[w.InIf], names[w.OutIf]
				if r.Received == 0 || r != w {
					t.Fatalf("stored record %d\n got %+v\nwant %+v", i, r, w)
				}
				perSrc[r.Src]++
			}
			for _, w := range sent {
				if perSrc[w.Src] != senders*perSender {
					t.Errorf("record from %v stored %d times, want %d", w.Src, perSrc[w.Src], senders*perSender)
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func findBySrc(recs []flow.Record, src netip.Addr) flow.Record {
	for _, r := range recs {
		if r.Src == src {
			return r
		}
	}
	return flow.Record{}
}

// TestCollectorCountsBadDatagramsAndExportsMetrics sends garbage next to good data over UDP
// and checks the Prometheus metrics say so.
func TestCollectorCountsBadDatagramsAndExportsMetrics(t *testing.T) {
	st := newFakeStore()
	col, stop := startCollector(t, "127.0.0.1:0", st, nil)
	conn, err := net.DialUDP("udp", nil, col.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range [][]byte{
		{0, 7, 1, 2},       // wrong version
		{0, 5, 0, 30, 0},   // truncated v5 header
		make([]byte, 2000), // version 0
		nftest.AppendV5(nil, nftest.V5Header{UnixSecs: exportSec}, records(2, false)),
	} {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	c := col.Counters()
	waitFor(t, "4 datagrams", func() bool { return c.Snapshot().Datagrams == 4 })
	if err := col.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewPrometheusCollector(c)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP flowmon_collect_decode_errors_total Datagrams not (fully) decoded, by reason.
# TYPE flowmon_collect_decode_errors_total counter
flowmon_collect_decode_errors_total{reason="exporter_limit"} 0
flowmon_collect_decode_errors_total{reason="length_mismatch"} 0
flowmon_collect_decode_errors_total{reason="malformed"} 0
flowmon_collect_decode_errors_total{reason="no_template"} 0
flowmon_collect_decode_errors_total{reason="oversized"} 0
flowmon_collect_decode_errors_total{reason="set_length"} 0
flowmon_collect_decode_errors_total{reason="template_limit"} 0
flowmon_collect_decode_errors_total{reason="truncated"} 1
flowmon_collect_decode_errors_total{reason="version"} 2
# HELP flowmon_collect_stored_records_total Flow records the store acknowledged.
# TYPE flowmon_collect_stored_records_total counter
flowmon_collect_stored_records_total 2
# HELP flowmon_collect_datagrams_total Datagrams received from the collector's sockets.
# TYPE flowmon_collect_datagrams_total counter
flowmon_collect_datagrams_total 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"flowmon_collect_decode_errors_total", "flowmon_collect_stored_records_total", "flowmon_collect_datagrams_total"); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestReceiverConfigChecked(t *testing.T) {
	for _, cfg := range []ReceiverConfig{{}, {Addr: ":0", Sockets: 65}, {Addr: ":0", Batch: 5000}, {Addr: ":0", MaxDatagram: 70000}, {Addr: ":0", RcvBuf: -1}} {
		if _, err := Listen(t.Context(), cfg, nil); err == nil {
			t.Errorf("Listen accepted %+v", cfg)
		}
	}
}

// TestReceiverCountsKernelDrops fills a small socket buffer nobody reads: the kernel's drops
// must show in the counters, and stay there after the sockets close.
func TestReceiverCountsKernelDrops(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		c := &Counters{}
		r, err := Listen(t.Context(), ReceiverConfig{Addr: addr, Sockets: 1, RcvBuf: 4096}, c)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.DialUDP("udp", nil, r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		dg := v5Datagram()
		for range 200 {
			if _, err := conn.Write(dg); err != nil {
				t.Fatal(err)
			}
		}
		_ = conn.Close()
		drops := c.Snapshot().SocketDrops
		if drops == 0 || drops >= 200 {
			t.Errorf("%s: %d socket drops after 200 datagrams into a %d-byte buffer", addr, drops, r.RcvBuf())
		}
		r.Close()
		if after := c.Snapshot().SocketDrops; after != drops {
			t.Errorf("%s: socket drops %d after close, %d before", addr, after, drops)
		}
	}
}

// TestCollectorClose: Close stops a running collector (Run returns) and is idempotent.
func TestCollectorClose(t *testing.T) {
	col, err := New(t.Context(), Config{Receiver: ReceiverConfig{Addr: "127.0.0.1:0"}, Writer: WriterConfig{Instance: "c"}}, newFakeStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- col.Run(t.Context()) }()
	col.Close()
	if err := <-errc; err != nil {
		t.Fatalf("Run after Close: %v", err)
	}
	col.Close()
	// Every socket is closed: a plain (not SO_REUSEPORT) bind to the port succeeds again.
	c, err := net.ListenUDP("udp", col.Addr())
	if err != nil {
		t.Fatalf("port still bound after Close: %v", err)
	}
	_ = c.Close()
}
