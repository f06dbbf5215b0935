//go:build linux

package fabric_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// storedRows lists the Route_Table rows as "node@version", read with ovsdb-client from the
// cluster (not through the client under test).
func storedRows(t *testing.T, cl *lab.OVSDBCluster) []string {
	t.Helper()
	q := `["Overlay_Fabric",{"op":"select","table":"Route_Table","where":[],"columns":["version","node"]}]`
	var out []byte
	var err error
	for _, ep := range cl.Endpoints() { // any member answers a read (followers included)
		if out, err = exec.CommandContext(t.Context(), "ovsdb-client", "transact", ep, q).Output(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("ovsdb-client select Route_Table: %v", err)
	}
	var res []struct {
		Rows []struct {
			Version int64  `json:"version"`
			Node    string `json:"node"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		t.Fatalf("ovsdb-client output %q: %v", out, err)
	}
	var rows []string
	for _, r := range res[0].Rows {
		rows = append(rows, r.Node+"@"+strconv.FormatInt(r.Version, 10))
	}
	slices.Sort(rows)
	return rows
}

// TestPublishWritesOnlyChangedTables: a version stores rows only for the nodes whose table
// changed; every version still reads back whole (Routes and RoutesFor); a node whose table
// empties gets an empty row; rows no running node needs are dropped at the next publish.
func TestPublishWritesOnlyChangedTables(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	fc := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}); err != nil {
			t.Fatal(err)
		}
	}
	versions := []fabric.Tables{
		{"a": {"b": "b 1", "c": "c 1"}, "b": {"a": "a 1"}, "c": {"a": "a 1"}},
		{"a": {"b": "c 2", "c": "c 1"}, "b": {"a": "a 1"}, "c": {"a": "a 1"}}, // only a changed
		{"a": {"b": "c 2", "c": "c 1"}, "b": {"a": "a 1"}},                    // c emptied
	}
	for i, tb := range versions {
		v := int64(i + 1)
		if pub, err := fc.PublishRoutes(ctx, nil, v, tb); err != nil || !pub.Wrote {
			t.Fatalf("publish %d: %+v, %v", v, pub, err)
		}
	}
	if got, want := storedRows(t, cl), []string{"a@1", "a@2", "b@1", "c@1", "c@3"}; !slices.Equal(got, want) {
		t.Fatalf("Route_Table rows %v, want %v (only changed tables written)", got, want)
	}
	for i, want := range versions {
		v := int64(i + 1)
		got, err := fc.Routes(ctx, v)
		if err != nil || !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("Routes(%d) = %v, %v; want %v", v, got, err, want)
		}
		for _, n := range []string{"a", "b", "c"} {
			one, err := fc.RoutesFor(ctx, v, n)
			if err != nil || !maps.Equal(one[n], want[n]) || (len(want[n]) == 0 && len(one) != 0) {
				t.Errorf("RoutesFor(%d, %s) = %v, %v; want %v", v, n, one, err, want[n])
			}
		}
	}
	// Every node acks 3; the next publish drops what versions ≥ 3 do not need: a@1, c@1,
	// and c's empty row.
	for _, n := range []string{"a", "b", "c"} {
		if _, err := fc.AckVersion(ctx, n, 3); err != nil {
			t.Fatal(err)
		}
	}
	v4 := fabric.Tables{"a": {"b": "b 1", "c": "c 1"}, "b": {"a": "a 1"}}
	if _, err := fc.PublishRoutes(ctx, nil, 4, v4); err != nil {
		t.Fatal(err)
	}
	if got, want := storedRows(t, cl), []string{"a@2", "a@4", "b@1"}; !slices.Equal(got, want) {
		t.Fatalf("after all acked 3 and version 4: rows %v, want %v", got, want)
	}
	for v, want := range map[int64]fabric.Tables{3: versions[2], 4: v4} {
		if got, err := fc.Routes(context.WithoutCancel(ctx), v); err != nil || !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("Routes(%d) after the drop = %v, %v; want %v", v, got, err, want)
		}
	}
}

// TestAckUnchanged: a node whose table did not change since the version it installed is
// acknowledged without a read; one whose table changed, one that installed nothing and one
// already at the version are returned for a read.
func TestAckUnchanged(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	fc := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}); err != nil {
			t.Fatal(err)
		}
	}
	v1 := fabric.Tables{"a": {"b": "b 1"}, "b": {"a": "a 1"}, "c": {"a": "a 1"}}
	v2 := fabric.Tables{"a": {"b": "c 2"}, "b": {"a": "a 1"}, "c": {"a": "a 1"}} // only a changed
	for i, tb := range []fabric.Tables{v1, v2} {
		if _, err := fc.PublishRoutes(ctx, nil, int64(i+1), tb); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fc.AckUnchanged(ctx, 3, map[string]int64{"a": 1}); !errors.Is(err, fabric.ErrConflict) {
		t.Errorf("ack of unpublished version 3: %v, want ErrConflict", err)
	}
	if _, err := fc.AckUnchanged(ctx, 2, map[string]int64{"a": 3}); !errors.Is(err, fabric.ErrInvalid) {
		t.Errorf("installed above the version: %v, want ErrInvalid", err)
	}
	rest, err := fc.AckUnchanged(ctx, 2, map[string]int64{"a": 1, "b": 1, "c": 0, "ghost": 1})
	if err != nil || !slices.Equal(rest, []string{"a", "c", "ghost"}) {
		t.Fatalf("AckUnchanged(2) left %v, %v; want a (changed), c (installed nothing), ghost (unknown)", rest, err)
	}
	_, per, err := fc.MinApplied(ctx)
	if err != nil || per["a"] != 0 || per["b"] != 2 || per["c"] != 0 {
		t.Fatalf("applied %v, %v; want only b at 2", per, err)
	}
	// ChangedSince lists the nodes whose table moved after a version.
	if got, err := fc.ChangedSince(ctx, 1); err != nil || !slices.Equal(got, []string{"a"}) {
		t.Errorf("ChangedSince(1) = %v, %v; want [a]", got, err)
	}
	if got, err := fc.ChangedSince(ctx, 0); err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("ChangedSince(0) = %v, %v; want [a b c]", got, err)
	}
	if _, err := fc.ChangedSince(ctx, -1); !errors.Is(err, fabric.ErrInvalid) {
		t.Errorf("ChangedSince(-1): %v, want ErrInvalid", err)
	}
	// Again: b is already at 2, so it is returned (nothing advances twice).
	if rest, err := fc.AckUnchanged(ctx, 2, map[string]int64{"b": 1}); err != nil || !slices.Equal(rest, []string{"b"}) {
		t.Errorf("second AckUnchanged(2) for b: %v, %v; want [b]", rest, err)
	}
	// A node registered after its table was written counts as changed at that version.
	if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: "d", Kind: fabric.KindSuper}); err != nil {
		t.Fatal(err)
	}
	if rest, err := fc.AckUnchanged(ctx, 2, map[string]int64{"d": 1}); err != nil || !slices.Equal(rest, []string{"d"}) {
		t.Errorf("AckUnchanged(2) for d registered at 2 having installed 1: %v, %v; want [d]", rest, err)
	}
}
