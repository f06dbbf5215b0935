package ovsinstall

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

// ErrBadTable marks a route table refused whole (the caller keeps its last good table).
var ErrBadTable = errors.New("overlay route table refused")

// attPrefix is the key prefix of an ordinary node's attachments in its table
// (overlay/controller's format: "att.S" → "S COST").
const attPrefix = "att."

// MaxCost bounds a route cost in a table (overlay/route costs are below 2^53 by far).
const MaxCost = 1 << 53

// Hop is the resolved route towards one destination node.
type Hop struct {
	// Dest is the destination node.
	Dest string `json:"dest"`
	// NextHop is the node the packet is tunnelled to (Dest itself when delivered directly).
	NextHop string `json:"next_hop"`
	// Underlay is NextHop's underlay address the tunnel's tun_dst is set to.
	Underlay netip.Addr `json:"underlay"`
	// Cost is the path cost (overlay/route units).
	Cost int64 `json:"cost"`
}

// Table is a node's resolved forwarding table for one route version.
type Table struct {
	// Version is the route version it comes from.
	Version int64 `json:"version"`
	// Node is the node it belongs to.
	Node string `json:"node"`
	// Hops are the reachable destinations, sorted by Dest, one each.
	Hops []Hop `json:"hops"`
	// Unreachable names wanted destinations without a route, sorted.
	Unreachable []string `json:"unreachable,omitempty"`
}

// Input is what Resolve needs.
type Input struct {
	// Self is this node's name; Kind its kind.
	Self string
	Kind fabric.Kind
	// Version is the route version; Routes this node's table of it; Tables every node's
	// table of it (the directory of attachments; Routes wins over Tables[Self]).
	Version int64
	Routes  map[string]string
	Tables  fabric.Tables
	// Nodes are the registered nodes (kinds and underlay addresses).
	Nodes []fabric.NodeState
	// Local are this node's own underlay addresses (to pick the next hop's address on the same
	// underlay network: see SelectUnderlay).
	Local []netip.Addr
	// Via pins the underlay address used for a next-hop node (overrides the selection).
	Via map[string]netip.Addr
	// Dests are the destinations to resolve (those with overlay prefixes); others are ignored.
	Dests []string
}

// entry is one parsed table value "NAME COST".
type entry struct {
	name string
	cost int64
}

// parseEntry parses a table value of overlay/controller's format.
func parseEntry(node, key, v string) (entry, error) {
	name, c, ok := strings.Cut(v, " ")
	if !ok {
		return entry{}, fmt.Errorf("%w: node %s: route %q → %q: want \"NEXTHOP COST\"", ErrBadTable, node, key, v)
	}
	if err := CheckName(name); err != nil {
		return entry{}, fmt.Errorf("%w: node %s: route %q → %q: next hop: %v", ErrBadTable, node, key, v, err)
	}
	cost, err := strconv.ParseInt(c, 10, 64)
	if err != nil || cost < 0 || cost > MaxCost {
		return entry{}, fmt.Errorf("%w: node %s: route %q → %q: cost must be an integer 0–%d", ErrBadTable, node, key, v, int64(MaxCost))
	}
	return entry{name: name, cost: cost}, nil
}

// CheckName checks a node name with the fabric's rules: 1 to fabric.MaxNameLen bytes of
// letters, digits, '.', '_' and '-'.
func CheckName(s string) error {
	if s == "" || len(s) > fabric.MaxNameLen {
		return fmt.Errorf("name %q: give 1 to %d bytes", s, fabric.MaxNameLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("name %q: use letters, digits, '.', '_' and '-' only", s)
		}
	}
	return nil
}

// ParseUnderlay parses a registered underlay address, "IP" or "IP:port" (the port is the
// probe port, irrelevant to tunnels).
func ParseUnderlay(s string) (netip.Addr, uint16, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), 0, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("underlay address %q: give IP or IP:port", s)
	}
	return ap.Addr().Unmap(), ap.Port(), nil
}

// SelectUnderlay picks, among a peer's underlay addresses, the one to reach it at: the one
// sharing the longest common prefix with one of the local addresses, of the same family (the
// address on the same carrier network when carriers use distinct address ranges); ties go to
// the smaller address. ok is false when none has a family of the local addresses (or there are
// no local addresses and no candidate).
func SelectUnderlay(local, candidates []netip.Addr) (netip.Addr, bool) {
	best, bestLen, found := netip.Addr{}, -1, false
	for _, c := range candidates {
		l := -1
		for _, a := range local {
			if a.Is4() == c.Is4() {
				l = max(l, commonBits(a, c))
			}
		}
		if len(local) == 0 {
			l = 0
		}
		if l < 0 {
			continue
		}
		if !found || l > bestLen || (l == bestLen && c.Less(best)) {
			best, bestLen, found = c, l, true
		}
	}
	return best, found
}

// commonBits is the length of the common prefix of two addresses of one family.
func commonBits(a, b netip.Addr) int {
	x, y := a.AsSlice(), b.AsSlice()
	n := 0
	for i := range x {
		d := x[i] ^ y[i]
		if d == 0 {
			n += 8
			continue
		}
		for d&0x80 == 0 {
			n++
			d <<= 1
		}
		break
	}
	return n
}

// Resolve computes the node's next hop and its underlay address towards every destination of
// in.Dests. It refuses the whole table (ErrBadTable, naming the entry) when an entry does not
// parse, names a node that is not registered, relays through a node that is not a super, or
// needs a next hop without a usable underlay address. Destinations without a route are listed
// in Table.Unreachable.
func Resolve(in Input) (Table, error) {
	t := Table{Version: in.Version, Node: in.Self}
	nodes := make(map[string]fabric.NodeState, len(in.Nodes))
	for _, n := range in.Nodes {
		nodes[n.Name] = n
	}
	if _, ok := nodes[in.Self]; !ok {
		return t, fmt.Errorf("%w: node %s is not registered in the fabric", ErrBadTable, in.Self)
	}
	// The node's own table: destination super → (next hop, cost); for a super, attached
	// ordinary → direct cost.
	toSuper := map[string]entry{}
	direct := map[string]int64{}
	for key, v := range in.Routes {
		e, err := parseEntry(in.Self, key, v)
		if err != nil {
			return t, err
		}
		if strings.HasPrefix(key, attPrefix) {
			continue // this ordinary node's attachments: its super entries cover them
		}
		dst, ok := nodes[key]
		if !ok {
			return t, fmt.Errorf("%w: node %s: route to %q: not a registered node", ErrBadTable, in.Self, key)
		}
		hop, ok := nodes[e.name]
		if !ok {
			return t, fmt.Errorf("%w: node %s: route to %s via %q: not a registered node", ErrBadTable, in.Self, key, e.name)
		}
		switch {
		case dst.Kind == fabric.KindSuper && hop.Kind == fabric.KindSuper:
			toSuper[key] = e
		case dst.Kind == fabric.KindOrdinary && in.Kind == fabric.KindSuper && e.name == key:
			direct[key] = e.cost
		default:
			return t, fmt.Errorf("%w: node %s: route to %s (%s) via %s (%s): only super nodes relay, and only a super delivers to an ordinary node directly",
				ErrBadTable, in.Self, key, dst.Kind, e.name, hop.Kind)
		}
	}
	// The directory: each ordinary destination's attachments, from its own table.
	attachments := func(x string) ([]entry, error) {
		var out []entry
		for key, v := range in.Tables[x] {
			if !strings.HasPrefix(key, attPrefix) {
				continue
			}
			e, err := parseEntry(x, key, v)
			if err != nil {
				return nil, err
			}
			if n, ok := nodes[e.name]; !ok || n.Kind != fabric.KindSuper || key != attPrefix+e.name {
				return nil, fmt.Errorf("%w: node %s: attachment %q → %q: not a registered super node", ErrBadTable, x, key, v)
			}
			out = append(out, e)
		}
		return out, nil
	}
	dests := slices.Clone(in.Dests)
	slices.Sort(dests)
	dests = slices.Compact(dests)
	for _, x := range dests {
		if x == in.Self {
			continue
		}
		dst, ok := nodes[x]
		if !ok {
			t.Unreachable = append(t.Unreachable, x)
			continue
		}
		var hop string
		var cost int64
		found := false
		if dst.Kind == fabric.KindSuper {
			if e, ok := toSuper[x]; ok {
				hop, cost, found = e.name, e.cost, true
			}
		} else {
			if c, ok := direct[x]; ok {
				hop, cost, found = x, c, true
			}
			atts, err := attachments(x)
			if err != nil {
				return t, err
			}
			for _, a := range atts {
				var d int64
				var nh string
				switch e, ok := toSuper[a.name]; {
				case a.name == in.Self:
					continue // direct delivery, covered by the node's own table
				case ok:
					d, nh = e.cost, e.name
				default:
					continue // that attachment is unreachable from here
				}
				c := d + a.cost
				if !found || c < cost || (c == cost && nh < hop && hop != x) {
					hop, cost, found = nh, c, true
				}
			}
		}
		if !found {
			t.Unreachable = append(t.Unreachable, x)
			continue
		}
		addr, err := underlayOf(nodes[hop], in)
		if err != nil {
			return t, err
		}
		t.Hops = append(t.Hops, Hop{Dest: x, NextHop: hop, Underlay: addr, Cost: cost})
	}
	return t, nil
}

// underlayOf picks the next hop's underlay address.
func underlayOf(n fabric.NodeState, in Input) (netip.Addr, error) {
	if a, ok := in.Via[n.Name]; ok {
		return a, nil
	}
	var cands []netip.Addr
	for _, s := range n.Underlay {
		a, _, err := ParseUnderlay(s)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%w: next hop %s: %v", ErrBadTable, n.Name, err)
		}
		if a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" {
			continue // not a tunnel endpoint
		}
		cands = append(cands, a)
	}
	a, ok := SelectUnderlay(in.Local, cands)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: next hop %s has no underlay address of this node's family (%v): register one, or pin it with underlay_via",
			ErrBadTable, n.Name, n.Underlay)
	}
	return a, nil
}
