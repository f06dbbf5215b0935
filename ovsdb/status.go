package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// InterfaceState is what ovs-vswitchd reports about one interface.
type InterfaceState struct {
	Name       string
	Type       string
	Ofport     int    // OpenFlow port number; -1 when vswitchd failed to set it up; 0 when not assigned yet
	Error      string // Interface.error; "" when fine
	LinkState  string // "up", "down" or "" when unknown
	AdminState string
	MTU        int
	MAC        string         // mac_in_use
	Statistics map[string]int // only with Config.MonitorStatistics
	Owned      bool           // created by this client's owner
}

func stateOf(ifc *vswitch.Interface, owner string) InterfaceState {
	st := InterfaceState{Name: ifc.Name, Type: ifc.Type, Error: derefStr(ifc.Error),
		LinkState: derefStr(ifc.LinkState), AdminState: derefStr(ifc.AdminState),
		MAC: derefStr(ifc.MACInUse), Statistics: ifc.Statistics, Owned: ownedBy(ifc.ExternalIDs, owner)}
	if ifc.Ofport != nil {
		st.Ofport = *ifc.Ofport
	}
	if ifc.MTU != nil {
		st.MTU = *ifc.MTU
	}
	return st
}

// Interface returns the cached state of the named interface, or an error matching ErrNotFound.
func (c *Client) Interface(name string) (InterfaceState, error) {
	st := c.interfaceStates([]string{name})
	if len(st) == 0 {
		return InterfaceState{}, &OpError{Kind: ErrNotFound, Table: vswitch.InterfaceTable, Row: name}
	}
	return st[0], nil
}

// InterfaceCount returns the number of Interface rows in the cache (of every owner): the size
// of the switch that ovs-vswitchd reconfigures; 0 before the cache is filled.
func (c *Client) InterfaceCount() int {
	r, ok := c.read()
	if !ok {
		return 0
	}
	return r.count(vswitch.InterfaceTable)
}

// InterfaceStates returns the cached state of every Interface row, by name, reading the cache
// without copying its rows (cheaper than Interface for many names).
func (c *Client) InterfaceStates() map[string]InterfaceState {
	r, ok := c.read()
	if !ok {
		return nil
	}
	out := make(map[string]InterfaceState, r.count(vswitch.InterfaceTable))
	r.eachState(c.owner, func(st InterfaceState) bool {
		out[st.Name] = st
		return true
	})
	return out
}

// interfaceStates returns the cached states of the named interfaces that exist, in order.
func (c *Client) interfaceStates(names []string) []InterfaceState {
	r, ok := c.read()
	if !ok {
		return nil
	}
	out := make([]InterfaceState, 0, len(names))
	for _, n := range names {
		if st, ok := r.state(c.owner, n); ok {
			out = append(out, st)
		}
	}
	return out
}

// CurCfg returns Open_vSwitch.cur_cfg as last seen: the last configuration ovs-vswitchd applied.
func (c *Client) CurCfg() int {
	if r := c.cachedRoot(); r != nil {
		return r.CurCfg
	}
	return 0
}

// WaitApplied blocks until ovs-vswitchd reports cur_cfg ≥ nextCfg, then returns the states of the
// named interfaces. If any of them carries an Interface.error, the error is an *ApplyError naming
// each (errors.Is ErrVswitchd) — the acknowledgement ovs-vsctl gives after a change. When ctx
// ends first, the error matches ErrTimeout for a deadline and context.Canceled for a cancel; it
// says how far ovs-vswitchd got, which tells a stuck or absent ovs-vswitchd apart.
func (c *Client) WaitApplied(ctx context.Context, nextCfg int, ifaces ...string) ([]InterfaceState, error) {
	for {
		ch := c.changes()
		cur := c.CurCfg()
		if cur >= nextCfg {
			break
		}
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond): // in case an event was dropped
		case <-ctx.Done():
			err := ctx.Err()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", ErrTimeout, err)
			}
			return nil, fmt.Errorf("ovsdb: waiting for ovs-vswitchd to apply configuration %d (it has applied %d; is ovs-vswitchd running?): %w",
				nextCfg, cur, err)
		}
	}
	states := c.interfaceStates(ifaces)
	var failed []InterfaceError
	for _, st := range states {
		if st.Error != "" {
			failed = append(failed, InterfaceError{Interface: st.Name, Message: st.Error})
		}
	}
	if len(failed) > 0 {
		return states, &ApplyError{Interfaces: failed}
	}
	return states, nil
}

// OwnedRow is a row carrying this client's owner tag.
type OwnedRow struct {
	Table      string
	Name       string
	Generation int64 // -1 when the generation key is missing or unreadable
	// Tags holds the row's external_ids, whose keys that start with TagPrefix ("ovsplane-"),
	// the ownership keys included, are what a restarted daemon needs to rebuild its view of
	// the row. Read only its TagPrefix keys.
	Tags Tags
}

// TagPrefix starts every external_ids key ovsplane reserves for itself (OwnerKey,
// GenerationKey and the daemon's own keys). Specs may not set such keys.
const TagPrefix = "ovsplane-"

// Tags returns the external_ids of the named Bridge, Port or Interface row when this client's
// owner owns it (from the cache), for their TagPrefix keys; ok is false when the row is absent
// or not owned.
func (c *Client) Tags(table, name string) (tags Tags, ok bool) {
	// Straight from the replica, never through lc.Get: libovsdb's Get waits for the cache to
	// be consistent, which it is not while the connection is down (a caller settling a commit
	// the lost connection left unknown would hang until it is back).
	r, ok := c.read()
	if !ok {
		return Tags{}, false
	}
	tags, ok = r.tags(table, name)
	if !ok || tags.Get(OwnerKey) != c.owner {
		return Tags{}, false
	}
	return tags, true
}

// Owned lists, from the cache, every Bridge, Port and Interface row tagged with this client's
// owner, sorted by table then name. A restarted daemon uses it to rebuild its view and to find
// stale rows (an older Generation) to prune.
func (c *Client) Owned() []OwnedRow {
	r, ok := c.read()
	if !ok {
		return nil
	}
	var out []OwnedRow
	r.eachTagged(func(table, name string, tags Tags) bool {
		if tags.Get(OwnerKey) != c.owner {
			return true
		}
		gen, err := strconv.ParseInt(tags.Get(GenerationKey), 10, 64)
		if err != nil {
			gen = -1
		}
		out = append(out, OwnedRow{Table: table, Name: name, Generation: gen, Tags: tags})
		return true
	})
	slices.SortFunc(out, func(a, b OwnedRow) int {
		if a.Table != b.Table {
			return strings.Compare(a.Table, b.Table)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// OwnedGlobal returns the Open_vSwitch.other_config keys (with their current values) that this
// client's owner has set.
func (c *Client) OwnedGlobal(ctx context.Context) (map[string]string, error) {
	root, err := c.root(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range ownedGlobalKeys(root, c.owner) {
		if v, ok := root.OtherConfig[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// SwitchFacts are what the Open_vSwitch row says about the running Open vSwitch.
type SwitchFacts struct {
	OVSVersion      string
	DPDKVersion     string
	DPDKInitialized bool
	IfaceTypes      []string
	DatapathTypes   []string
	// OtherConfig is Open_vSwitch.other_config (a copy).
	OtherConfig map[string]string
}

// Facts returns the SwitchFacts from the cache (zero before the first update).
func (c *Client) Facts() SwitchFacts {
	r := c.cachedRoot()
	if r == nil {
		return SwitchFacts{}
	}
	f := SwitchFacts{DPDKInitialized: r.DpdkInitialized, IfaceTypes: slices.Clone(r.IfaceTypes), DatapathTypes: slices.Clone(r.DatapathTypes),
		OtherConfig: maps.Clone(r.OtherConfig)}
	if r.OVSVersion != nil {
		f.OVSVersion = *r.OVSVersion
	}
	if r.DpdkVersion != nil {
		f.DPDKVersion = *r.DpdkVersion
	}
	return f
}
