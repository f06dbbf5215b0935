package ovsdb

import (
	"fmt"
	"slices"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/internal/oftarget"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// ValidControllerTarget checks an OpenFlow controller target (see oftarget.Validate); its
// error matches ErrInvalid.
func ValidControllerTarget(target string) error {
	if err := oftarget.Validate(target); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// controllerRow is one Controller row a bridge refers to.
type controllerRow struct {
	uuid, target string
	owned        bool
}

// bridgeControllers reads the Controller rows of cur from the cache.
func (p *planner) bridgeControllers(cur *vswitch.Bridge) []controllerRow {
	out := make([]controllerRow, 0, len(cur.Controller))
	for _, u := range cur.Controller {
		ctl := &vswitch.Controller{}
		if !p.rowByUUID(vswitch.ControllerTable, u, ctl) {
			continue // not in the cache yet: the bridge guard fails if the server disagrees
		}
		out = append(out, controllerRow{uuid: u, target: ctl.Target, owned: ownedBy(ctl.ExternalIDs, p.owner)})
	}
	return out
}

// planControllers plans the Controller rows of a bridge so that its owned controllers are
// exactly targets: a missing target gets a new row, tagged like every row ovsplane creates,
// inserted into Bridge.controller by mutation; an owned row whose target is no longer wanted is
// removed from Bridge.controller (OVSDB then deletes the unreferenced row). Controllers someone
// else added (ovs-vsctl set-controller on an owned bridge) are left alone, and a target one of
// them already serves is not added twice. It returns the new rows' UUIDs (named) and the
// mutations of Bridge.controller; have is nil for a bridge created in this transaction.
func (p *planner) planControllers(bridge string, have []controllerRow, targets []string) (add []string, muts []libovsdb.Mutation) {
	var del []string
	for _, c := range have {
		if c.owned && !slices.Contains(targets, c.target) {
			del = append(del, c.uuid)
		}
	}
	added := map[string]bool{}
	for _, t := range targets {
		if added[t] || slices.ContainsFunc(have, func(c controllerRow) bool { return c.target == t }) {
			continue
		}
		added[t] = true
		uuid := p.namedUUID("ctl")
		row := libovsdb.Row{"target": t, "external_ids": mustMap(tagged(nil, p.owner, p.gen))}
		p.add(objRef{vswitch.ControllerTable, bridge + " " + t}, insertOp(vswitch.ControllerTable, uuid, row))
		add = append(add, uuid)
	}
	if len(add)+len(del) > 0 {
		muts = pairMutations("controller", del, add)
	}
	return add, muts
}
