package ovsinstall

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/route"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// seed is the seed's shape: supers s1 (carriers c1, c2) and s2 (c2, c3), ordinary a (c1), b
// (c3) and c (c1, c2: tied to both supers).
var seedLinks = []fabric.LinkReport{
	{A: "s1", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 5_000},
	{A: "a", B: "s1", BandwidthKbps: 100_000, LatencyUs: 5_000},
	{A: "b", B: "s2", BandwidthKbps: 100_000, LatencyUs: 5_000},
	{A: "c", B: "s1", BandwidthKbps: 1_000_000, LatencyUs: 1_000},
	{A: "c", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 30_000},
}

func seedNodes() []fabric.NodeState {
	n := func(name string, k fabric.Kind, underlay ...string) fabric.NodeState {
		return fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: name, Kind: k, Underlay: underlay}}
	}
	return []fabric.NodeState{
		n("a", fabric.KindOrdinary, "10.1.0.2"),
		n("b", fabric.KindOrdinary, "10.3.0.2"),
		n("c", fabric.KindOrdinary, "10.1.0.3", "10.2.0.3"),
		n("s1", fabric.KindSuper, "10.1.0.1", "10.2.0.1"),
		n("s2", fabric.KindSuper, "10.2.0.2", "10.3.0.1:7000"),
	}
}

var seedPrefixes = map[string][]netip.Prefix{
	"a":  {netip.MustParsePrefix("192.168.1.0/24")},
	"b":  {netip.MustParsePrefix("192.168.2.0/24")},
	"c":  {netip.MustParsePrefix("192.168.3.0/24"), netip.MustParsePrefix("fd00:3::/64")},
	"s1": {netip.MustParsePrefix("192.168.10.0/24")},
	"s2": {netip.MustParsePrefix("192.168.20.0/24")},
}

// others returns the prefixes of every node but self.
func others(self string) map[string][]netip.Prefix {
	out := map[string][]netip.Prefix{}
	for n, p := range seedPrefixes {
		if n != self {
			out[n] = p
		}
	}
	return out
}

func keys(m map[string][]netip.Prefix) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// resolveSeed resolves node self's table of the seed graph.
func resolveSeed(t *testing.T, self string, local ...string) Table {
	t.Helper()
	nodes := seedNodes()
	tables, ignored, err := controller.Tables(nodes, seedLinks)
	if err != nil || ignored != 0 {
		t.Fatalf("controller.Tables: %v (ignored %d)", err, ignored)
	}
	var kind fabric.Kind
	for _, n := range nodes {
		if n.Name == self {
			kind = n.Kind
		}
	}
	var la []netip.Addr
	for _, l := range local {
		la = append(la, netip.MustParseAddr(l))
	}
	tab, err := Resolve(Input{Self: self, Kind: kind, Version: 7, Routes: tables[self], Tables: tables, Nodes: nodes,
		Local: la, Dests: keys(seedPrefixes)})
	if err != nil {
		t.Fatalf("Resolve %s: %v", self, err)
	}
	return tab
}

var cookies = api.CookieRange{Value: 0xa5123400_00000000, Mask: 0xffffff00_00000000}

// flowLines renders flows as "priority match actions" lines.
func flowLines(fs []api.Flow) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%#x %d %s %s", f.Cookie, f.Priority, f.Match, f.Actions))
	}
	return out
}

func TestRenderOrdinaryExact(t *testing.T) {
	tab := resolveSeed(t, "a", "10.1.0.2")
	want := []Hop{
		{Dest: "b", NextHop: "s1", Underlay: netip.MustParseAddr("10.1.0.1")},
		{Dest: "c", NextHop: "s1", Underlay: netip.MustParseAddr("10.1.0.1")},
		{Dest: "s1", NextHop: "s1", Underlay: netip.MustParseAddr("10.1.0.1")},
		{Dest: "s2", NextHop: "s1", Underlay: netip.MustParseAddr("10.1.0.1")},
	}
	for k := range tab.Hops {
		tab.Hops[k].Cost = 0
	}
	if !slices.Equal(tab.Hops, want) {
		t.Fatalf("hops of a:\n got %+v\nwant %+v", tab.Hops, want)
	}
	fs, err := Render(tab, Params{Kind: fabric.KindOrdinary, Own: seedPrefixes["a"], Prefixes: others("a"), TunnelOfport: 3, VNI: 42, Cookies: cookies})
	if err != nil {
		t.Fatal(err)
	}
	got := flowLines(fs)
	wantLines := []string{
		"0xa512340000000007 2024 in_port=3,tun_id=42,arp,arp_tpa=192.168.1.0/24 NORMAL",
		"0xa512340000000007 2024 in_port=3,tun_id=42,ip,nw_dst=192.168.1.0/24 NORMAL",
		"0xa512340000000007 1500 in_port=3 drop",
		"0xa512340000000007 1064 icmp6,icmp_type=135,nd_target=fd00:3::/64 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1064 ipv6,ipv6_dst=fd00:3::/64 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.1.0/24 NORMAL",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.10.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.2.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.20.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.3.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 ip,nw_dst=192.168.1.0/24 NORMAL",
		"0xa512340000000007 1024 ip,nw_dst=192.168.10.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 ip,nw_dst=192.168.2.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 ip,nw_dst=192.168.20.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
		"0xa512340000000007 1024 ip,nw_dst=192.168.3.0/24 set_field:42->tun_id,set_field:10.1.0.1->tun_dst,output:3",
	}
	if !slices.Equal(got, wantLines) {
		t.Errorf("flows of ordinary a:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	if err := api.ValidateFlowSet(cookies, api.GroupRange{}, api.FlowSet{Flows: fs}); err != nil {
		t.Errorf("the daemon's check refuses the set: %v", err)
	}
	for _, l := range got {
		if strings.Contains(l, "in_port=3") && strings.Contains(l, "->tun_dst") {
			t.Errorf("an ordinary node relays: %s", l)
		}
	}
}

func TestRenderSuperExact(t *testing.T) {
	// s2 reaches s1 over the carrier c2 network 10.2/16, and a through s1.
	tab := resolveSeed(t, "s2", "10.2.0.2", "10.3.0.1")
	for k := range tab.Hops {
		tab.Hops[k].Cost = 0
	}
	want := []Hop{
		{Dest: "a", NextHop: "s1", Underlay: netip.MustParseAddr("10.2.0.1")},
		{Dest: "b", NextHop: "b", Underlay: netip.MustParseAddr("10.3.0.2")},
		{Dest: "c", NextHop: "s1", Underlay: netip.MustParseAddr("10.2.0.1")},
		{Dest: "s1", NextHop: "s1", Underlay: netip.MustParseAddr("10.2.0.1")},
	}
	if !slices.Equal(tab.Hops, want) {
		t.Fatalf("hops of s2:\n got %+v\nwant %+v", tab.Hops, want)
	}
	// Only a and b, to keep the expectation short.
	pfx := map[string][]netip.Prefix{"a": seedPrefixes["a"], "b": seedPrefixes["b"]}
	fs, err := Render(tab, Params{Kind: fabric.KindSuper, Own: seedPrefixes["s2"], Prefixes: pfx, TunnelOfport: 5, VNI: 0, Cookies: cookies})
	if err != nil {
		t.Fatal(err)
	}
	got := flowLines(fs)
	wantLines := []string{
		"0xa512340000000007 2024 in_port=5,tun_id=0,arp,arp_tpa=192.168.1.0/24 set_field:10.2.0.1->tun_dst,in_port",
		"0xa512340000000007 2024 in_port=5,tun_id=0,arp,arp_tpa=192.168.2.0/24 set_field:10.3.0.2->tun_dst,in_port",
		"0xa512340000000007 2024 in_port=5,tun_id=0,arp,arp_tpa=192.168.20.0/24 NORMAL",
		"0xa512340000000007 2024 in_port=5,tun_id=0,ip,nw_dst=192.168.1.0/24 dec_ttl,set_field:10.2.0.1->tun_dst,in_port",
		"0xa512340000000007 2024 in_port=5,tun_id=0,ip,nw_dst=192.168.2.0/24 dec_ttl,set_field:10.3.0.2->tun_dst,in_port",
		"0xa512340000000007 2024 in_port=5,tun_id=0,ip,nw_dst=192.168.20.0/24 NORMAL",
		"0xa512340000000007 1500 in_port=5 drop",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.1.0/24 set_field:0->tun_id,set_field:10.2.0.1->tun_dst,output:5",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.2.0/24 set_field:0->tun_id,set_field:10.3.0.2->tun_dst,output:5",
		"0xa512340000000007 1024 arp,arp_tpa=192.168.20.0/24 NORMAL",
		"0xa512340000000007 1024 ip,nw_dst=192.168.1.0/24 set_field:0->tun_id,set_field:10.2.0.1->tun_dst,output:5",
		"0xa512340000000007 1024 ip,nw_dst=192.168.2.0/24 set_field:0->tun_id,set_field:10.3.0.2->tun_dst,output:5",
		"0xa512340000000007 1024 ip,nw_dst=192.168.20.0/24 NORMAL",
	}
	if !slices.Equal(got, wantLines) {
		t.Errorf("flows of super s2:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	if err := api.ValidateFlowSet(cookies, api.GroupRange{}, api.FlowSet{Flows: fs}); err != nil {
		t.Errorf("the daemon's check refuses the set: %v", err)
	}
}

func TestResolveIPv6NextHop(t *testing.T) {
	nodes := []fabric.NodeState{
		{NodeSpec: fabric.NodeSpec{Name: "o", Kind: fabric.KindOrdinary, Underlay: []string{"fd00::2"}}},
		{NodeSpec: fabric.NodeSpec{Name: "s", Kind: fabric.KindSuper, Underlay: []string{"10.0.0.1", "fd00::1"}}},
	}
	tab, err := Resolve(Input{Self: "o", Kind: fabric.KindOrdinary, Version: 1, Routes: map[string]string{"s": "s 10", "att.s": "s 10"},
		Nodes: nodes, Local: []netip.Addr{netip.MustParseAddr("fd00::2")}, Dests: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Render(tab, Params{Kind: fabric.KindOrdinary, Prefixes: map[string][]netip.Prefix{"s": {netip.MustParsePrefix("10.9.0.0/16")}}, TunnelOfport: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := fs[1].Actions; got != "set_field:0->tun_id,set_field:fd00::1->tun_ipv6_dst,output:1" {
		t.Errorf("IPv6 underlay: actions %s", got)
	}
}

// TestNextHopsEqualLookup: on random graphs, every node's resolved next hop towards every
// other node is overlay/route.Lookup's (the same tie-breaks), and the cost its distance.
func TestNextHopsEqualLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	for g := range 30 {
		nodes, links := randomGraph(rng)
		tables, _, err := controller.Tables(nodes, links)
		if err != nil {
			t.Fatal(err)
		}
		var rn []route.Node
		for _, n := range nodes {
			k := route.Ordinary
			if n.Kind == fabric.KindSuper {
				k = route.Super
			}
			rn = append(rn, route.Node{ID: n.Name, Kind: k})
		}
		var rl []route.Link
		for _, l := range links {
			rl = append(rl, route.Link{A: l.A, B: l.B, Metrics: route.Metrics{Bandwidth: uint64(l.BandwidthKbps) * 1000, Latency: timeUs(l.LatencyUs)}})
		}
		r, err := route.New(rn, rl)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		for _, self := range nodes {
			tab, err := Resolve(Input{Self: self.Name, Kind: self.Kind, Version: 1, Routes: tables[self.Name], Tables: tables, Nodes: nodes, Dests: names})
			if err != nil {
				t.Fatalf("graph %d: Resolve %s: %v", g, self.Name, err)
			}
			hops := map[string]Hop{}
			for _, h := range tab.Hops {
				hops[h.Dest] = h
			}
			for _, dst := range names {
				if dst == self.Name {
					continue
				}
				p, err := r.Lookup(self.Name, dst)
				h, ok := hops[dst]
				switch {
				case errors.Is(err, route.ErrNoRoute):
					if ok || !slices.Contains(tab.Unreachable, dst) {
						t.Errorf("graph %d: %s → %s: no route, but resolved %+v", g, self.Name, dst, h)
					}
				case err != nil:
					t.Fatal(err)
				case !ok:
					t.Errorf("graph %d: %s → %s: route %v, not resolved", g, self.Name, dst, p.Nodes)
				case h.NextHop != p.Nodes[1] || h.Cost != int64(p.Cost):
					t.Errorf("graph %d: %s → %s: next hop %s cost %d, Lookup says %v cost %d", g, self.Name, dst, h.NextHop, h.Cost, p.Nodes, p.Cost)
				}
			}
		}
	}
}

// randomGraph is a small seed-shaped graph: meshed (sometimes sparse) supers, ordinary nodes
// tied to 0-3 supers, metrics chosen so that ties happen.
func randomGraph(rng *rand.Rand) ([]fabric.NodeState, []fabric.LinkReport) {
	m, k := 2+rng.IntN(5), 1+rng.IntN(8)
	var nodes []fabric.NodeState
	for i := range m {
		nodes = append(nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: fmt.Sprintf("s%d", i), Kind: fabric.KindSuper,
			Underlay: []string{fmt.Sprintf("10.0.%d.1", i)}}})
	}
	for i := range k {
		nodes = append(nodes, fabric.NodeState{NodeSpec: fabric.NodeSpec{Name: fmt.Sprintf("o%d", i), Kind: fabric.KindOrdinary,
			Underlay: []string{fmt.Sprintf("10.1.%d.1", i)}}})
	}
	metric := func() (int64, int64) {
		return []int64{100_000, 1_000_000}[rng.IntN(2)], int64(1000 * (1 + rng.IntN(3)))
	}
	var links []fabric.LinkReport
	for i := range m {
		for j := i + 1; j < m; j++ {
			if rng.IntN(3) > 0 {
				bw, lat := metric()
				links = append(links, fabric.LinkReport{A: fmt.Sprintf("s%d", i), B: fmt.Sprintf("s%d", j), BandwidthKbps: bw, LatencyUs: lat})
			}
		}
	}
	for i := range k {
		for _, s := range rng.Perm(m)[:rng.IntN(min(m, 3)+1)] {
			bw, lat := metric()
			links = append(links, fabric.LinkReport{A: fmt.Sprintf("o%d", i), B: fmt.Sprintf("s%d", s), BandwidthKbps: bw, LatencyUs: lat})
		}
	}
	return nodes, links
}

func TestResolveRefusesBadTables(t *testing.T) {
	nodes := seedNodes()
	tables, _, err := controller.Tables(nodes, seedLinks)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		self   string
		routes map[string]string
		want   string
	}{
		{"unknown destination", "a", map[string]string{"ghost": "s1 10"}, `route to "ghost": not a registered node`},
		{"unknown next hop", "a", map[string]string{"s2": "ghost 10"}, `via "ghost": not a registered node`},
		{"ordinary relays", "s1", map[string]string{"s2": "c 10"}, "only super nodes relay"},
		{"no cost", "a", map[string]string{"s1": "s1"}, `want "NEXTHOP COST"`},
		{"negative cost", "a", map[string]string{"s1": "s1 -3"}, "cost must be an integer"},
		{"bad name", "a", map[string]string{"s1": "s 1 2"}, "cost must be an integer"},
		{"injection", "a", map[string]string{"s1": "s1,actions=drop 1"}, "use letters, digits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(Input{Self: c.self, Kind: fabric.KindSuper, Version: 1, Routes: c.routes, Tables: tables, Nodes: nodes, Dests: keys(seedPrefixes)})
			if !errors.Is(err, ErrBadTable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want ErrBadTable with %q", err, c.want)
			}
		})
	}
	// A directory entry naming an unknown super is refused too.
	bad := fabric.Tables{"b": {"att.ghost": "ghost 1"}}
	if _, err := Resolve(Input{Self: "a", Kind: fabric.KindOrdinary, Version: 1, Routes: tables["a"], Tables: bad, Nodes: nodes, Dests: []string{"b"}}); !errors.Is(err, ErrBadTable) {
		t.Errorf("directory with unknown super: err = %v", err)
	}
	// A next hop without an address of this node's family is refused, naming underlay_via.
	v6 := []netip.Addr{netip.MustParseAddr("fd00::9")}
	if _, err := Resolve(Input{Self: "a", Kind: fabric.KindOrdinary, Version: 1, Routes: tables["a"], Tables: tables, Nodes: nodes, Local: v6, Dests: []string{"s1"}}); !errors.Is(err, ErrBadTable) || !strings.Contains(err.Error(), "underlay_via") {
		t.Errorf("no usable address: err = %v", err)
	}
	// Not registered itself.
	if _, err := Resolve(Input{Self: "zz", Kind: fabric.KindOrdinary, Nodes: nodes}); !errors.Is(err, ErrBadTable) {
		t.Errorf("unregistered self: err = %v", err)
	}
}

func TestRenderRefuses(t *testing.T) {
	tab := Table{Version: 1, Hops: []Hop{{Dest: "b", NextHop: "s", Underlay: netip.MustParseAddr("10.0.0.1")}}}
	pfx := map[string][]netip.Prefix{"b": {netip.MustParsePrefix("10.2.0.0/16")}}
	if _, err := Render(tab, Params{Prefixes: pfx, TunnelOfport: 0}); !errors.Is(err, ErrRender) {
		t.Errorf("no ofport: %v", err)
	}
	if _, err := Render(tab, Params{Prefixes: pfx, TunnelOfport: 1, VNI: MaxVNI + 1}); !errors.Is(err, ErrRender) {
		t.Errorf("VNI too large: %v", err)
	}
	bad := Table{Version: 1, Hops: []Hop{{Dest: "b", NextHop: "s", Underlay: netip.IPv4Unspecified()}}}
	if _, err := Render(bad, Params{Prefixes: pfx, TunnelOfport: 1}); !errors.Is(err, ErrRender) {
		t.Errorf("unspecified underlay: %v", err)
	}
	many := map[string][]netip.Prefix{}
	var hops []Hop
	for i := range 2100 {
		n := fmt.Sprintf("n%04d", i)
		many[n] = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)}
		hops = append(hops, Hop{Dest: n, NextHop: "s", Underlay: netip.MustParseAddr("10.0.0.1")})
	}
	if _, err := Render(Table{Version: 1, Hops: hops}, Params{Kind: fabric.KindSuper, Prefixes: many, TunnelOfport: 1}); !errors.Is(err, ErrRender) {
		t.Errorf("too many flows: %v", err)
	}
}

func TestSelectUnderlay(t *testing.T) {
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, c := range []struct {
		local, cands []netip.Addr
		want         string
	}{
		{a("10.1.0.2"), a("10.2.0.1", "10.1.0.1"), "10.1.0.1"},
		{a("10.2.0.9"), a("10.2.0.1", "10.1.0.1"), "10.2.0.1"},
		{a("fd00::2"), a("10.2.0.1", "fd00::1"), "fd00::1"},
		{nil, a("10.2.0.1", "10.1.0.1"), "10.1.0.1"},
		{a("fd00::2"), a("10.2.0.1"), ""},
	} {
		got, ok := SelectUnderlay(c.local, c.cands)
		if (c.want == "") == ok || (ok && got.String() != c.want) {
			t.Errorf("SelectUnderlay(%v, %v) = %v %v, want %q", c.local, c.cands, got, ok, c.want)
		}
	}
}

func timeUs(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// TestRenderOtherVNIDropped checks VNI isolation on the rendered flows: a tunnel packet whose
// tun_id is not the overlay's matches no relay or delivery rule (they require tun_id=VNI), so
// the highest rule it can match must be the tunnel drop: every rule that does not match
// in_port (the local rules, which would send it to NORMAL or back into the tunnel) must be
// below it.
func TestRenderOtherVNIDropped(t *testing.T) {
	for _, node := range []struct {
		name string
		kind fabric.Kind
		addr []string
	}{{"a", fabric.KindOrdinary, []string{"10.1.0.2"}}, {"s2", fabric.KindSuper, []string{"10.2.0.2", "10.3.0.1"}}} {
		tab := resolveSeed(t, node.name, node.addr...)
		fs, err := Render(tab, Params{Kind: node.kind, Own: seedPrefixes[node.name], Prefixes: others(node.name), TunnelOfport: 3, VNI: 42, Cookies: cookies})
		if err != nil {
			t.Fatal(err)
		}
		drop := -1
		for _, f := range fs {
			if f.Match == "in_port=3" && f.Actions == "drop" {
				drop = int(f.Priority)
			}
		}
		if drop < 0 {
			t.Fatalf("%s: no tunnel drop flow in %v", node.name, flowLines(fs))
		}
		for _, f := range fs {
			fromTunnel := strings.HasPrefix(f.Match, "in_port=3,tun_id=42,")
			if !fromTunnel && f.Match != "in_port=3" && int(f.Priority) >= drop {
				t.Errorf("%s: a tunnel packet of another VNI matches %d %s → %s above the drop (%d)", node.name, f.Priority, f.Match, f.Actions, drop)
			}
		}
	}
}
