// Package ovslane is the stripe's OVS-DPDK link mode: the NICs stay ports of ovs-vswitchd (DPDK
// ports, or the userspace datapath's system ports), and the stripe engine reaches each of them
// through a lane, an internal port of the same bridge that the engine opens with its ordinary
// AF_PACKET link (stripe/link). The package computes the OpenFlow rules that bind lane i to NIC
// i, from the bridge's facts (plugins/api.BridgeFacts: names and ofports), and paces each link
// to its rate, since nothing in OVS userspace gives the engine backpressure from a shaped NIC.
//
// # Rules
//
// For each binding (NIC i, lane i) on the bridge, at Spec.Priority in table 0:
//
//	in_port=<lane>,dl_type=<ethertype>  actions=output:<nic>    the engine's frames leave on NIC i
//	in_port=<nic>,dl_type=<ethertype>   actions=output:<lane>   stripe frames received come back
//
// and, one below, in_port=<lane> actions=drop: whatever else the lane's kernel device sends
// (IPv6 router solicitations and the like) never reaches the bridge. Everything else on a NIC
// keeps its normal forwarding (the bridge's other flows, NORMAL by default).
//
// Flows refuses, naming the object and the fix, a NIC or lane missing from the bridge, one
// without an ofport yet (ErrNotReady: try again once OVS has added it), a NIC that is one of
// the owner's lanes, and a NIC or lane that another plugin owns. It returns the rules of all
// bindings or none, so a bad binding never leaves a stripe half-bound.
//
// # Select groups
//
// A select group (the reference's OVS-native "adjust" through bucket weights) cannot stripe one
// connection: OVS picks a bucket per flow by hash (dp_hash or the hash of listed fields), never
// per packet, and every stripe frame of a connection has the same Ethernet header and no L3/L4
// fields, so all of them would take one bucket. The engine's own policy therefore chooses the
// lane per frame, and the rules stay one-to-one.
package ovslane

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/link"
)

// Bounds and defaults.
const (
	// MaxBindings bounds a Spec's bindings (the stripe's links).
	MaxBindings = 16
	// DefaultPriority is the rules' priority when Spec.Priority is 0: above the flows a bridge
	// usually holds (NORMAL at 0), below 65535.
	DefaultPriority = 40000
	// MinPriority is the lowest Spec.Priority (the drop rule sits one below).
	MinPriority = 2
	// rulesPerBinding is how many flows Flows returns per binding.
	rulesPerBinding = 3
	// maxListed bounds the bridge interfaces an error lists.
	maxListed = 16
)

// ErrNotReady is wrapped by Flows when a NIC or lane is on the bridge without an ofport yet.
var ErrNotReady = errors.New("not ready")

// ErrRefused is wrapped by Flows when a binding cannot be programmed on the bridge as it is.
var ErrRefused = errors.New("refused")

// Binding binds one lane to one NIC: the stripe's link i.
type Binding struct {
	// NIC is the NIC's interface name on the bridge (an OVS Interface row's name, e.g. a DPDK
	// port "dpdk0").
	NIC string
	// Lane is the lane's interface name: an internal port of the bridge, which is also the
	// kernel device the engine opens.
	Lane string
}

// Spec is one stripe's bindings on one bridge.
type Spec struct {
	// Bridge names the bridge holding the NICs and the lanes.
	Bridge string
	// Bindings are the links, 1..MaxBindings, each NIC and lane named once.
	Bindings []Binding
	// EtherType is the stripe frames' ethertype (0: link.EtherType).
	EtherType uint16
	// Priority is the rules' priority, MinPriority..65535 (0: DefaultPriority).
	Priority uint16
}

// Check validates s: bridge and interface names, counts, no name twice, no NIC used as a lane.
func (s Spec) Check() error {
	if err := link.CheckInterfaceName(s.Bridge); err != nil {
		return fmt.Errorf("ovslane: bridge: %w", err)
	}
	if len(s.Bindings) < 1 || len(s.Bindings) > MaxBindings {
		return fmt.Errorf("ovslane: %d bindings: want 1 to %d", len(s.Bindings), MaxBindings)
	}
	seen := map[string]string{}
	for i, b := range s.Bindings {
		for _, n := range []struct{ what, name string }{{"NIC", b.NIC}, {"lane", b.Lane}} {
			if err := link.CheckInterfaceName(n.name); err != nil {
				return fmt.Errorf("ovslane: binding %d %s: %w", i, n.what, err)
			}
			where := fmt.Sprintf("binding %d's %s", i, n.what)
			if prev, dup := seen[n.name]; dup {
				return fmt.Errorf("ovslane: %s %s is also %s: name each NIC and lane once", where, n.name, prev)
			}
			seen[n.name] = where
		}
	}
	if s.EtherType != 0 && s.EtherType < 0x0600 {
		return fmt.Errorf("ovslane: ethertype %#04x is an 802.3 length: use %#04x or another value ≥ 0x0600", s.EtherType, link.EtherType)
	}
	if s.Priority != 0 && s.Priority < MinPriority {
		return fmt.Errorf("ovslane: priority %d: want %d to 65535 (or 0 for %d)", s.Priority, MinPriority, DefaultPriority)
	}
	return nil
}

// priority and etherType apply the defaults.
func (s Spec) priority() uint16 {
	if s.Priority == 0 {
		return DefaultPriority
	}
	return s.Priority
}

func (s Spec) etherType() uint16 {
	if s.EtherType == 0 {
		return link.EtherType
	}
	return s.EtherType
}

// Flows returns the rules binding every lane of s to its NIC on bridge (see the package
// documentation), or an error and no rules. owner is the name of the plugin whose lanes these
// are: a NIC that owner created is a lane, not a NIC, and a NIC or lane another plugin created
// is refused as owned. Cookies are left 0 (the plugin's cookie). It fails when bridge is not
// s.Bridge.
func Flows(s Spec, bridge api.BridgeFacts, owner string) ([]api.Flow, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if bridge.Name != s.Bridge {
		return nil, fmt.Errorf("ovslane: bridge %s: the stripe's links are on bridge %s", bridge.Name, s.Bridge)
	}
	byName := map[string]api.BridgePort{}
	for _, p := range bridge.Ports {
		byName[p.Interface] = p
	}
	find := func(i int, what, name string) (int64, error) {
		p, ok := byName[name]
		switch {
		case !ok:
			return 0, fmt.Errorf("ovslane: binding %d: %s %s is not on bridge %s (its interfaces: %s): %w; %s", i, what, name, s.Bridge,
				listed(bridge), ErrRefused, fix(what))
		case p.Owner == api.OwnerPlugin && p.Plugin != owner:
			return 0, fmt.Errorf("ovslane: binding %d: %s %s on bridge %s is already owned by plugin %q: %w; give the stripe a NIC of its own", i, what, name, s.Bridge, p.Plugin, ErrRefused)
		case what == "NIC" && p.Owner == api.OwnerPlugin && p.Plugin == owner:
			return 0, fmt.Errorf("ovslane: binding %d: NIC %s on bridge %s is a lane of plugin %q (type %s), not a NIC: %w; name the DPDK or system port the lane should reach", i, name, s.Bridge, owner, p.Type, ErrRefused)
		case p.Ofport <= 0:
			return 0, fmt.Errorf("ovslane: binding %d: %s %s on bridge %s has no ofport yet (%d): %w", i, what, name, s.Bridge, p.Ofport, ErrNotReady)
		}
		return p.Ofport, nil
	}
	prio := s.priority()
	et := fmt.Sprintf("0x%04x", s.etherType())
	flows := make([]api.Flow, 0, rulesPerBinding*len(s.Bindings))
	for i, b := range s.Bindings {
		nic, err := find(i, "NIC", b.NIC)
		if err != nil {
			return nil, err
		}
		lane, err := find(i, "lane", b.Lane)
		if err != nil {
			return nil, err
		}
		flows = append(flows,
			api.Flow{Priority: prio, Match: fmt.Sprintf("in_port=%d,dl_type=%s", lane, et), Actions: fmt.Sprintf("output:%d", nic)},
			api.Flow{Priority: prio - 1, Match: fmt.Sprintf("in_port=%d", lane), Actions: "drop"},
			api.Flow{Priority: prio, Match: fmt.Sprintf("in_port=%d,dl_type=%s", nic, et), Actions: fmt.Sprintf("output:%d", lane)},
		)
	}
	return flows, nil
}

// fix says how to get a missing NIC or lane onto the bridge.
func fix(what string) string {
	if what == "NIC" {
		return "add the NIC to the bridge as a port (type dpdk with its dpdk-devargs, or a system port) or name one it holds"
	}
	return "declare the lanes as a port of type stripe-lanes on the bridge (docs/stripe-plugin.md)"
}

// listed names the bridge's interfaces for an error, at most maxListed of them.
func listed(bridge api.BridgeFacts) string {
	names := make([]string, 0, len(bridge.Ports))
	for _, p := range bridge.Ports {
		names = append(names, p.Interface)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "none"
	}
	if len(names) > maxListed {
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}
