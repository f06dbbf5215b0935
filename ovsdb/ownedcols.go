package ovsdb

import "github.com/ovsplane/ovsplane/ovsdb/vswitch"

// OwnedBridgeColumns returns, from the cache and without I/O, the scalar columns of the named
// bridge that EnsureBridge sets and a reconcile pass repairs as drift: "datapath_type" and
// "fail_mode" (both "" when unset). ok is false when the bridge is absent or not owned by this
// client's owner. The reconciler compares them with the desired bridge to tell which owned
// column another writer changed (vswitchd/reconcile's conflict detection).
func (c *Client) OwnedBridgeColumns(name string) (cols map[string]string, ok bool) {
	tc := c.lc.Cache()
	if tc == nil {
		return nil, false
	}
	rc := tc.Table(vswitch.BridgeTable)
	if rc == nil {
		return nil, false
	}
	_, row, err := rc.RowByModel(&vswitch.Bridge{Name: name})
	b, isBridge := row.(*vswitch.Bridge)
	if err != nil || !isBridge || !ownedBy(b.ExternalIDs, c.owner) {
		return nil, false
	}
	return map[string]string{"datapath_type": b.DatapathType, "fail_mode": derefStr(b.FailMode)}, true
}
