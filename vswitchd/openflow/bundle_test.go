package openflow

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// TestRenderSelectWeights: once a select group has a weight, every bucket's weight is written,
// 0 included (a drained bucket); a select group without weights, and other group types, write
// only weights above 0.
func TestRenderSelectWeights(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    api.Group
		want string
	}{
		{"a drained bucket", api.Group{ID: 65537, Type: "select", Buckets: []api.Bucket{{Actions: "output:1", Weight: 0}, {Actions: "output:2", Weight: 5}}},
			"group_id=65537,type=select,bucket=weight:0,actions=output:1,bucket=weight:5,actions=output:2"},
		{"no weights", api.Group{ID: 65537, Type: "select", Buckets: []api.Bucket{{Actions: "output:1"}, {Actions: "output:2"}}},
			"group_id=65537,type=select,bucket=actions=output:1,bucket=actions=output:2"},
		{"all", api.Group{ID: 65537, Type: "all", Buckets: []api.Bucket{{Actions: "output:1"}, {Actions: "output:2", Weight: 3}}},
			"group_id=65537,type=all,bucket=actions=output:1,bucket=weight:3,actions=output:2"},
	} {
		m, err := newGroupMod(0, tc.g, testGroups)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, err := renderGroup(m); err != nil || got != tc.want {
			t.Errorf("%s: renderGroup = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestBundleFile: groups first as in-place modifications, then the flows (unless kept), then
// the stale groups; nothing to write is an empty file.
func TestBundleFile(t *testing.T) {
	pl, err := planOf(testCookies, testGroups, api.FlowSet{
		Groups: []api.Group{{ID: 65537, Type: "select", Buckets: []api.Bucket{{Actions: "output:1", Weight: 1}, {Actions: "output:2", Weight: 2}}}},
		Flows:  []api.Flow{{Priority: 5, Match: "in_port=3", Actions: "group:65537"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "group add_or_mod group_id=65537,type=select,bucket=weight:1,actions=output:1,bucket=weight:2,actions=output:2\n" +
		"flow delete cookie=0xa500120000000000/0xffffff0000000000\n" +
		"flow add cookie=0xa500120000000000,table=0,priority=5,in_port=3,actions=group:65537\n" +
		"group delete group_id=65540\n"
	if got := bundleFile(testCookies, pl, []uint32{65540}, false); got != want {
		t.Errorf("bundleFile =\n%s\nwant\n%s", got, want)
	}
	if got := bundleFile(testCookies, pl, nil, true); got != "group add_or_mod group_id=65537,type=select,bucket=weight:1,actions=output:1,bucket=weight:2,actions=output:2\n" {
		t.Errorf("bundleFile keeping the flows = %q", got)
	}
	if got := bundleFile(testCookies, plan{}, nil, true); got != "" {
		t.Errorf("bundleFile of nothing = %q", got)
	}
	if got := staleGroups([]uint32{5, 65537, 65540}, testGroups, pl); len(got) != 1 || got[0] != 65540 {
		t.Errorf("staleGroups = %v, want [65540] (5 is not the plugin's)", got)
	}
}
