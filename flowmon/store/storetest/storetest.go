// Package storetest is the query suite every flowmon store passes: Run appends generated
// records and checks every answer against a plain in-Go reference (Reference) computed over the
// same records, so a store that filters, groups, orders or buckets differently fails.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
)

// Day0 returns the start of the first UTC day Records generates records in.
func Day0() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }

// Open returns a new, empty store for one subtest; the suite closes it.
type Open func(t *testing.T) store.Store

// Run runs the suite against the stores open returns, one fresh store per subtest.
func Run(t *testing.T, open Open) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("Queries", func(t *testing.T) { testQueries(t, open(t)) })
	t.Run("TopTies", func(t *testing.T) { testTopTies(t, open(t)) })
	t.Run("TimeEdges", func(t *testing.T) { testTimeEdges(t, open(t)) })
	t.Run("RetriedBatch", func(t *testing.T) { testRetried(t, open(t)) })
	t.Run("Atomic", func(t *testing.T) { testAtomic(t, open(t)) })
	t.Run("Retain", func(t *testing.T) { testRetain(t, open(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) { testConcurrent(t, open(t)) })
}

// closeStore closes s at the end of t.
func closeStore(t *testing.T, s store.Store) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// Records returns n deterministic records whose End falls in the days days from Day0() on, with
// distinct End times, small value domains (so filters match and Top groups tie) and both
// address families.
func Records(seed uint64, n, days int) []flow.Record {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	v4 := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.9"),
		netip.MustParseAddr("10.0.1.20"), netip.MustParseAddr("192.168.7.3"), netip.MustParseAddr("10.0.0.10")}
	v6 := []netip.Addr{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:0:1::7"),
		netip.MustParseAddr("fd00::5")}
	exporters := []netip.Addr{netip.MustParseAddr("172.16.0.1"), netip.MustParseAddr("172.16.0.2"), netip.MustParseAddr("fe80::1")}
	ports := []uint16{53, 80, 443, 8080, 1024, 65535}
	protos := []uint8{6, 17, 1}
	bridges := []string{"br0", "br-int", "Br1", ""}
	names := []string{"p1", "p2", "vhu-α", "dpdk0", ""}
	span := int64(days) * int64(24*time.Hour)
	out := make([]flow.Record, n)
	for i := range out {
		end := Day0().UnixNano() + rng.Int64N(span/int64(n))*int64(n) + int64(i) // distinct: i mod n
		var src, dst netip.Addr
		if rng.IntN(4) == 0 {
			src, dst = v6[rng.IntN(len(v6))], v6[rng.IntN(len(v6))]
		} else {
			src, dst = v4[rng.IntN(len(v4))], v4[rng.IntN(len(v4))]
		}
		out[i] = flow.Record{
			Received: end + int64(time.Second), Start: end - rng.Int64N(int64(time.Minute)), End: end,
			Exporter: exporters[rng.IntN(len(exporters))], Protocol: flow.Protocol(1 + rng.IntN(4)),
			Domain: rng.Uint32N(3), SamplingRate: rng.Uint32N(2) * 100,
			Src: src, Dst: dst, Proto: protos[rng.IntN(len(protos))],
			SrcPort: ports[rng.IntN(len(ports))], DstPort: ports[rng.IntN(len(ports))],
			TCPFlags: uint8(rng.UintN(256)), ToS: uint8(rng.UintN(256)),
			Bytes: 64 * uint64(1+rng.IntN(20)), Packets: uint64(1 + rng.IntN(10)),
			InIf: rng.Uint32N(70000), OutIf: rng.Uint32N(5),
			Bridge: bridges[rng.IntN(len(bridges))], InPort: names[rng.IntN(len(names))], OutPort: names[rng.IntN(len(names))],
		}
	}
	return out
}

// appendAll stores recs in batches of size per, with IDs prefix-0, prefix-1, ….
func appendAll(t *testing.T, s store.Store, prefix string, recs []flow.Record, per int) {
	t.Helper()
	for i := 0; i*per < len(recs); i++ {
		b := store.Batch{ID: prefix + "-" + strconv.Itoa(i), Records: recs[i*per : min(len(recs), (i+1)*per)]}
		if err := s.Append(t.Context(), b); err != nil {
			t.Fatalf("Append %s: %v", b.ID, err)
		}
	}
}

// ask runs q (which must be valid) and returns the answer.
func ask(t *testing.T, s store.Store, q query.Query) query.Result {
	t.Helper()
	if err := q.Validate(); err != nil {
		t.Fatalf("suite bug: invalid query %+v: %v", q, err)
	}
	res, err := s.Query(t.Context(), q)
	if err != nil {
		t.Fatalf("Query %+v: %v", q, err)
	}
	return res
}

// check compares s's answer to q with the reference's over recs.
func check(t *testing.T, s store.Store, recs []flow.Record, name string, q query.Query) {
	t.Helper()
	got := ask(t, s, q)
	want := Reference(recs, q)
	if !equalResult(got, want) {
		t.Errorf("%s: query %+v\n got  %s\n want %s", name, q, summary(got), summary(want))
	}
}

// equalResult compares results, treating nil and empty lists alike.
func equalResult(a, b query.Result) bool {
	return len(a.Records) == len(b.Records) && len(a.Groups) == len(b.Groups) && len(a.Points) == len(b.Points) &&
		(len(a.Records) == 0 || reflect.DeepEqual(a.Records, b.Records)) &&
		(len(a.Groups) == 0 || reflect.DeepEqual(a.Groups, b.Groups)) &&
		(len(a.Points) == 0 || reflect.DeepEqual(a.Points, b.Points))
}

func summary(r query.Result) string {
	const most = 8
	switch {
	case len(r.Records) > 0:
		return fmt.Sprintf("%d records, first %+v", len(r.Records), r.Records[:min(2, len(r.Records))])
	case len(r.Groups) > 0:
		return fmt.Sprintf("%d groups %+v", len(r.Groups), r.Groups[:min(most, len(r.Groups))])
	case len(r.Points) > 0:
		return fmt.Sprintf("%d points %+v", len(r.Points), r.Points[:min(most, len(r.Points))])
	}
	return "empty"
}

func all(days int) query.Query {
	return query.Query{Kind: query.Flows, From: Day0(), To: Day0().Add(time.Duration(days) * 24 * time.Hour), Limit: query.MaxRows}
}

func testEmpty(t *testing.T, s store.Store) {
	closeStore(t, s)
	q := all(3)
	for _, k := range []query.Kind{query.Flows, query.Top, query.Series} {
		q.Kind, q.GroupBy, q.Metric, q.Interval = k, query.KeySrc, query.Bytes, time.Hour
		if k == query.Series {
			q.Limit = 0
		}
		res := ask(t, s, q)
		if len(res.Records)+len(res.Groups)+len(res.Points) != 0 {
			t.Errorf("empty store answered %+v with %s", q, summary(res))
		}
	}
	n, err := s.Retain(t.Context(), Day0().Add(100*24*time.Hour))
	if err != nil || n != 0 {
		t.Errorf("Retain on an empty store = %d, %v; want 0, nil", n, err)
	}
}

func testQueries(t *testing.T, s store.Store) {
	closeStore(t, s)
	const days = 3
	recs := Records(1, 3000, days)
	appendAll(t, s, "q", recs, 700)
	base := all(days)

	// Listing: everything, a small limit, a sub-range.
	check(t, s, recs, "all flows", base)
	small := base
	small.Limit = 7
	check(t, s, recs, "limit 7", small)
	mid := base
	mid.From, mid.To = Day0().Add(30*time.Hour), Day0().Add(50*time.Hour)
	check(t, s, recs, "sub-range", mid)

	// Every filter field, alone and combined.
	filters := map[string]query.Filter{
		"src v4 /24":        {Src: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}},
		"src v4 /32":        {Src: []netip.Prefix{netip.MustParsePrefix("10.0.0.9/32")}},
		"src v4 /0":         {Src: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}},
		"src unmasked /23":  {Src: []netip.Prefix{netip.MustParsePrefix("10.0.1.77/23")}},
		"dst v6 /64":        {Dst: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")}},
		"dst v6 /8 and v4":  {Dst: []netip.Prefix{netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.168.0.0/16")}},
		"src ports":         {SrcPorts: []uint16{53, 65535}},
		"dst ports":         {DstPorts: []uint16{443}},
		"protos":            {Protos: []uint8{17, 1}},
		"bridges":           {Bridges: []string{"br0", "Br1"}},
		"ports in or out":   {Ports: []string{"vhu-α"}},
		"exporters":         {Exporters: []netip.Addr{netip.MustParseAddr("172.16.0.2"), netip.MustParseAddr("fe80::1")}},
		"no match":          {Bridges: []string{"br9'; DROP TABLE flows; --"}, Ports: []string{`p1"`}},
		"combined":          {Src: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Protos: []uint8{6}, Ports: []string{"p1", "p2"}, Exporters: []netip.Addr{netip.MustParseAddr("172.16.0.1")}},
		"combined v6 ports": {Src: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}, DstPorts: []uint16{80, 8080}, Bridges: []string{"br-int"}},
	}
	for name, f := range filters {
		q := base
		q.Filter = f
		if len(Reference(recs, q).Records) == 0 && name != "no match" {
			t.Errorf("suite bug: filter %s matches no generated record", name)
		}
		check(t, s, recs, "filter "+name, q)
	}
	check(t, s, recs, "all flows after the quoting filters", base)

	// Top by every key and metric; a small limit cuts through ties (FlowCount and the small
	// domains make them), a big one lists every group.
	for k := query.KeySrc; k <= query.KeyExporter; k++ {
		for m := query.Bytes; m <= query.FlowCount; m++ {
			for _, limit := range []int{2, 3, 100} {
				q := base
				q.Kind, q.GroupBy, q.Metric, q.Limit = query.Top, k, m, limit
				check(t, s, recs, fmt.Sprintf("top key %d metric %d limit %d", k, m, limit), q)
			}
		}
	}
	q := mid
	q.Kind, q.GroupBy, q.Metric, q.Limit, q.Filter = query.Top, query.KeyDstPort, query.Bytes, 4, filters["protos"]
	check(t, s, recs, "top with filter and range", q)

	// Series: aligned and unaligned intervals, every metric.
	for _, iv := range []time.Duration{time.Hour, 15 * time.Minute, 7 * time.Second * 1000, 24 * time.Hour} {
		for m := query.Bytes; m <= query.FlowCount; m++ {
			q := base
			q.Kind, q.Metric, q.Interval, q.Limit = query.Series, m, iv, 0
			check(t, s, recs, fmt.Sprintf("series %s metric %d", iv, m), q)
		}
	}
	q = mid
	q.Kind, q.Metric, q.Interval, q.Limit, q.Filter = query.Series, query.Packets, 13*time.Minute, 0, filters["src v4 /24"]
	check(t, s, recs, "series with filter and range", q)
}

// testTopTies makes every group of every key tie on every metric, so the order of a Top is
// its tie order alone: addresses across families, ports numerically, names byte-wise.
func testTopTies(t *testing.T, s store.Store) {
	closeStore(t, s)
	addrs := []netip.Addr{netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("2001:db8::1"),
		netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::1")}
	ports := []uint16{443, 80, 1024, 9}
	names := []string{"b", "B", "a", "br10"}
	recs := Records(10, 12, 1)
	for i := range recs {
		r := &recs[i]
		j := i % 4
		r.Bytes, r.Packets = 100, 2
		r.Src, r.Dst, r.Exporter = addrs[j], addrs[(j+1)%4], addrs[(j+2)%4]
		r.SrcPort, r.DstPort, r.Proto = ports[j], ports[(j+3)%4], uint8(ports[j])
		r.Bridge, r.InPort, r.OutPort = names[j], names[(j+1)%4], names[(j+2)%4]
	}
	appendAll(t, s, "ties", recs, 12)
	for k := query.KeySrc; k <= query.KeyExporter; k++ {
		for m := query.Bytes; m <= query.FlowCount; m++ {
			for _, limit := range []int{1, 2, 3} {
				q := all(1)
				q.Kind, q.GroupBy, q.Metric, q.Limit = query.Top, k, m, limit
				check(t, s, recs, fmt.Sprintf("tied top key %d metric %d limit %d", k, m, limit), q)
			}
		}
	}
}

func testTimeEdges(t *testing.T, s store.Store) {
	closeStore(t, s)
	from := Day0().Add(36 * time.Hour)
	to := Day0().Add(48 * time.Hour) // a day boundary: the To day's table must not leak in
	r := Records(2, 4, 1)
	for i, end := range []time.Time{from.Add(-1), from, to.Add(-1), to} {
		r[i].End = end.UnixNano()
	}
	appendAll(t, s, "edges", r, 10)
	q := query.Query{Kind: query.Flows, From: from, To: to, Limit: 10}
	got := ask(t, s, q).Records
	if len(got) != 2 || !got[0].End.Equal(to.Add(-1)) || !got[1].End.Equal(from) {
		t.Errorf("[From, To) edges: got %d records %+v; want Ends %s and %s", len(got), got, to.Add(-1), from)
	}
	check(t, s, r, "edges", q)
}

func testRetried(t *testing.T, s store.Store) {
	closeStore(t, s)
	recs := Records(3, 50, 2)
	b := store.Batch{ID: "collector-7/42", Records: recs}
	for range 3 {
		if err := s.Append(t.Context(), b); err != nil {
			t.Fatalf("Append %s: %v", b.ID, err)
		}
	}
	// The same ID with other records is still the stored batch.
	if err := s.Append(t.Context(), store.Batch{ID: b.ID, Records: Records(4, 10, 2)}); err != nil {
		t.Fatalf("Append %s again: %v", b.ID, err)
	}
	check(t, s, recs, "retried batch", all(2))
	if got := len(ask(t, s, all(2)).Records); got != len(recs) {
		t.Errorf("after 4 appends of batch %s: %d records stored; want %d", b.ID, got, len(recs))
	}
}

func testAtomic(t *testing.T, s store.Store) {
	closeStore(t, s)
	good := Records(5, 20, 2)
	appendAll(t, s, "good", good, 20)
	bad := Records(6, 400, 2)
	bad[len(bad)-1].OutPort = "bad\xff\x00name" // the stores check names row by row
	if err := s.Append(t.Context(), store.Batch{ID: "bad", Records: bad}); err == nil {
		t.Fatal("Append accepted a record with a NUL and invalid UTF-8 in its name")
	}
	check(t, s, good, "after a failed batch", all(2))
	// The failed batch's ID was not recorded: a corrected retry is stored.
	bad[len(bad)-1].OutPort = "fixed"
	if err := s.Append(t.Context(), store.Batch{ID: "bad", Records: bad}); err != nil {
		t.Fatalf("Append of the corrected batch: %v", err)
	}
	check(t, s, append(slices.Clone(good), bad...), "after the corrected batch", all(2))
}

func testRetain(t *testing.T, s store.Store) {
	closeStore(t, s)
	recs := Records(7, 800, 4)
	appendAll(t, s, "r", recs, 300)
	keep := func(cut time.Time) []flow.Record {
		var out []flow.Record
		for _, r := range recs {
			// A record survives when its End's day ends after cut.
			day := time.Unix(0, r.End).UTC().Truncate(24 * time.Hour)
			if day.Add(24 * time.Hour).After(cut) {
				out = append(out, r)
			}
		}
		return out
	}
	var latest time.Time
	for _, tc := range []struct {
		cut  time.Time
		want int
	}{
		{Day0().Add(24*time.Hour - 1), 0}, // day 0 has not ended
		{Day0().Add(24*time.Hour + 3), 1}, // day 0 ended
		{Day0().Add(24*time.Hour + 5), 0}, // nothing more
		{Day0().Add(72 * time.Hour), 2},   // days 1 and 2, exactly at day 3's start
		{Day0().Add(-240 * time.Hour), 0}, // before everything
	} {
		n, err := s.Retain(t.Context(), tc.cut)
		if err != nil || n != tc.want {
			t.Errorf("Retain(%s) = %d, %v; want %d dropped", tc.cut, n, err, tc.want)
		}
		if tc.cut.After(latest) { // dropped days stay dropped
			latest = tc.cut
		}
		check(t, s, keep(latest), "after Retain "+tc.cut.String(), all(4))
	}
	// Appending to a dropped day creates it again.
	late := Records(8, 5, 1)
	appendAll(t, s, "late", late, 5)
	check(t, s, append(keep(Day0().Add(72*time.Hour)), late...), "after re-creating day 0", all(4))
}

func testConcurrent(t *testing.T, s store.Store) {
	closeStore(t, s)
	const writers, batches, per = 6, 5, 40
	recs := Records(9, writers*batches*per, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*batches)
	for w := range writers {
		wg.Go(func() {
			ctx := context.WithoutCancel(t.Context())
			for i := range batches {
				lo := (w*batches + i) * per
				b := store.Batch{ID: fmt.Sprintf("w%d-%d", w, i), Records: recs[lo : lo+per]}
				errs <- s.Append(ctx, b)
				// Another writer retries its neighbour's batch with the same ID.
				lo = (((w+1)%writers)*batches + i) * per
				errs <- s.Append(ctx, store.Batch{ID: fmt.Sprintf("w%d-%d", (w+1)%writers, i), Records: recs[lo : lo+per]})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Append: %v", err)
		}
	}
	check(t, s, recs, "after concurrent appends", all(2))
}

// Reference answers q over recs the plain way; the suite expects every store to agree.
func Reference(recs []flow.Record, q query.Query) query.Result {
	var m []flow.Record
	for _, r := range recs {
		if Matches(r, q) {
			m = append(m, r)
		}
	}
	switch q.Kind {
	case query.Top:
		return query.Result{Groups: refTop(m, q)}
	case query.Series:
		return query.Result{Points: refSeries(m, q)}
	}
	slices.SortFunc(m, func(a, b flow.Record) int { return cmp.Compare(b.End, a.End) })
	rows := make([]query.RecordRow, 0, min(len(m), q.Limit))
	for _, r := range m[:min(len(m), q.Limit)] {
		rows = append(rows, Row(r))
	}
	return query.Result{Records: rows}
}

// Row is r as a store lists it.
func Row(r flow.Record) query.RecordRow {
	ts := func(ns int64) time.Time { return time.Unix(0, ns).UTC() }
	return query.RecordRow{Start: ts(r.Start), End: ts(r.End), Received: ts(r.Received), Exporter: r.Exporter,
		Protocol: r.Protocol.String(), Domain: r.Domain, Src: r.Src, Dst: r.Dst, Proto: r.Proto, SrcPort: r.SrcPort,
		DstPort: r.DstPort, TCPFlags: r.TCPFlags, ToS: r.ToS, Bytes: r.Bytes, Packets: r.Packets, InIf: r.InIf,
		OutIf: r.OutIf, Bridge: r.Bridge, InPort: r.InPort, OutPort: r.OutPort}
}

// Matches reports whether r is in q's time range and passes its filter.
func Matches(r flow.Record, q query.Query) bool {
	if r.End < q.From.UnixNano() || r.End >= q.To.UnixNano() {
		return false
	}
	f := q.Filter
	inPrefixes := func(a netip.Addr, ps []netip.Prefix) bool {
		return len(ps) == 0 || slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	anyOf := func(ok bool, n int) bool { return n == 0 || ok }
	return inPrefixes(r.Src, f.Src) && inPrefixes(r.Dst, f.Dst) &&
		anyOf(slices.Contains(f.SrcPorts, r.SrcPort), len(f.SrcPorts)) &&
		anyOf(slices.Contains(f.DstPorts, r.DstPort), len(f.DstPorts)) &&
		anyOf(slices.Contains(f.Protos, r.Proto), len(f.Protos)) &&
		anyOf(slices.Contains(f.Bridges, r.Bridge), len(f.Bridges)) &&
		anyOf(slices.Contains(f.Ports, r.InPort) || slices.Contains(f.Ports, r.OutPort), len(f.Ports)) &&
		anyOf(slices.Contains(f.Exporters, r.Exporter), len(f.Exporters))
}

// groupKey is a Top group's key: its text and the value it sorts by on ties.
type groupKey struct {
	text string
	addr netip.Addr
	num  int
}

func keyOf(r flow.Record, k query.Key) groupKey {
	addr := func(a netip.Addr) groupKey {
		if !a.IsValid() {
			return groupKey{}
		}
		return groupKey{text: a.String(), addr: a}
	}
	num := func(n int) groupKey { return groupKey{text: strconv.Itoa(n), num: n} }
	switch k {
	case query.KeySrc:
		return addr(r.Src)
	case query.KeyDst:
		return addr(r.Dst)
	case query.KeyExporter:
		return addr(r.Exporter)
	case query.KeySrcPort:
		return num(int(r.SrcPort))
	case query.KeyDstPort:
		return num(int(r.DstPort))
	case query.KeyProto:
		return num(int(r.Proto))
	case query.KeyBridge:
		return groupKey{text: r.Bridge}
	case query.KeyInPort:
		return groupKey{text: r.InPort}
	}
	return groupKey{text: r.OutPort}
}

func metricOf(g query.Group, m query.Metric) uint64 {
	switch m {
	case query.Packets:
		return g.Packets
	case query.FlowCount:
		return g.Flows
	}
	return g.Bytes
}

// refTop groups, then orders by the metric descending and ties by the key's own order:
// addresses as netip.Addr.Compare, numbers numerically, names byte-wise.
func refTop(m []flow.Record, q query.Query) []query.Group {
	sums := map[groupKey]*query.Group{}
	for _, r := range m {
		k := keyOf(r, q.GroupBy)
		g := sums[k]
		if g == nil {
			g = &query.Group{Key: k.text}
			sums[k] = g
		}
		g.Bytes += r.Bytes
		g.Packets += r.Packets
		g.Flows++
	}
	keys := make([]groupKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		if c := cmp.Compare(metricOf(*sums[b], q.Metric), metricOf(*sums[a], q.Metric)); c != 0 {
			return c
		}
		if c := a.addr.Compare(b.addr); c != 0 {
			return c
		}
		if c := cmp.Compare(a.num, b.num); c != 0 {
			return c
		}
		return cmp.Compare(a.text, b.text)
	})
	out := make([]query.Group, 0, min(len(keys), q.Limit))
	for _, k := range keys[:min(len(keys), q.Limit)] {
		out = append(out, *sums[k])
	}
	return out
}

// refSeries sums into buckets starting at multiples of Interval since the epoch, oldest first.
func refSeries(m []flow.Record, q query.Query) []query.Point {
	iv := int64(q.Interval)
	sums := map[int64]*query.Point{}
	for _, r := range m {
		b := r.End - ((r.End%iv)+iv)%iv
		p := sums[b]
		if p == nil {
			p = &query.Point{Start: time.Unix(0, b).UTC()}
			sums[b] = p
		}
		p.Bytes += r.Bytes
		p.Packets += r.Packets
		p.Flows++
	}
	out := make([]query.Point, 0, len(sums))
	for _, p := range sums {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b query.Point) int { return a.Start.Compare(b.Start) })
	return out
}
