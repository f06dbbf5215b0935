// Package openflow is ovsplaned's owner of OpenFlow: it programs the flows and groups plugins
// ask for on a bridge, through ovs-ofctl, touching only the cookies and group ids it is given.
// Flows are replaced in one OpenFlow bundle (atomic) when the bridge speaks OpenFlow 1.4 or
// later; otherwise they are deleted and added in two steps.
package openflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// protocols are the OpenFlow versions offered to the switch; bundles need 1.4 or later.
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
	last map[string]string // bridge and cookie range → the FlowSet last programmed there
}

// target is what ovs-ofctl connects to for bridge.
func (p *Programmer) target(bridge string) string {
	if p.RunDir == "" {
		return bridge
	}
	return "unix:" + strings.TrimSuffix(p.RunDir, "/") + "/" + bridge + ".mgmt"
}

func (p *Programmer) run(ctx context.Context, stdin string, args ...string) (string, error) {
	bin := p.Ofctl
	if bin == "" {
		bin = "ovs-ofctl"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("ovs-ofctl %s: %w", args[len(args)-2], ctx.Err())
		}
		return "", fmt.Errorf("ovs-ofctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Sync makes the flows of bridge whose cookie is in cookies exactly fs.Flows, and the groups
// with ids in groups exactly fs.Groups. Groups are written first (flows may point at them),
// stale groups removed last. Every flow's cookie must be in cookies and every group id in
// groups (api.ValidateFlowSet checks that); Sync refuses others.
func (p *Programmer) Sync(ctx context.Context, bridge string, cookies api.CookieRange, groups api.GroupRange, fs api.FlowSet) error {
	for _, f := range fs.Flows {
		if !cookies.Contains(f.Cookie) {
			return fmt.Errorf("openflow: flow cookie %#x outside %#x/%#x", f.Cookie, cookies.Value, cookies.Mask)
		}
	}
	key := fmt.Sprintf("%s/%#x/%#x", bridge, cookies.Value, cookies.Mask)
	fp, _ := json.Marshal(fs) // plain data: cannot fail
	if p.unchanged(ctx, bridge, key, string(fp), cookies, fs) {
		return nil // rewriting would only reset the flows' counters
	}
	want := map[uint32]bool{}
	for _, g := range fs.Groups {
		if !groups.Contains(g.ID) {
			return fmt.Errorf("openflow: group %d outside %d..%d", g.ID, groups.First, groups.First+groups.Count-1)
		}
		want[g.ID] = true
		if _, err := p.run(ctx, "", "-O", protocols, "--may-create", "mod-group", p.target(bridge), groupSpec(g)); err != nil {
			return fmt.Errorf("bridge %s: group %d: %w", bridge, g.ID, err)
		}
	}
	if err := p.replaceFlows(ctx, bridge, cookies, fs.Flows); err != nil {
		return err
	}
	have, err := p.groupIDs(ctx, bridge)
	if err != nil {
		return err
	}
	for _, id := range have {
		if groups.Contains(id) && !want[id] {
			if _, err := p.run(ctx, "", "-O", protocols, "del-groups", p.target(bridge), "group_id="+strconv.FormatUint(uint64(id), 10)); err != nil {
				return fmt.Errorf("bridge %s: delete group %d: %w", bridge, id, err)
			}
		}
	}
	p.mu.Lock()
	if p.last == nil {
		p.last = map[string]string{}
	}
	p.last[key] = string(fp)
	p.mu.Unlock()
	return nil
}

// unchanged reports whether fs is what was last programmed under key and the bridge still
// holds it: as many flows in the cookie range and every group (someone deleting flows or
// groups, or a restarted ovs-vswitchd, makes it false).
func (p *Programmer) unchanged(ctx context.Context, bridge, key, fp string, cookies api.CookieRange, fs api.FlowSet) bool {
	p.mu.Lock()
	same := p.last[key] == fp
	p.mu.Unlock()
	if !same {
		return false
	}
	out, err := p.run(ctx, "", "-O", protocols, "dump-flows", p.target(bridge), fmt.Sprintf("cookie=%#x/%#x", cookies.Value, cookies.Mask))
	if err != nil || len(cookiesOf(out)) != len(fs.Flows) {
		return false
	}
	if len(fs.Groups) == 0 {
		return true
	}
	have, err := p.groupIDs(ctx, bridge)
	if err != nil {
		return false
	}
	for _, g := range fs.Groups {
		if !slices.Contains(have, g.ID) {
			return false
		}
	}
	return true
}

// replaceFlows deletes the flows of cookies and adds flows, in one bundle when it can.
func (p *Programmer) replaceFlows(ctx context.Context, bridge string, cookies api.CookieRange, flows []api.Flow) error {
	del := fmt.Sprintf("cookie=%#x/%#x", cookies.Value, cookies.Mask)
	var b strings.Builder
	fmt.Fprintf(&b, "delete %s\n", del)
	for _, f := range flows {
		fmt.Fprintf(&b, "add %s\n", flowSpec(f))
	}
	_, err := p.run(ctx, b.String(), "-O", protocols, "--bundle", "add-flows", p.target(bridge), "-")
	if err == nil || !bundleUnsupported(err) {
		if err != nil {
			return fmt.Errorf("bridge %s: %w", bridge, err)
		}
		return nil
	}
	// OpenFlow 1.3 only: not atomic.
	if _, err := p.run(ctx, "", "-O", protocols, "del-flows", p.target(bridge), del); err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	b.Reset()
	for _, f := range flows {
		fmt.Fprintf(&b, "%s\n", flowSpec(f))
	}
	if len(flows) == 0 {
		return nil
	}
	if _, err := p.run(ctx, b.String(), "-O", protocols, "add-flows", p.target(bridge), "-"); err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	return nil
}

func bundleUnsupported(err error) bool {
	s := err.Error()
	return strings.Contains(s, "bundle") && (strings.Contains(s, "version") || strings.Contains(s, "not supported"))
}

// PruneForeign deletes the flows whose cookie carries marker under markerMask (the plugins'
// cookie space) but is in none of keep: flows of plugins no longer configured.
func (p *Programmer) PruneForeign(ctx context.Context, bridge string, marker, markerMask uint64, keep []api.CookieRange) error {
	out, err := p.run(ctx, "", "-O", protocols, "dump-flows", p.target(bridge), fmt.Sprintf("cookie=%#x/%#x", marker, markerMask))
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
		if _, err := p.run(ctx, "", "-O", protocols, "del-flows", p.target(bridge), fmt.Sprintf("cookie=%#x/-1", c)); err != nil {
			errs = append(errs, fmt.Errorf("bridge %s: %w", bridge, err))
		}
	}
	return errors.Join(errs...)
}

var cookieRe = regexp.MustCompile(`cookie=(0x[0-9a-f]+)`)

func cookiesOf(dump string) []uint64 {
	var out []uint64
	sc := bufio.NewScanner(strings.NewReader(dump))
	for sc.Scan() {
		if m := cookieRe.FindStringSubmatch(sc.Text()); m != nil {
			if c, err := strconv.ParseUint(m[1], 0, 64); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

var groupIDRe = regexp.MustCompile(`group_id=([0-9]+)`)

// groupIDs lists the bridge's group ids.
func (p *Programmer) groupIDs(ctx context.Context, bridge string) ([]uint32, error) {
	out, err := p.run(ctx, "", "-O", protocols, "dump-groups", p.target(bridge))
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", bridge, err)
	}
	var ids []uint32
	for _, m := range groupIDRe.FindAllStringSubmatch(out, -1) {
		if id, err := strconv.ParseUint(m[1], 10, 32); err == nil {
			ids = append(ids, uint32(id))
		}
	}
	return ids, nil
}

// flowSpec renders f in ovs-ofctl's flow syntax.
func flowSpec(f api.Flow) string {
	parts := []string{fmt.Sprintf("cookie=%#x", f.Cookie), fmt.Sprintf("table=%d", f.Table), fmt.Sprintf("priority=%d", f.Priority)}
	if f.IdleTimeout > 0 {
		parts = append(parts, fmt.Sprintf("idle_timeout=%d", f.IdleTimeout))
	}
	if f.HardTimeout > 0 {
		parts = append(parts, fmt.Sprintf("hard_timeout=%d", f.HardTimeout))
	}
	if m := strings.TrimSpace(f.Match); m != "" {
		parts = append(parts, m)
	}
	actions := strings.TrimSpace(f.Actions)
	if actions == "" {
		actions = "drop"
	}
	return strings.Join(parts, ",") + ",actions=" + actions
}

// groupSpec renders g in ovs-ofctl's group syntax.
func groupSpec(g api.Group) string {
	parts := []string{fmt.Sprintf("group_id=%d", g.ID), "type=" + g.Type}
	if g.SelectionMethod != "" {
		parts = append(parts, "selection_method="+g.SelectionMethod)
	}
	for _, bk := range g.Buckets {
		b := "bucket="
		var attrs []string
		if bk.Weight > 0 {
			attrs = append(attrs, fmt.Sprintf("weight:%d", bk.Weight))
		}
		if bk.WatchPort > 0 {
			attrs = append(attrs, fmt.Sprintf("watch_port:%d", bk.WatchPort))
		}
		if a := strings.TrimSpace(bk.Actions); a != "" {
			attrs = append(attrs, "actions="+a)
		}
		parts = append(parts, b+strings.Join(attrs, ","))
	}
	return strings.Join(parts, ",")
}
