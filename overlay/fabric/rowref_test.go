//go:build linux

package fabric_test

import (
	"encoding/json"
	"maps"
	"os/exec"
	"strconv"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// transactJSON runs one OVSDB transaction with ovsdb-client on any member (not through the
// client under test) and returns the first operation's rows.
func transactJSON(t *testing.T, cl *lab.OVSDBCluster, q string) []map[string]any {
	t.Helper()
	var out []byte
	var err error
	for _, ep := range cl.Endpoints() {
		if out, err = exec.CommandContext(t.Context(), "ovsdb-client", "transact", ep, q).Output(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("ovsdb-client transact %s: %v", q, err)
	}
	var res []struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		t.Fatalf("ovsdb-client output %q: %v", out, err)
	}
	return res[0].Rows
}

// uuidOf reads an OVSDB uuid (["uuid", "…"]) or a one-element set of one; "" otherwise.
func uuidOf(v any) string {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return ""
	}
	switch a[0] {
	case "uuid":
		s, _ := a[1].(string)
		return s
	case "set":
		if inner, ok := a[1].([]any); ok && len(inner) == 1 {
			return uuidOf(inner[0])
		}
	}
	return ""
}

// TestRoutesRowPointsAtNewestTable: each publish points Node.routes_row at the row it wrote
// for the node (so RoutesFor reads it by _uuid), a node whose table did not change keeps its
// older row, and RoutesFor reads every version right, whether through routes_row (the newest)
// or through the scan (an older version than the node's newest row, a node registered after
// its table was written). A second client, which learns the nodes' _uuids by name, reads and
// acknowledges the same.
func TestRoutesRowPointsAtNewestTable(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	fc := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	ctx := t.Context()
	for _, n := range []string{"a", "b"} {
		if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}); err != nil {
			t.Fatal(err)
		}
	}
	versions := []fabric.Tables{
		{"a": {"b": "b 1"}, "b": {"a": "a 1"}, "late": {"a": "a 1"}},
		{"a": {"b": "b 2"}, "b": {"a": "a 1"}, "late": {"a": "a 1"}}, // only a changed
	}
	for i, tb := range versions {
		if pub, err := fc.PublishRoutes(ctx, nil, int64(i+1), tb); err != nil || !pub.Wrote {
			t.Fatalf("publish %d: %+v, %v", i+1, pub, err)
		}
	}
	if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: "late", Kind: fabric.KindOrdinary}); err != nil {
		t.Fatal(err)
	}
	rowOf := map[string]string{} // Route_Table _uuid → "node@version"
	for _, r := range transactJSON(t, cl, `["Overlay_Fabric",{"op":"select","table":"Route_Table","where":[],"columns":["_uuid","node","version"]}]`) {
		rowOf[uuidOf(r["_uuid"])] = r["node"].(string) + "@" + jsonNum(r["version"])
	}
	want := map[string]string{"a": "a@2", "b": "b@1", "late": ""}
	for _, r := range transactJSON(t, cl, `["Overlay_Fabric",{"op":"select","table":"Node","where":[],"columns":["name","routes_row"]}]`) {
		name := r["name"].(string)
		if got := rowOf[uuidOf(r["routes_row"])]; got != want[name] {
			t.Errorf("node %s: routes_row is the row of %q, want %q", name, got, want[name])
		}
	}
	other := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	for _, c := range []*fabric.Client{fc, other} {
		for i, tb := range versions {
			v := int64(i + 1)
			got, err := c.RoutesFor(ctx, v, "a", "b", "late", "ghost")
			if err != nil || !maps.EqualFunc(got, tb, maps.Equal) {
				t.Errorf("RoutesFor(%d) = %v, %v; want %v", v, got, err, tb)
			}
		}
	}
	if n, err := other.AckVersions(ctx, 2, "a", "b", "late", "ghost"); err != nil || n != 3 {
		t.Fatalf("AckVersions(2) by a second client advanced %d, %v; want 3", n, err)
	}
	if err := other.Heartbeat(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if minV, per, err := fc.MinApplied(ctx); err != nil || minV != 2 || len(per) != 3 {
		t.Fatalf("MinApplied %d %v, %v; want 2 over 3 nodes", minV, per, err)
	}
}

// jsonNum formats a decoded JSON number as an integer string.
func jsonNum(v any) string {
	f, _ := v.(float64)
	return strconv.FormatInt(int64(f), 10)
}
