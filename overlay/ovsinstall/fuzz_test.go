package ovsinstall

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// FuzzResolve feeds arbitrary route tables (this node's and a destination's directory) and
// underlay addresses: Resolve never panics; a table it accepts renders into a flow set the
// daemon's check accepts, whose next hops are registered nodes with a valid address.
func FuzzResolve(f *testing.F) {
	nodes := seedNodes()
	tables, _, err := controller.Tables(nodes, seedLinks)
	if err != nil {
		f.Fatal(err)
	}
	enc := func(m map[string]string) string {
		var b strings.Builder
		for k, v := range m {
			b.WriteString(k + "=" + v + "\n")
		}
		return b.String()
	}
	f.Add(enc(tables["a"]), enc(tables["b"]), "10.1.0.1", true)
	f.Add(enc(tables["s2"]), enc(tables["c"]), "fd00::1", false)
	f.Add("s1=s1 1\nghost=s1 2\n", "att.s9=s9 1\n", "10.1.0.1:99", true)
	f.Fuzz(func(t *testing.T, own, dir, underlay string, ordinary bool) {
		dec := func(s string) map[string]string {
			m := map[string]string{}
			for line := range strings.SplitSeq(s, "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					m[k] = v
				}
			}
			return m
		}
		ns := seedNodes()
		ns[3].Underlay = []string{underlay} // s1's address, possibly garbage
		self, kind := "s2", fabric.KindSuper
		if ordinary {
			self, kind = "a", fabric.KindOrdinary
		}
		tabs := fabric.Tables{"b": dec(dir), "c": tables["c"]}
		tab, err := Resolve(Input{Self: self, Kind: kind, Version: 3, Routes: dec(own), Tables: tabs, Nodes: ns,
			Local: []netip.Addr{netip.MustParseAddr("10.1.0.2")}, Dests: keys(seedPrefixes)})
		if err != nil {
			return
		}
		for _, h := range tab.Hops {
			if CheckName(h.NextHop) != nil || !h.Underlay.IsValid() {
				t.Fatalf("accepted hop %+v", h)
			}
		}
		fs, err := Render(tab, Params{Kind: kind, Own: seedPrefixes[self], Prefixes: others(self), TunnelOfport: 2, VNI: 9, Cookies: cookies})
		if err != nil {
			t.Fatalf("accepted table does not render: %v", err)
		}
		if err := api.ValidateFlowSet(cookies, api.GroupRange{}, api.FlowSet{Flows: fs}); err != nil {
			t.Fatalf("accepted table renders flows the daemon refuses: %v", err)
		}
	})
}

// FuzzLoadTable feeds arbitrary state files to LoadTable: it never panics; a table it accepts
// is this node's, its hops are sorted, unique and valid, it renders without a panic, and
// SaveTable then LoadTable gives it back unchanged.
func FuzzLoadTable(f *testing.F) {
	f.Add([]byte(`{"version":3,"node":"a","hops":[{"dest":"b","next_hop":"s1","underlay":"10.1.0.1","cost":2},{"dest":"c","next_hop":"s1","underlay":"fd00::1","cost":0}]}`))
	f.Add([]byte(`{"version":1,"node":"a","hops":[],"unreachable":["x"]}`))
	f.Add([]byte(`{"version":1,"node":"b","hops":null}`))
	f.Add([]byte(`{"version":1,"node":"a","hops":[],"unreachable":[]}`))
	f.Add([]byte(`{"version":1,"node":"a","hops":[{"dest":"c","next_hop":"s1","underlay":"10.1.0.1"},{"dest":"b","next_hop":"s1","underlay":"10.1.0.1"}]}`))
	f.Add([]byte(`{"version":1,"node":"a","colour":1}`))
	f.Add([]byte(`{"version":1,"node":"a"}{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "table.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tab, err := LoadTable(path, "a")
		if err != nil {
			return
		}
		if tab.Node != "a" || tab.Version < 1 {
			t.Fatalf("accepted table of %q version %d", tab.Node, tab.Version)
		}
		for k, h := range tab.Hops {
			if CheckName(h.Dest) != nil || CheckName(h.NextHop) != nil || !h.Underlay.IsValid() || h.Cost < 0 || (k > 0 && tab.Hops[k-1].Dest >= h.Dest) {
				t.Fatalf("accepted hop %d: %+v", k, h)
			}
		}
		_, _ = Render(tab, Params{Kind: fabric.KindSuper, TunnelOfport: 1, Cookies: cookies})
		again := filepath.Join(dir, "again.json")
		if err := SaveTable(again, tab); err != nil {
			t.Fatal(err)
		}
		back, err := LoadTable(again, "a")
		if err != nil {
			t.Fatalf("a saved accepted table is refused: %v", err)
		}
		// An empty list and no list are the same table (unreachable is omitted when empty).
		if back.Version != tab.Version || back.Node != tab.Node || !slices.Equal(back.Hops, tab.Hops) || !slices.Equal(back.Unreachable, tab.Unreachable) {
			t.Fatalf("round trip: %+v → %+v", tab, back)
		}
	})
}
