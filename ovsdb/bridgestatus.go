package ovsdb

import (
	"fmt"
	"slices"
	"strings"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// BridgeErrors returns, by bridge name, the bridges in the cache that ovs-vswitchd failed to
// create, each with a message saying so and what to change. OVSDB has no error column for a
// bridge: ovs-vswitchd only logs "failed to create bridge", and the row stays as written. A
// bridge counts as failed when ovs-vswitchd has applied every configuration written so far
// (Open_vSwitch.cur_cfg ≥ next_cfg, and at least 1) yet left the bridge without a datapath_id
// and its local interface (named like the bridge) without an ofport and without an error —
// what a bridge whose datapath cannot be opened looks like (an unknown datapath_type, or
// "system" without the openvswitch kernel module); ovs-vsctl reports the same state as "Error
// detected while setting up". A bridge written by a writer that does not raise next_cfg
// (ovs-vsctl --no-wait) may look failed until ovs-vswitchd has read it. The result is empty
// before the first configuration was applied; it is computed from the cache, without I/O.
func (c *Client) BridgeErrors() map[string]string {
	r, ok := c.read()
	if !ok {
		return nil
	}
	root := r.root()
	if root == nil || root.CurCfg < 1 || root.CurCfg < root.NextCfg {
		return nil
	}
	var out map[string]string
	r.each(vswitch.BridgeTable, func(_ string, row libmodel.Model) bool {
		b, ok := row.(*vswitch.Bridge)
		if !ok || derefStr(b.DatapathID) != "" {
			return true
		}
		_, irow := r.byName(vswitch.InterfaceTable, b.Name)
		local, ok := irow.(*vswitch.Interface)
		if !ok || derefStr(local.Error) != "" || (local.Ofport != nil && *local.Ofport != 0) {
			return true
		}
		if out == nil {
			out = map[string]string{}
		}
		out[b.Name] = bridgeFailure(b.Name, b.DatapathType, root.DatapathTypes, root.CurCfg)
		return true
	})
	return out
}

// bridgeFailure says why bridge (of datapath type dpType) was probably not created, given the
// datapath types ovs-vswitchd registered, and what to change.
func bridgeFailure(bridge, dpType string, known []string, cfg int) string {
	shown := dpType
	if shown == "" {
		shown = "system"
	}
	msg := fmt.Sprintf("ovs-vswitchd could not create bridge %q: it applied configuration %d but left the bridge without a datapath (no datapath_id, no ofport on its local interface); ",
		bridge, cfg)
	switch {
	case len(known) > 0 && !slices.Contains(known, shown):
		sorted := slices.Sorted(slices.Values(known))
		return msg + fmt.Sprintf("datapath_type %q is not one this ovs-vswitchd supports (%s): set datapath_type to one of those", shown, strings.Join(sorted, ", "))
	case shown == "system":
		return msg + `the kernel datapath (datapath_type "system" or unset) needs the openvswitch kernel module: load it (modprobe openvswitch), or use datapath_type "netdev" (userspace, DPDK); ovs-vswitchd's log says "failed to create bridge"`
	}
	return msg + fmt.Sprintf(`its datapath of type %q failed to open: ovs-vswitchd's log says why ("failed to create bridge %s")`, shown, bridge)
}
