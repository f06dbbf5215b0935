//go:build linux

package daemoncmd_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi/overlayapitest"
)

// serveOverlay runs the API server with the overlay view over f (nil: no fabric configured)
// on a fresh unix socket and returns its address.
func serveOverlay(t *testing.T, f *overlayapitest.Fabric) string {
	t.Helper()
	var opts overlayapi.Options
	if f != nil {
		opts.Open = func(context.Context) (overlayapi.Fabric, error) { return f.Client, nil }
	}
	view := overlayapi.New(opts)
	t.Cleanup(view.Close)
	addr := "unix:" + filepath.Join(testkit.ShortTempDir(t, "ovsplane-overlay"), "ovsplaned.sock")
	listening := make(chan struct{})
	srv := apiserver.New(apitest.New(), apiserver.Options{Overlay: view, OnListen: func(string) { close(listening) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, config.API{Listen: []string{addr}}) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return addr
}

// lines returns out's lines with runs of spaces squeezed to one, for table comparisons.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}

// TestOverlayCommands runs every `vsctl overlay` subcommand through the API server over the
// fixture on a 3-member fabric cluster, in table and JSON form, with their exit statuses.
func TestOverlayCommands(t *testing.T) {
	f := overlayapitest.Start(t)
	d := "--daemon=" + serveOverlay(t, f)

	r := run(t, nil, false, d, "overlay", "nodes")
	got := lines(r.stdout)
	if r.code != 0 || len(got) != 7 || got[0] != "route version 1" ||
		got[1] != "NODE KIND HEALTH APPLIED BEHIND CARRIERS UNDERLAY LAST SEEN" ||
		!strings.HasPrefix(got[4], "o3 ordinary up 0 1 carrier-b 198.51.100.3 ") ||
		!strings.HasPrefix(got[5], "s1 super up 1 0 carrier-a,carrier-b 192.0.2.1:4789 ") {
		t.Errorf("overlay nodes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, false, d, "--format=json", "overlay", "nodes")
	var nodes struct {
		RouteVersion int64 `json:"route_version"`
		Nodes        []struct {
			Name           string `json:"name"`
			AppliedVersion int64  `json:"applied_version"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &nodes); err != nil || r.code != 0 || nodes.RouteVersion != 1 || len(nodes.Nodes) != 5 ||
		nodes.Nodes[2].Name != "o3" || nodes.Nodes[2].AppliedVersion != 0 {
		t.Errorf("overlay nodes --format=json: %d %v %+v\n%s", r.code, err, nodes, r.stdout)
	}

	r = run(t, nil, false, d, "overlay", "links")
	got = lines(r.stdout)
	if r.code != 0 || len(got) != 7 || got[0] != "A B BANDWIDTH LATENCY LOSS COST MEASURED" ||
		!strings.HasPrefix(got[1], "o1 o2 10Mbit/s 130ms 20000ppm unused: both ends are ordinary nodes") ||
		!strings.HasPrefix(got[2], "o1 s1 100Mbit/s 5ms 100ppm 15000 ") ||
		!strings.HasPrefix(got[6], "s1 s2 1Gbit/s 5ms 0ppm 6000 ") {
		t.Errorf("overlay links: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = run(t, nil, false, d, "overlay", "routes", "s2")
	want := []string{"node s2, route version 1 (newest 1)", "KIND DEST NEXT HOP COST",
		"attached o2 o2 15000", "attached o3 o3 2000", "super s1 s1 6000"}
	if r.code != 0 || !reflect.DeepEqual(lines(r.stdout), want) {
		t.Errorf("overlay routes s2: %d\n%s%s\nwant %q", r.code, r.stdout, r.stderr, want)
	}

	// o3 has not applied version 1: versions exits 1 until it acks.
	r = run(t, nil, false, d, "overlay", "versions")
	got = lines(r.stdout)
	if r.code != 1 || got[0] != "route version 1, slowest node 0 (stored 0)" || got[1] != "controller lease: none taken yet" ||
		!has(got, "o3 0 up no") || !has(got, "o1 1 up yes") {
		t.Errorf("overlay versions with o3 behind: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := f.Client.AckVersion(t.Context(), "o3", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.AcquireLease(t.Context(), "ctl-a", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, false, d, "overlay", "versions")
	if got = lines(r.stdout); r.code != 0 || got[0] != "route version 1, slowest node 1 (stored 0)" ||
		!strings.HasPrefix(got[1], "controller lease: ctl-a, epoch 1, held (expiry 20") {
		t.Errorf("overlay versions, all current: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = run(t, nil, false, d, "overlay", "lookup", "o1", "o2")
	want = []string{"path: o1 -> s1 -> s2 -> o2", "cost: 36000", "version: 1 (in effect)", "FROM TO COST",
		"o1 s1 15000", "s1 s2 6000", "s2 o2 15000"}
	if r.code != 0 || !reflect.DeepEqual(lines(r.stdout), want) {
		t.Errorf("overlay lookup o1 o2: %d\n%s%s\nwant %q", r.code, r.stdout, r.stderr, want)
	}
	r = run(t, nil, false, d, "--format", "json", "overlay", "lookup", "o1", "o2")
	var lk struct {
		Path     []string `json:"path"`
		Cost     int64    `json:"cost"`
		Version  int64    `json:"version"`
		InEffect bool     `json:"in_effect"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &lk); err != nil || r.code != 0 || !reflect.DeepEqual(lk.Path, overlayapitest.LookupPath()) ||
		lk.Cost != overlayapitest.LookupCost || lk.Version != 1 || !lk.InEffect {
		t.Errorf("overlay lookup --format json: %d %v %+v\n%s", r.code, err, lk, r.stdout)
	}

	// An unknown node: the daemon's message, exit 1.
	r = run(t, nil, false, d, "overlay", "lookup", "o1", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, `"nope"`) || r.stdout != "" {
		t.Errorf("overlay lookup o1 nope: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// has reports whether ls holds l.
func has(ls []string, l string) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// TestOverlayUsageErrors: bad command lines exit 2 before any daemon is contacted (the
// address names no socket), naming what is wrong.
func TestOverlayUsageErrors(t *testing.T) {
	d := "--daemon=unix:" + filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"overlay"}, "expected overlay nodes"},
		{[]string{"overlay", "paths"}, `overlay "paths": unknown subcommand`},
		{[]string{"overlay", "lookup", "o1"}, "1 arguments"},
		{[]string{"overlay", "nodes", "extra"}, "1 arguments"},
		{[]string{"overlay", "lookup", "o1", "o 2"}, "letters, digits"},
		{[]string{"overlay", "lookup", strings.Repeat("n", 65), "o2"}, "1 to 64 bytes"},
		{[]string{"overlay", "routes", "o1", "0"}, "route version from 1"},
		{[]string{"overlay", "routes", "o1", "x"}, "route version from 1"},
	} {
		r := run(t, nil, false, append([]string{d}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%q: %d %q, want 2 and %q", tc.args, r.code, r.stderr, tc.msg)
		}
	}
}

// TestOverlayWithoutFabric: a daemon whose configuration names no fabric says which key to set.
func TestOverlayWithoutFabric(t *testing.T) {
	d := "--daemon=" + serveOverlay(t, nil)
	r := run(t, nil, false, d, "overlay", "nodes")
	if r.code != 1 || !strings.Contains(r.stderr, "overlay.fabric_remotes") {
		t.Errorf("overlay nodes without a fabric: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
