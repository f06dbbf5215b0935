package ovsinstall

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Flow priorities (table 0). Prefix rules add the prefix length (0–128), so the longest
// prefix wins within each group; traffic from the tunnel is matched above local traffic, and
// the tunnel drop sits between the two groups: a tunnel packet that no relay or delivery rule
// of this VNI takes (another tun_id, an unknown prefix) is dropped before the local rules
// (which do not match in_port) could send it to NORMAL or back into the tunnel.
const (
	// PriorityTunnelDrop drops what arrives from the tunnel and matches no rule of
	// PriorityRelay; it is above every PriorityEgress rule (PriorityEgress + 128).
	PriorityTunnelDrop = 1500
	// PriorityEgress is the base of the rules for local traffic (towards the tunnel, or to
	// NORMAL for this node's own prefixes).
	PriorityEgress = 1000
	// PriorityRelay is the base of the rules for traffic from the tunnel (relay on supers,
	// NORMAL for this node's own prefixes).
	PriorityRelay = 2000
)

// MaxVNI bounds the overlay's VNI (tun_id): 24 bits, the VXLAN and Geneve range.
const MaxVNI = 1<<24 - 1

// ErrRender marks parameters that cannot be rendered (no tunnel ofport, too many flows).
var ErrRender = errors.New("overlay flows cannot be rendered")

// Params are the bridge-side facts Render needs besides the table.
type Params struct {
	// Kind is this node's kind: a super relays, an ordinary node never does.
	Kind fabric.Kind
	// Own are this node's overlay prefixes (delivered locally through NORMAL).
	Own []netip.Prefix
	// Prefixes are the overlay prefixes of the other nodes.
	Prefixes map[string][]netip.Prefix
	// TunnelOfport is the flow-based tunnel port's OpenFlow port number (≥ 1).
	TunnelOfport int64
	// VNI is set as tun_id on egress and required on traffic from the tunnel (0–MaxVNI).
	VNI uint32
	// Cookies is the plugin's cookie range; each flow's cookie carries the route version in
	// the range's free bits.
	Cookies api.CookieRange
}

// matchKind is the protocol part of a prefix rule.
type matchKind int

const (
	matchIP   matchKind = iota // ip,nw_dst=P
	matchARP                   // arp,arp_tpa=P
	matchIPv6                  // ipv6,ipv6_dst=P
	matchND                    // icmp6,icmp_type=135,nd_target=P (neighbour solicitation)
)

// actionKind is what a rule does.
type actionKind int

const (
	actNormal   actionKind = iota // NORMAL: local delivery
	actDrop                       // drop
	actTunnel                     // set tun_id, tun_dst; output to the tunnel port
	actRelay                      // set tun_dst; output back through in_port (the tunnel)
	actRelayTTL                   // dec_ttl, then actRelay (ip and ipv6: a relay loop ends)
)

// rule is one flow in typed form; render turns it into ovs-ofctl text.
type rule struct {
	priority   uint16
	fromTunnel bool // in_port = the tunnel port, tun_id = the VNI
	anyVNI     bool // with fromTunnel: any tun_id
	kind       matchKind
	prefix     netip.Prefix // invalid: no prefix match (then kind is ignored)
	act        actionKind
	tunDst     netip.Addr
}

// kindsOf returns the match kinds a prefix needs (its family's data and resolution traffic).
func kindsOf(p netip.Prefix) []matchKind {
	if p.Addr().Is4() {
		return []matchKind{matchIP, matchARP}
	}
	return []matchKind{matchIPv6, matchND}
}

// rules computes the typed rules of table t.
func rules(t Table, p Params) []rule {
	var out []rule
	add := func(fromTunnel bool, base int, pfx netip.Prefix, act actionKind, dst netip.Addr) {
		for _, k := range kindsOf(pfx) {
			a := act
			if a == actRelay && (k == matchIP || k == matchIPv6) {
				// The outer TTL is fresh at each encapsulation: while two supers' tables
				// disagree, only the inner TTL ends a loop.
				a = actRelayTTL
			}
			out = append(out, rule{priority: uint16(base + pfx.Bits()), fromTunnel: fromTunnel, kind: k, prefix: pfx, act: a, tunDst: dst})
		}
	}
	for _, pfx := range p.Own {
		add(false, PriorityEgress, pfx, actNormal, netip.Addr{})
		add(true, PriorityRelay, pfx, actNormal, netip.Addr{})
	}
	for _, h := range t.Hops {
		for _, pfx := range p.Prefixes[h.Dest] {
			add(false, PriorityEgress, pfx, actTunnel, h.Underlay)
			if p.Kind == fabric.KindSuper {
				add(true, PriorityRelay, pfx, actRelay, h.Underlay)
			}
		}
	}
	out = append(out, rule{priority: PriorityTunnelDrop, fromTunnel: true, anyVNI: true, act: actDrop})
	return out
}

// render writes one rule as a flow; every piece comes from a typed value.
func (r rule) render(p Params, cookie uint64) api.Flow {
	var m []byte
	if r.fromTunnel {
		m = append(m, "in_port="...)
		m = strconv.AppendInt(m, p.TunnelOfport, 10)
		if !r.anyVNI {
			m = append(m, ",tun_id="...)
			m = strconv.AppendUint(m, uint64(p.VNI), 10)
		}
	}
	if r.prefix.IsValid() {
		if len(m) > 0 {
			m = append(m, ',')
		}
		switch r.kind {
		case matchIP:
			m = append(m, "ip,nw_dst="...)
		case matchARP:
			m = append(m, "arp,arp_tpa="...)
		case matchIPv6:
			m = append(m, "ipv6,ipv6_dst="...)
		case matchND:
			m = append(m, "icmp6,icmp_type=135,nd_target="...)
		}
		m = r.prefix.AppendTo(m)
	}
	var a []byte
	setDst := func() {
		a = append(a, "set_field:"...)
		a = r.tunDst.AppendTo(a)
		if r.tunDst.Is4() {
			a = append(a, "->tun_dst"...)
		} else {
			a = append(a, "->tun_ipv6_dst"...)
		}
	}
	switch r.act {
	case actNormal:
		a = append(a, "NORMAL"...)
	case actDrop:
		a = append(a, "drop"...)
	case actTunnel:
		a = append(a, "set_field:"...)
		a = strconv.AppendUint(a, uint64(p.VNI), 10)
		a = append(a, "->tun_id,"...)
		setDst()
		a = append(a, ",output:"...)
		a = strconv.AppendInt(a, p.TunnelOfport, 10)
	case actRelay:
		setDst()
		a = append(a, ",in_port"...)
	case actRelayTTL:
		a = append(a, "dec_ttl,"...)
		setDst()
		a = append(a, ",in_port"...)
	}
	return api.Flow{Cookie: cookie, Priority: r.priority, Match: string(m), Actions: string(a)}
}

// Cookie is the cookie of a version's flows: the range's value with the version in its free
// bits (the low bits of the version when it does not fit).
func Cookie(r api.CookieRange, version int64) uint64 {
	return r.Value | (uint64(version) &^ r.Mask)
}

// Render returns the flows of table t on a bridge, sorted (by priority, highest first, then
// match). It fails (ErrRender) when the tunnel port has no ofport, the VNI is out of range, a
// next hop's address is invalid, or the flows exceed limits.MaxFlowsPerPlugin.
func Render(t Table, p Params) ([]api.Flow, error) {
	if p.TunnelOfport < 1 || p.TunnelOfport > 0xfeff {
		return nil, fmt.Errorf("%w: tunnel port ofport %d: the port is not in the datapath yet", ErrRender, p.TunnelOfport)
	}
	if p.VNI > MaxVNI {
		return nil, fmt.Errorf("%w: VNI %d: give 0–%d", ErrRender, p.VNI, MaxVNI)
	}
	for _, h := range t.Hops {
		if !h.Underlay.IsValid() || h.Underlay.IsUnspecified() || h.Underlay.Zone() != "" {
			return nil, fmt.Errorf("%w: next hop %s of %s: underlay address %v is not a unicast address", ErrRender, h.NextHop, h.Dest, h.Underlay)
		}
	}
	rs := rules(t, p)
	if len(rs) > limits.MaxFlowsPerPlugin {
		return nil, fmt.Errorf("%w: %d flows for route version %d, more than %d per bridge: give fewer or shorter-listed prefixes",
			ErrRender, len(rs), t.Version, limits.MaxFlowsPerPlugin)
	}
	cookie := Cookie(p.Cookies, t.Version)
	flows := make([]api.Flow, 0, len(rs))
	for _, r := range rs {
		flows = append(flows, r.render(p, cookie))
	}
	slices.SortStableFunc(flows, func(a, b api.Flow) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Match, b.Match))
	})
	return flows, nil
}
