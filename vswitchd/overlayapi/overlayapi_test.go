//go:build linux

package overlayapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi/overlayapitest"
)

// serveView serves a Handler over f's client on an httptest server.
func serveView(t *testing.T, f *overlayapitest.Fabric) string {
	t.Helper()
	h := overlayapi.New(overlayapi.Options{Open: func(context.Context) (overlayapi.Fabric, error) { return f.Client, nil }})
	t.Cleanup(h.Close)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// get fetches path and returns the status and body.
func get(t *testing.T, method, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// getJSON fetches path, wants 200 and decodes the body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := get(t, http.MethodGet, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// TestViewAnswers reads every endpoint over the fixture on a 3-member cluster and checks what
// the fabric holds: nodes with their applied versions, links with costs (and the unused
// ordinary–ordinary one), a node's stored table, the versions with the lagging node, and the
// lookup's path, cost and version; then a metric change makes the lookup's path a pending one.
func TestViewAnswers(t *testing.T) {
	f := overlayapitest.Start(t)
	base := serveView(t, f) + "/overlay/v1/"

	var nodes overlayapi.NodesAnswer
	getJSON(t, base+"nodes", &nodes)
	if nodes.RouteVersion != overlayapitest.Version || len(nodes.Nodes) != 5 {
		t.Fatalf("nodes: %+v", nodes)
	}
	for _, n := range nodes.Nodes {
		wantApplied, wantKind := int64(overlayapitest.Version), "ordinary"
		if n.Name == overlayapitest.Lagging {
			wantApplied = 0
		}
		if strings.HasPrefix(n.Name, "s") {
			wantKind = "super"
		}
		if n.AppliedVersion != wantApplied || n.Behind != overlayapitest.Version-wantApplied || n.Kind != wantKind ||
			n.Health != "up" || n.LastSeen == "" || len(n.Underlay) != 1 {
			t.Errorf("node %+v: want kind %s applied %d", n, wantKind, wantApplied)
		}
	}

	var links overlayapi.LinksAnswer
	getJSON(t, base+"links", &links)
	byEnds := map[string]overlayapi.Link{}
	for _, l := range links.Links {
		byEnds[l.A+"-"+l.B] = l
	}
	if len(links.Links) != 6 {
		t.Fatalf("links: %+v", links)
	}
	if l := byEnds["o1-s1"]; !l.Used || l.Cost != 15000 || l.LossPPM != 100 || l.BandwidthKbps != 100_000 || l.LatencyUs != 5000 {
		t.Errorf("link o1-s1: %+v, want used at cost 15000", l)
	}
	if l := byEnds["o1-o2"]; l.Used || l.Cost != 0 || !strings.Contains(l.Unused, "ordinary") {
		t.Errorf("link o1-o2: %+v, want unused (two ordinary ends)", l)
	}

	var routes overlayapi.RoutesAnswer
	getJSON(t, base+"routes?node=o1", &routes)
	want := []overlayapi.Route{
		{Kind: "attachment", Dest: "s1", NextHop: "s1", Cost: 15000},
		{Kind: "super", Dest: "s1", NextHop: "s1", Cost: 15000},
		{Kind: "super", Dest: "s2", NextHop: "s1", Cost: 21000},
	}
	if routes.Node != "o1" || routes.Version != 1 || routes.RouteVersion != 1 || !reflect.DeepEqual(routes.Routes, want) {
		t.Errorf("routes of o1: %+v\nwant %+v", routes, want)
	}
	getJSON(t, base+"routes?node=s2&version=1", &routes)
	if len(routes.Routes) == 0 || routes.Routes[0].Kind != "attached" {
		t.Errorf("routes of s2: %+v, want its attached ordinary nodes first", routes)
	}

	var versions overlayapi.VersionsAnswer
	getJSON(t, base+"versions", &versions)
	if versions.RouteVersion != 1 || versions.MinApplied != 0 || len(versions.Nodes) != 5 {
		t.Errorf("versions: %+v, want route version 1 with o3 at 0", versions)
	}
	for _, n := range versions.Nodes {
		if n.Current != (n.Name != overlayapitest.Lagging) {
			t.Errorf("versions: node %+v", n)
		}
	}

	var lk overlayapi.LookupAnswer
	getJSON(t, base+"lookup?src=o1&dst=o2", &lk)
	if !reflect.DeepEqual(lk.Path, overlayapitest.LookupPath()) || lk.Cost != overlayapitest.LookupCost ||
		lk.Version != 1 || !lk.InEffect || lk.Note != "" || len(lk.Hops) != 3 || lk.Hops[1] != (overlayapi.Hop{From: "s1", To: "s2", Cost: 6000}) {
		t.Fatalf("lookup o1→o2: %+v", lk)
	}

	// The s1–s2 link degrades: the path stays (no other way) but its cost moves, and version 1
	// no longer matches the fabric: the answer says the path is the next version's.
	if err := f.Client.ReportLink(t.Context(), fabric.LinkReport{A: "s1", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 50_000}); err != nil {
		t.Fatal(err)
	}
	getJSON(t, base+"lookup?src=o1&dst=o2", &lk)
	if lk.Cost != overlayapitest.LookupCost+45000 || lk.InEffect || !strings.Contains(lk.Note, "changed since version 1") {
		t.Errorf("lookup after the degradation: %+v", lk)
	}
}

// TestViewRefusesBadRequests checks that bad queries, unknown nodes and writes are refused with
// the code and a message naming the fix, and that a daemon without a fabric says so.
func TestViewRefusesBadRequests(t *testing.T) {
	f := overlayapitest.Start(t)
	base := serveView(t, f) + "/overlay/v1/"
	for _, tc := range []struct {
		method, path string
		status       int
		code, msg    string
	}{
		{"GET", "lookup?src=o1", 400, "invalid_argument", "dst is required"},
		{"GET", "lookup?src=o1&dst=o%202", 400, "invalid_argument", "letters, digits"},
		{"GET", "lookup?src=o1&dst=" + strings.Repeat("x", 65), 400, "invalid_argument", "1 to 64 bytes"},
		{"GET", "lookup?src=o1&dst=o2&dst=o3", 400, "invalid_argument", "given 2 times"},
		{"GET", "lookup?src=o1&dst=o2&via=s1", 400, "invalid_argument", "unknown query parameter"},
		{"GET", "lookup?src=o1&dst=nope", 404, "not_found", "nope"},
		{"GET", "nodes?x=" + strings.Repeat("y", 600), 400, "invalid_argument", "at most 512"},
		{"GET", "routes?node=nope", 404, "not_found", "not in the overlay fabric"},
		{"GET", "routes?node=o1&version=2", 404, "not_found", "not published"},
		{"GET", "routes?node=o1&version=-1", 400, "invalid_argument", "route version from 1"},
		{"GET", "tables", 404, "not_found", "use nodes, links"},
		{"POST", "nodes", 405, "invalid_argument", "read-only"},
	} {
		code, body := get(t, tc.method, base+tc.path)
		var e struct{ Code, Message string }
		_ = json.Unmarshal(body, &e)
		if code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %s: %d %s, want %d %s containing %q", tc.method, tc.path, code, body, tc.status, tc.code, tc.msg)
		}
	}
}

// TestViewWithoutFabric: with no fabric configured, data endpoints name the key to set, and
// the page is still served (with its content security policy).
func TestViewWithoutFabric(t *testing.T) {
	srv := httptest.NewServer(overlayapi.New(overlayapi.Options{}))
	defer srv.Close()
	code, body := get(t, http.MethodGet, srv.URL+"/overlay/v1/nodes")
	if code != http.StatusBadRequest || !strings.Contains(string(body), "failed_precondition") || !strings.Contains(string(body), "overlay.fabric_remotes") {
		t.Errorf("nodes without a fabric: %d %s", code, body)
	}
	res, err := http.Get(srv.URL + "/overlay/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(page), `<script src="app.js"`) ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("page: %d %q %s", res.StatusCode, res.Header.Get("Content-Security-Policy"), page)
	}
}

// TestOverlayPathsAreReads: the API server lets readers GET the view, but a path that only
// looks like it (".." back out of /overlay/) stays a write.
func TestOverlayPathsAreReads(t *testing.T) {
	for p, write := range map[string]bool{
		"/overlay/":          false,
		"/overlay/v1/lookup": false,
		"/overlay/../ovsplane.v1.SwitchService/DeleteBridge": true,
		"/overlay":  false,
		"/overlayx": true,
		"/ovsplane.v1.SwitchService/DeleteBridge":               true,
		"/ovsplane.v1.SwitchService/ListBridges":                false,
		"/overlay/v1/../../ovsplane.v1.SwitchService/ApplyPort": true,
	} {
		if got := apiserver.IsWrite(p); got != write {
			t.Errorf("IsWrite(%q) = %v, want %v", p, got, write)
		}
	}
}

// TestServedByAPIServerAsReads mounts the view in the API server: a reader gets the page and
// the view's own answers, a caller with no role is refused before the view runs, and the
// view refuses writes even for an admin.
func TestServedByAPIServerAsReads(t *testing.T) {
	for _, tc := range []struct {
		role         apiserver.Role
		method, path string
		status       int
		want         string
	}{
		{apiserver.RoleReader, "GET", "/overlay/", 200, `<script src="app.js"`},
		{apiserver.RoleReader, "GET", "/overlay/v1/nodes", 400, "overlay.fabric_remotes"},
		{apiserver.RoleReader, "GET", "/overlay/app.js", 200, "v1/lookup"},
		{apiserver.RoleNone, "GET", "/overlay/v1/nodes", 403, "permission_denied"},
		{apiserver.RoleAdmin, "POST", "/overlay/v1/nodes", 405, "read-only"},
	} {
		srv := httptest.NewServer(apiserver.New(apitest.New(), apiserver.Options{Unidentified: tc.role,
			Overlay: overlayapi.New(overlayapi.Options{})}))
		code, body := get(t, tc.method, srv.URL+tc.path)
		srv.Close()
		if code != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s as %s: %d %.200s, want %d with %q", tc.method, tc.path, tc.role, code, body, tc.status, tc.want)
		}
	}
}
