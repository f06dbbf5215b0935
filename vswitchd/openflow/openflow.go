// Package openflow is ovsplaned's owner of OpenFlow: it programs the flows and groups plugins
// ask for on a bridge, through ovs-ofctl, touching only the cookies and group ids it is given.
//
// A plugin's flows and groups are parsed into a typed model (flowMod, groupMod, built from the
// plugins/api parsers) and rendered by one function each (renderFlow, renderGroup) that can
// only produce one line of ovs-ofctl syntax, so a plugin's text can never become a second
// command of the bundle file. Before writing, Open vSwitch itself parses the flows
// (ovs-ofctl parse-flows), and a flow whose table, priority and match equal those of a flow
// with a cookie outside the plugin's range is refused: adding it would replace that flow.
// A change of groups and flows is one OpenFlow bundle (atomic; Open vSwitch 3.1 takes group
// mods in bundles, on OpenFlow 1.3 too): changed groups are modified in place, never deleted
// and added again while flows point at them, so a select group's weights change without a lost
// packet; a switch refusing bundles gets the same steps one by one. Flows are rewritten only
// when they changed or someone touched them, and a sync is skipped when the plugin's set is the
// one last written and the bridge still holds exactly what that write left (flows of the cookie
// range and groups of the group range, compared by content), so a foreign edit, a deletion or a
// restarted ovs-vswitchd is repaired.
package openflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// protocols are the OpenFlow versions offered to the switch (bundles: 1.4 or later, or 1.3
// with the ONF extension Open vSwitch implements).
const protocols = "OpenFlow13,OpenFlow14,OpenFlow15"

// Programmer runs ovs-ofctl against the bridges of one Open vSwitch. Its methods are safe for
// concurrent use; callers serialise the changes of one bridge.
type Programmer struct {
	// RunDir is Open vSwitch's run directory, holding <bridge>.mgmt; empty means ovs-ofctl's
	// default.
	RunDir string
	// Ofctl is the ovs-ofctl binary; empty means "ovs-ofctl" from PATH.
	Ofctl string

	mu   sync.Mutex
	last map[string]written // bridge and cookie range → what the last Sync wrote there
}

// written is what one Sync wrote: the rendered set, and the state the bridge was left in.
type written struct {
	groups, flows         string // rendered groups and flows, in order
	flowState, groupState string // owned flows and groups as dumped right after the write
}

// target is what ovs-ofctl connects to for bridge.
func (p *Programmer) target(bridge string) string {
	if p.RunDir == "" {
		return bridge
	}
	return "unix:" + strings.TrimSuffix(p.RunDir, "/") + "/" + bridge + ".mgmt"
}

// run runs ovs-ofctl with args (the subcommand first), -O protocols and --no-names added,
// stdin on its standard input when not empty.
func (p *Programmer) run(ctx context.Context, stdin string, args ...string) (string, error) {
	bin := p.Ofctl
	if bin == "" {
		bin = "ovs-ofctl"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-O", protocols, "--no-names"}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("ovs-ofctl %s: %w", args[0], ctx.Err())
		}
		return "", fmt.Errorf("ovs-ofctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// plan is a FlowSet parsed and rendered, ready to write.
type plan struct {
	flows     []flowMod
	flowLines []string
	groups    []groupMod
	groupLine []string
}

// planOf checks fs (api.ValidateFlowSet) and renders it; a zero cookie becomes cookies.Value.
func planOf(cookies api.CookieRange, groups api.GroupRange, fs api.FlowSet) (plan, error) {
	if err := api.ValidateFlowSet(cookies, groups, fs); err != nil {
		return plan{}, err
	}
	var pl plan
	for i, g := range fs.Groups {
		m, err := newGroupMod(i, g, groups)
		if err != nil {
			return plan{}, err
		}
		line, err := renderGroup(m)
		if err != nil {
			return plan{}, err
		}
		pl.groups, pl.groupLine = append(pl.groups, m), append(pl.groupLine, line)
	}
	for i, f := range fs.Flows {
		m, err := newFlowMod(i, f, cookies)
		if err != nil {
			return plan{}, err
		}
		line, err := renderFlow(m)
		if err != nil {
			return plan{}, err
		}
		pl.flows, pl.flowLines = append(pl.flows, m), append(pl.flowLines, line)
	}
	return pl, nil
}

// Sync makes the flows of bridge whose cookie is in cookies exactly fs.Flows, and the groups
// with ids in groups exactly fs.Groups; nothing else on the bridge changes. It refuses, before
// touching the bridge, a set that api.ValidateFlowSet refuses, a flow Open vSwitch cannot
// parse, and a flow with the table, priority and match of a flow outside cookies (adding it
// would replace that flow); the errors name the flow (flows[3]) and the fix.
//
// The whole change is one bundle (see write): groups are added or modified in place first
// (a group flows point at is never deleted and added again, so a select group's weights change
// without dropping a packet and it keeps its id and age; Open vSwitch 3.1 restarts a modified
// group's counters), then the flows, then the stale groups go. When the flows are the ones the last Sync wrote and the bridge still holds
// them, only the groups are written (rewriting the flows would reset their counters); when
// the groups are unchanged too, nothing is written.
func (p *Programmer) Sync(ctx context.Context, bridge string, cookies api.CookieRange, groups api.GroupRange, fs api.FlowSet) error {
	pl, err := planOf(cookies, groups, fs)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	key := fmt.Sprintf("%s/%#x/%#x", bridge, cookies.Value, cookies.Mask)
	now := written{groups: strings.Join(pl.groupLine, "\n"), flows: strings.Join(pl.flowLines, "\n")}
	p.mu.Lock()
	last, ok := p.last[key]
	p.mu.Unlock()
	keepFlows := false
	if ok && last.flows == now.flows {
		if flows, gs, err := p.state(ctx, bridge, cookies, groups); err == nil && flows == last.flowState {
			if last.groups == now.groups && gs == last.groupState {
				return nil
			}
			keepFlows = true
		}
	}
	if !keepFlows {
		if err := p.checkForeign(ctx, bridge, cookies, pl); err != nil {
			return err
		}
	}
	if err := p.write(ctx, bridge, cookies, groups, pl, keepFlows); err != nil {
		return err
	}
	if now.flowState, now.groupState, err = p.state(ctx, bridge, cookies, groups); err != nil {
		return err
	}
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]written{}
	}
	p.last[key] = now
	p.mu.Unlock()
	return nil
}

// state is the comparable content of the bridge's flows in cookies and groups in groups.
func (p *Programmer) state(ctx context.Context, bridge string, cookies api.CookieRange, groups api.GroupRange) (flows, gs string, err error) {
	fd, err := p.run(ctx, "", "--no-stats", "dump-flows", p.target(bridge), cookieFilter(cookies))
	if err != nil {
		return "", "", fmt.Errorf("bridge %s: %w", bridge, err)
	}
	gd, err := p.run(ctx, "", "dump-groups", p.target(bridge))
	if err != nil {
		return "", "", fmt.Errorf("bridge %s: %w", bridge, err)
	}
	mine := func(line string) bool {
		id, ok := groupIDOf(line)
		return ok && groups.Contains(id)
	}
	return stateOf(fd, nil), stateOf(gd, mine), nil
}

// cookieFilter is the dump-flows and del-flows argument selecting the flows of cookies.
func cookieFilter(cookies api.CookieRange) string {
	return "cookie=0x" + strconv.FormatUint(cookies.Value, 16) + "/0x" + strconv.FormatUint(cookies.Mask, 16)
}

// checkForeign has Open vSwitch parse the plan's flows, then refuses flows it cannot parse,
// two flows of the plan that are the same flow, and a flow that is the same flow as one on
// the bridge whose cookie is outside cookies.
func (p *Programmer) checkForeign(ctx context.Context, bridge string, cookies api.CookieRange, pl plan) error {
	if len(pl.flows) == 0 {
		return nil
	}
	out, err := p.run(ctx, strings.Join(pl.flowLines, "\n")+"\n", "parse-flows", "-")
	if err != nil {
		if m := parseErrRe.FindStringSubmatch(err.Error()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= len(pl.flows) {
				return fmt.Errorf("bridge %s: flows[%d]: Open vSwitch refuses %q: %s: fix the plugin's match or actions", bridge, pl.flows[n-1].index, pl.flowLines[n-1], m[2])
			}
		}
		return fmt.Errorf("bridge %s: the plugin's flows: %w", bridge, err)
	}
	keys, err := parseFlowMods(out)
	if err != nil || len(keys) != len(pl.flows) {
		return fmt.Errorf("bridge %s: reading ovs-ofctl parse-flows (%d flows for %d): %v", bridge, len(keys), len(pl.flows), err)
	}
	dump, err := p.run(ctx, "", "--no-stats", "dump-flows", p.target(bridge))
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	have, err := parseDump(dump)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	foreign := map[flowKey]dumpedFlow{}
	for _, f := range have {
		if !cookies.Contains(f.cookie) {
			foreign[f.key] = f
		}
	}
	seen := map[flowKey]int{}
	var errs []error
	for i, k := range keys {
		idx := pl.flows[i].index
		if f, ok := foreign[k]; ok {
			errs = append(errs, fmt.Errorf("flows[%d]: same table, priority and match as the bridge's flow %q, whose cookie %#x is not the plugin's: adding it would replace that flow; use another priority or match", idx, f.line, f.cookie))
		}
		if j, ok := seen[k]; ok {
			errs = append(errs, fmt.Errorf("flows[%d]: the same flow as flows[%d] for Open vSwitch (table %d, %s): merge them or change the priority", idx, j, k.table, k.match))
		}
		seen[k] = idx
	}
	if len(errs) > 0 {
		return fmt.Errorf("bridge %s: %w", bridge, errors.Join(errs...))
	}
	return nil
}

// PruneForeign deletes the flows whose cookie carries marker under markerMask (the plugins'
// cookie space) but is in none of keep: flows of plugins no longer configured.
func (p *Programmer) PruneForeign(ctx context.Context, bridge string, marker, markerMask uint64, keep []api.CookieRange) error {
	out, err := p.run(ctx, "", "--no-stats", "dump-flows", p.target(bridge), cookieFilter(api.CookieRange{Value: marker, Mask: markerMask}))
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	var stale []uint64
	for _, c := range cookiesOf(out) {
		if !slices.ContainsFunc(keep, func(r api.CookieRange) bool { return r.Contains(c) }) && !slices.Contains(stale, c) {
			stale = append(stale, c)
		}
	}
	var errs []error
	for _, c := range stale {
		if _, err := p.run(ctx, "", "del-flows", p.target(bridge), cookieFilter(api.CookieRange{Value: c, Mask: ^uint64(0)})); err != nil {
			errs = append(errs, fmt.Errorf("bridge %s: %w", bridge, err))
		}
	}
	return errors.Join(errs...)
}

// groupIDs lists the bridge's group ids.
func (p *Programmer) groupIDs(ctx context.Context, bridge string) ([]uint32, error) {
	out, err := p.run(ctx, "", "dump-groups", p.target(bridge))
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", bridge, err)
	}
	var ids []uint32
	for l := range strings.Lines(out) {
		if id, ok := groupIDOf(l); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
