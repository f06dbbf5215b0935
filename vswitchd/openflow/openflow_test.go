package openflow

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

var (
	testCookies = api.CookieRange{Value: 0xa5001200 << 32, Mask: 0xffffff << 40}
	testGroups  = api.GroupRange{First: 65536, Count: 65536}
)

func TestRender(t *testing.T) {
	f := api.Flow{Cookie: 0xa500120000000001, Table: 2, Priority: 300, Match: "in_port=3,ip", Actions: "group:65537", IdleTimeout: 10}
	m, err := newFlowMod(0, f, testCookies)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := renderFlow(m); err != nil || got != "cookie=0xa500120000000001,table=2,priority=300,idle_timeout=10,in_port=3,ip,actions=group:65537" {
		t.Errorf("renderFlow = %q, %v", got, err)
	}
	m, err = newFlowMod(0, api.Flow{Priority: 1, Actions: "drop"}, testCookies)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := renderFlow(m); err != nil || got != "cookie=0xa500120000000000,table=0,priority=1,actions=drop" {
		t.Errorf("renderFlow of a zero cookie, no match = %q, %v", got, err)
	}
	g := api.Group{ID: 65537, Type: "select", SelectionMethod: "hash",
		Buckets: []api.Bucket{{Actions: "output:1", Weight: 70}, {Actions: "output:2", Weight: 30, WatchPort: 2}}}
	gm, err := newGroupMod(0, g, testGroups)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := renderGroup(gm); err != nil || got != "group_id=65537,type=select,selection_method=hash,bucket=weight:70,actions=output:1,bucket=weight:30,watch_port:2,actions=output:2" {
		t.Errorf("renderGroup = %q, %v", got, err)
	}
}

// TestRenderRefusesHandBuiltClauses: a clause that did not come from the parser, holding a
// newline, never reaches a line.
func TestRenderRefusesHandBuiltClauses(t *testing.T) {
	evil := []api.OFClause{{Name: "drop", Rest: "\ndelete"}}
	if got, err := renderFlow(flowMod{priority: 1, actions: evil}); err == nil {
		t.Errorf("renderFlow rendered %q", got)
	}
	if got, err := renderFlow(flowMod{priority: 1, match: evil, actions: []api.OFClause{{Name: "drop"}}}); err == nil {
		t.Errorf("renderFlow rendered %q", got)
	}
	if got, err := renderGroup(groupMod{id: 1, typ: "all", buckets: []bucketMod{{actions: evil}}}); err == nil {
		t.Errorf("renderGroup rendered %q", got)
	}
	if got, err := renderGroup(groupMod{id: 1, typ: "all\ndelete"}); err == nil {
		t.Errorf("renderGroup rendered %q", got)
	}
	if _, err := planOf(testCookies, testGroups, api.FlowSet{Flows: []api.Flow{{Actions: "drop\ndelete"}}}); err == nil || !strings.Contains(err.Error(), "flows[0].actions") {
		t.Errorf("planOf of the probe: %v", err)
	}
}

func TestParseDump(t *testing.T) {
	dump := `OFPST_FLOW reply (OF1.5) (xid=0x2):
 cookie=0xa500120000000001, table=3, priority=100,ip,in_port=1 actions=drop
 cookie=0x9, table=2, idle_timeout=50, send_flow_rem importance=3, actions=drop
 priority=0 actions=NORMAL
 cookie=0x7, check_overlap priority=50,in_port=1 actions=output:2
`
	flows, err := parseDump(dump)
	if err != nil {
		t.Fatal(err)
	}
	want := []dumpedFlow{
		{cookie: 0xa500120000000001, key: flowKey{3, "priority=100,ip,in_port=1"}},
		{cookie: 9, key: flowKey{2, ""}},
		{cookie: 0, key: flowKey{0, "priority=0"}},
		{cookie: 7, key: flowKey{0, "priority=50,in_port=1"}},
	}
	if len(flows) != len(want) {
		t.Fatalf("parseDump = %+v", flows)
	}
	for i := range want {
		if flows[i].cookie != want[i].cookie || flows[i].key != want[i].key {
			t.Errorf("flow %d = %+v, want %+v", i, flows[i], want[i])
		}
	}
	mods := `usable protocols: OXM,NXM+table_id
chosen protocol: OXM-OpenFlow13
OFPT_FLOW_MOD (OF1.3) (xid=0x1): ADD priority=0 cookie:0xa5000001 actions=drop
OFPT_FLOW_MOD (OF1.3) (xid=0x2): ADD table:3 priority=10,tcp,nw_dst=10.0.0.0/24,tp_dst=80 cookie:0xa5000002 idle:5 actions=group:7
`
	keys, err := parseFlowMods(mods)
	if err != nil || len(keys) != 2 || keys[0] != (flowKey{0, "priority=0"}) || keys[1] != (flowKey{3, "priority=10,tcp,nw_dst=10.0.0.0/24,tp_dst=80"}) {
		t.Errorf("parseFlowMods = %+v, %v", keys, err)
	}
}

func TestCookiesOfDump(t *testing.T) {
	dump := ` cookie=0xa500120000000001, table=0, priority=100,ip,in_port=1 actions=drop
 priority=0 actions=NORMAL
 cookie=0xa500130000000000, send_flow_rem unknown_word priority=100,ip,in_port=2 actions=drop
`
	if got := cookiesOf(dump); len(got) != 2 || got[0] != 0xa500120000000001 || got[1] != 0xa500130000000000 {
		t.Errorf("cookiesOf = %#x", got)
	}
}
