package api_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
)

var (
	fcCookies = api.CookieRange{Value: 0xa5 << 56, Mask: 0xff << 56}
	fcGroups  = api.GroupRange{First: 1 << 16, Count: 1 << 16}
)

// TestValidateFlowSetRefusesInjection: every way to end a flow early or smuggle a second
// command or a flow attribute is refused, naming the field and the fix.
func TestValidateFlowSetRefusesInjection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flow  api.Flow
		field string
		says  string
	}{
		{"newline in actions (the probe)", api.Flow{Actions: "drop\ndelete"}, "flows[0].actions", "control bytes"},
		{"newline in match", api.Flow{Match: "ip\ndelete", Actions: "drop"}, "flows[0].match", "one line"},
		{"NUL", api.Flow{Actions: "drop\x00"}, "flows[0].actions", "offset 4"},
		{"carriage return", api.Flow{Actions: "drop\rdelete"}, "flows[0].actions", "not ovs-ofctl syntax"},
		{"semicolon", api.Flow{Actions: "drop;delete"}, "flows[0].actions", "';'"},
		{"comment", api.Flow{Match: "ip#", Actions: "drop"}, "flows[0].match", "'#'"},
		{"backslash continuation", api.Flow{Actions: `drop\`}, "flows[0].actions", "not ovs-ofctl syntax"},
		{"space", api.Flow{Actions: "drop delete"}, "flows[0].actions", "without spaces"},
		{"non-ASCII", api.Flow{Actions: "dröp"}, "flows[0].actions", "not ovs-ofctl syntax"},
		{"actions in the match", api.Flow{Match: "ip,actions=NORMAL", Actions: "drop"}, "flows[0].match", `"action"`},
		{"cookie in the match", api.Flow{Match: "in_port=1,cookie=0x1", Actions: "drop"}, "flows[0].match", "use Flow.Cookie"},
		{"priority in the match", api.Flow{Match: "PRIORITY=0", Actions: "drop"}, "flows[0].match", "use Flow.Priority"},
		{"table in the match", api.Flow{Match: "table=3", Actions: "drop"}, "flows[0].match", "use Flow.Table"},
		{"learn", api.Flow{Actions: "learn(table=0,priority=0,NORMAL)"}, "flows[0].actions", "learn()"},
		{"nested learn", api.Flow{Actions: "clone(Learn(table=1))"}, "flows[0].actions", "learn()"},
		{"unbalanced", api.Flow{Actions: "resubmit(,2"}, "flows[0].actions", "unclosed"},
		{"empty clause", api.Flow{Actions: "drop,,drop"}, "flows[0].actions", "empty clause"},
		{"empty actions", api.Flow{}, "flows[0].actions", "drop"},
		{"table 255", api.Flow{Table: 255, Actions: "drop"}, "flows[0].table", "0-254"},
		{"too long", api.Flow{Actions: "drop" + strings.Repeat(",drop", limits.MaxFlowBytes/5)}, "flows[0]", "limits.MaxFlowBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Flows: []api.Flow{tc.flow}})
			if err == nil {
				t.Fatalf("flow %+v passed", tc.flow)
			}
			if !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q, want it to name %s and say %q", err, tc.field, tc.says)
			}
		})
	}
}

// TestValidateFlowSetBuckets: bucket actions are checked like flow actions, and may not set
// bucket or group attributes.
func TestValidateFlowSetBuckets(t *testing.T) {
	for _, tc := range []struct {
		actions, says string
	}{
		{"output:1\ndelete", "not ovs-ofctl syntax"},
		{"output:1,bucket=actions=output:2", `"bucket"`},
		{"output:1,weight=100", "bucket or group attribute"},
		{"output:1,watch_port:3", "bucket or group attribute"},
		{"", "is empty"},
	} {
		g := api.Group{ID: fcGroups.First, Type: "select", Buckets: []api.Bucket{{Actions: "output:1"}, {Actions: tc.actions}}}
		err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Groups: []api.Group{g}})
		if err == nil || !strings.Contains(err.Error(), "groups[0].buckets[1].actions: ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("bucket actions %q: %v, want a problem on groups[0].buckets[1].actions saying %q", tc.actions, err, tc.says)
		}
	}
	many := api.Group{ID: fcGroups.First, Type: "select", Buckets: make([]api.Bucket, limits.MaxBucketsPerGroup+1)}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Groups: []api.Group{many}}); err == nil || !strings.Contains(err.Error(), "limits.MaxBucketsPerGroup") {
		t.Errorf("%d buckets: %v", len(many.Buckets), err)
	}
	hashAll := api.Group{ID: fcGroups.First, Type: "all", SelectionMethod: "hash", Buckets: []api.Bucket{{Actions: "output:1"}}}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Groups: []api.Group{hashAll}}); err == nil || !strings.Contains(err.Error(), "groups[0].selection_method") {
		t.Errorf("selection_method on an all group: %v", err)
	}
}

// TestValidateFlowSetCaps: the count caps refuse one more than the limit and accept the limit.
func TestValidateFlowSetCaps(t *testing.T) {
	flows := make([]api.Flow, limits.MaxFlowsPerPlugin+1)
	for i := range flows {
		flows[i] = api.Flow{Priority: uint16(i % 60000), Table: uint8(i / 60000), Actions: "drop"}
	}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Flows: flows[:limits.MaxFlowsPerPlugin]}); err != nil {
		t.Errorf("%d flows: %v", limits.MaxFlowsPerPlugin, err)
	}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Flows: flows}); err == nil || !strings.Contains(err.Error(), "limits.MaxFlowsPerPlugin") {
		t.Errorf("%d flows: %v", len(flows), err)
	}
	groups := make([]api.Group, limits.MaxGroupsPerPlugin+1)
	for i := range groups {
		groups[i] = api.Group{ID: fcGroups.First + uint32(i), Type: "indirect", Buckets: []api.Bucket{{Actions: "output:1"}}}
	}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Groups: groups}); err == nil || !strings.Contains(err.Error(), "limits.MaxGroupsPerPlugin") {
		t.Errorf("%d groups: %v", len(groups), err)
	}
}

// TestValidateFlowSetAccepts: the syntax plugins need passes, and parses into clauses that
// render back to the same text.
func TestValidateFlowSetAccepts(t *testing.T) {
	flows := []api.Flow{
		{Priority: 1, Match: "in_port=1,dl_type=0x86dd", Actions: "drop"},
		{Priority: 2, Match: "tcp,nw_dst=10.0.0.0/24,tp_dst=80,tcp_flags=+syn-ack", Actions: "set_field:10.0.0.1->ip_dst,output:3"},
		{Priority: 3, Match: "ipv6,ipv6_src=fe80::1/64,reg0=0x1/0xff", Actions: "resubmit(,2),group:65537"},
		{Priority: 4, Match: "ct_state=-trk,ip", Actions: "ct(commit,zone=5,exec(set_field:1->ct_mark),nat(src=10.0.0.1:1000-2000)),NORMAL"},
		{Priority: 5, Match: "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00", Actions: "load:0x1->NXM_NX_REG0[0..15],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],IN_PORT"},
		{Priority: 6, Actions: "check_pkt_larger(1500)->NXM_NX_REG0[0],mod_vlan_vid:5,output:NXM_NX_REG1[]"},
	}
	g := api.Group{ID: fcGroups.First, Type: "select", SelectionMethod: "dp_hash",
		Buckets: []api.Bucket{{Actions: "output:1", Weight: 10}, {Actions: "set_field:2->reg1,output:2"}}}
	if err := api.ValidateFlowSet(fcCookies, fcGroups, api.FlowSet{Flows: flows, Groups: []api.Group{g}}); err != nil {
		t.Fatalf("valid set: %v", err)
	}
	for _, f := range flows {
		m, _ := api.ParseOFMatch(f.Match)
		a, _ := api.ParseOFActions(f.Actions)
		if got := api.JoinOFClauses(m); got != f.Match {
			t.Errorf("match %q renders as %q", f.Match, got)
		}
		if got := api.JoinOFClauses(a); got != f.Actions {
			t.Errorf("actions %q render as %q", f.Actions, got)
		}
	}
	if cs, _ := api.ParseOFActions("resubmit(,2),output:3"); len(cs) != 2 || cs[0] != (api.OFClause{Name: "resubmit", Rest: "(,2)"}) {
		t.Errorf("clauses = %+v", cs)
	}
	if err := api.CheckOFClause(api.OFClause{Name: "drop", Rest: "\ndelete"}); err == nil {
		t.Error("CheckOFClause accepted a clause with a newline")
	}
	if err := api.CheckOFClause(api.OFClause{Name: "drop", Rest: ",output:1"}); err == nil {
		t.Error("CheckOFClause accepted two clauses")
	}
}

// FuzzParseOF: whatever the parsers accept renders back to the text they were given and
// holds only ovs-ofctl syntax bytes, so it can never end a line or start a command.
func FuzzParseOF(f *testing.F) {
	for _, s := range []string{"drop\ndelete", "\x00", ";", "in_port=1,ip", "ct(commit,exec(set_field:1->ct_mark))", "a=(", "learn(x)", "#", strings.Repeat("output:1,", 1000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for kind, parse := range []func(string) ([]api.OFClause, error){api.ParseOFMatch, api.ParseOFActions, api.ParseOFBucketActions} {
			cs, err := parse(s)
			if err != nil {
				continue
			}
			if got := api.JoinOFClauses(cs); got != s {
				t.Errorf("kind %d: %q renders as %q", kind, s, got)
			}
			if strings.ContainsAny(s, "\n\r\x00;# \\\"'") {
				t.Errorf("kind %d: accepted %q", kind, s)
			}
			for _, c := range cs {
				if err := api.CheckOFClause(c); err != nil {
					t.Errorf("kind %d: clause %+v of %q: %v", kind, c, s, err)
				}
			}
		}
	})
}
