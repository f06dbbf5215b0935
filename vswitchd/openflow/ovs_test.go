package openflow_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/openflow"
)

// The plugin's ranges in these tests: the layout plugins/host hands out (0xa5, a slot, 40
// bits of the plugin's own; group ids (slot+1)<<16 and up).
var (
	cookies = api.CookieRange{Value: 0xa50012 << 40, Mask: 0xffffff << 40}
	groups  = api.GroupRange{First: 0x13 << 16, Count: 1 << 16}
)

// The foreign state every test starts from: the NORMAL flow ovs-vswitchd installs on a new
// bridge, an operator's flows (in table 0 and table 3) and an operator's group.
var foreignFlows = []string{
	"cookie=0x1234,table=0,priority=100,ip,actions=drop",
	"cookie=0x77,table=3,priority=10,tcp,nw_dst=10.0.0.0/24,tp_dst=80,actions=resubmit(,4)",
}

const foreignGroup = "group_id=5,type=all,bucket=actions=output:1"

// bridge is a real bridge on a dummy-datapath ovs-vswitchd, with three ports (ofports 1-3)
// and the foreign flows and group.
type bridge struct {
	sw   *lab.OVSVswitchd
	prog *openflow.Programmer
	name string
	// ofctl13 makes the test's own ovs-ofctl calls speak OpenFlow 1.3.
	ofctl13 bool
}

func newBridge(t testing.TB) *bridge {
	t.Helper()
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "protocols=OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15",
		"--", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "ofport_request=1",
		"--", "add-port", "br0", "p2", "--", "set", "Interface", "p2", "ofport_request=2",
		"--", "add-port", "br0", "p3", "--", "set", "Interface", "p3", "ofport_request=3")
	b := &bridge{sw: sw, prog: &openflow.Programmer{RunDir: db.Dir}, name: "br0"}
	for _, f := range foreignFlows {
		b.ofctl(t, "add-flow", f)
	}
	b.ofctl(t, "add-group", foreignGroup)
	return b
}

// ofctl runs ovs-ofctl against the bridge and returns its output, failing the test on error.
func (b *bridge) ofctl(t testing.TB, cmd string, args ...string) string {
	t.Helper()
	out, err := b.ofctlErr(t.Context(), cmd, args...)
	if err != nil {
		t.Fatalf("ovs-ofctl %s %s: %v", cmd, strings.Join(args, " "), err)
	}
	return out
}

func (b *bridge) ofctlErr(ctx context.Context, cmd string, args ...string) (string, error) {
	version := "OpenFlow15"
	if b.ofctl13 {
		version = "OpenFlow13"
	}
	argv := append([]string{"-O", version, "--no-names", cmd, b.sw.OpenFlowTarget(b.name)}, args...)
	if cmd == "dump-flows" {
		argv = append([]string{"--no-stats"}, argv...)
	}
	out, err := exec.CommandContext(ctx, "ovs-ofctl", argv...).CombinedOutput()
	if err != nil {
		return "", &ofctlError{args: argv, out: string(out), err: err}
	}
	return string(out), nil
}

type ofctlError struct {
	args []string
	out  string
	err  error
}

func (e *ofctlError) Error() string {
	return "ovs-ofctl " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.out
}

// flows returns the bridge's flows (dump-flows --no-stats lines, sorted); owned selects the
// plugin's cookie range or everything else.
func (b *bridge) flows(t testing.TB, owned bool) []string {
	t.Helper()
	var out []string
	for l := range strings.Lines(b.ofctl(t, "dump-flows")) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "OFPST_") {
			continue
		}
		if isOwned(l) == owned {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// isOwned reports whether a dump line's cookie is the plugin's.
func isOwned(line string) bool {
	return strings.HasPrefix(line, "cookie=0xa50012")
}

// groups returns the bridge's dump-groups lines, sorted; owned selects the plugin's range.
func (b *bridge) groups(t testing.TB, owned bool) []string {
	t.Helper()
	var out []string
	for l := range strings.Lines(b.ofctl(t, "dump-groups")) {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "group_id=") {
			continue
		}
		if strings.HasPrefix(l, "group_id=5,") != owned {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// foreign is the bridge's state outside the plugin's ranges.
func (b *bridge) foreign(t testing.TB) string {
	return strings.Join(b.flows(t, false), "\n") + "\n--\n" + strings.Join(b.groups(t, false), "\n")
}

// wantForeignIntact fails the test unless the bridge's state outside the plugin's ranges is
// before, and it holds the NORMAL flow and the operator's flows and group.
func (b *bridge) wantForeignIntact(t testing.TB, before string) {
	t.Helper()
	got := b.foreign(t)
	if got != before {
		t.Errorf("the bridge's foreign flows and groups changed:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	for _, want := range []string{"priority=0 actions=NORMAL", "cookie=0x1234, priority=100,ip actions=drop",
		"cookie=0x77, table=3, priority=10,tcp,nw_dst=10.0.0.0/24,tp_dst=80 actions=resubmit(,4)", "group_id=5,type=all"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q is gone from the bridge:\n%s", want, got)
		}
	}
}

// TestSyncRefusesInjectionProbe is the regression test of issue 12's probe: a plugin flow
// with the actions "drop\ndelete" deleted every flow on the bridge (the second line of the
// bundle file was a delete of everything). It is refused before the bridge is touched, with
// an error naming the flow and the field, and every flow — foreign, NORMAL and the plugin's
// own current ones — stays. So does a flow that would replace NORMAL by having its table,
// priority and match.
func TestSyncRefusesInjectionProbe(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	before := b.foreign(t)
	ctx := t.Context()
	good := api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=1", Actions: "output:2"}}}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, good); err != nil {
		t.Fatalf("Sync of a valid set: %v", err)
	}
	mine := b.flows(t, true)
	if len(mine) != 1 {
		t.Fatalf("the plugin's flows after a valid Sync: %q", mine)
	}

	for _, tc := range []struct {
		name string
		set  api.FlowSet
		says []string
	}{
		{"the probe", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=1", Actions: "drop\ndelete"}}},
			[]string{"flows[0].actions", "not ovs-ofctl syntax", "on one line"}},
		{"a newline in the match", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Match: "in_port=1\ndelete", Actions: "drop"}}},
			[]string{"flows[0].match"}},
		{"a NUL", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Actions: "drop\x00"}}}, []string{"flows[0].actions"}},
		{"a newline in a bucket", api.FlowSet{Groups: []api.Group{{ID: groups.First, Type: "select",
			Buckets: []api.Bucket{{Actions: "output:1\ndelete"}}}}}, []string{"groups[0].buckets[0].actions"}},
		{"the NORMAL flow's place", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Table: 0, Priority: 0, Actions: "drop"}}},
			[]string{"flows[0]", "priority=0 actions=NORMAL", "would replace that flow"}},
		{"an operator flow's place", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Table: 3, Priority: 10, Match: "nw_dst=10.0.0.9/24,tcp,tp_dst=80", Actions: "drop"}}},
			[]string{"flows[0]", "cookie 0x77", "would replace that flow"}},
		{"an action Open vSwitch does not know", api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Priority: 9, Actions: "output:1"}, {Cookie: cookies.Value | 2, Priority: 10, Actions: "frobnicate"}}},
			[]string{"flows[1]", "Open vSwitch refuses", "frobnicate"}},
	} {
		err := b.prog.Sync(ctx, b.name, cookies, groups, tc.set)
		if err == nil {
			t.Errorf("%s: Sync succeeded", tc.name)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, s)
			}
		}
		if got := b.flows(t, true); !slices.Equal(got, mine) {
			t.Errorf("%s: the plugin's flows changed to %q, want %q", tc.name, got, mine)
		}
		if got := b.groups(t, true); len(got) != 0 {
			t.Errorf("%s: groups written: %q", tc.name, got)
		}
	}
	b.wantForeignIntact(t, before)
}

// TestSyncRepairsForeignEdits: an owned flow whose actions someone else changed
// (mod-flows), an owned flow someone deleted and an owned group someone changed are put back
// by the next Sync of the same set; a Sync of an unchanged bridge leaves it as it is.
func TestSyncRepairsForeignEdits(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	before := b.foreign(t)
	ctx := t.Context()
	set := api.FlowSet{
		Flows: []api.Flow{
			{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=1", Actions: "output:2"},
			{Cookie: cookies.Value | 2, Table: 1, Priority: 200, Match: "in_port=2,ip", Actions: "group:" + itoa(groups.First)},
		},
		Groups: []api.Group{{ID: groups.First, Type: "select", Buckets: []api.Bucket{{Actions: "output:1"}, {Actions: "output:3"}}}},
	}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, set); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	wantFlows, wantGroups := b.flows(t, true), b.groups(t, true)
	if len(wantFlows) != 2 || len(wantGroups) != 1 {
		t.Fatalf("after Sync: flows %q, groups %q", wantFlows, wantGroups)
	}
	// An unchanged set on an unchanged bridge is not written again (the counters stay):
	// ovs-ofctl runs only to dump.
	calls := b.logCalls(t)
	if err := b.prog.Sync(ctx, b.name, cookies, groups, set); err != nil {
		t.Fatalf("Sync of an unchanged bridge: %v", err)
	}
	for _, c := range calls() {
		if !strings.Contains(c, "dump-flows") && !strings.Contains(c, "dump-groups") {
			t.Errorf("Sync of an unchanged set on an unchanged bridge ran ovs-ofctl %s", c)
		}
	}

	for _, edit := range []struct {
		name string
		cmd  string
		args []string
	}{
		{"mod-flows of an owned flow's actions", "mod-flows", []string{"cookie=" + hex(cookies.Value|1) + "/-1,in_port=1,actions=NORMAL"}},
		{"del-flows of an owned flow", "del-flows", []string{"cookie=" + hex(cookies.Value|2) + "/-1"}},
		{"mod-group of an owned group", "mod-group", []string{"group_id=" + itoa(groups.First) + ",type=select,bucket=actions=output:2"}},
		{"del-groups of an owned group", "del-groups", []string{"group_id=" + itoa(groups.First)}},
	} {
		b.ofctl(t, edit.cmd, edit.args...)
		if got := strings.Join(b.flows(t, true), "\n") + strings.Join(b.groups(t, true), "\n"); got == strings.Join(wantFlows, "\n")+strings.Join(wantGroups, "\n") {
			t.Fatalf("%s: the edit changed nothing; the test proves nothing", edit.name)
		}
		if err := b.prog.Sync(ctx, b.name, cookies, groups, set); err != nil {
			t.Fatalf("%s: Sync: %v", edit.name, err)
		}
		if got := b.flows(t, true); !slices.Equal(got, wantFlows) {
			t.Errorf("%s: after Sync the plugin's flows are %q, want %q", edit.name, got, wantFlows)
		}
		if got := b.groups(t, true); !slices.Equal(got, wantGroups) {
			t.Errorf("%s: after Sync the plugin's groups are %q, want %q", edit.name, got, wantGroups)
		}
	}
	b.wantForeignIntact(t, before)
}

// TestSyncSelectGroups: select groups with several buckets (how plugins stripe), flows
// pointing at them, a replacement with other buckets and another group, and removal; the
// operator's group and flows stay throughout.
func TestSyncSelectGroups(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	before := b.foreign(t)
	ctx := t.Context()
	g1, g2 := groups.First, groups.First+1
	first := api.FlowSet{
		Groups: []api.Group{{ID: g1, Type: "select", SelectionMethod: "dp_hash", Buckets: []api.Bucket{
			{Actions: "output:1", Weight: 100, WatchPort: 1}, {Actions: "output:2", Weight: 100, WatchPort: 2},
			{Actions: "set_field:3->reg1,output:3", Weight: 50, WatchPort: 3}}}},
		Flows: []api.Flow{
			{Cookie: cookies.Value | 3, Priority: 100, Match: "in_port=1", Actions: "group:" + itoa(g1)},
			{Cookie: cookies.Value | 3, Priority: 100, Match: "in_port=2", Actions: "group:" + itoa(g1)},
		},
	}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, first); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	gs := b.groups(t, true)
	if len(gs) != 1 || !strings.HasPrefix(gs[0], "group_id="+itoa(g1)+",type=select,selection_method=dp_hash,") ||
		strings.Count(gs[0], "bucket=") != 3 || !strings.Contains(gs[0], "weight:50,watch_port:3,actions=set_field:0x3->reg1,output:3") {
		t.Errorf("groups after the first Sync: %q", gs)
	}
	if fs := b.flows(t, true); len(fs) != 2 || !strings.HasSuffix(fs[0], "actions=group:"+itoa(g1)) || !strings.HasSuffix(fs[1], "actions=group:"+itoa(g1)) {
		t.Errorf("flows after the first Sync: %q", fs)
	}

	second := api.FlowSet{
		Groups: []api.Group{
			{ID: g1, Type: "select", SelectionMethod: "hash", Buckets: []api.Bucket{{Actions: "output:2"}, {Actions: "output:3"}}},
			{ID: g2, Type: "indirect", Buckets: []api.Bucket{{Actions: "output:1"}}},
		},
		Flows: []api.Flow{
			{Cookie: cookies.Value | 3, Priority: 100, Match: "in_port=1", Actions: "group:" + itoa(g2)},
			{Cookie: cookies.Value | 3, Priority: 100, Match: "in_port=3", Actions: "group:" + itoa(g1)},
		},
	}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, second); err != nil {
		t.Fatalf("Sync of the replacement: %v", err)
	}
	gs = b.groups(t, true)
	if len(gs) != 2 || !strings.HasPrefix(gs[0], "group_id="+itoa(g1)+",type=select,selection_method=hash,") || strings.Count(gs[0], "bucket=") != 2 ||
		!strings.HasPrefix(gs[1], "group_id="+itoa(g2)+",type=indirect,") {
		t.Errorf("groups after the replacement: %q", gs)
	}
	fs := b.flows(t, true)
	if len(fs) != 2 || !strings.Contains(fs[0], "in_port=1 actions=group:"+itoa(g2)) || !strings.Contains(fs[1], "in_port=3 actions=group:"+itoa(g1)) {
		t.Errorf("flows after the replacement: %q", fs)
	}

	if err := b.prog.Sync(ctx, b.name, cookies, groups, api.FlowSet{}); err != nil {
		t.Fatalf("Sync of nothing: %v", err)
	}
	if gs, fs := b.groups(t, true), b.flows(t, true); len(gs)+len(fs) != 0 {
		t.Errorf("after removal: groups %q, flows %q", gs, fs)
	}
	b.wantForeignIntact(t, before)
}

// logCalls makes the bridge's Programmer run ovs-ofctl through a wrapper that records its
// arguments, and returns a function listing the calls recorded so far.
func (b *bridge) logCalls(t *testing.T) func() []string {
	t.Helper()
	dir := t.TempDir()
	real, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls")
	wrapper := filepath.Join(dir, "ovs-ofctl")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b.prog.Ofctl = wrapper
	t.Cleanup(func() { b.prog.Ofctl = "" })
	return func() []string {
		data, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

func hex(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// TestSyncOpenFlow13Bridge: a bridge limited to OpenFlow 1.3 still takes the replacement as
// one bundle (Open vSwitch implements the ONF bundle extension for 1.3); probes are refused
// the same way and the foreign flows stay.
func TestSyncOpenFlow13Bridge(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	b.sw.DB.Vsctl(t, "set", "Bridge", "br0", "protocols=OpenFlow10,OpenFlow13")
	b.ofctl13 = true
	before := b.foreign(t)
	ctx := t.Context()
	calls := b.logCalls(t)
	set := api.FlowSet{Flows: []api.Flow{
		{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=1", Actions: "output:2"},
		{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=2", Actions: "output:1"},
	}}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, set); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if !slices.ContainsFunc(calls(), func(c string) bool {
		return strings.Contains(c, " bundle unix:")
	}) {
		t.Errorf("no bundle; ovs-ofctl calls: %q", calls())
	}
	if fs := b.flows(t, true); len(fs) != 2 {
		t.Errorf("the plugin's flows: %q", fs)
	}
	probe := api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Actions: "drop\ndelete"}}}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, probe); err == nil || !strings.Contains(err.Error(), "flows[0].actions") {
		t.Errorf("Sync of the probe: %v", err)
	}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, api.FlowSet{}); err != nil {
		t.Fatalf("Sync of nothing: %v", err)
	}
	if fs := b.flows(t, true); len(fs) != 0 {
		t.Errorf("the plugin's flows after removal: %q", fs)
	}
	b.wantForeignIntact(t, before)
}

// TestPruneForeign: the flows of a plugin no longer configured (in the 0xa5 space, in no kept
// range) are deleted; the kept plugin's flows and every flow outside the space stay.
func TestPruneForeign(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	before := b.foreign(t)
	ctx := t.Context()
	if err := b.prog.Sync(ctx, b.name, cookies, groups, api.FlowSet{Flows: []api.Flow{{Cookie: cookies.Value | 1, Priority: 200, Match: "in_port=1", Actions: "output:2"}}}); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	gone := api.CookieRange{Value: 0xa50013 << 40, Mask: 0xffffff << 40}
	b.ofctl(t, "add-flow", "cookie="+hex(gone.Value|5)+",priority=300,in_port=2,actions=drop")
	b.ofctl(t, "add-flow", "cookie="+hex(gone.Value|6)+",table=2,priority=300,actions=drop")
	if err := b.prog.PruneForeign(ctx, b.name, 0xa5<<56, 0xff<<56, []api.CookieRange{cookies}); err != nil {
		t.Fatalf("PruneForeign: %v", err)
	}
	if fs := b.flows(t, true); len(fs) != 1 || !strings.Contains(fs[0], "in_port=1 actions=output:2") {
		t.Errorf("the kept plugin's flows: %q", fs)
	}
	if got := b.foreign(t); strings.Contains(got, hex(gone.Value)[:8]) {
		t.Errorf("the removed plugin's flows are still there:\n%s", got)
	}
	b.wantForeignIntact(t, before)
}
