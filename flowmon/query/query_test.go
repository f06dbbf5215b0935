package query

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	from := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	ok := Query{Kind: Top, From: from, To: from.Add(time.Hour), Limit: 10, GroupBy: KeySrc, Metric: Bytes}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid query rejected: %v", err)
	}
	series := Query{Kind: Series, From: from, To: from.Add(time.Hour), Metric: Packets, Interval: time.Minute}
	if err := series.Validate(); err != nil {
		t.Fatalf("valid series rejected: %v", err)
	}
	for name, tc := range map[string]struct {
		mut  func(*Query)
		want string
	}{
		"reversed range":  {func(q *Query) { q.To = q.From.Add(-time.Second) }, "time range"},
		"too long":        {func(q *Query) { q.To = q.From.Add(MaxSpan + time.Hour) }, "at most"},
		"zero limit":      {func(q *Query) { q.Limit = 0 }, "limit"},
		"huge limit":      {func(q *Query) { q.Limit = MaxRows + 1 }, "limit"},
		"unknown key":     {func(q *Query) { q.GroupBy = 99 }, "group by"},
		"unknown kind":    {func(q *Query) { q.Kind = 9 }, "kind"},
		"bad prefix":      {func(q *Query) { q.Filter.Src = []netip.Prefix{{}} }, "invalid prefix"},
		"empty name":      {func(q *Query) { q.Filter.Bridges = []string{""} }, "bridge/port"},
		"too many values": {func(q *Query) { q.Filter.DstPorts = make([]uint16, MaxFilterValues+1) }, "filter dstport"},
		"fine series":     {func(q *Query) { *q = series; q.Interval = time.Millisecond }, "interval"},
		"series points":   {func(q *Query) { *q = series; q.To = q.From.Add(MaxSpan); q.Interval = time.Second }, "more than"},
	} {
		q := ok
		tc.mut(&q)
		err := q.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want an error mentioning %q", name, err, tc.want)
		}
	}
}
