//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi/overlayapitest"
)

// chromiumPackage is the Debian package the page test needs (CI installs it).
const chromiumPackage = "chromium-headless-shell"

// chromium returns the path of a headless Chromium, or fails naming the package to install.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "headless_shell", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no headless Chromium on PATH (looked for chromium-headless-shell, chromium, headless_shell, chromium-browser): "+
		"install the Debian package %s (apt-get install %s)", chromiumPackage, chromiumPackage)
	return ""
}

// startDaemon runs ovsplaned (embedded OVSDB, simulated ovs-vswitchd) with its API on a unix
// socket and overlay.fabric_remotes naming remotes; it returns the socket's path once the
// overlay view answers through it.
func startDaemon(t *testing.T, remotes []string) string {
	t.Helper()
	return startPageDaemon(t, testkit.ShortTempDir(t, "ovsplaned-"), []string{"--overlay-fabric-remotes", strings.Join(remotes, ",")}, "/overlay/v1/nodes")
}

// forward serves 127.0.0.1:PORT by relaying each connection to the unix socket sock (the
// API's unix listener identifies the relay, this test's process, as its caller), and returns
// the address. A browser cannot dial a unix socket; an operator would use a TLS listener
// with a client certificate, or a relay like this one.
func forward(t *testing.T, sock string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c); u.Close() }()
				_, _ = io.Copy(c, u)
			})
		}
	})
	return ln.Addr().String()
}

// TestOverlayPageInChromium loads the overlay page from a live ovsplaned reading a 3-member
// fabric cluster, in headless Chromium: it checks the drawing (every node and link), drives a
// route lookup through the page's form, and checks that the path's nodes and links are
// highlighted, the path is listed in order, the route version is shown, and the source's
// stored route table of that version is listed.
func TestOverlayPageInChromium(t *testing.T) {
	f := overlayapitest.Start(t) // the lab's rules first: it requires Open vSwitch
	chrome := chromium(t)
	addr := forward(t, startDaemon(t, f.Cluster.Endpoints()))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true))
	actx, acancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first call starts the browser and must not carry a timeout (it would stop the
	// browser); later steps are bounded against a hung browser, which is no timing assertion.
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+addr+"/overlay/")); err != nil {
		t.Fatalf("chromium: load the page: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 120*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`))); err != nil {
		t.Fatalf("chromium: the page did not load its data: %v", err)
	}
	if n := eval[int](ctx, t, `document.querySelectorAll("circle.node").length`); n != 5 {
		t.Errorf("drawn nodes: %d, want 5", n)
	}
	if n := eval[int](ctx, t, `document.querySelectorAll("line.link").length`); n != 6 {
		t.Errorf("drawn links: %d, want 6", n)
	}
	if n := eval[int](ctx, t, `document.querySelectorAll("line.link.unused").length`); n != 1 {
		t.Errorf("drawn unused links: %d, want 1 (o1–o2)", n)
	}
	rows := eval[[]string](ctx, t, `[...document.querySelectorAll("#link-table tbody tr")].map(tr => tr.textContent)`)
	if !slices.Contains(rows, "o1 – s1100.0 Mbit/s5.0 ms100 ppm15000") {
		t.Errorf("link table rows %q lack o1–s1 with its metrics and cost", rows)
	}
	if h := eval[string](ctx, t, `document.getElementById("summary").textContent`); h != "route version 1; 5 nodes (1 behind), 6 links" {
		t.Errorf("header %q", h)
	}

	err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#src`), overlayapitest.LookupSrc),
		chromedp.SetValue(chromedp.CSS(`#dst`), overlayapitest.LookupDst),
		chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`#lookup-result[data-version]`)),
	)
	if err != nil {
		t.Fatalf("chromium: the lookup form: %v", err)
	}
	path := overlayapitest.LookupPath()
	sorted := slices.Sorted(slices.Values(path))
	listed := eval[[]string](ctx, t, `[...document.querySelectorAll("#path-list li")].map(li => li.dataset.node)`)
	onPath := eval[[]string](ctx, t, `[...document.querySelectorAll("circle.node.on-path")].map(c => c.dataset.node).sort()`)
	pathLinks := eval[int](ctx, t, `document.querySelectorAll("line.link.on-path").length`)
	if !reflect.DeepEqual(listed, path) || !reflect.DeepEqual(onPath, sorted) || pathLinks != len(path)-1 {
		t.Errorf("lookup: listed %q, highlighted nodes %q and %d links; want %q and %d links", listed, onPath, pathLinks, path, len(path)-1)
	}
	summary := eval[string](ctx, t, `document.getElementById("lookup-summary").textContent`)
	version := eval[string](ctx, t, `document.getElementById("lookup-result").dataset.version`)
	if version != "1" || summary != fmt.Sprintf("o1 → o2: cost %d, route version 1 (in effect)", overlayapitest.LookupCost) {
		t.Errorf("lookup summary %q, data-version %q", summary, version)
	}
	// The source's active route table of that version: its attachment and a route to each super.
	routes := eval[[]string](ctx, t, `[...document.querySelectorAll("#route-table tbody tr")].map(tr => [...tr.cells].map(c => c.textContent).join(" "))`)
	want := []string{"attachment s1 s1 15000", "super s1 s1 15000", "super s2 s1 21000"}
	if title := eval[string](ctx, t, `document.getElementById("routes-title").textContent`); title != "Routes of o1, version 1" || !reflect.DeepEqual(routes, want) {
		t.Errorf("route table %q: %q, want %q", title, routes, want)
	}
}

// eval evaluates a JavaScript expression in the page and returns its value.
func eval[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("chromium: evaluate %s: %v", expr, err)
	}
	return v
}
