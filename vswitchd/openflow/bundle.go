package openflow

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// How a Sync is written. Open vSwitch 3.1 was checked (ovs-ofctl bundle against a bridge
// limited to OpenFlow 1.3 and one offering 1.3-1.5): group mods travel in bundles next to flow
// mods; "group add_or_mod" (the Open vSwitch extension OFPGC_ADD_OR_MOD) modifies an existing
// group in place, its type included, and keeps its id and its duration; "group delete" of an
// absent id is no error; a refused mod rolls the whole bundle back (nothing of it is applied).
// See docs/decisions/0005-group-changes-in-place.md.

// write applies pl to bridge: the plugin's groups added or modified in place, its flows
// replaced (unless keepFlows: they are on the bridge as the plan has them), and the groups of
// groups that pl no longer has deleted, in this order, as one bundle. A switch that refuses
// bundles gets the same steps one ovs-ofctl call at a time (not atomic). The bundle file is
// built from rendered lines, the cookie filter and group ids only.
func (p *Programmer) write(ctx context.Context, bridge string, cookies api.CookieRange, groups api.GroupRange, pl plan, keepFlows bool) error {
	have, err := p.groupIDs(ctx, bridge)
	if err != nil {
		return err
	}
	stale := staleGroups(have, groups, pl)
	file := bundleFile(cookies, pl, stale, keepFlows)
	if file == "" {
		return nil
	}
	_, err = p.run(ctx, file, "bundle", p.target(bridge), "-")
	if err == nil {
		return nil
	}
	if !bundleUnsupported(err) {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	return p.writeSteps(ctx, bridge, cookies, pl, stale, keepFlows)
}

// staleGroups returns the ids among have that are in groups but not in pl.
func staleGroups(have []uint32, groups api.GroupRange, pl plan) []uint32 {
	want := map[uint32]bool{}
	for _, g := range pl.groups {
		want[g.id] = true
	}
	var stale []uint32
	for _, id := range have {
		if groups.Contains(id) && !want[id] {
			stale = append(stale, id)
		}
	}
	return stale
}

// bundleFile is the ovs-ofctl bundle file of a write: "group add_or_mod" of every group,
// "flow delete" of the cookie range and "flow add" of every flow (not with keepFlows), then
// "group delete" of each stale id. Empty when there is nothing to write.
func bundleFile(cookies api.CookieRange, pl plan, stale []uint32, keepFlows bool) string {
	var b strings.Builder
	for _, l := range pl.groupLine {
		b.WriteString("group add_or_mod " + l + "\n")
	}
	if !keepFlows {
		b.WriteString("flow delete " + cookieFilter(cookies) + "\n")
		for _, l := range pl.flowLines {
			b.WriteString("flow add " + l + "\n")
		}
	}
	for _, id := range stale {
		b.WriteString("group delete group_id=" + strconv.FormatUint(uint64(id), 10) + "\n")
	}
	return b.String()
}

// writeSteps is write for a switch without bundles: each group modified in place (created
// when missing), the flows deleted and added, the stale groups deleted.
func (p *Programmer) writeSteps(ctx context.Context, bridge string, cookies api.CookieRange, pl plan, stale []uint32, keepFlows bool) error {
	for i, g := range pl.groups {
		if _, err := p.run(ctx, "", "--may-create", "mod-group", p.target(bridge), pl.groupLine[i]); err != nil {
			return fmt.Errorf("bridge %s: groups[%d] (id %d): %w", bridge, i, g.id, err)
		}
	}
	if !keepFlows {
		if _, err := p.run(ctx, "", "del-flows", p.target(bridge), cookieFilter(cookies)); err != nil {
			return fmt.Errorf("bridge %s: %w", bridge, err)
		}
		if len(pl.flowLines) > 0 {
			if _, err := p.run(ctx, strings.Join(pl.flowLines, "\n")+"\n", "add-flows", p.target(bridge), "-"); err != nil {
				return fmt.Errorf("bridge %s: %w", bridge, err)
			}
		}
	}
	for _, id := range stale {
		if _, err := p.run(ctx, "", "del-groups", p.target(bridge), "group_id="+strconv.FormatUint(uint64(id), 10)); err != nil {
			return fmt.Errorf("bridge %s: delete group %d: %w", bridge, id, err)
		}
	}
	return nil
}

// bundleUnsupported reports whether ovs-ofctl's error says the switch takes no bundles: the
// negotiated OpenFlow version has none ("bundles need OpenFlow 1.3 or later"), or the switch
// answered the bundle control message with "bad type". A bundle the switch refused for its
// content (OFPBFC_MSG_FAILED naming the mod) is not that: its error is returned as it is.
func bundleUnsupported(err error) bool {
	s := err.Error()
	return strings.Contains(s, "bundles need OpenFlow") ||
		(strings.Contains(s, "OFPBRC_BAD_TYPE") && strings.Contains(s, "BUNDLE_CONTROL"))
}
