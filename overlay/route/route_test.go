package route

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

func mt(mbit uint64, ms int) Metrics {
	return Metrics{Bandwidth: mbit * 1_000_000, Latency: time.Duration(ms) * time.Millisecond}
}

// The seed's situation: a1, a2 on carrier A, b1 on carrier B, supers s1 (A and B) and s2 (A and B)
// meshed. Ordinary nodes have no link to each other: a1 → b1 goes through a super.
func seedNodes() []Node {
	return []Node{{"a1", Ordinary}, {"a2", Ordinary}, {"b1", Ordinary}, {"s1", Super}, {"s2", Super}}
}

func seedLinks() []Link {
	return []Link{
		{"a1", "s1", mt(1000, 5)}, {"a1", "s2", mt(1000, 6)},
		{"a2", "s2", mt(100, 5)},
		{"b1", "s1", mt(1000, 5)}, {"s2", "b1", mt(1000, 4)},
		{"s1", "s2", mt(10000, 2)},
	}
}

func TestCostFunction(t *testing.T) {
	for _, c := range []struct {
		m    Metrics
		want Cost
	}{
		{mt(1000, 5), 5000 + 1000},                                  // 5 ms + 1 Mbit at 1 Gbit/s
		{mt(100, 5), 5000 + 10_000},                                 // less bandwidth costs more
		{mt(1000, 130), 130_000 + 1000},                             // cross-carrier latency dominates
		{Metrics{Bandwidth: MaxBandwidth}, 1},                       // the cheapest possible link
		{Metrics{Bandwidth: 3_000_000, Latency: 1500}, 2 + 333_334}, // both terms round up
		{Metrics{Bandwidth: MinBandwidth, Latency: MaxLatency}, 10_000_000 + 1_000_000_000},
	} {
		got, err := c.m.Cost()
		if err != nil || got != c.want {
			t.Errorf("%+v: cost %d (%v), want %d", c.m, got, err, c.want)
		}
	}
}

func TestSeedExample(t *testing.T) {
	r, err := New(seedNodes(), seedLinks())
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Lookup("a1", "b1")
	if err != nil {
		t.Fatal(err)
	}
	// a1–s1–b1 costs 6000+6000; a1–s2–b1 costs 7000+5000: a tie, broken towards s1 (ID order).
	if want := []string{"a1", "s1", "b1"}; !slices.Equal(p.Nodes, want) || p.Cost != 12_000 {
		t.Fatalf("a1 → b1: %v cost %d, want %v cost 12000", p.Nodes, p.Cost, want)
	}
	p, err = r.Lookup("a2", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a2", "s2", "s1"}; !slices.Equal(p.Nodes, want) || p.Cost != 15_000+2100 {
		t.Fatalf("a2 → s1: %v cost %d", p.Nodes, p.Cost)
	}
	p, err = r.Lookup("b1", "b1")
	if err != nil || len(p.Nodes) != 1 || p.Cost != 0 {
		t.Fatalf("b1 → b1: %v %v", p, err)
	}
	// s1 degrades: a1 → b1 moves to s2.
	if _, err := r.SetLink("s1", "b1", mt(1000, 130)); err != nil {
		t.Fatal(err)
	}
	p, _ = r.Lookup("a1", "b1")
	if want := []string{"a1", "s2", "b1"}; !slices.Equal(p.Nodes, want) {
		t.Fatalf("after degradation a1 → b1: %v, want %v", p.Nodes, want)
	}
}

// TestOrdinaryNeverRelays is the subtlety of issue 17: ordinary node o, tied cheaply to s1 and
// s2, offers s1 → o → s2 for 2000 while the direct super link costs 100,000. Our semantics: the
// route stays on the super mesh.
func TestOrdinaryNeverRelays(t *testing.T) {
	nodes := []Node{{"s1", Super}, {"s2", Super}, {"o", Ordinary}, {"x", Ordinary}}
	links := []Link{
		{"s1", "s2", Metrics{Bandwidth: 1e9, Latency: 99 * time.Millisecond}},
		{"o", "s1", Metrics{Bandwidth: 1e12}}, {"o", "s2", Metrics{Bandwidth: 1e12}},
		{"x", "s1", mt(1000, 1)},
	}
	r, err := New(nodes, links)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Lookup("s1", "s2")
	if err != nil || !slices.Equal(p.Nodes, []string{"s1", "s2"}) || p.Cost != 100_000 {
		t.Fatalf("s1 → s2: %v %v: ordinary node o must not relay", p, err)
	}
	p, err = r.Lookup("x", "s2")
	if err != nil || !slices.Equal(p.Nodes, []string{"x", "s1", "s2"}) {
		t.Fatalf("x → s2: %v %v", p, err)
	}
	// o itself reaches either super directly.
	p, _ = r.Lookup("o", "s2")
	if !slices.Equal(p.Nodes, []string{"o", "s2"}) || p.Cost != 1 {
		t.Fatalf("o → s2: %v", p)
	}
}

func TestTables(t *testing.T) {
	r, err := New(seedNodes(), seedLinks())
	if err != nil {
		t.Fatal(err)
	}
	tb, err := r.Table("a2")
	if err != nil {
		t.Fatal(err)
	}
	want := Table{Node: "a2", Kind: Ordinary,
		Supers:   []SuperRoute{{"s1", "s2", 17_100}, {"s2", "s2", 15_000}},
		Attached: []Attachment{{"a2", "s2", 15_000}}}
	if fmt.Sprint(tb) != fmt.Sprint(want) {
		t.Fatalf("table of a2:\n got %+v\nwant %+v", tb, want)
	}
	tb, err = r.Table("s1")
	if err != nil {
		t.Fatal(err)
	}
	want = Table{Node: "s1", Kind: Super,
		Supers:   []SuperRoute{{"s2", "s2", 2100}},
		Attached: []Attachment{{"a1", "s1", 6000}, {"b1", "s1", 6000}}}
	if fmt.Sprint(tb) != fmt.Sprint(want) {
		t.Fatalf("table of s1:\n got %+v\nwant %+v", tb, want)
	}
	at, err := r.Attachments("b1")
	if err != nil || fmt.Sprint(at) != fmt.Sprint([]Attachment{{"b1", "s1", 6000}, {"b1", "s2", 5000}}) {
		t.Fatalf("attachments of b1: %v %v", at, err)
	}
	_, err = r.Attachments("s1")
	assertErr(t, err, "it is a super node")
	_, err = r.Table("zz")
	if !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("table of zz: %v, want ErrUnknownNode", err)
	}
	_, err = r.Lookup("a1", "zz")
	if !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("lookup a1 → zz: %v, want ErrUnknownNode", err)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	ok := mt(1000, 1)
	long := strings.Repeat("x", MaxIDLen+1)
	tooMany := make([]Node, MaxNodes+1)
	var bigNodes []Node // 1,100 supers × 198,900 ordinary nodes
	for i := range 1100 {
		bigNodes = append(bigNodes, Node{fmt.Sprintf("s%d", i), Super})
	}
	for i := range MaxNodes - 1100 {
		bigNodes = append(bigNodes, Node{fmt.Sprintf("o%d", i), Ordinary})
	}
	attNodes := []Node{{"o", Ordinary}}
	var attLinks []Link
	for i := range MaxAttachments + 1 {
		id := fmt.Sprintf("s%d", i)
		attNodes = append(attNodes, Node{id, Super})
		attLinks = append(attLinks, Link{"o", id, ok})
	}
	for _, c := range []struct {
		name  string
		nodes []Node
		links []Link
		want  string
	}{
		{"empty ID", []Node{{"", Super}}, nil, "must be 1..64 bytes"},
		{"long ID", []Node{{long, Super}}, nil, "must be 1..64 bytes"},
		{"bad byte", []Node{{"a b", Super}}, nil, `has byte ' '`},
		{"duplicate node", []Node{{"a", Super}, {"a", Ordinary}}, nil, `node "a" is listed twice`},
		{"bad kind", []Node{{"a", 0}}, nil, "has kind kind(0)"},
		{"too many nodes", tooMany, nil, "200001 nodes exceed"},
		{"unknown end", []Node{{"a", Super}}, []Link{{"a", "b", ok}}, `unknown node "b"`},
		{"self link", []Node{{"a", Super}}, []Link{{"a", "a", ok}}, "joins a node to itself"},
		{"ordinary pair", []Node{{"a", Ordinary}, {"b", Ordinary}}, []Link{{"a", "b", ok}}, "ordinary nodes never talk directly"},
		{"duplicate super link", []Node{{"a", Super}, {"b", Super}}, []Link{{"a", "b", ok}, {"b", "a", ok}}, "listed twice"},
		{"duplicate attachment", []Node{{"a", Super}, {"o", Ordinary}}, []Link{{"a", "o", ok}, {"o", "a", ok}}, "listed twice"},
		{"zero bandwidth", []Node{{"a", Super}, {"b", Super}}, []Link{{"a", "b", Metrics{}}}, "bandwidth 0 bit/s is outside"},
		{"too many phase 2 entries", bigNodes, nil, "phase 2 entries exceed"},
		{"too many attachments", attNodes, attLinks, "more than 16 super nodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.nodes, c.links)
			assertErr(t, err, c.want)
		})
	}
}
