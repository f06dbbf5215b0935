// Package ovsinstall turns an overlay node's route table (overlay/controller's format) into
// OpenFlow next-hop forwarding on one Open vSwitch bridge, through the plugin contract: it
// never writes OVSDB and never runs ovs-ofctl. The plugin's FlowProgrammer hands the flows it
// renders to ovsplaned, which writes them in the plugin's cookie range.
//
// The data path is ONE flow-based tunnel port per bridge (type vxlan, geneve or gre with
// options remote_ip=flow and key=flow; overlay/ovsinstall.TunnelShape gives its OVSDB shape,
// which the daemon writes) and, in table 0:
//
//   - local traffic towards destination node X's overlay prefix P (ip nw_dst, arp arp_tpa,
//     ipv6 ipv6_dst, icmp6 neighbour solicitation nd_target) sets tun_id to the overlay's VNI
//     and tun_dst to the next hop's underlay address and leaves by the tunnel port; priority
//     PriorityEgress + prefix length, so the longest prefix wins;
//   - traffic from the tunnel towards this node's own prefixes goes to NORMAL (local delivery),
//     and so does local traffic towards them;
//   - on a super node, traffic from the tunnel towards another node's prefix is relayed: tun_dst
//     set to the next hop's address, out by in_port (back into the tunnel); priority
//     PriorityRelay + prefix length; IPv4 and IPv6 relays decrement the inner TTL (dec_ttl)
//     first, so a packet caught between two supers whose tables briefly disagree dies out
//     (a packet whose TTL runs out goes nowhere: the bridge has no controller);
//   - everything else arriving from the tunnel, whatever its tun_id, is dropped
//     (PriorityTunnelDrop, above every local rule, which does not match in_port): an
//     ordinary node never relays, a super never sends back what it cannot route, and another
//     VNI's traffic never reaches NORMAL.
//
// Everything in a flow is rendered from typed values (netip.Prefix, netip.Addr, ofport and VNI
// integers); node names never reach a flow. Every flow carries the cookie
// CookieRange.Value | (version & ^CookieRange.Mask), so `ovs-ofctl dump-flows` shows which
// route version is installed.
//
// Resolution (Resolve) reads a node's own table and, for ordinary destinations, their
// attachments from the same version's tables (the directory): the egress super E of an
// ordinary destination X minimises dist(self, E) + cost(E–X), and the next hop is the one the
// node's table gives towards E (the smallest name among equally short choices, which is
// overlay/route.Lookup's tie-break). Bad tables (a next hop that is not a registered super, an
// unparsable entry, a next hop without an underlay address) are refused whole: the caller
// keeps the last good table.
package ovsinstall
