package ovsdb

import (
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// OwnedBridgeColumns returns, from the cache and without I/O, the scalar columns of the named
// bridge that EnsureBridge sets and a reconcile pass repairs as drift: "datapath_type",
// "fail_mode" (both "" when unset) and "protocols" (sorted, comma-separated, "" when empty). ok is false when the bridge is absent or not owned by this
// client's owner. The reconciler compares them with the desired bridge to tell which owned
// column another writer changed (vswitchd/reconcile's conflict detection).
func (c *Client) OwnedBridgeColumns(name string) (cols map[string]string, ok bool) {
	r, ok := c.read()
	if !ok {
		return nil, false
	}
	_, row := r.byName(vswitch.BridgeTable, name)
	b, isBridge := row.(*vswitch.Bridge)
	if !isBridge || !ownedBy(b.ExternalIDs, c.owner) {
		return nil, false
	}
	protocols := make([]string, len(b.Protocols))
	for i, p := range b.Protocols {
		protocols[i] = string(p)
	}
	slices.Sort(protocols)
	return map[string]string{"datapath_type": b.DatapathType, "fail_mode": derefStr(b.FailMode),
		"protocols": strings.Join(protocols, ",")}, true
}
