package openflow

import (
	"slices"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

func TestSpecs(t *testing.T) {
	f := api.Flow{Cookie: 0xa500120000000001, Table: 2, Priority: 300, Match: "in_port=3,ip", Actions: "group:65537", IdleTimeout: 10}
	if got, want := flowSpec(f), "cookie=0xa500120000000001,table=2,priority=300,idle_timeout=10,in_port=3,ip,actions=group:65537"; got != want {
		t.Errorf("flowSpec = %q, want %q", got, want)
	}
	if got, want := flowSpec(api.Flow{Cookie: 1, Priority: 1}), "cookie=0x1,table=0,priority=1,actions=drop"; got != want {
		t.Errorf("flowSpec without match and actions = %q, want %q", got, want)
	}
	g := api.Group{ID: 65537, Type: "select", SelectionMethod: "hash",
		Buckets: []api.Bucket{{Actions: "output:1", Weight: 70}, {Actions: "output:2", Weight: 30}}}
	if got, want := groupSpec(g), "group_id=65537,type=select,selection_method=hash,bucket=weight:70,actions=output:1,bucket=weight:30,actions=output:2"; got != want {
		t.Errorf("groupSpec = %q, want %q", got, want)
	}
}

func TestCookiesOfDump(t *testing.T) {
	dump := ` cookie=0xa500120000000001, duration=1.2s, table=0, n_packets=0, n_bytes=0, priority=100,ip,in_port=1 actions=drop
 cookie=0xa500130000000000, duration=1.2s, table=0, n_packets=0, n_bytes=0, priority=100,ip,in_port=2 actions=drop
`
	if got := cookiesOf(dump); !slices.Equal(got, []uint64{0xa500120000000001, 0xa500130000000000}) {
		t.Errorf("cookiesOf = %#x", got)
	}
}
