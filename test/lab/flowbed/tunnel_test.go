//go:build linux

package flowbed_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab/flowbed"
	"github.com/ovsplane/ovsplane/test/lab/overlaybed"
)

// TestTunnelByteSemantics explains the reference's observation (690 bytes on tunnel egress
// against 490 on ingress for 5 pings): NetFlow on both bridges (br-int with the VXLAN ports,
// br-phy with the uplink) of two overlay sites joined by OVS's userspace VXLAN tunnel, 5 and
// then 20 pings, every record logged. What OVS 3.1 counts, per ping of a 98-byte frame:
//   - a flow coming out of the tunnel (br-int, in = the VXLAN port): 98, the inner frame;
//   - the tunnel's underlay flow (br-phy, UDP 4789): 148, the outer frame (98 + 50);
//   - a flow going into the tunnel (br-int, out = the VXLAN port): 98 for the first packet
//     (translated in the slow path) and 148 for every later one (forwarded by the datapath
//     flow, counted with the 50 bytes of VXLAN headers tnl_push adds): 98 + 4×148 = 690 for 5
//     pings, 98 + 19×148 = 2910 for 20. The datapath flow itself counts 98 per packet
//     (ovs-appctl dpctl/dump-flows showed bytes:980 for 10 pings), so the 50 bytes are added
//     between the datapath's statistics and NetFlow, in the translation's statistics for the
//     tunnel output.
//
// The test asserts the first two exactly and the third within [98n, 148n].
func TestTunnelByteSemantics(t *testing.T) {
	b := overlaybed.New(t, overlaybed.Spec{Sites: overlaybed.ShortSites()})
	var exps []*exporter
	for i, name := range []string{"a1", "b1"} {
		s := b.Site(name)
		s.DB.Vsctl(t, "set", "Open_vSwitch", ".", "other_config:max-idle=1000")
		for j, br := range []string{"br-int", "br-phy"} {
			e := &exporter{site: name, bridge: br, c: flowbed.Listen(t, s.NS), engine: 10*(i+1) + j}
			s.DB.Vsctl(t, "--", "set", "Bridge", br, "netflow=@nf", "--", "--id=@nf", "create", "NetFlow",
				"targets="+strconv.Quote(e.c.Addr().String()), "active_timeout=1",
				"engine_type=1", "engine_id="+strconv.Itoa(e.engine))
			exps = append(exps, e)
		}
	}
	b.SetRoutes(t, "a1", "b1", "b1")
	if err := b.Warm(t.Context(), "a1", "b1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // the warm-up's flows idle out and are exported
	var lines []string
	for _, n := range []int{5, 20} {
		for _, e := range exps {
			e.c.Reset()
		}
		st, err := b.Ping(t.Context(), "a1", "b1", n)
		if err != nil || st.Received != n {
			t.Fatalf("%d pings a1→b1: %+v, %v", n, st, err)
		}
		time.Sleep(5 * time.Second) // the pings' flows idle out and are exported
		lines = append(lines, fmt.Sprintf("%d pings:", n))
		lines = append(lines, records(exps)...)
		checkTunnelBytes(t, exps, uint64(n))
	}
	t.Logf("ping: 56 data bytes, 84 IPv4 bytes, 98-byte frames; VXLAN adds 50 bytes of outer headers\n%s", strings.Join(lines, "\n"))
}

// exporter is one bridge's NetFlow export and its collector.
type exporter struct {
	site, bridge string
	c            *flowbed.Collector
	engine       int
}

// records returns one line per exporter and flow (5-tuple, input and output port): packets,
// octets and octets per packet, sorted.
func records(exps []*exporter) []string {
	var lines []string
	for _, e := range exps {
		type key struct {
			src, dst string
			proto    uint8
			in, out  uint16
		}
		sums := map[key][2]uint64{}
		for _, r := range e.c.Records() {
			k := key{r.Src.String(), r.Dst.String(), r.Proto, r.Input, r.Output}
			v := sums[k]
			sums[k] = [2]uint64{v[0] + uint64(r.Packets), v[1] + uint64(r.Octets)}
		}
		for k, v := range sums {
			lines = append(lines, fmt.Sprintf("  %s %-6s engine %d: %s -> %s proto %d in %d out %d: %d packets, %d octets, %.1f per packet",
				e.site, e.bridge, e.engine, k.src, k.dst, k.proto, k.in, k.out, v[0], v[1], float64(v[1])/float64(max(v[0], 1))))
		}
	}
	sort.Strings(lines)
	return lines
}

// checkTunnelBytes checks the echo requests' records (a1→b1, ICMP type 8: dst port 2048) and
// their underlay: egress at a1's br-int within [98n, 148n], ingress at b1's br-int 98n, the
// VXLAN underlay at b1's br-phy 148n.
func checkTunnelBytes(t *testing.T, exps []*exporter, n uint64) {
	t.Helper()
	const inner, outer = 98, 98 + 50
	for _, e := range exps {
		var pkts, octets uint64
		for _, r := range e.c.Records() {
			echo := r.Proto == 1 && r.Dst.Port() == 8<<8 && r.Src.Addr().String() == "10.90.0.1"
			vxlan := r.Proto == 17 && r.Dst.Port() == overlaybed.VXLANPort && r.Dst.Addr().String() == "10.80.0.2"
			if (e.bridge == "br-int" && echo) || (e.bridge == "br-phy" && vxlan) {
				pkts += uint64(r.Packets)
				octets += uint64(r.Octets)
			}
		}
		var ok bool
		switch {
		case e.site == "a1" && e.bridge == "br-int": // into the tunnel
			ok = pkts == n && octets >= inner*n && octets <= outer*n
		case e.site == "b1" && e.bridge == "br-int": // out of the tunnel
			ok = pkts == n && octets == inner*n
		case e.site == "b1" && e.bridge == "br-phy": // the underlay
			ok = pkts == n && octets == outer*n
		default:
			continue
		}
		if !ok {
			t.Errorf("%d pings: %s %s exported %d packets, %d octets", n, e.site, e.bridge, pkts, octets)
		}
	}
}
