//go:build linux

package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/lab/flowbed"
)

// e2eFrameSize, e2eFlows and e2eFrames are the traffic of TestOVSDPDKRunQueryable: 8 UDP flows
// of 2000 frames of 512 bytes each, paced at e2eRate frames/s (flowbed's pace, at which nothing
// is lost on a busy two-CPU machine).
const (
	e2eFrameSize = 512
	e2eFlows     = 8
	e2eFrames    = 2000
	e2eRate      = 5000
)

// e2eEngineType and e2eEngineID are the NetFlow engine the daemon's config gives br0; the
// collector stores them as each record's Domain (engine_type<<8 | engine_id).
const e2eEngineType, e2eEngineID = 3, 7

// flowSums is what one view shows for one generated flow (keyed by its UDP source port).
type flowSums struct{ packets, bytes uint64 }

// TestOVSDPDKRunQueryable is issue 18's end-to-end run: a real ovs-vswitchd-dpdk (flowbed's
// host: two af_packet DPDK ports over veths into namespaces) whose bridge br0, both dpdk ports
// and the bridge's NetFlow export (active_timeout 1, engine 3/7, to the collector's UDP port)
// are owned by the real ovsplaned through its config file, which also runs the real flowmon
// plugin's flowmon-collector job on that port. The test itself installs only the OpenFlow rule
// p1 → p2 (fail_mode secure) and runs flowmon/gen's generator and receiver through the bridge.
// Then, per generated flow (by UDP source port), the exported packets must equal the generated
// ones and the bytes packets × frame size (OVS's dOctets count whole frames) in all three
// views: the daemon's API (/flowmon/v1/query: Top by source port, and the sum of the Flows
// records, which also carry the configured engine), `flowmon query --daemon` and the daemon's
// /flowmon/ page in headless Chromium after a search driven through its form.
func TestOVSDPDKRunQueryable(t *testing.T) {
	chrome := chromiumPath(t)
	bed := flowbed.NewHost(t, flowbed.Spec{})
	dir := testkit.ShortTempDir(t, "fmdpdk-")
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pluginDir, "ovsplane-plugin-flowmon")
	testkit.Build(t, ".", bin, "-trimpath", "-buildvcs=false") // cgo on: DuckDB
	port := freeUDPPort(t)
	p1, p2 := bed.PortDevargs(0)
	conf := filepath.Join(dir, "ovsplaned.yaml")
	yaml := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: flowmon
    path: ovsplane-plugin-flowmon
    sha256: %s
    jobs:
      - name: c1
        type: flowmon-collector
        config: {"listen": ["127.0.0.1:%d"], "workers": 1, "flush_ms": 20}
bridges:
  - name: %s
    datapath_type: netdev
    fail_mode: secure
    netflow:
      targets: ["127.0.0.1:%d"]
      active_timeout: 1
      engine_type: %d
      engine_id: %d
    ports:
      - {name: p1, interfaces: [{name: p1, type: dpdk, ofport_request: 1, options: {dpdk-devargs: %q}}]}
      - {name: p2, interfaces: [{name: p2, type: dpdk, ofport_request: 2, options: {dpdk-devargs: %q}}]}
`, pluginDir, testkit.FileSHA256(t, bin), port, flowbed.Bridge, port, e2eEngineType, e2eEngineID, p1, p2)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", conf, "--data-dir", dir,
		"--ovsdb-endpoints", bed.DB.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		daemon.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", daemon.Out.Tail(8000))
		}
	})
	alive := func() {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
	}
	lab.WaitFor(t, 2*time.Minute, "the collector job's socket in the plugin's data dir", func(context.Context) error {
		alive()
		_, err := os.Stat(filepath.Join(dir, "plugin-data", "flowmon", "c1.sock"))
		return err
	})
	// The daemon's rows, as ovs-vswitchd took them: both dpdk ports up on their OpenFlow
	// numbers, and br0's NetFlow row with the configured target and engine.
	lab.WaitFor(t, 2*time.Minute, "the daemon's br0 with p1, p2 and its NetFlow row in OVSDB", func(ctx context.Context) error {
		alive()
		for _, c := range [][]string{
			{"Interface", "p1", "ofport", "1"}, {"Interface", "p2", "ofport", "2"},
			{"Interface", "p1", "link_state", "up"}, {"Interface", "p2", "link_state", "up"},
			{"Bridge", flowbed.Bridge, "datapath_type", "netdev"},
		} {
			if v, err := vsctlGet(ctx, bed.DB, c[0], c[1], c[2]); err != nil || v != c[3] {
				return fmt.Errorf("%s %s %s is %q (%v), want %s", c[0], c[1], c[2], v, err, c[3])
			}
		}
		nf, err := vsctlGet(ctx, bed.DB, "Bridge", flowbed.Bridge, "netflow")
		if err != nil || nf == "[]" {
			return fmt.Errorf("br0 has no NetFlow row yet (%q, %v)", nf, err)
		}
		want := fmt.Sprintf(`["127.0.0.1:%d"]`, port)
		if got, err := vsctlGet(ctx, bed.DB, "NetFlow", nf, "targets"); err != nil || got != want {
			return fmt.Errorf("NetFlow targets %q (%v), want %s", got, err, want)
		}
		return nil
	})
	bed.Forward(t)

	from := time.Now().Add(-time.Minute)
	spec := bed.GenSpec(e2eFrameSize, e2eFlows, e2eFlows*e2eFrames)
	spec.PacketsPerSecond = e2eRate
	rep := bed.Send(t, spec)
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated and received:\n%s", table.String())
	want := make(map[uint16]flowSums, len(rep.Flows))
	for _, f := range rep.Flows {
		if f.SentPackets != e2eFrames || f.RecvPackets != f.SentPackets {
			t.Errorf("flow %d (%s): generated %d frames, received %d; want %d each", f.Flow, f.Key, f.SentPackets, f.RecvPackets, e2eFrames)
		}
		want[f.Key.Src.Port()] = flowSums{packets: f.SentPackets, bytes: f.SentPackets * e2eFrameSize}
	}
	if len(want) != e2eFlows {
		t.Fatalf("the generator's report has %d distinct source ports, want %d: %+v", len(want), e2eFlows, rep.Flows)
	}
	if t.Failed() {
		t.FailNow() // frames lost before OVS: the export cannot match the generated counts
	}

	// 1. The daemon's API. Wait (bounded) until every flow's export has reached the generated
	// packets: active_timeout 1 s, then max-idle 1 s, then the collector's 20 ms flush.
	client := query.NewClientAt(filepath.Join(dir, "ovsplaned.sock"), apiPrefix, 0)
	filter := query.Filter{Src: []netip.Prefix{netip.MustParsePrefix("10.98.0.0/16")}, Protos: []uint8{17}}
	top := func(ctx context.Context) (map[uint16]flowSums, error) {
		res, err := client.Query(ctx, query.Query{Kind: query.Top, From: from, To: time.Now().Add(time.Minute),
			Filter: filter, GroupBy: query.KeySrcPort, Metric: query.Packets, Limit: 100})
		if err != nil {
			return nil, err
		}
		got := map[uint16]flowSums{}
		for _, g := range res.Groups {
			p, err := strconv.ParseUint(g.Key, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("top group key %q: %w", g.Key, err)
			}
			got[uint16(p)] = flowSums{packets: g.Packets, bytes: g.Bytes}
		}
		return got, nil
	}
	var api map[uint16]flowSums
	lab.WaitFor(t, 2*time.Minute, "NetFlow of every generated packet through the daemon's API", func(ctx context.Context) error {
		alive()
		got, err := top(ctx)
		if err != nil {
			return err
		}
		api = got
		for sp, w := range want {
			if got[sp].packets < w.packets {
				return fmt.Errorf("source port %d: %d of %d packets exported so far", sp, got[sp].packets, w.packets)
			}
		}
		return nil
	})
	checkSums(t, "API top by srcport", api, want)
	res, err := client.Query(t.Context(), query.Query{Kind: query.Flows, From: from, To: time.Now().Add(time.Minute), Filter: filter, Limit: 1000})
	if err != nil {
		t.Fatalf("API flows: %v", err)
	}
	recs := map[uint16]flowSums{}
	for _, r := range res.Records {
		s := recs[r.SrcPort]
		s.packets += r.Packets
		s.bytes += r.Bytes
		recs[r.SrcPort] = s
		if r.Domain != e2eEngineType<<8|e2eEngineID || r.Exporter != netip.MustParseAddr("127.0.0.1") || r.InIf != 1 || r.OutIf != 2 {
			t.Errorf("API record %+v: exporter %s domain %#x, interfaces %d → %d; want 127.0.0.1, the configured engine %#x, OpenFlow ports 1 → 2",
				r, r.Exporter, r.Domain, r.InIf, r.OutIf, e2eEngineType<<8|e2eEngineID)
		}
	}
	checkSums(t, fmt.Sprintf("API flows (%d records)", len(res.Records)), recs, want)
	t.Logf("API: %d NetFlow records for the %d flows", len(res.Records), len(want))

	// 2. The CLI through the daemon.
	code, out, errOut := cli("query", "--daemon", "unix:"+filepath.Join(dir, "ovsplaned.sock"), "--since", "1h",
		"--src", "10.98.0.0/16", "--proto", "udp", "--top", "sport", "-n", "100", "--format", "csv")
	if code != 0 {
		t.Fatalf("flowmon query --daemon: exit %d: %s", code, errOut)
	}
	checkSums(t, "flowmon query --daemon --top sport", parseTopCSV(t, out), want)

	// 3. The daemon's page in headless Chromium.
	checkSums(t, "the /flowmon/ page's flow table", pageFlowSums(t, chrome, forwardTCP(t, filepath.Join(dir, "ovsplaned.sock"))), want)
}

// checkSums compares a view's packets and bytes per source port with the generated ones: the
// view must show every generated flow with exactly its counts, and no other port.
func checkSums(t *testing.T, view string, got, want map[uint16]flowSums) {
	t.Helper()
	for sp, w := range want {
		if g := got[sp]; g != w {
			t.Errorf("%s: source port %d shows %d packets, %d bytes; generated %d packets of %d bytes = %d",
				view, sp, g.packets, g.bytes, w.packets, e2eFrameSize, w.bytes)
		}
	}
	for sp, g := range got {
		if _, ok := want[sp]; !ok {
			t.Errorf("%s: source port %d (%d packets) was not generated", view, sp, g.packets)
		}
	}
}

// parseTopCSV reads `flowmon query --top sport --format csv`: a srcport,bytes,packets,flows
// header, then one row per port.
func parseTopCSV(t *testing.T, out string) map[uint16]flowSums {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 || strings.Join(rows[0], ",") != "srcport,bytes,packets,flows" {
		t.Fatalf("flowmon query csv (%v):\n%s", err, out)
	}
	got := map[uint16]flowSums{}
	for _, r := range rows[1:] {
		if len(r) != 4 {
			t.Fatalf("flowmon query csv row %q:\n%s", r, out)
		}
		sp, err1 := strconv.ParseUint(r[0], 10, 16)
		b, err2 := strconv.ParseUint(r[1], 10, 64)
		p, err3 := strconv.ParseUint(r[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("flowmon query csv row %q:\n%s", r, out)
		}
		got[uint16(sp)] = flowSums{packets: p, bytes: b}
	}
	return got
}

// pageFlowSums loads http://addr/flowmon/ in headless Chromium, waits for its first search,
// drives a second one through the form (src 10.98.0.0/16, proto udp) and adds up the flow
// table's packets and bytes per source port.
func pageFlowSums(t *testing.T, chrome, addr string) map[uint16]flowSums {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true))
	actx, acancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first call starts the browser and must not carry a timeout (it would stop the
	// browser); later steps are bounded against a hung browser, which is no timing assertion.
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+addr+"/flowmon/")); err != nil {
		t.Fatalf("chromium: load the page: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	errorText := `document.getElementById("error").textContent`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-searched="1"]`))); err != nil {
		t.Fatalf("chromium: the page's first search did not finish: %v (error shown: %q)", err, pageEval[string](ctx, t, errorText))
	}
	err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#src`), "10.98.0.0/16"),
		chromedp.SetValue(chromedp.CSS(`#proto`), "udp"),
		chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-searched="2"]`)),
	)
	if err != nil {
		t.Fatalf("chromium: the search form: %v (error shown: %q)", err, pageEval[string](ctx, t, errorText))
	}
	// Flow table cells: end, exporter, bridge, in, out, proto, src, sport, dst, dport, bytes, packets.
	rows := pageEval[[][]string](ctx, t, `[...document.querySelectorAll("#flow-table tbody tr")].map(tr => [tr.cells[7].textContent, tr.cells[10].textContent, tr.cells[11].textContent])`)
	t.Logf("page: %s; %d flow rows", pageEval[string](ctx, t, `document.getElementById("summary").textContent`), len(rows))
	got := map[uint16]flowSums{}
	for _, r := range rows {
		if len(r) != 3 {
			t.Fatalf("page flow row %q", r)
		}
		sp, err1 := strconv.ParseUint(r[0], 10, 16)
		b, err2 := strconv.ParseUint(r[1], 10, 64)
		p, err3 := strconv.ParseUint(r[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("page flow row %q", r)
		}
		s := got[uint16(sp)]
		s.packets += p
		s.bytes += b
		got[uint16(sp)] = s
	}
	return got
}

// pageEval evaluates a JavaScript expression in the page, failing the test on error.
func pageEval[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("chromium: evaluate %s: %v", expr, err)
	}
	return v
}

// chromiumPath returns a headless Chromium on PATH, or fails naming the Debian package to
// install (chromium-headless-shell, which CI installs for the daemon's page tests).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "headless_shell", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no headless Chromium on PATH: install the Debian package chromium-headless-shell")
	return ""
}

// forwardTCP serves a 127.0.0.1 TCP port that forwards every connection to the unix socket
// sock (Chromium speaks HTTP over TCP only) and returns its address.
func forwardTCP(t *testing.T, sock string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c); u.Close() }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

// freeUDPPort returns a 127.0.0.1 UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// vsctlGet returns `ovs-vsctl get table record column` from db, or the error.
func vsctlGet(ctx context.Context, db *lab.OVSDB, table, record, column string) (string, error) {
	out, errOut, err := db.VsctlErr(ctx, "get", table, record, column)
	if err != nil {
		return "", fmt.Errorf("ovs-vsctl get %s %s %s: %w: %s", table, record, column, err, strings.TrimSpace(errOut))
	}
	return strings.Trim(strings.TrimSpace(out), `"`), nil
}
