// Package sqlflow is what the SQL flow stores (duckstore, pgstore) share: the column layout of
// a flow row, the translation of a query.Query into one SQL statement with numbered
// placeholders ($1, $2, … — both DuckDB and PostgreSQL accept them), and the decoding of the
// rows it returns into a query.Result.
//
// Every value taken from a query is passed as a placeholder argument; the only text spliced
// into SQL is the caller's source relation (built by the store from its own typed day numbers)
// and the fixed column names below.
//
// Column encoding, identical in both stores so one suite checks both: times are Unix
// nanoseconds (BIGINT); addresses are byte strings of 4 (IPv4) or 16 (IPv6) bytes, empty when
// unset, so a prefix is a byte range and ordering by (length, bytes) is netip.Addr.Compare's
// order; unsigned counters are BIGINT (a uint64 above 2^63-1 is stored clamped); ports INTEGER;
// one-byte fields SMALLINT; names text.
package sqlflow

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
)

// Day is a UTC day as days since the Unix epoch; partitions are named and bounded by it.
type Day int64

// DayNanos is one day in nanoseconds.
const DayNanos = int64(24 * time.Hour)

// DayOf returns the UTC day holding the instant ns (Unix nanoseconds).
func DayOf(ns int64) Day {
	d := ns / DayNanos
	if ns%DayNanos < 0 {
		d--
	}
	return Day(d)
}

// Start returns the day's first nanosecond (Unix nanoseconds).
func (d Day) Start() int64 { return int64(d) * DayNanos }

// Time returns the day's start as a UTC time.
func (d Day) Time() time.Time { return time.Unix(0, d.Start()).UTC() }

// Table returns the partition's table name, prefix + YYYYMMDD: built only from d's digits, so
// safe to splice into SQL.
func (d Day) Table(prefix string) string {
	return prefix + d.Time().Format("20060102")
}

// ParseTable is Table's inverse: ok is false when name is not prefix + a valid YYYYMMDD.
func ParseTable(prefix, name string) (Day, bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found || len(rest) != 8 {
		return 0, false
	}
	t, err := time.Parse("20060102", rest)
	if err != nil {
		return 0, false
	}
	return DayOf(t.UnixNano()), true
}

// ColumnList names the flow columns, comma separated, in the order stores write them and
// ScanRecord reads them.
const ColumnList = "received_ns, start_ns, end_ns, exporter, protocol, obs_domain, sampling, " +
	"src, dst, proto, src_port, dst_port, tcp_flags, tos, bytes, packets, in_if, out_if, bridge, in_port, out_port"

// NumColumns is how many columns ColumnList names.
const NumColumns = 21

// ColumnDefs returns the column definitions for CREATE TABLE, with the dialect's names for a
// byte string and a text type.
func ColumnDefs(blob, text string) string {
	types := []string{
		"BIGINT NOT NULL", "BIGINT NOT NULL", "BIGINT NOT NULL", blob + " NOT NULL", "SMALLINT NOT NULL",
		"BIGINT NOT NULL", "BIGINT NOT NULL", blob + " NOT NULL", blob + " NOT NULL", "SMALLINT NOT NULL",
		"INTEGER NOT NULL", "INTEGER NOT NULL", "SMALLINT NOT NULL", "SMALLINT NOT NULL", "BIGINT NOT NULL",
		"BIGINT NOT NULL", "BIGINT NOT NULL", "BIGINT NOT NULL", text + " NOT NULL", text + " NOT NULL",
		text + " NOT NULL",
	}
	cols := strings.Split(ColumnList, ", ")
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = c + " " + types[i]
	}
	return strings.Join(defs, ", ")
}

// Clamp returns v as an int64, saturating at math.MaxInt64.
func Clamp(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// AddrBytes appends a's stored form to dst: 4 or 16 bytes, nothing for the zero Addr.
func AddrBytes(dst []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return dst
	}
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return append(dst, b[:]...)
	}
	b := a.As16()
	return append(dst, b[:]...)
}

// AddrFrom decodes a stored address; anything but 4 or 16 bytes is the zero Addr.
func AddrFrom(b []byte) netip.Addr {
	a, ok := netip.AddrFromSlice(b)
	if !ok {
		return netip.Addr{}
	}
	return a
}

// AddrText is a Top key for a stored address: its text form, empty when unset.
func AddrText(b []byte) string {
	a := AddrFrom(b)
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// Dialect is what differs between the SQL stores in a query.
type Dialect struct {
	// TextOrder returns an expression ordering the text column col byte-wise.
	TextOrder func(col string) string
}

// Statement is one SQL statement with its placeholder arguments.
type Statement struct {
	SQL  string
	Args []any
}

// builder accumulates a statement's arguments and hands out their placeholders.
type builder struct {
	args []any
}

func (b *builder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// inList renders col IN (placeholders…) for vals.
func inList[T any](b *builder, col string, vals []T) string {
	ps := make([]string, len(vals))
	for i, v := range vals {
		ps[i] = b.arg(v)
	}
	return col + " IN (" + strings.Join(ps, ", ") + ")"
}

// prefixes renders a match of the address column col against any of ps: a byte range of the
// prefix's own length.
func prefixes(b *builder, col string, ps []netip.Prefix) string {
	alts := make([]string, 0, len(ps))
	for _, p := range ps {
		p = p.Masked()
		lo := AddrBytes(nil, p.Addr())
		hi := make([]byte, len(lo))
		copy(hi, lo)
		for bit := p.Bits(); bit < len(hi)*8; bit++ {
			hi[bit/8] |= 0x80 >> (bit % 8)
		}
		alts = append(alts, fmt.Sprintf("(%s BETWEEN %s AND %s AND octet_length(%s) = %d)",
			col, b.arg(lo), b.arg(hi), col, len(lo)))
	}
	return "(" + strings.Join(alts, " OR ") + ")"
}

// where renders q's time range and filter.
func where(b *builder, q query.Query) string {
	conds := []string{
		"end_ns >= " + b.arg(q.From.UnixNano()),
		"end_ns < " + b.arg(q.To.UnixNano()),
	}
	f := q.Filter
	if len(f.Src) > 0 {
		conds = append(conds, prefixes(b, "src", f.Src))
	}
	if len(f.Dst) > 0 {
		conds = append(conds, prefixes(b, "dst", f.Dst))
	}
	if len(f.SrcPorts) > 0 {
		conds = append(conds, inList(b, "src_port", widen(f.SrcPorts)))
	}
	if len(f.DstPorts) > 0 {
		conds = append(conds, inList(b, "dst_port", widen(f.DstPorts)))
	}
	if len(f.Protos) > 0 {
		conds = append(conds, inList(b, "proto", widen(f.Protos)))
	}
	if len(f.Bridges) > 0 {
		conds = append(conds, inList(b, "bridge", f.Bridges))
	}
	if len(f.Ports) > 0 {
		conds = append(conds, "("+inList(b, "in_port", f.Ports)+" OR "+inList(b, "out_port", f.Ports)+")")
	}
	if len(f.Exporters) > 0 {
		ex := make([][]byte, len(f.Exporters))
		for i, a := range f.Exporters {
			ex[i] = AddrBytes(nil, a)
		}
		conds = append(conds, inList(b, "exporter", ex))
	}
	return strings.Join(conds, " AND ")
}

// widen turns small unsigned values into int64 arguments, which every driver binds.
func widen[T uint8 | uint16](vs []T) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = int64(v)
	}
	return out
}

// keyColumn returns the column a Top key groups by, and its tie order expression.
func keyColumn(d Dialect, k query.Key) (col, order string) {
	switch k {
	case query.KeySrc:
		return "src", "octet_length(src), src"
	case query.KeyDst:
		return "dst", "octet_length(dst), dst"
	case query.KeyExporter:
		return "exporter", "octet_length(exporter), exporter"
	case query.KeySrcPort:
		return "src_port", "src_port"
	case query.KeyDstPort:
		return "dst_port", "dst_port"
	case query.KeyProto:
		return "proto", "proto"
	case query.KeyBridge:
		return "bridge", d.TextOrder("bridge")
	case query.KeyInPort:
		return "in_port", d.TextOrder("in_port")
	default:
		return "out_port", d.TextOrder("out_port")
	}
}

// metricColumn returns the result column a metric orders by.
func metricColumn(m query.Metric) string {
	switch m {
	case query.Packets:
		return "s_packets"
	case query.FlowCount:
		return "s_flows"
	default:
		return "s_bytes"
	}
}

const sums = "CAST(SUM(bytes) AS BIGINT) AS s_bytes, CAST(SUM(packets) AS BIGINT) AS s_packets, COUNT(*) AS s_flows"

// Build translates q (validated) into one statement over source, a relation with Columns
// (a table name or a parenthesised subquery the store built from its own values).
//
// Orders: Flows newest end_ns first; Top by the metric descending, ties by the key's own order
// (numbers numerically, addresses as netip.Addr.Compare, names byte-wise); Series oldest
// bucket first.
func Build(d Dialect, source string, q query.Query) (Statement, error) {
	var b builder
	w := where(&b, q)
	var sql string
	switch q.Kind {
	case query.Flows:
		sql = "SELECT " + ColumnList + " FROM " + source + " WHERE " + w +
			" ORDER BY end_ns DESC LIMIT " + b.arg(int64(q.Limit))
	case query.Top:
		col, order := keyColumn(d, q.GroupBy)
		sql = "SELECT " + col + ", " + sums + " FROM " + source + " WHERE " + w +
			" GROUP BY " + col + " ORDER BY " + metricColumn(q.Metric) + " DESC, " + order +
			" LIMIT " + b.arg(int64(q.Limit))
	case query.Series:
		iv := b.arg(int64(q.Interval))
		bucket := "(end_ns - ((end_ns % " + iv + ") + " + iv + ") % " + iv + ")"
		sql = "SELECT " + bucket + " AS bucket, " + sums + " FROM " + source + " WHERE " + w +
			" GROUP BY bucket ORDER BY bucket"
	default:
		return Statement{}, fmt.Errorf("query kind %d is unknown: validate the query first", q.Kind)
	}
	return Statement{SQL: sql, Args: b.args}, nil
}

// Scanner is a result row reader (database/sql's *Rows and pgx's Rows both are).
type Scanner interface {
	Scan(dest ...any) error
}

// ScanRecord reads one Flows row.
func ScanRecord(s Scanner) (query.RecordRow, error) {
	var (
		recv, start, end, protocol, domain, sampling, proto, sp, dp, flags, tos, bytes, pkts, in, out int64
		exporter, src, dst                                                                            []byte
		r                                                                                             query.RecordRow
	)
	if err := s.Scan(&recv, &start, &end, &exporter, &protocol, &domain, &sampling, &src, &dst, &proto,
		&sp, &dp, &flags, &tos, &bytes, &pkts, &in, &out, &r.Bridge, &r.InPort, &r.OutPort); err != nil {
		return r, fmt.Errorf("read flow row: %w", err)
	}
	r.Received, r.Start, r.End = time.Unix(0, recv).UTC(), time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	r.Exporter, r.Src, r.Dst = AddrFrom(exporter), AddrFrom(src), AddrFrom(dst)
	r.Protocol = flow.Protocol(protocol).String()
	r.Domain, r.InIf, r.OutIf = uint32(domain), uint32(in), uint32(out)
	r.Proto, r.TCPFlags, r.ToS = uint8(proto), uint8(flags), uint8(tos)
	r.SrcPort, r.DstPort = uint16(sp), uint16(dp)
	r.Bytes, r.Packets = uint64(bytes), uint64(pkts)
	return r, nil
}

// ScanGroup reads one Top row grouped by k.
func ScanGroup(s Scanner, k query.Key) (query.Group, error) {
	var (
		g          query.Group
		b, p, n    int64
		addr       []byte
		num        int64
		key        any
		keyIsAddr  = k == query.KeySrc || k == query.KeyDst || k == query.KeyExporter
		keyIsText  = k == query.KeyBridge || k == query.KeyInPort || k == query.KeyOutPort
		textTarget string
	)
	switch {
	case keyIsAddr:
		key = &addr
	case keyIsText:
		key = &textTarget
	default:
		key = &num
	}
	if err := s.Scan(key, &b, &p, &n); err != nil {
		return g, fmt.Errorf("read top row: %w", err)
	}
	switch {
	case keyIsAddr:
		g.Key = AddrText(addr)
	case keyIsText:
		g.Key = textTarget
	default:
		g.Key = strconv.FormatInt(num, 10)
	}
	g.Bytes, g.Packets, g.Flows = uint64(b), uint64(p), uint64(n)
	return g, nil
}

// ScanPoint reads one Series row.
func ScanPoint(s Scanner) (query.Point, error) {
	var bucket, b, p, n int64
	if err := s.Scan(&bucket, &b, &p, &n); err != nil {
		return query.Point{}, fmt.Errorf("read series row: %w", err)
	}
	return query.Point{Start: time.Unix(0, bucket).UTC(), Bytes: uint64(b), Packets: uint64(p), Flows: uint64(n)}, nil
}

// Rows is a result set (database/sql's *Rows and pgx's Rows both are).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
}

// Empty returns q's answer when no partition covers its range: the kind's empty, non-nil list.
func Empty(q query.Query) query.Result {
	switch q.Kind {
	case query.Top:
		return query.Result{Groups: []query.Group{}}
	case query.Series:
		return query.Result{Points: []query.Point{}}
	default:
		return query.Result{Records: []query.RecordRow{}}
	}
}

// Collect reads the rows of Build's statement for q into a Result. The caller checks the
// rows' own error after it returns.
func Collect(q query.Query, rows Rows) (query.Result, error) {
	res := Empty(q)
	for rows.Next() {
		switch q.Kind {
		case query.Top:
			g, err := ScanGroup(rows, q.GroupBy)
			if err != nil {
				return query.Result{}, err
			}
			res.Groups = append(res.Groups, g)
		case query.Series:
			p, err := ScanPoint(rows)
			if err != nil {
				return query.Result{}, err
			}
			res.Points = append(res.Points, p)
		default:
			r, err := ScanRecord(rows)
			if err != nil {
				return query.Result{}, err
			}
			res.Records = append(res.Records, r)
		}
	}
	return res, nil
}

// CheckRecord rejects a record the stores cannot keep faithfully: a name that is longer than
// query.MaxNameLen, is not UTF-8, or holds a NUL byte (PostgreSQL text cannot). Stores call
// it while writing each row, so a bad record fails its whole batch.
func CheckRecord(r *flow.Record) error {
	for _, n := range [...]struct{ field, v string }{{"bridge", r.Bridge}, {"in port", r.InPort}, {"out port", r.OutPort}} {
		if len(n.v) > query.MaxNameLen || !utf8.ValidString(n.v) || strings.IndexByte(n.v, 0) >= 0 {
			return fmt.Errorf("flow record %s name %.40q: use at most %d bytes of UTF-8 without NUL", n.field, n.v, query.MaxNameLen)
		}
	}
	return nil
}
