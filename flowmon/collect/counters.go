package collect

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// DecodeError is why a datagram (or part of one) was not decoded. Its String is the value of
// the "reason" label of flowmon_collect_decode_errors_total.
type DecodeError uint8

// The decode error reasons. Every datagram that is not fully decoded is counted under exactly
// one of them.
const (
	// ErrTruncated: the datagram is shorter than its header or than its own length fields say.
	ErrTruncated DecodeError = iota
	// ErrOversized: the datagram is larger than the receiver's MaxDatagram (or was truncated
	// by the socket).
	ErrOversized
	// ErrVersion: the version field is not 5, 9 or 10.
	ErrVersion
	// ErrLengthMismatch: the header's record count or length disagrees with the datagram size.
	ErrLengthMismatch
	// ErrSetLength: a v9/IPFIX set (flowset) length is shorter than its header or runs past
	// the datagram.
	ErrSetLength
	// ErrTemplateLimit: a template exceeds the field limit, or an exporter/domain exceeds the
	// template limit (template bombs).
	ErrTemplateLimit
	// ErrNoTemplate: a data set arrived before its template; its records are lost (counted as
	// datagrams here, the rest of the datagram is decoded).
	ErrNoTemplate
	// ErrExporterLimit: a new exporter arrived while the collector already tracks its maximum.
	ErrExporterLimit
	// ErrMalformed: goflow2 rejected the datagram for another reason.
	ErrMalformed
	numDecodeErrors
)

// String names the reason as the metrics label does.
func (e DecodeError) String() string {
	switch e {
	case ErrTruncated:
		return "truncated"
	case ErrOversized:
		return "oversized"
	case ErrVersion:
		return "version"
	case ErrLengthMismatch:
		return "length_mismatch"
	case ErrSetLength:
		return "set_length"
	case ErrTemplateLimit:
		return "template_limit"
	case ErrNoTemplate:
		return "no_template"
	case ErrExporterLimit:
		return "exporter_limit"
	default:
		return "malformed"
	}
}

// Error makes a DecodeError usable as an error.
func (e DecodeError) Error() string { return "flow datagram: " + e.String() }

// Drop is why records were lost after (or before) decoding. Its String is the value of the
// "reason" label of flowmon_collect_dropped_records_total.
type Drop uint8

// The drop reasons.
const (
	// DropBackpressure: the writer's buffer was full because the store was slow or down.
	DropBackpressure Drop = iota
	// DropShutdown: records still buffered when the writer stopped and could not be stored.
	DropShutdown
	// DropSequenceGap: records the exporter's sequence numbers say were sent but never
	// arrived (lost at the exporter or in the network). For NetFlow v9, whose sequence counts
	// datagrams, this counts datagrams (see Snapshot.LostDatagrams), not records.
	DropSequenceGap
	numDrops
)

// String names the reason as the metrics label does.
func (d Drop) String() string {
	switch d {
	case DropBackpressure:
		return "store_backpressure"
	case DropShutdown:
		return "shutdown"
	default:
		return "sequence_gap"
	}
}

// Counters are the collector's monotonic counters, updated atomically by every goroutine of
// the data path. The zero value is ready; read them with Snapshot.
type Counters struct {
	datagrams, bytes, decoded, records, stored, batches, appendErrors atomic.Uint64
	lostDatagrams, seqResets                                          atomic.Uint64
	decodeErrors                                                      [numDecodeErrors]atomic.Uint64
	drops                                                             [numDrops]atomic.Uint64
	buffered                                                          atomic.Int64
	storeFailing                                                      atomic.Bool
	receiver                                                          atomic.Pointer[Receiver]
}

// Snapshot is a point-in-time copy of Counters, a plain value for tests, the API and logs.
type Snapshot struct {
	// Datagrams and Bytes were received from the sockets; Decoded is how many datagrams were
	// decoded without error.
	Datagrams, Bytes, Decoded uint64
	// DecodeErrors counts datagrams by the reason they were (partly) not decoded.
	DecodeErrors map[string]uint64
	// Records were decoded; Stored were acknowledged by the store in Batches batches.
	Records, Stored, Batches uint64
	// AppendErrors counts failed store appends (each is retried with the same batch ID).
	AppendErrors uint64
	// Dropped counts lost records by reason (store_backpressure, shutdown, sequence_gap).
	Dropped map[string]uint64
	// LostDatagrams are datagrams NetFlow v9 sequence numbers say never arrived.
	LostDatagrams uint64
	// SequenceResets counts sequence numbers that went backwards or jumped by more than 2^31
	// (exporter restart or reordering); they are resynchronised, not counted as loss.
	SequenceResets uint64
	// SocketDrops are datagrams the kernel dropped on the receive sockets (queue full), from
	// /proc/net/udp{,6}.
	SocketDrops uint64
	// Buffered is how many records wait for the store now; StoreFailing is true while the last
	// append failed (backpressure).
	Buffered     int64
	StoreFailing bool
}

// Snapshot copies the counters.
func (c *Counters) Snapshot() Snapshot {
	s := Snapshot{
		Datagrams: c.datagrams.Load(), Bytes: c.bytes.Load(), Decoded: c.decoded.Load(),
		Records: c.records.Load(), Stored: c.stored.Load(), Batches: c.batches.Load(),
		AppendErrors: c.appendErrors.Load(), LostDatagrams: c.lostDatagrams.Load(),
		SequenceResets: c.seqResets.Load(), Buffered: c.buffered.Load(),
		StoreFailing: c.storeFailing.Load(),
		DecodeErrors: make(map[string]uint64, numDecodeErrors),
		Dropped:      make(map[string]uint64, numDrops),
	}
	for i := range c.decodeErrors {
		s.DecodeErrors[DecodeError(i).String()] = c.decodeErrors[i].Load()
	}
	for i := range c.drops {
		s.Dropped[Drop(i).String()] = c.drops[i].Load()
	}
	if r := c.receiver.Load(); r != nil {
		s.SocketDrops = r.SocketDrops()
	}
	return s
}

// DecodeErrorTotal is the sum of DecodeErrors.
func (s Snapshot) DecodeErrorTotal() uint64 {
	var n uint64
	for _, v := range s.DecodeErrors {
		n += v
	}
	return n
}

func (c *Counters) decodeError(e DecodeError) { c.decodeErrors[e].Add(1) }

func (c *Counters) drop(d Drop, n int) {
	if n > 0 {
		c.drops[d].Add(uint64(n))
	}
}

// PrometheusCollector exports Counters as Prometheus metrics (flowmon_collect_*). Register it
// with a prometheus.Registerer; it reads the counters at scrape time.
type PrometheusCollector struct {
	c                                                                    *Counters
	datagrams, bytes, decoded, records, stored, batches, appendErrs      *prometheus.Desc
	decodeErrs, dropped, lostDatagrams, seqResets, socketDrops, buffered *prometheus.Desc
	failing                                                              *prometheus.Desc
}

// NewPrometheusCollector returns a collector of c's metrics.
func NewPrometheusCollector(c *Counters) *PrometheusCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("flowmon_collect_"+name, help, labels, nil)
	}
	return &PrometheusCollector{
		c:             c,
		datagrams:     d("datagrams_total", "Datagrams received from the collector's sockets."),
		bytes:         d("bytes_total", "Bytes of datagrams received."),
		decoded:       d("decoded_datagrams_total", "Datagrams decoded without error."),
		records:       d("records_total", "Flow records decoded."),
		stored:        d("stored_records_total", "Flow records the store acknowledged."),
		batches:       d("stored_batches_total", "Batches the store acknowledged."),
		appendErrs:    d("store_append_errors_total", "Failed store appends (retried with the same batch ID)."),
		decodeErrs:    d("decode_errors_total", "Datagrams not (fully) decoded, by reason.", "reason"),
		dropped:       d("dropped_records_total", "Records lost, by reason.", "reason"),
		lostDatagrams: d("lost_datagrams_total", "Datagrams NetFlow v9 sequence numbers say never arrived."),
		seqResets:     d("sequence_resets_total", "Exporter sequence numbers that went backwards or jumped (resynchronised)."),
		socketDrops:   d("socket_drops", "Datagrams the kernel dropped on the receive sockets (from /proc/net/udp)."),
		buffered:      d("buffered_records", "Records waiting for the store."),
		failing:       d("store_failing", "1 while the last store append failed (backpressure)."),
	}
}

// Describe implements prometheus.Collector.
func (p *PrometheusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.datagrams, p.bytes, p.decoded, p.records, p.stored, p.batches,
		p.appendErrs, p.decodeErrs, p.dropped, p.lostDatagrams, p.seqResets, p.socketDrops, p.buffered, p.failing} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *PrometheusCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.c.Snapshot()
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		send(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(p.datagrams, s.Datagrams)
	counter(p.bytes, s.Bytes)
	counter(p.decoded, s.Decoded)
	counter(p.records, s.Records)
	counter(p.stored, s.Stored)
	counter(p.batches, s.Batches)
	counter(p.appendErrs, s.AppendErrors)
	for k, v := range s.DecodeErrors {
		counter(p.decodeErrs, v, k)
	}
	for k, v := range s.Dropped {
		counter(p.dropped, v, k)
	}
	counter(p.lostDatagrams, s.LostDatagrams)
	counter(p.seqResets, s.SequenceResets)
	counter(p.socketDrops, s.SocketDrops)
	send(p.buffered, prometheus.GaugeValue, float64(s.Buffered))
	failing := 0.0
	if s.StoreFailing {
		failing = 1
	}
	send(p.failing, prometheus.GaugeValue, failing)
}
