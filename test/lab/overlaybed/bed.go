//go:build linux

package overlaybed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/lab/udprelay"
)

// Bounds and fixed numbers of a bed.
const (
	// MaxSites bounds Spec.Sites (the addressing plan has room for more; two CPUs do not).
	MaxSites = 16
	// MinSites is the smallest bed: two ordinary sites on different carriers and a super node.
	MinSites = 3
	// VXLANPort is the UDP port the sites' tunnels and the relays use.
	VXLANPort = 4789
	// VNI is the VXLAN key of every tunnel.
	VNI = 42
	// OverlayMTU is the MTU of the sites' overlay interfaces: 1500 minus VXLAN's 50 bytes.
	OverlayMTU = 1450
	// OverlayPort is the name of each site's internal port on br-int holding the overlay address.
	OverlayPort = "ovl0"
)

// Default one-way delays of the underlay paths (the testbed).
const (
	DefaultIntraDelay = 5 * time.Millisecond
	DefaultCrossDelay = 130 * time.Millisecond
	DefaultSuperDelay = 5 * time.Millisecond
)

// SiteSpec describes one site.
type SiteSpec struct {
	// Name is 1–10 characters of a-z 0-9, unique in the bed.
	Name string
	// Carriers are the carriers the site is on ("A", "B"…): one for an ordinary site, one or
	// more for a super node.
	Carriers []string
	// Super marks a super node: reachable from every carrier at SuperDelay.
	Super bool
}

// Spec describes a bed. The zero value is the full testbed (DefaultSites, 5 ms inside a
// carrier and to the super node, 130 ms across carriers).
type Spec struct {
	// Sites are the sites, MinSites to MaxSites; empty: DefaultSites.
	Sites []SiteSpec
	// IntraDelay is the one-way delay between ordinary sites sharing a carrier (0: 5 ms).
	IntraDelay time.Duration
	// CrossDelay is the one-way delay between ordinary sites on different carriers (0: 130 ms).
	CrossDelay time.Duration
	// SuperDelay is the one-way delay between a super node and any other site (0: 5 ms).
	SuperDelay time.Duration
}

// DefaultSites is the full testbed: three ordinary sites on carrier A, two on carrier B, and one
// super node on both.
var DefaultSites = []SiteSpec{
	{Name: "a1", Carriers: []string{"A"}}, {Name: "a2", Carriers: []string{"A"}}, {Name: "a3", Carriers: []string{"A"}},
	{Name: "b1", Carriers: []string{"B"}}, {Name: "b2", Carriers: []string{"B"}},
	{Name: "s1", Carriers: []string{"A", "B"}, Super: true},
}

// ShortSites is the CI form: one ordinary site per carrier and the super node.
var ShortSites = []SiteSpec{
	{Name: "a1", Carriers: []string{"A"}}, {Name: "b1", Carriers: []string{"B"}},
	{Name: "s1", Carriers: []string{"A", "B"}, Super: true},
}

// siteName is what a site's name may look like.
var siteName = regexp.MustCompile(`^[a-z0-9]{1,10}$`)

// normalize fills the defaults and checks the bounds.
func (s Spec) normalize() (Spec, error) {
	if len(s.Sites) == 0 {
		s.Sites = DefaultSites
	}
	if len(s.Sites) < MinSites || len(s.Sites) > MaxSites {
		return s, fmt.Errorf("overlaybed spec: %d sites, want %d to %d", len(s.Sites), MinSites, MaxSites)
	}
	seen := map[string]bool{}
	for i, site := range s.Sites {
		if !siteName.MatchString(site.Name) {
			return s, fmt.Errorf("overlaybed spec: site %d name %q: want 1-10 characters of a-z 0-9", i, site.Name)
		}
		if seen[site.Name] {
			return s, fmt.Errorf("overlaybed spec: site name %q used twice", site.Name)
		}
		seen[site.Name] = true
		if len(site.Carriers) == 0 || (!site.Super && len(site.Carriers) != 1) {
			return s, fmt.Errorf("overlaybed spec: site %s has carriers %v: an ordinary site needs exactly one, a super node at least one",
				site.Name, site.Carriers)
		}
	}
	for _, d := range []*time.Duration{&s.IntraDelay, &s.CrossDelay, &s.SuperDelay} {
		if *d < 0 || *d > udprelay.MaxDelay {
			return s, fmt.Errorf("overlaybed spec: delay %v outside [0, %v]", *d, udprelay.MaxDelay)
		}
	}
	if s.IntraDelay == 0 {
		s.IntraDelay = DefaultIntraDelay
	}
	if s.CrossDelay == 0 {
		s.CrossDelay = DefaultCrossDelay
	}
	if s.SuperDelay == 0 {
		s.SuperDelay = DefaultSuperDelay
	}
	return s, nil
}

// Site is one site: a network namespace with its own ovsdb-server and ovs-vswitchd
// (userspace datapath), bridge br-phy holding the uplink and the underlay address, bridge
// br-int holding one VXLAN tunnel port per other site and the internal port OverlayPort with
// the overlay address.
type Site struct {
	SiteSpec
	// Index is the site's position in the Spec, 1-based; it numbers its addresses.
	Index int
	// NS is the site's namespace; DB and Sw its OVS.
	NS *lab.Netns
	DB *lab.OVSDB
	Sw *lab.OVSVswitchd
	// Uplink is the site's veth end toward the WAN namespace (a port of br-phy); HubEnd is its
	// peer in the WAN namespace.
	Uplink, HubEnd lab.VethEnd
	// Underlay is the site's underlay address 10.80.<Index>.1/24, on br-phy.
	Underlay netip.Addr
	// Overlay is the site's overlay address 10.90.0.<Index>/24, on OverlayPort.
	Overlay netip.Addr
	// MAC is OverlayPort's Ethernet address, 02:0b:ed:00:00:<Index>.
	MAC net.HardwareAddr
	// Tunnels maps a peer site's name to the OpenFlow port number of the tunnel toward it.
	Tunnels map[string]int
	// OverlayOFPort is OverlayPort's OpenFlow port number.
	OverlayOFPort int

	hubMAC string // HubEnd's Ethernet address
}

// Path is the underlay between two sites: a relay in the WAN namespace with one socket facing
// each site. Site X's tunnel toward Y sends to the relay's address facing X (10.80.<X>.<100+Y>),
// and the relay delivers from its address facing Y (10.80.<Y>.<100+X>), so Y sees the tunnel's
// datagrams come from the address its own tunnel toward X names.
type Path struct {
	// X and Y are the two sites, X first in the Spec; the relay's A side faces X.
	X, Y *Site
	// Relay is the path's relay; its AToB direction carries X→Y.
	Relay *udprelay.Relay
	// Base is the shape the bed gave the path in both directions.
	Base udprelay.Shape
	// Cross tells whether the path joins ordinary sites on different carriers.
	Cross bool
}

// Bed is the testbed: a WAN namespace holding the relays, and the sites, each joined to the WAN
// namespace by one veth pair. The WAN namespace does not route: sites reach each other only
// through the relays.
type Bed struct {
	// WAN is the namespace of the relays.
	WAN *lab.Netns
	// Sites are the sites in Spec order.
	Sites []*Site
	// Spec is the normalized spec the bed was built from.
	Spec Spec

	paths map[[2]string]*Path
}

// New builds a bed: namespaces, veths, one OVS per site with br-phy and br-int, a relay and a
// pair of tunnel ports for every pair of sites, and br-int's base flows (frames for the site's
// own MAC go to OverlayPort; nothing else is forwarded until a route is set). Everything is
// torn down at test cleanup, in reverse order, also when the test fails half way. It fails the
// test on a bad spec or any error.
func New(t testing.TB, spec Spec) *Bed {
	t.Helper()
	spec, err := spec.normalize()
	if err != nil {
		t.Fatalf("%v", err)
	}
	lab.Require(t, lab.NeedNetns, lab.NeedOVS)
	b := &Bed{WAN: lab.NewNetns(t), Spec: spec, paths: map[[2]string]*Path{}}
	for i, ss := range spec.Sites {
		b.Sites = append(b.Sites, b.newSite(t, ss, i+1))
	}
	for i, x := range b.Sites {
		for _, y := range b.Sites[i+1:] {
			b.connect(t, x, y)
		}
	}
	for _, s := range b.Sites {
		s.baseFlows(t)
		for _, peer := range b.Sites {
			if peer != s {
				s.NS.Run(t, "ip", "neigh", "replace", peer.Overlay.String(), "lladdr", peer.MAC.String(),
					"dev", OverlayPort, "nud", "permanent")
			}
		}
	}
	return b
}

// newSite creates a site's namespace, uplink and OVS.
func (b *Bed) newSite(t testing.TB, ss SiteSpec, idx int) *Site {
	t.Helper()
	s := &Site{SiteSpec: ss, Index: idx, NS: lab.NewNetns(t),
		Underlay: netip.AddrFrom4([4]byte{10, 80, byte(idx), 1}),
		Overlay:  netip.AddrFrom4([4]byte{10, 90, 0, byte(idx)}),
		MAC:      net.HardwareAddr{0x02, 0x0b, 0xed, 0, 0, byte(idx)},
		Tunnels:  map[string]int{}}
	v := lab.NewVethPair(t, lab.VethSpec{ANetns: s.NS, BNetns: b.WAN,
		BAddr: netip.AddrFrom4([4]byte{10, 80, byte(idx), 254}).String() + "/24", DisableOffloads: true})
	s.Uplink, s.HubEnd = v.A, v.B
	s.hubMAC = b.WAN.Run(t, "cat", "/sys/class/net/"+s.HubEnd.Name+"/address")
	s.DB = lab.StartOVSDB(t)
	s.Sw = s.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: s.NS})
	s.DB.Vsctl(t, "add-br", "br-phy", "--", "set", "Bridge", "br-phy", "datapath_type=netdev",
		"--", "add-port", "br-phy", s.Uplink.Name,
		"--", "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
		"--", "add-port", "br-int", OverlayPort, "--", "set", "Interface", OverlayPort, "type=internal",
		"mac="+strconv.Quote(s.MAC.String()))
	s.NS.Run(t, "ip", "addr", "add", s.Underlay.String()+"/24", "dev", "br-phy")
	s.NS.Run(t, "ip", "link", "set", "br-phy", "up")
	s.NS.Run(t, "ip", "link", "set", OverlayPort, "mtu", strconv.Itoa(OverlayMTU))
	s.NS.Run(t, "ip", "addr", "add", s.Overlay.String()+"/24", "dev", OverlayPort)
	s.NS.Run(t, "ip", "link", "set", OverlayPort, "up")
	s.OverlayOFPort = ofport(t, s.DB, OverlayPort)
	return s
}

// relayAddr is the relay's address on site's subnet facing it for the path to peer.
func relayAddr(site, peer *Site) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 80, byte(site.Index), byte(100 + peer.Index)})
}

// TunnelName is the name of the tunnel port toward peer.
func TunnelName(peer string) string { return "t-" + peer }

// baseShape is the path's delay as the spec says.
func (b *Bed) baseShape(x, y *Site) (udprelay.Shape, bool) {
	switch {
	case x.Super || y.Super:
		return udprelay.Shape{Delay: b.Spec.SuperDelay}, false
	case x.Carriers[0] == y.Carriers[0]:
		return udprelay.Shape{Delay: b.Spec.IntraDelay}, false
	}
	return udprelay.Shape{Delay: b.Spec.CrossDelay}, true
}

// connect builds the path between x and y: the relay's addresses and sockets in the WAN
// namespace, the relay, and a tunnel port at each end.
func (b *Bed) connect(t testing.TB, x, y *Site) {
	t.Helper()
	ax, ay := relayAddr(x, y), relayAddr(y, x)
	b.WAN.Run(t, "ip", "addr", "add", ax.String()+"/24", "dev", x.HubEnd.Name)
	b.WAN.Run(t, "ip", "addr", "add", ay.String()+"/24", "dev", y.HubEnd.Name)
	var cx, cy *net.UDPConn
	err := b.WAN.Do(func() error {
		var err error
		if cx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ax, VXLANPort))); err != nil {
			return err
		}
		if cy, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ay, VXLANPort))); err != nil {
			cx.Close()
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("overlaybed: relay sockets for %s-%s: %v", x.Name, y.Name, err)
	}
	for _, c := range []*net.UDPConn{cx, cy} {
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	shape, cross := b.baseShape(x, y)
	r, err := udprelay.Start(context.WithoutCancel(t.Context()), udprelay.Config{
		A: cx, B: cy,
		APeer: netip.AddrPortFrom(x.Underlay, VXLANPort), BPeer: netip.AddrPortFrom(y.Underlay, VXLANPort),
		AToB: shape, BToA: shape,
	})
	if err != nil {
		cx.Close()
		cy.Close()
		t.Fatalf("overlaybed: relay %s-%s: %v", x.Name, y.Name, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	b.paths[[2]string{x.Name, y.Name}] = &Path{X: x, Y: y, Relay: r, Base: shape, Cross: cross}
	for _, e := range []struct {
		site, peer *Site
		remote     netip.Addr
	}{{x, y, ax}, {y, x, ay}} {
		name := TunnelName(e.peer.Name)
		e.site.DB.Vsctl(t, "add-port", "br-int", name, "--", "set", "Interface", name, "type=vxlan",
			"options:remote_ip="+e.remote.String(), "options:key="+strconv.Itoa(VNI))
		e.site.Tunnels[e.peer.Name] = ofport(t, e.site.DB, name)
		// The relay's address is the WAN end's: tell OVS its MAC, so that no first datagram
		// is dropped while OVS resolves it.
		e.site.Sw.Appctl(t, "tnl/neigh/set", "br-phy", e.remote.String(), e.site.hubMAC)
	}
}

// ofport reads an interface's OpenFlow port number, failing the test when it has none.
func ofport(t testing.TB, db *lab.OVSDB, iface string) int {
	t.Helper()
	n, err := strconv.Atoi(db.Get(t, "Interface", iface, "ofport"))
	if err != nil || n <= 0 {
		t.Fatalf("overlaybed: interface %s has no OpenFlow port (ofport %q, error %q)", iface,
			db.Get(t, "Interface", iface, "ofport"), db.Get(t, "Interface", iface, "error"))
	}
	return n
}

// baseFlows replaces br-int's flows with the site's own delivery and a drop of the rest.
func (s *Site) baseFlows(t testing.TB) {
	t.Helper()
	target := s.Sw.OpenFlowTarget("br-int")
	s.NS.Run(t, "ovs-ofctl", "del-flows", target)
	s.NS.Run(t, "ovs-ofctl", "add-flow", target,
		fmt.Sprintf("priority=100,dl_dst=%s,actions=output:%d", s.MAC, s.OverlayOFPort))
	s.NS.Run(t, "ovs-ofctl", "add-flow", target, "priority=0,actions=drop")
}

// Site returns the site named name, or nil.
func (b *Bed) Site(name string) *Site {
	for _, s := range b.Sites {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Path returns the path between the two named sites (in either order), or nil.
func (b *Bed) Path(x, y string) *Path {
	if p := b.paths[[2]string{x, y}]; p != nil {
		return p
	}
	return b.paths[[2]string{y, x}]
}

// Paths returns every path, in Spec order of their sites.
func (b *Bed) Paths() []*Path {
	var ps []*Path
	for i, x := range b.Sites {
		for _, y := range b.Sites[i+1:] {
			ps = append(ps, b.Path(x.Name, y.Name))
		}
	}
	return ps
}

// SetRoute installs, with flows written by the bed itself (not the overlay plugin), the route
// from src to dst's overlay address: direct over the src–dst tunnel when via is dst, otherwise
// to the super node via, which forwards to dst over its tunnel. It replaces src's (and via's)
// earlier flow for dst. Only one direction: set the reverse route too for a round trip.
func (b *Bed) SetRoute(t testing.TB, src, dst, via string) {
	t.Helper()
	s, d, v := b.Site(src), b.Site(dst), b.Site(via)
	switch {
	case s == nil || d == nil || v == nil:
		t.Fatalf("overlaybed: route %s→%s via %s: unknown site", src, dst, via)
	case s == d:
		t.Fatalf("overlaybed: route %s→%s: same site", src, dst)
	case v != d && (!v.Super || v == s):
		t.Fatalf("overlaybed: route %s→%s via %s: only another site's super node relays", src, dst, via)
	}
	s.routeFlow(t, d, v.Name)
	if v != d {
		v.routeFlow(t, d, d.Name)
	}
}

// SetRoutes sets the routes between x and y in both directions through via (via = y: direct).
func (b *Bed) SetRoutes(t testing.TB, x, y, via string) {
	t.Helper()
	if via == y {
		b.SetRoute(t, x, y, y)
		b.SetRoute(t, y, x, x)
		return
	}
	b.SetRoute(t, x, y, via)
	b.SetRoute(t, y, x, via)
}

// routeFlow sends frames for dst's MAC out of the tunnel toward next.
func (s *Site) routeFlow(t testing.TB, dst *Site, next string) {
	t.Helper()
	port, ok := s.Tunnels[next]
	if !ok {
		t.Fatalf("overlaybed: site %s has no tunnel toward %s", s.Name, next)
	}
	s.NS.Run(t, "ovs-ofctl", "add-flow", s.Sw.OpenFlowTarget("br-int"),
		fmt.Sprintf("priority=50,dl_dst=%s,actions=output:%d", dst.MAC, port))
}

// Ping pings dst's overlay address from src count times, 200 ms apart (lab.Ping).
func (b *Bed) Ping(ctx context.Context, src, dst string, count int) (lab.PingStats, error) {
	s, d := b.Site(src), b.Site(dst)
	if s == nil || d == nil {
		return lab.PingStats{}, fmt.Errorf("overlaybed: ping %s→%s: unknown site", src, dst)
	}
	return lab.Ping(ctx, s.NS, d.Overlay.String(), count)
}

// Forwarded returns how many datagrams the path's relay forwarded, both directions together.
func (p *Path) Forwarded() uint64 {
	return p.Relay.Counters(udprelay.AToB).Forwarded + p.Relay.Counters(udprelay.BToA).Forwarded
}

// Names returns the sites' names.
func (b *Bed) Names() []string {
	var n []string
	for _, s := range b.Sites {
		n = append(n, s.Name)
	}
	return slices.Clip(n)
}

// Warm pings dst's overlay address from src until a reply comes back, at most 10 times, so
// the first measured packets do not pay for what OVS and the kernels learn on first use
// (datapath flows, the WAN's neighbours). It returns an error when no reply came back.
func (b *Bed) Warm(ctx context.Context, src, dst string) error {
	var err error
	for range 10 {
		var st lab.PingStats
		if st, err = b.Ping(ctx, src, dst, 1); err == nil && st.Received > 0 {
			return nil
		}
	}
	return fmt.Errorf("overlaybed: warm %s→%s: no reply in 10 tries: %w", src, dst, err)
}
