package sqlflow

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
)

func TestDays(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want Day
	}{{0, 0}, {DayNanos - 1, 0}, {DayNanos, 1}, {-1, -1}, {-DayNanos, -1}, {-DayNanos - 1, -2}} {
		if got := DayOf(tc.ns); got != tc.want {
			t.Errorf("DayOf(%d) = %d; want %d", tc.ns, got, tc.want)
		}
	}
	d := DayOf(time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC).UnixNano())
	if name := d.Table("flows_"); name != "flows_20261205" {
		t.Errorf("Table = %q", name)
	}
	if got, ok := ParseTable("flows_", "flows_20261205"); !ok || got != d {
		t.Errorf("ParseTable(flows_20261205) = %d, %v; want %d", got, ok, d)
	}
	for _, bad := range []string{"flows_2026120", "flows_20261305", "flow_batches", "flows_2026120x", "xflows_20261205"} {
		if _, ok := ParseTable("flows_", bad); ok {
			t.Errorf("ParseTable accepted %q", bad)
		}
	}
}

// TestBuildKeepsValuesOut checks that no filter value reaches the SQL text: every one is a
// placeholder argument.
func TestBuildKeepsValuesOut(t *testing.T) {
	from := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	evil := "x'); DROP TABLE flows; --"
	q := query.Query{Kind: query.Top, From: from, To: from.Add(time.Hour), Limit: 5, GroupBy: query.KeyBridge,
		Metric: query.Bytes, Filter: query.Filter{Bridges: []string{evil}, Ports: []string{evil},
			Src: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}, DstPorts: []uint16{4242}}}
	st, err := Build(Dialect{TextOrder: func(c string) string { return c }}, "flows", q)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"DROP", "4242", "10.", "'"} {
		if strings.Contains(st.SQL, v) {
			t.Errorf("SQL text holds %q: %s", v, st.SQL)
		}
	}
	if n := strings.Count(st.SQL, "$"); n < len(st.Args) {
		t.Errorf("%d placeholders for %d args", n, len(st.Args))
	}
	// The prefix is masked to a byte range: 10.0.0.0 .. 10.255.255.255.
	lo, hi := st.Args[2].([]byte), st.Args[3].([]byte)
	if string(lo) != "\x0a\x00\x00\x00" || string(hi) != "\x0a\xff\xff\xff" {
		t.Errorf("prefix range %x..%x; want 0a000000..0affffff", lo, hi)
	}
}
