//go:build linux

package ovsinstall

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// site is one lab node: its namespace, OVSDB and ovs-vswitchd.
type site struct {
	ns *lab.Netns
	db *lab.OVSDB
	sw *lab.OVSVswitchd
}

// TestRelayThroughSuperCarriesTraffic checks the data-path design with real traffic: three
// sites, each its own ovs-vswitchd (userspace datapath) in a namespace, ordinary a and b on
// different underlay links to super s (a and b have no underlay path to each other), each
// with br-phy holding the underlay veth and address and br-int holding the flow-based vxlan
// port and an internal port with the site's overlay address. The flows Render gives for each
// node's table are added with ovs-ofctl. a pings b: the echo and the reply cross s, whose
// relay flows (from the tunnel, back into it with the next hop's tun_dst) count them; a pings
// s itself (delivered locally through NORMAL).
func TestRelayThroughSuperCarriesTraffic(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedTraffic)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sites := map[string]*site{}
	for _, n := range []string{"a", "s", "b"} {
		ns := lab.NewNetns(t)
		db := lab.StartOVSDB(t)
		sites[n] = &site{ns: ns, db: db, sw: db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: ns})}
	}
	as := lab.NewVethPair(t, lab.VethSpec{ANetns: sites["a"].ns, BNetns: sites["s"].ns, DisableOffloads: true})
	sb := lab.NewVethPair(t, lab.VethSpec{ANetns: sites["s"].ns, BNetns: sites["b"].ns, DisableOffloads: true})
	phy := func(n, bridge, port, addr string) {
		s := sites[n]
		s.db.Vsctl(t, "add-br", bridge, "--", "set", "Bridge", bridge, "datapath_type=netdev", "--", "add-port", bridge, port)
		s.ns.Run(t, "ip", "addr", "add", addr, "dev", bridge)
		s.ns.Run(t, "ip", "link", "set", bridge, "up")
	}
	phy("a", "brp", as.A.Name, "10.77.1.2/24")
	phy("s", "brp1", as.B.Name, "10.77.1.1/24")
	phy("s", "brp2", sb.A.Name, "10.77.2.1/24")
	phy("b", "brp", sb.B.Name, "10.77.2.3/24")
	opts, err := TunnelShape("vxlan", 0)
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string]string{"a": "192.168.1.1/16", "s": "192.168.10.1/16", "b": "192.168.2.1/16"}
	for n, s := range sites {
		args := []string{"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev",
			"--", "add-port", "br-int", "ovl0", "--", "set", "Interface", "ovl0", "type=vxlan", "ofport_request=1"}
		for k, v := range opts {
			args = append(args, "options:"+k+"="+v)
		}
		args = append(args, "--", "add-port", "br-int", "vm0", "--", "set", "Interface", "vm0", "type=internal", "ofport_request=2")
		s.db.Vsctl(t, args...)
		s.ns.Run(t, "ip", "addr", "add", overlay[n], "dev", "vm0")
		s.ns.Run(t, "ip", "link", "set", "vm0", "up", "mtu", "1400")
	}

	P := netip.MustParsePrefix
	A := netip.MustParseAddr
	prefixes := map[string][]netip.Prefix{"a": {P("192.168.1.0/24")}, "b": {P("192.168.2.0/24")}, "s": {P("192.168.10.0/24")}}
	tables := map[string]struct {
		kind fabric.Kind
		hops []Hop
	}{
		"a": {fabric.KindOrdinary, []Hop{{Dest: "b", NextHop: "s", Underlay: A("10.77.1.1")}, {Dest: "s", NextHop: "s", Underlay: A("10.77.1.1")}}},
		"s": {fabric.KindSuper, []Hop{{Dest: "a", NextHop: "a", Underlay: A("10.77.1.2")}, {Dest: "b", NextHop: "b", Underlay: A("10.77.2.3")}}},
		"b": {fabric.KindOrdinary, []Hop{{Dest: "a", NextHop: "s", Underlay: A("10.77.2.1")}, {Dest: "s", NextHop: "s", Underlay: A("10.77.2.1")}}},
	}
	dir := t.TempDir()
	for n, tab := range tables {
		others := map[string][]netip.Prefix{}
		for k, v := range prefixes {
			if k != n {
				others[k] = v
			}
		}
		flows, err := Render(Table{Version: 1, Node: n, Hops: tab.hops}, Params{Kind: tab.kind, Own: prefixes[n], Prefixes: others,
			TunnelOfport: 1, VNI: 42, Cookies: cookies})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, f := range flows {
			fmt.Fprintf(&b, "cookie=%#x,priority=%d,%s actions=%s\n", f.Cookie, f.Priority, f.Match, f.Actions)
		}
		file := filepath.Join(dir, n+".flows")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(ctx, "ovs-ofctl", "-O", "OpenFlow15", "add-flows", sites[n].sw.OpenFlowTarget("br-int"), file).CombinedOutput(); err != nil {
			t.Fatalf("add-flows on %s: %v: %s", n, err, out)
		}
	}

	// The first packets wait for the tunnels' neighbour resolution: ping until one answers.
	lab.WaitFor(t, time.Minute, "a ping from a to b through s", func(ctx context.Context) error {
		st, err := lab.Ping(ctx, sites["a"].ns, "192.168.2.1", 1)
		if err != nil || st.Received != 1 {
			return fmt.Errorf("ping: %+v %v", st, err)
		}
		return nil
	})
	st, err := lab.Ping(ctx, sites["a"].ns, "192.168.2.1", 3)
	if err != nil || st.Received != 3 {
		t.Fatalf("a → b: %+v %v", st, err)
	}
	// s relayed the echoes towards b and the replies towards a (the revalidators update the
	// flows' counters: wait for a round).
	sites["s"].sw.Appctl(t, "revalidator/wait")
	dump, err := exec.CommandContext(ctx, "ovs-ofctl", "-O", "OpenFlow15", "dump-flows", sites["s"].sw.OpenFlowTarget("br-int")).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-flows on s: %v: %s", err, dump)
	}
	packets := regexp.MustCompile(`n_packets=(\d+),.*priority=2024,ip,tun_id=0x2a,in_port=1,nw_dst=(192\.168\.[12])\.0/24 actions=dec_ttl,set_field:[0-9.]+->tun_dst,IN_PORT`)
	relayed := map[string]int{}
	for _, m := range packets.FindAllStringSubmatch(string(dump), -1) {
		relayed[m[2]], _ = strconv.Atoi(m[1])
	}
	if relayed["192.168.2"] < 3 || relayed["192.168.1"] < 3 {
		t.Errorf("s relayed %v packets (towards b, towards a), want ≥ 3 each:\n%s", relayed, dump)
	}
	if st, err := lab.Ping(ctx, sites["a"].ns, "192.168.10.1", 2); err != nil || st.Received != 2 {
		t.Errorf("a → s: %+v %v", st, err)
	}
	// On s, a tunnel packet of another VNI towards s's own prefix is dropped (it never reaches
	// NORMAL), and a relayed packet whose inner TTL runs out is dropped (dec_ttl, no
	// controller) instead of going round a relay loop.
	trace := func(flow string) string {
		return sites["s"].sw.Appctl(t, "ofproto/trace", "br-int", flow)
	}
	for _, c := range []struct{ what, flow string }{
		{"another VNI to s's prefix", "in_port=1,tun_id=43,tun_src=10.77.1.2,tun_dst=10.77.1.1,ip,nw_src=192.168.1.1,nw_dst=192.168.10.1,nw_ttl=64"},
		{"another VNI to b's prefix", "in_port=1,tun_id=43,tun_src=10.77.1.2,tun_dst=10.77.1.1,ip,nw_src=192.168.1.1,nw_dst=192.168.2.1,nw_ttl=64"},
		{"a relayed packet with TTL 1", "in_port=1,tun_id=42,tun_src=10.77.1.2,tun_dst=10.77.1.1,ip,nw_src=192.168.1.1,nw_dst=192.168.2.1,nw_ttl=1"},
	} {
		out := trace(c.flow)
		// dec_ttl's exception goes to userspace with dont_send=1 (no controller asked for it):
		// OVS discards it there, nothing leaves.
		if !strings.Contains(out, "Datapath actions: drop") && !regexp.MustCompile(`(?m)^Datapath actions: userspace\(pid=0,controller\(reason=2,dont_send=1,[^()]*\)\)$`).MatchString(out) {
			t.Errorf("s: %s is not dropped:\n%s", c.what, out)
		}
	}
	// The same relayed packet with TTL 64 leaves with TTL 63 towards b.
	if out := trace("in_port=1,tun_id=42,tun_src=10.77.1.2,tun_dst=10.77.1.1,ip,nw_src=192.168.1.1,nw_dst=192.168.2.1,nw_ttl=64"); !strings.Contains(out, "ttl=63") || strings.Contains(out, "Datapath actions: drop") {
		t.Errorf("s: a relayed packet with TTL 64 does not leave with TTL 63:\n%s", out)
	}
}
