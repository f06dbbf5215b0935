package query

import (
	"bytes"
	"context"
	"flag"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

func TestParseValues(t *testing.T) {
	v := url.Values{"since": {"15m"}, "src": {"10.0.0.0/8,192.0.2.1"}, "dst": {"::ffff:10.1.0.0/112"}, "dport": {"80", "443"},
		"proto": {"tcp,17"}, "bridge": {"br0"}, "port": {"p1"}, "exporter": {"192.0.2.9"}, "top": {"dst"}, "by": {"packets"}, "n": {"5"}}
	q, err := ParseValues(v, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Query{Kind: Top, From: now.Add(-15 * time.Minute), To: now, Limit: 5, GroupBy: KeyDst, Metric: Packets,
		Filter: Filter{Src: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32")},
			Dst: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, DstPorts: []uint16{80, 443}, Protos: []uint8{6, 17},
			Bridges: []string{"br0"}, Ports: []string{"p1"}, Exporters: []netip.Addr{netip.MustParseAddr("192.0.2.9")}}}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("got  %+v\nwant %+v", q, want)
	}
	// Values is the inverse.
	back, err := ParseValues(q.Values(), time.Time{})
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("round trip: %v\ngot  %+v\nwant %+v", err, back, q)
	}
	s, err := ParseValues(url.Values{"from": {"2026-12-05T10:00:00Z"}, "to": {"2026-12-05T12:00:00Z"}, "series": {"1m"}}, now)
	if err != nil || s.Kind != Series || s.Interval != time.Minute || s.To.Sub(s.From) != 2*time.Hour || s.Metric != Bytes {
		t.Fatalf("series: %+v, %v", s, err)
	}
	if back, err := ParseValues(s.Values(), now); err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("series round trip: %v\ngot  %+v\nwant %+v", err, back, s)
	}
	d, err := ParseValues(nil, now)
	if err != nil || d.Kind != Flows || d.Limit != DefaultLimit || d.To.Sub(d.From) != DefaultSince {
		t.Fatalf("defaults: %+v, %v", d, err)
	}
}

func TestParseValuesErrors(t *testing.T) {
	for _, tc := range []struct {
		v    url.Values
		want []string
	}{
		{url.Values{"since": {"-1h"}}, []string{"since:", "positive duration"}},
		{url.Values{"since": {"1h"}, "from": {"2026-12-05T10:00:00Z"}}, []string{"either since or from"}},
		{url.Values{"from": {"yesterday"}}, []string{"from:", "RFC 3339"}},
		{url.Values{"src": {"10.0.0.300"}}, []string{"src:", "CIDR"}},
		{url.Values{"dport": {"70000"}}, []string{"dport:", "0 to 65535"}},
		{url.Values{"proto": {"bogus"}}, []string{"proto:", "tcp, udp"}},
		{url.Values{"top": {"colour"}}, []string{"top:", "src, dst"}},
		{url.Values{"top": {"src"}, "series": {"1m"}}, []string{"one of top or series"}},
		{url.Values{"by": {"bits"}}, []string{"by:", "bytes, packets or flows"}},
		{url.Values{"n": {"0"}}, []string{"n:", "1 to"}},
		{url.Values{"series": {"500ms"}}, []string{"interval"}},
		{url.Values{"bogus": {"1"}}, []string{"bogus: unknown parameter"}},
		{url.Values{"exporter": {"host"}}, []string{"exporter:", "IP address"}},
		{url.Values{"src": {strings.Repeat("10.0.0.1,", 3000)}}, []string{"bytes, at most"}},
	} {
		_, err := ParseValues(tc.v, now)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("ParseValues(%v) = %v; want an error containing %q", tc.v, err, w)
			}
		}
	}
}

func testResult() (Result, Result, Result) {
	t0 := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	flows := Result{Records: []RecordRow{{Start: t0, End: t0.Add(time.Second), Received: t0.Add(2 * time.Second),
		Exporter: netip.MustParseAddr("192.0.2.9"), Protocol: "netflow5", Src: netip.MustParseAddr("10.0.0.1"),
		Dst: netip.MustParseAddr("10.0.0.2"), Proto: 6, SrcPort: 1234, DstPort: 80, Bytes: 1500, Packets: 3, InIf: 1, OutIf: 2,
		Bridge: "br0", InPort: "p1", OutPort: "p2"}}}
	top := Result{Groups: []Group{{Key: "10.0.0.2", Bytes: 900, Packets: 9, Flows: 3}, {Key: "10.0.0.3", Bytes: 100, Packets: 1, Flows: 1}}}
	series := Result{Points: []Point{{Start: t0, Bytes: 10, Packets: 1, Flows: 1}, {Start: t0.Add(time.Minute), Bytes: 20, Packets: 2, Flows: 1}}}
	return flows, top, series
}

func TestRender(t *testing.T) {
	flows, top, series := testResult()
	q := Query{Kind: Top, GroupBy: KeyDst, From: now.Add(-time.Hour), To: now}
	var b bytes.Buffer
	if err := Render(&b, q, top, CSV); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "dst,bytes,packets,flows\n10.0.0.2,900,9,3\n10.0.0.3,100,1,1\n"; got != want {
		t.Fatalf("CSV:\n%s\nwant\n%s", got, want)
	}
	b.Reset()
	if err := Render(&b, Query{Kind: Flows}, flows, Table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "end ") || !strings.Contains(lines[1], "br0") || !strings.Contains(lines[1], " tcp ") ||
		!strings.HasSuffix(strings.Join(strings.Fields(lines[1]), " "), "1500 3") {
		t.Fatalf("table:\n%s", b.String())
	}
	b.Reset()
	if err := Render(&b, Query{Kind: Series, From: now.Add(-time.Hour), To: now}, Result{}, Table); err != nil || !strings.Contains(b.String(), "no flows from") {
		t.Fatalf("empty table: %v\n%s", err, b.String())
	}
	// JSON reads back to the same result, for every kind.
	for k, r := range map[Kind]Result{Flows: flows, Top: top, Series: series} {
		b.Reset()
		if err := Render(&b, Query{Kind: k}, r, JSON); err != nil {
			t.Fatal(err)
		}
		gk, gr, err := ReadJSON(&b)
		if err != nil || gk != k || !reflect.DeepEqual(gr, r) {
			t.Fatalf("%s JSON round trip: %v\ngot  %+v\nwant %+v", k, err, gr, r)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Fatal("ParseFormat accepted xml")
	}
	if _, _, err := ReadJSON(strings.NewReader(`{"kind":"pie"}`)); err == nil {
		t.Fatal("ReadJSON accepted kind pie")
	}
}

func TestSocket(t *testing.T) {
	flows, _, _ := testResult()
	var asked Query
	h := NewHandler(ServeOptions{
		Run: func(ctx context.Context, q Query) (Result, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("query run without a deadline")
			}
			asked = q
			return flows, nil
		},
		Status: func() Status { return Status{Job: "c1", Counters: map[string]uint64{"received": 7}} },
		Now:    func() time.Time { return now },
	})
	sock := filepath.Join(t.TempDir(), "q.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := NewClient(sock, 0)
	q := Query{Kind: Flows, From: now.Add(-time.Hour), To: now, Limit: 7, Filter: Filter{Bridges: []string{"br0"}}}
	got, err := c.Query(t.Context(), q)
	if err != nil || !reflect.DeepEqual(got, flows) || !reflect.DeepEqual(asked, q) {
		t.Fatalf("Query: %v\ngot %+v\nasked %+v", err, got, asked)
	}
	st, err := c.Status(t.Context())
	if err != nil || st.Job != "c1" || st.Counters["received"] != 7 {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	code, body, err := c.Get(t.Context(), PathQuery, "top=colour", 1<<20)
	if err != nil || code != http.StatusBadRequest || !strings.Contains(string(body), "top:") {
		t.Fatalf("bad query: %d %s %v", code, body, err)
	}
	if _, err := NewClient(filepath.Join(t.TempDir(), "none.sock"), 0).Query(t.Context(), q); err == nil || !strings.Contains(err.Error(), "flowmon-collector job running") {
		t.Fatalf("no socket: %v", err)
	}
}

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"--since", "30m", "--dst", "10.0.0.1", "--dst", "10.0.0.2/31", "--top", "dport", "--by", "flows", "-n", "3"}); err != nil {
		t.Fatal(err)
	}
	q, err := f.Query(now)
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind != Top || q.GroupBy != KeyDstPort || q.Metric != FlowCount || q.Limit != 3 || len(q.Filter.Dst) != 2 || !q.From.Equal(now.Add(-30*time.Minute)) {
		t.Fatalf("flags gave %+v", q)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	f = BindFlags(fs)
	if err := fs.Parse([]string{"--series", "1m", "--top", "src"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Query(now); err == nil || !strings.Contains(err.Error(), "one of top or series") {
		t.Fatalf("top with series: %v", err)
	}
}
