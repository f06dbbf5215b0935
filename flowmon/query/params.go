package query

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parameter names: the same words are the CLI's flags (flowmon query --since 1h --top src), the
// query string of the collector's query socket and of the daemon's API (/flowmon/v1/query?since=1h&top=src).
// Every list parameter takes comma-separated values and may be repeated.
const (
	ParamSince    = "since"    // a duration back from now (1h, 90s): the range is [now-since, now)
	ParamFrom     = "from"     // RFC 3339 start (with ParamTo instead of ParamSince)
	ParamTo       = "to"       // RFC 3339 end; default now
	ParamSrc      = "src"      // source addresses or CIDRs
	ParamDst      = "dst"      // destination addresses or CIDRs
	ParamSport    = "sport"    // source ports
	ParamDport    = "dport"    // destination ports
	ParamProto    = "proto"    // IP protocols: tcp, udp, icmp, icmpv6, sctp or a number
	ParamBridge   = "bridge"   // bridge names
	ParamPort     = "port"     // port names (in or out)
	ParamExporter = "exporter" // exporter addresses
	ParamTop      = "top"      // a group-by key: a top-N query
	ParamBy       = "by"       // the metric of top and series: bytes (default), packets, flows
	ParamN        = "n"        // rows of a listing or a top-N (default DefaultLimit)
	ParamSeries   = "series"   // a bucket width (1m, 10s): a time-series query
)

// Defaults of a query built from parameters.
const (
	// DefaultSince is the range of a query that names none.
	DefaultSince = time.Hour
	// DefaultLimit is the rows of a listing or top-N that names none.
	DefaultLimit = 20
	// MaxParamBytes bounds the encoded parameters of one query (URL query string or flags).
	MaxParamBytes = 16 << 10
)

// paramNames lists every parameter ParseValues knows, for its error on an unknown one.
func paramNames() []string {
	return []string{ParamSince, ParamFrom, ParamTo, ParamSrc, ParamDst, ParamSport, ParamDport, ParamProto,
		ParamBridge, ParamPort, ParamExporter, ParamTop, ParamBy, ParamN, ParamSeries}
}

// keyNames are the group-by keys by name, in Key order from KeySrc.
func keyNames() []string {
	return []string{"src", "dst", "srcport", "dstport", "proto", "bridge", "inport", "outport", "exporter"}
}

// String returns the key's name as the CLI and the API spell it ("src", "dstport", ...).
func (k Key) String() string {
	if k >= KeySrc && k <= KeyExporter {
		return keyNames()[k-KeySrc]
	}
	return fmt.Sprintf("key(%d)", uint8(k))
}

// ParseKey is Key.String's inverse; it also accepts sport and dport.
func ParseKey(s string) (Key, error) {
	switch s {
	case "sport":
		return KeySrcPort, nil
	case "dport":
		return KeyDstPort, nil
	}
	if i := slices.Index(keyNames(), s); i >= 0 {
		return KeySrc + Key(i), nil
	}
	return 0, fmt.Errorf("key %q: use one of %s", clip(s), strings.Join(keyNames(), ", "))
}

// String returns the metric's name: bytes, packets or flows.
func (m Metric) String() string {
	switch m {
	case Bytes:
		return "bytes"
	case Packets:
		return "packets"
	case FlowCount:
		return "flows"
	}
	return fmt.Sprintf("metric(%d)", uint8(m))
}

// ParseMetric is Metric.String's inverse.
func ParseMetric(s string) (Metric, error) {
	for m := Bytes; m <= FlowCount; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("metric %q: use bytes, packets or flows", clip(s))
}

// String returns the kind's name: flows, top or series.
func (k Kind) String() string {
	switch k {
	case Flows:
		return "flows"
	case Top:
		return "top"
	case Series:
		return "series"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// protoNames are the IP protocols a filter may name in words.
func protoNames() map[string]uint8 {
	return map[string]uint8{"icmp": 1, "tcp": 6, "udp": 17, "gre": 47, "esp": 50, "icmpv6": 58, "sctp": 132}
}

// ProtoName returns a protocol number's name (tcp, udp, ...) or the number in decimal.
func ProtoName(p uint8) string {
	for n, v := range protoNames() {
		if v == p {
			return n
		}
	}
	return strconv.Itoa(int(p))
}

// ParseValues builds a Query from parameters (the Param* names; see there), relative to now
// for since and a missing to, and validates it. The error names every parameter at fault and
// its fix. A query with neither top nor series is a flow listing.
func ParseValues(v url.Values, now time.Time) (Query, error) {
	var errs []error
	bad := func(name string, err error) { errs = append(errs, fmt.Errorf("%s: %w", name, err)) }
	size := 0
	for name, vals := range v {
		if !slices.Contains(paramNames(), name) {
			bad(clip(name), fmt.Errorf("unknown parameter: use %s", strings.Join(paramNames(), ", ")))
		}
		for _, s := range vals {
			size += len(name) + len(s) + 2
		}
	}
	if size > MaxParamBytes {
		return Query{}, fmt.Errorf("query parameters: %d bytes, at most %d: ask with fewer filter values", size, MaxParamBytes)
	}
	q := Query{Kind: Flows, Limit: DefaultLimit}
	q.To = now
	if s := v.Get(ParamTo); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			bad(ParamTo, fmt.Errorf("%q: write RFC 3339 time, e.g. 2026-12-05T14:00:00Z", clip(s)))
		}
		q.To = t
	}
	switch since, from := v.Get(ParamSince), v.Get(ParamFrom); {
	case since != "" && from != "":
		bad(ParamSince, errors.New("given with from: use either since or from (with to)"))
	case from != "":
		t, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			bad(ParamFrom, fmt.Errorf("%q: write RFC 3339 time, e.g. 2026-12-05T13:00:00Z", clip(from)))
		}
		q.From = t
	default:
		d := DefaultSince
		if since != "" {
			var err error
			if d, err = time.ParseDuration(since); err != nil || d <= 0 {
				bad(ParamSince, fmt.Errorf("%q: write a positive duration, e.g. 15m, 1h or 24h", clip(since)))
				d = DefaultSince
			}
		}
		q.From = q.To.Add(-d)
	}
	q.Filter.Src = prefixes(v[ParamSrc], func(err error) { bad(ParamSrc, err) })
	q.Filter.Dst = prefixes(v[ParamDst], func(err error) { bad(ParamDst, err) })
	q.Filter.SrcPorts = ports(v[ParamSport], func(err error) { bad(ParamSport, err) })
	q.Filter.DstPorts = ports(v[ParamDport], func(err error) { bad(ParamDport, err) })
	for _, s := range split(v[ParamProto]) {
		if p, ok := protoNames()[strings.ToLower(s)]; ok {
			q.Filter.Protos = append(q.Filter.Protos, p)
		} else if n, err := strconv.ParseUint(s, 10, 8); err == nil {
			q.Filter.Protos = append(q.Filter.Protos, uint8(n))
		} else {
			bad(ParamProto, fmt.Errorf("%q: use tcp, udp, icmp, icmpv6, sctp, gre, esp or a number 0 to 255", clip(s)))
		}
	}
	q.Filter.Bridges = split(v[ParamBridge])
	q.Filter.Ports = split(v[ParamPort])
	for _, s := range split(v[ParamExporter]) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			bad(ParamExporter, fmt.Errorf("%q: write an IP address, e.g. 192.0.2.1", clip(s)))
			continue
		}
		q.Filter.Exporters = append(q.Filter.Exporters, a.Unmap())
	}
	if s := v.Get(ParamBy); s != "" {
		m, err := ParseMetric(s)
		if err != nil {
			bad(ParamBy, err)
		}
		q.Metric = m
	}
	if s := v.Get(ParamN); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxRows {
			bad(ParamN, fmt.Errorf("%q: use 1 to %d", clip(s), MaxRows))
		}
		q.Limit = n
	}
	top, series := v.Get(ParamTop), v.Get(ParamSeries)
	switch {
	case top != "" && series != "":
		bad(ParamTop, errors.New("given with series: ask one of top or series per query"))
	case top != "":
		q.Kind = Top
		k, err := ParseKey(top)
		if err != nil {
			bad(ParamTop, err)
		}
		q.GroupBy = k
	case series != "":
		q.Kind, q.Limit = Series, 0
		d, err := time.ParseDuration(series)
		if err != nil {
			bad(ParamSeries, fmt.Errorf("%q: write a duration in whole seconds, e.g. 10s, 1m or 1h", clip(series)))
		}
		q.Interval = d
	}
	if q.Kind == Flows {
		q.Metric = 0 // a listing has no metric
	} else if q.Metric == 0 {
		q.Metric = Bytes
	}
	if len(errs) > 0 {
		return Query{}, errors.Join(errs...)
	}
	if err := q.Validate(); err != nil {
		return Query{}, err
	}
	return q, nil
}

// Values is ParseValues' inverse for a valid query: absolute from and to, every filter, the
// kind's parameters. ParseValues(q.Values(), any) returns q (addresses unmapped).
func (q Query) Values() url.Values {
	v := url.Values{}
	v.Set(ParamFrom, q.From.UTC().Format(time.RFC3339Nano))
	v.Set(ParamTo, q.To.UTC().Format(time.RFC3339Nano))
	for _, p := range q.Filter.Src {
		v.Add(ParamSrc, p.String())
	}
	for _, p := range q.Filter.Dst {
		v.Add(ParamDst, p.String())
	}
	for _, p := range q.Filter.SrcPorts {
		v.Add(ParamSport, strconv.Itoa(int(p)))
	}
	for _, p := range q.Filter.DstPorts {
		v.Add(ParamDport, strconv.Itoa(int(p)))
	}
	for _, p := range q.Filter.Protos {
		v.Add(ParamProto, strconv.Itoa(int(p)))
	}
	for _, b := range q.Filter.Bridges {
		v.Add(ParamBridge, b)
	}
	for _, b := range q.Filter.Ports {
		v.Add(ParamPort, b)
	}
	for _, a := range q.Filter.Exporters {
		v.Add(ParamExporter, a.String())
	}
	switch q.Kind {
	case Top:
		v.Set(ParamTop, q.GroupBy.String())
		v.Set(ParamBy, q.Metric.String())
		v.Set(ParamN, strconv.Itoa(q.Limit))
	case Series:
		v.Set(ParamSeries, q.Interval.String())
		v.Set(ParamBy, q.Metric.String())
	default:
		v.Set(ParamN, strconv.Itoa(q.Limit))
	}
	return v
}

// split returns the non-empty comma-separated values of vals, trimmed.
func split(vals []string) []string {
	var out []string
	for _, s := range vals {
		for f := range strings.SplitSeq(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// prefixes parses addresses and CIDRs (an address is its host prefix), reporting each bad one.
func prefixes(vals []string, bad func(error)) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range split(vals) {
		if p, err := netip.ParsePrefix(s); err == nil {
			bits := p.Bits()
			if p.Addr().Is4In6() {
				bits = max(bits-96, 0)
			}
			out = append(out, netip.PrefixFrom(p.Addr().Unmap(), bits).Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			bad(fmt.Errorf("%q: write an address or a CIDR, e.g. 10.0.0.1, 10.0.0.0/8 or 2001:db8::/32", clip(s)))
			continue
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out
}

// ports parses port numbers, reporting each bad one.
func ports(vals []string, bad func(error)) []uint16 {
	var out []uint16
	for _, s := range split(vals) {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			bad(fmt.Errorf("%q: use a port number 0 to 65535", clip(s)))
			continue
		}
		out = append(out, uint16(n))
	}
	return out
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
