package dbcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// VswitchdLock is the OVSDB lock every ovs-vswitchd takes at start (vswitchd/bridge.c) and
// holds while it runs: nobody holding it means no ovs-vswitchd is serving this database.
const VswitchdLock = "ovs_vswitchd"

// LockHeld reports whether another client holds the OVSDB lock name (RFC 7047 section 4.1.8),
// without keeping it: it asks for the lock and at once gives it back, or withdraws the queued
// request. The lock is held by this connection only for one round trip, so a starting holder
// is delayed by at most that. Servers without locks (libovsdb's) answer with an *RPCError.
func (c *Conn) LockHeld(ctx context.Context, name string) (bool, error) {
	raw, err := c.Call(ctx, "lock", name)
	if err != nil {
		return false, err
	}
	var res struct {
		Locked *bool `json:"locked"`
	}
	jerr := json.Unmarshal(raw, &res)
	// Always unlock: it releases a granted lock and cancels a queued request alike.
	_, uerr := c.Call(ctx, "unlock", name)
	if jerr != nil || res.Locked == nil {
		return false, errors.Join(fmt.Errorf("lock %q: unexpected reply %s", name, raw), uerr)
	}
	if uerr != nil {
		return false, uerr
	}
	return !*res.Locked, nil
}
