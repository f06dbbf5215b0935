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
	// ProbePort is the overlay plugin's link-probe port (overlay/probe's default), relayed
	// like the tunnels so that probes measure the paths' delays.
	ProbePort = 7471
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
	// Delay, for a super node, overrides Spec.SuperDelay on its paths (0: SuperDelay; at most
	// udprelay.MaxDelay). Two supers at different delays are not tied, so measured jitter does
	// not make routes flap between them.
	Delay time.Duration
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
	// Ports are the UDP ports the relays carry between sites, 1 to 8 distinct non-zero ports
	// (empty: VXLANPort and ProbePort).
	Ports []uint16
	// PluginRoutes leaves br-int without the bed's tunnel ports, flows and static neighbours:
	// the overlay plugin installs the data path.
	PluginRoutes bool
}

// DefaultSites returns the full testbed: three ordinary sites on carrier A, two on carrier B, and two
// super nodes on both (the second gives routes somewhere to move when a super's link degrades).
func DefaultSites() []SiteSpec {
	return []SiteSpec{
		{Name: "a1", Carriers: []string{"A"}}, {Name: "a2", Carriers: []string{"A"}}, {Name: "a3", Carriers: []string{"A"}},
		{Name: "b1", Carriers: []string{"B"}}, {Name: "b2", Carriers: []string{"B"}},
		{Name: "s1", Carriers: []string{"A", "B"}, Super: true},
		{Name: "s2", Carriers: []string{"A", "B"}, Super: true, Delay: BackupSuperDelay},
	}
}

// BackupSuperDelay is the one-way delay of the second super node's paths in DefaultSites:
// worse than s1's, better than s1's after a 100 ms degradation.
const BackupSuperDelay = 20 * time.Millisecond

// ShortSites returns the CI form: one ordinary site per carrier and the super node.
func ShortSites() []SiteSpec {
	return []SiteSpec{
		{Name: "a1", Carriers: []string{"A"}}, {Name: "b1", Carriers: []string{"B"}},
		{Name: "s1", Carriers: []string{"A", "B"}, Super: true},
	}
}

// siteName is what a site's name may look like.
var siteName = regexp.MustCompile(`^[a-z0-9]{1,10}$`)

// normalize fills the defaults and checks the bounds.
func (s Spec) normalize() (Spec, error) {
	if len(s.Sites) == 0 {
		s.Sites = DefaultSites()
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
		if site.Delay < 0 || site.Delay > udprelay.MaxDelay || (site.Delay != 0 && !site.Super) {
			return s, fmt.Errorf("overlaybed spec: site %s delay %v: only a super node has one, within [0, %v]", site.Name, site.Delay, udprelay.MaxDelay)
		}
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
	if len(s.Ports) == 0 {
		s.Ports = []uint16{VXLANPort, ProbePort}
	}
	if len(s.Ports) > 8 {
		return s, fmt.Errorf("overlaybed spec: %d relayed ports, at most 8", len(s.Ports))
	}
	for i, p := range s.Ports {
		if p == 0 || slices.Contains(s.Ports[:i], p) {
			return s, fmt.Errorf("overlaybed spec: relayed port %d is zero or repeated", p)
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
// br-int holding the internal port OverlayPort with the overlay address and, unless the spec
// leaves routing to the overlay plugin, one VXLAN tunnel port per other site.
type Site struct {
	SiteSpec
	// Index is the site's position in the Spec, 1-based; it numbers its addresses.
	Index int
	// NS is the site's namespace; DB and Sw its OVS.
	NS *lab.Netns
	DB *lab.OVSDB
	Sw *lab.OVSVswitchd
	// Edge is the site's side of the WAN: a namespace holding the relays' sockets that face
	// the site, each bound to another site's underlay address, so the site reaches every
	// peer at the peer's own address, through the path's relay. It does not route.
	Edge *lab.Netns
	// Uplink is the site's veth end toward Edge (a port of br-phy); EdgeEnd its peer in Edge.
	Uplink, EdgeEnd lab.VethEnd
	// Underlay is the site's underlay address 10.80.0.<Index>/16, on br-phy.
	Underlay netip.Addr
	// Overlay is the site's overlay address 10.90.0.<Index>/24, on OverlayPort.
	Overlay netip.Addr
	// MAC is OverlayPort's Ethernet address, 02:0b:ed:00:00:<Index>.
	MAC net.HardwareAddr
	// Tunnels maps a peer site's name to the OpenFlow port number of the bed's tunnel toward
	// it (empty when the plugin routes).
	Tunnels map[string]int
	// OverlayOFPort is OverlayPort's OpenFlow port number.
	OverlayOFPort int

	edgeMAC string // EdgeEnd's Ethernet address
}

// Path is the underlay between two sites X and Y: for each relayed UDP port, a relay with one
// socket in X's edge bound to Y's underlay address (X sends there) and one in Y's edge bound to
// X's underlay address (Y sends there). Each site reaches the other at the other's real address
// and sees its datagrams come from it; the relay adds the path's delay in between.
type Path struct {
	// X and Y are the two sites, X first in the Spec; each relay's A side faces X.
	X, Y *Site
	// Relays are the path's relays, one per relayed port (Spec.Ports order); AToB carries X→Y.
	Relays []*udprelay.Relay
	// Base is the shape the bed gave the path in both directions.
	Base udprelay.Shape
	// Cross tells whether the path joins ordinary sites on different carriers.
	Cross bool
}

// Bed is the testbed: the sites, each joined to its edge namespace by one veth pair; the
// paths' relays join the edges.
type Bed struct {
	// Sites are the sites in Spec order.
	Sites []*Site
	// Spec is the normalized spec the bed was built from.
	Spec Spec

	paths map[[2]string]*Path
}

// New builds a bed: namespaces, veths, one OVS per site with br-phy and br-int, the relays of
// every pair of sites and, unless Spec.PluginRoutes, a pair of tunnel ports per pair of sites and
// br-int's base flows (frames for the site's own MAC go to OverlayPort; nothing else is
// forwarded until a route is set). Everything is torn down at test cleanup, in reverse order,
// also when the test fails half way. It fails the test on a bad spec or any error.
func New(t testing.TB, spec Spec) *Bed {
	t.Helper()
	spec, err := spec.normalize()
	if err != nil {
		t.Fatalf("%v", err)
	}
	lab.Require(t, lab.NeedNetns, lab.NeedOVS)
	b := &Bed{Spec: spec, paths: map[[2]string]*Path{}}
	for i, ss := range spec.Sites {
		b.Sites = append(b.Sites, b.newSite(t, ss, i+1))
	}
	for _, x := range b.Sites {
		for _, y := range b.Sites {
			if x != y { // the edge answers for every other site's address
				x.Edge.Run(t, "ip", "addr", "add", y.Underlay.String()+"/32", "dev", x.EdgeEnd.Name)
				// Tell OVS the edge's MAC for it, so that no first datagram is dropped while
				// OVS resolves it.
				x.Sw.Appctl(t, "tnl/neigh/set", "br-phy", y.Underlay.String(), x.edgeMAC)
			}
		}
	}
	for i, x := range b.Sites {
		for _, y := range b.Sites[i+1:] {
			b.connect(t, x, y)
		}
	}
	if spec.PluginRoutes {
		return b
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

// newSite creates a site's namespaces, uplink and OVS.
func (b *Bed) newSite(t testing.TB, ss SiteSpec, idx int) *Site {
	t.Helper()
	s := &Site{SiteSpec: ss, Index: idx, NS: lab.NewNetns(t), Edge: lab.NewNetns(t),
		Underlay: netip.AddrFrom4([4]byte{10, 80, 0, byte(idx)}),
		Overlay:  netip.AddrFrom4([4]byte{10, 90, 0, byte(idx)}),
		MAC:      net.HardwareAddr{0x02, 0x0b, 0xed, 0, 0, byte(idx)},
		Tunnels:  map[string]int{}}
	v := lab.NewVethPair(t, lab.VethSpec{ANetns: s.NS, BNetns: s.Edge, DisableOffloads: true})
	s.Uplink, s.EdgeEnd = v.A, v.B
	s.edgeMAC = s.Edge.Run(t, "cat", "/sys/class/net/"+s.EdgeEnd.Name+"/address")
	s.Edge.Run(t, "ip", "route", "add", s.Underlay.String()+"/32", "dev", s.EdgeEnd.Name)
	s.DB = lab.StartOVSDB(t)
	s.Sw = s.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: s.NS})
	s.DB.Vsctl(t, "add-br", "br-phy", "--", "set", "Bridge", "br-phy", "datapath_type=netdev",
		"--", "add-port", "br-phy", s.Uplink.Name)
	s.NS.Run(t, "ip", "addr", "add", s.Underlay.String()+"/16", "dev", "br-phy")
	s.NS.Run(t, "ip", "link", "set", "br-phy", "up")
	if b.Spec.PluginRoutes { // br-int comes from the daemon's configuration (StartPlugin)
		return s
	}
	s.DB.Vsctl(t, "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
		"--", "add-port", "br-int", OverlayPort, "--", "set", "Interface", OverlayPort, "type=internal",
		"mac="+strconv.Quote(s.MAC.String()))
	s.NS.Run(t, "ip", "link", "set", OverlayPort, "mtu", strconv.Itoa(OverlayMTU))
	s.NS.Run(t, "ip", "addr", "add", s.Overlay.String()+"/24", "dev", OverlayPort)
	s.NS.Run(t, "ip", "link", "set", OverlayPort, "up")
	s.OverlayOFPort = ofport(t, s.DB, OverlayPort)
	return s
}

// TunnelName is the name of the bed's tunnel port toward peer.
func TunnelName(peer string) string { return "t-" + peer }

// baseShape is the path's delay as the spec says.
func (b *Bed) baseShape(x, y *Site) (udprelay.Shape, bool) {
	switch {
	case x.Super || y.Super:
		d := max(x.Delay, y.Delay)
		if d == 0 {
			d = b.Spec.SuperDelay
		}
		return udprelay.Shape{Delay: d}, false
	case x.Carriers[0] == y.Carriers[0]:
		return udprelay.Shape{Delay: b.Spec.IntraDelay}, false
	}
	return udprelay.Shape{Delay: b.Spec.CrossDelay}, true
}

// listenIn opens a UDP socket bound to addr inside ns.
func listenIn(ns *lab.Netns, addr netip.AddrPort) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := ns.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %v in %s: %w", addr, ns, err)
	}
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
	return c, nil
}

// connect builds the path between x and y: a relay per relayed port and, unless the plugin
// routes, a tunnel port at each end.
func (b *Bed) connect(t testing.TB, x, y *Site) {
	t.Helper()
	shape, cross := b.baseShape(x, y)
	p := &Path{X: x, Y: y, Base: shape, Cross: cross}
	b.paths[[2]string{x.Name, y.Name}] = p
	for _, port := range b.Spec.Ports {
		cx, err := listenIn(x.Edge, netip.AddrPortFrom(y.Underlay, port))
		if err != nil {
			t.Fatalf("overlaybed: relay %s-%s: %v", x.Name, y.Name, err)
		}
		cy, err := listenIn(y.Edge, netip.AddrPortFrom(x.Underlay, port))
		if err != nil {
			cx.Close()
			t.Fatalf("overlaybed: relay %s-%s: %v", x.Name, y.Name, err)
		}
		r, err := udprelay.Start(context.WithoutCancel(t.Context()), udprelay.Config{
			A: cx, B: cy,
			APeer: netip.AddrPortFrom(x.Underlay, port), BPeer: netip.AddrPortFrom(y.Underlay, port),
			AToB: shape, BToA: shape,
		})
		if err != nil {
			cx.Close()
			cy.Close()
			t.Fatalf("overlaybed: relay %s-%s port %d: %v", x.Name, y.Name, port, err)
		}
		t.Cleanup(func() { _ = r.Close() })
		p.Relays = append(p.Relays, r)
	}
	if b.Spec.PluginRoutes {
		return
	}
	for _, e := range [][2]*Site{{x, y}, {y, x}} {
		site, peer := e[0], e[1]
		name := TunnelName(peer.Name)
		site.DB.Vsctl(t, "add-port", "br-int", name, "--", "set", "Interface", name, "type=vxlan",
			"options:remote_ip="+peer.Underlay.String(), "options:key="+strconv.Itoa(VNI))
		site.Tunnels[peer.Name] = ofport(t, site.DB, name)
	}
}

// SetShape sets the path's shape in both directions on every relayed port (link degradation,
// or back to Base).
func (p *Path) SetShape(s udprelay.Shape) error {
	for _, r := range p.Relays {
		if err := r.SetShapes(s); err != nil {
			return fmt.Errorf("path %s-%s: %w", p.X.Name, p.Y.Name, err)
		}
	}
	return nil
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
	case b.Spec.PluginRoutes:
		t.Fatalf("overlaybed: route %s→%s: this bed leaves routing to the overlay plugin", src, dst)
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

// Forwarded returns how many datagrams the path's relays forwarded, both directions together.
func (p *Path) Forwarded() uint64 {
	var n uint64
	for _, r := range p.Relays {
		n += r.Counters(udprelay.AToB).Forwarded + r.Counters(udprelay.BToA).Forwarded
	}
	return n
}

// Dropped returns the datagrams the path's relays dropped (loss draws, full queues, failed
// sends), both directions together.
func (p *Path) Dropped() uint64 {
	var n uint64
	for _, r := range p.Relays {
		for _, d := range []udprelay.Direction{udprelay.AToB, udprelay.BToA} {
			c := r.Counters(d)
			n += c.Lost + c.QueueDrops + c.SendErrors + c.Oversize
		}
	}
	return n
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
