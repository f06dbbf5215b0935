package query

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Limits on a query. They keep one request's cost bounded whatever the caller sends.
const (
	// MaxRows is the most rows any result may carry (flow listing, top-N or series points).
	MaxRows = 10_000
	// MaxFilterValues is the most values one filter field may list.
	MaxFilterValues = 256
	// MaxSpan is the longest time range one query may cover.
	MaxSpan = 400 * 24 * time.Hour
	// MinInterval is the finest time-series bucket.
	MinInterval = time.Second
	// MaxNameLen is the longest bridge or port name a filter may carry (OVS allows fewer).
	MaxNameLen = 255
)

// Kind selects what a query returns.
type Kind uint8

// The query kinds.
const (
	// Flows lists matching records, newest End first, at most Limit of them.
	Flows Kind = iota + 1
	// Top groups matching records by GroupBy and returns the Limit largest groups by OrderBy.
	Top
	// Series sums matching records into buckets of Interval, by each record's End time.
	Series
)

// Metric is what Top orders by and Series sums.
type Metric uint8

// The metrics.
const (
	// Bytes sums Record.Bytes.
	Bytes Metric = iota + 1
	// Packets sums Record.Packets.
	Packets
	// FlowCount counts records.
	FlowCount
)

// Key is a record field Top groups by.
type Key uint8

// The group-by keys.
const (
	KeySrc Key = iota + 1
	KeyDst
	KeySrcPort
	KeyDstPort
	KeyProto
	KeyBridge
	KeyInPort
	KeyOutPort
	KeyExporter
)

// Filter selects records. Within one field the values are alternatives (any may match); across
// fields all must match. An empty field matches everything.
type Filter struct {
	// Src and Dst match a record whose address lies in any prefix.
	Src, Dst []netip.Prefix
	// SrcPorts and DstPorts match the transport ports.
	SrcPorts, DstPorts []uint16
	// Protos matches the IP protocol number.
	Protos []uint8
	// Bridges matches Record.Bridge.
	Bridges []string
	// Ports matches a record whose InPort or OutPort is any of these names.
	Ports []string
	// Exporters matches Record.Exporter.
	Exporters []netip.Addr
}

// Query is one question to a store. Records match when From <= End < To and Filter matches.
type Query struct {
	Kind     Kind
	From, To time.Time
	Filter   Filter
	// Limit bounds Flows and Top results (1..MaxRows).
	Limit int
	// GroupBy (Top only) is the grouping key; OrderBy (Top) and Metric (Series) the metric.
	GroupBy Key
	Metric  Metric
	// Interval (Series only) is the bucket width; buckets start at multiples of Interval since
	// the Unix epoch.
	Interval time.Duration
}

// Group is one Top row: the key's value as text (an address, a port number, a name) and the
// sums of the group.
type Group struct {
	Key                   string
	Bytes, Packets, Flows uint64
}

// Point is one Series bucket; buckets with no record are omitted.
type Point struct {
	Start                 time.Time
	Bytes, Packets, Flows uint64
}

// Result is a store's answer: exactly one of Records, Groups or Points is set, by Query.Kind.
// Records come newest End first, Groups largest first (ties by Key), Points oldest first.
type Result struct {
	Records []RecordRow
	Groups  []Group
	Points  []Point
}

// RecordRow is one listed flow, in the query package's own plain types (see flow.Record).
type RecordRow struct {
	Start, End, Received time.Time
	Exporter             netip.Addr
	Protocol             string
	Domain               uint32
	Src, Dst             netip.Addr
	Proto                uint8
	SrcPort, DstPort     uint16
	TCPFlags, ToS        uint8
	Bytes, Packets       uint64
	InIf, OutIf          uint32
	Bridge               string
	InPort, OutPort      string
}

// Validate checks q against the limits above and returns an error naming every field at fault
// and its fix; nil when the query may be run.
func (q Query) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("query %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To) {
		bad("time range", "from %s to %s: set both, from before to", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	} else if q.To.Sub(q.From) > MaxSpan {
		bad("time range", "spans %s: at most %s", q.To.Sub(q.From), MaxSpan)
	}
	switch q.Kind {
	case Flows:
	case Top:
		if q.GroupBy < KeySrc || q.GroupBy > KeyExporter {
			bad("group by", "key %d is unknown: use src, dst, srcport, dstport, proto, bridge, inport, outport or exporter", q.GroupBy)
		}
		if q.Metric < Bytes || q.Metric > FlowCount {
			bad("order by", "metric %d is unknown: use bytes, packets or flows", q.Metric)
		}
	case Series:
		if q.Metric < Bytes || q.Metric > FlowCount {
			bad("metric", "metric %d is unknown: use bytes, packets or flows", q.Metric)
		}
		if q.Interval < MinInterval || q.Interval%time.Second != 0 {
			bad("interval", "%s: use whole seconds, at least %s", q.Interval, MinInterval)
		} else if q.To.Sub(q.From)/q.Interval > MaxRows {
			bad("interval", "%s over %s makes more than %d points: use a longer interval or a shorter range", q.Interval, q.To.Sub(q.From), MaxRows)
		}
	default:
		bad("kind", "%d is unknown: use flows, top or series", q.Kind)
	}
	if q.Kind != Series && (q.Limit < 1 || q.Limit > MaxRows) {
		bad("limit", "%d: use 1 to %d", q.Limit, MaxRows)
	}
	f := q.Filter
	for name, n := range map[string]int{"src": len(f.Src), "dst": len(f.Dst), "srcport": len(f.SrcPorts),
		"dstport": len(f.DstPorts), "proto": len(f.Protos), "bridge": len(f.Bridges), "port": len(f.Ports),
		"exporter": len(f.Exporters)} {
		if n > MaxFilterValues {
			bad("filter "+name, "%d values: at most %d", n, MaxFilterValues)
		}
	}
	for _, p := range append(append([]netip.Prefix(nil), f.Src...), f.Dst...) {
		if !p.IsValid() {
			bad("filter src/dst", "an invalid prefix: write addresses as 10.0.0.0/8 or 2001:db8::/32")
			break
		}
	}
	for _, n := range append(append([]string(nil), f.Bridges...), f.Ports...) {
		if n == "" || len(n) > MaxNameLen {
			bad("filter bridge/port", "name %.40q: use 1 to %d bytes", n, MaxNameLen)
			break
		}
	}
	return errors.Join(errs...)
}
