package query

import (
	"flag"
	"maps"
	"net/url"
	"time"
)

// Flags binds the query parameters to a flag set as flags of the same names (--since 1h,
// --src 10.0.0.0/8, --top dst --by packets -n 5, --series 1m, ...), so the CLI parses exactly
// what the query socket and the API parse. List flags may be repeated or take commas.
type Flags struct {
	v url.Values
}

// flagUsage documents each parameter's flag.
func flagUsage() map[string]string {
	return map[string]string{
		ParamSince:    "the range: this long back from now (15m, 1h, 24h; default 1h)",
		ParamFrom:     "the range's start, RFC 3339 (2026-12-05T13:00:00Z), instead of --since",
		ParamTo:       "the range's end, RFC 3339 (default now)",
		ParamSrc:      "source addresses or CIDRs (comma-separated, repeatable)",
		ParamDst:      "destination addresses or CIDRs",
		ParamSport:    "source ports",
		ParamDport:    "destination ports",
		ParamProto:    "IP protocols: tcp, udp, icmp, icmpv6, sctp, gre, esp or numbers",
		ParamBridge:   "bridge names",
		ParamPort:     "port names (in or out)",
		ParamExporter: "exporter addresses",
		ParamTop:      "top-N grouped by this key: src, dst, srcport, dstport, proto, bridge, inport, outport, exporter",
		ParamBy:       "the metric of --top and --series: bytes, packets or flows (default bytes)",
		ParamN:        "rows of a listing or a top-N (default 20)",
		ParamSeries:   "a time series with buckets this wide (10s, 1m, 1h)",
	}
}

// BindFlags defines the query flags on fs and returns where they collect.
func BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{v: url.Values{}}
	usage := flagUsage()
	for _, name := range paramNames() {
		fs.Func(name, usage[name], func(s string) error {
			f.v.Add(name, s)
			return nil
		})
	}
	return f
}

// Values returns a copy of the parameters the flags collected.
func (f *Flags) Values() url.Values { return maps.Clone(f.v) }

// Query builds and validates the query the flags describe, relative to now.
func (f *Flags) Query(now time.Time) (Query, error) { return ParseValues(f.v, now) }
