package openflow_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// FuzzFlowSetSync feeds arbitrary plugin answers — two flows and a group with two buckets,
// every text field and the numbers chosen by the fuzzer — through api.ValidateFlowSet and
// Programmer.Sync against one real bridge (started once per fuzz process; each input is one
// Sync). Whatever the answer, nothing outside the plugin's cookie and group ranges may change
// (the NORMAL flow, an operator's flows and group), a set ValidateFlowSet refuses must leave
// the plugin's own flows and groups as they were, and a set Sync accepts must be on the
// bridge, flow for flow and group for group.
//
// Seeds only: go test -run FuzzFlowSetSync ./vswitchd/openflow/
// Fuzzing:    go test -run '^$' -fuzz FuzzFlowSetSync -fuzztime 60s -parallel 1 ./vswitchd/openflow/
func FuzzFlowSetSync(f *testing.F) {
	long := strings.Repeat("output:1,", 600) + "drop"
	for _, s := range [][7]string{
		{"in_port=1", "drop\ndelete", "", "output:2", "output:1", "output:2", "select"},
		{"", "drop", "ip", "\x00", "output:1", "output:3", "select"},
		{"in_port=1;", "drop;delete", "", "drop", "output:1", "output:2\ndelete", "all"},
		{"ip,actions=NORMAL", "drop", "in_port=2", "resubmit(,3)", "output:1,bucket=actions=output:2", "output:2", "select"},
		{"tcp,nw_dst=10.0.0.1/24,tp_dst=80", "drop", "in_port=3", "group:1245184", "set_field:1->reg0,output:1", "output:2", "select"},
		{strings.Repeat("a", 5000), long, "in_port=1", long, long, "output:1", "indirect"},
		{"", "drop", "", "NORMAL", "output:1", "output:2", "fast_failover"},
		{"in_port=1", "learn(table=0,priority=0,NORMAL)", "", "drop", "output:1", "output:2", "select"},
		{"cookie=0x1234", "drop", "ip#", "drop", "output:1", "weight=1", "select"},
		{"in_port=1", "ct(commit,zone=5,exec(set_field:1->ct_mark)),output:2", "in_port=2", "frobnicate", "output:1", "output:2", "select"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], uint8(0), uint16(100))
	}
	f.Add("", "drop", "in_port=1", "drop", "output:1", "output:2", "select", uint8(0), uint16(0))      // NORMAL's place
	f.Add("ip", "drop", "", "drop", "output:1", "output:2", "select", uint8(0), uint16(100))           // cookie 0x1234's place
	f.Add("tcp,nw_dst=10.0.0.0/24,tp_dst=80", "drop", "", "drop", "", "", "all", uint8(3), uint16(10)) // cookie 0x77's place
	f.Add("in_port=1", "drop", "in_port=1", "drop", "output:1", "output:2", "select", uint8(255), uint16(7))

	b := newBridge(f)
	before := b.foreign(f)
	f.Fuzz(func(t *testing.T, m0, a0, m1, a1, b0, b1, gtype string, table uint8, prio uint16) {
		fs := api.FlowSet{
			Flows: []api.Flow{
				{Cookie: cookies.Value, Table: table, Priority: prio, Match: m0, Actions: a0}, // zero cookies are filled in by the host
				{Cookie: cookies.Value | 1, Table: 1, Priority: prio ^ 1, Match: m1, Actions: a1, IdleTimeout: 300},
			},
			Groups: []api.Group{{ID: groups.First, Type: gtype, Buckets: []api.Bucket{{Actions: b0, Weight: prio}, {Actions: b1}}}},
		}
		ownedBefore := b.owned(t)
		verr := api.ValidateFlowSet(cookies, groups, fs)
		serr := b.prog.Sync(t.Context(), b.name, cookies, groups, fs)
		switch {
		case verr != nil && serr == nil:
			t.Errorf("ValidateFlowSet refused the set (%v) but Sync wrote it", verr)
		case verr != nil:
			if got := b.owned(t); got != ownedBefore {
				t.Errorf("a set ValidateFlowSet refuses (%v) changed the plugin's flows or groups:\nbefore:\n%s\nafter:\n%s", verr, ownedBefore, got)
			}
		case serr == nil:
			if fl, gs := b.flows(t, true), b.groups(t, true); len(fl) != len(fs.Flows) || len(gs) != len(fs.Groups) {
				t.Errorf("Sync accepted the set but the bridge holds flows %q and groups %q", fl, gs)
			}
		}
		b.wantForeignIntact(t, before)
		if t.Failed() {
			t.Logf("set: %+v\nvalidate: %v\nsync: %v", fs, verr, serr)
		}
	})
}

// owned is the plugin's part of the bridge: its flows and groups.
func (b *bridge) owned(t testing.TB) string {
	return strings.Join(slices.Concat(b.flows(t, true), []string{"--"}, b.groups(t, true)), "\n")
}
