//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ovsplane/ovsplane/flowmon/collect"
	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// startFlowmonDaemon runs ovsplaned (embedded OVSDB, simulated ovs-vswitchd) with its data dir
// dir and its API on a unix socket; it returns the socket's path once the flowmon view answers.
func startFlowmonDaemon(t *testing.T, dir string) string {
	t.Helper()
	return startPageDaemon(t, dir, nil, "/flowmon/v1/collectors")
}

// startCollector runs a real collector (flowmon/collect into the embedded DuckDB store) and
// serves its query socket where the flowmon plugin's collector job c1 would:
// <dir>/plugin-data/flowmon/c1.sock. It returns the collector's UDP address.
func startCollector(t *testing.T, dir string) (*collect.Collector, string) {
	t.Helper()
	pdir := filepath.Join(dir, "plugin-data", "flowmon")
	if err := os.MkdirAll(pdir, 0o750); err != nil {
		t.Fatal(err)
	}
	st, err := duckstore.Open(t.Context(), pdir, duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	col, err := collect.New(ctx, collect.Config{Receiver: collect.ReceiverConfig{Addr: "127.0.0.1:0", Sockets: 1},
		Writer: collect.WriterConfig{Instance: "page-test", BatchAge: 20 * time.Millisecond}}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- col.Run(ctx) }()
	ln, err := net.Listen("unix", filepath.Join(pdir, "c1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	status := func() query.Status {
		s := col.Counters().Snapshot()
		return query.Status{Job: "c1", Store: "embedded", Counters: map[string]uint64{"stored": s.Stored, "dropped": 0,
			"socket_drops": s.SocketDrops, "decode_errors": s.DecodeErrorTotal()}}
	}
	srv := &http.Server{Handler: query.NewHandler(query.ServeOptions{Run: st.Query, Status: status}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("collector: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("store: %v", err)
		}
	})
	return col, col.Addr().String()
}

// pageFlows are the known flows the page test stores: three minutes apart, so each lands in
// its own 30 s bucket of the page's default hour.
func pageFlows(now time.Time) []flow.Record {
	rec := func(src, dst string, proto uint8, dport uint16, bytes uint64, ago time.Duration) flow.Record {
		end := now.Add(-ago)
		return flow.Record{Start: end.Add(-time.Second).UnixNano(), End: end.UnixNano(), Src: netip.MustParseAddr(src),
			Dst: netip.MustParseAddr(dst), Proto: proto, SrcPort: 40000, DstPort: dport, Bytes: bytes, Packets: bytes / 100, InIf: 1, OutIf: 2}
	}
	return []flow.Record{
		rec("10.0.0.1", "10.9.0.1", 6, 80, 5000, 5*time.Minute),
		rec("10.0.0.2", "10.9.0.1", 6, 80, 3000, 3*time.Minute),
		rec("10.0.0.1", "10.9.0.2", 6, 443, 2000, time.Minute),
		rec("10.0.0.3", "10.9.0.3", 17, 53, 700, time.Minute),
	}
}

// TestFlowmonPageInChromium loads the flowmon page from a live ovsplaned whose data dir holds a
// real collector's query socket (NetFlow v5 over UDP into DuckDB), in headless Chromium: it
// checks what the first search draws (one bar per bucket with the stored sums, the top talkers,
// every flow), then drives a search through the form (a source filter) and checks that the
// chart, the talkers and the flow table show only the matching flows.
func TestFlowmonPageInChromium(t *testing.T) {
	chrome := chromium(t)
	dir := testkit.ShortTempDir(t, "fmpage-")
	col, udp := startCollector(t, dir)
	now := time.Now().Truncate(time.Second)
	flows := pageFlows(now)
	conn, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(nftest.AppendV5(nil, nftest.V5Header{SysUptime: 3600_000, UnixSecs: uint32(now.Unix())}, flows)); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 30*time.Second, "the collector to store 4 flows", func(ctx context.Context) error {
		if err := col.Flush(ctx); err != nil {
			return err
		}
		if s := col.Counters().Snapshot(); s.Stored != 4 {
			return fmt.Errorf("%d stored", s.Stored)
		}
		return nil
	})
	addr := forward(t, startFlowmonDaemon(t, dir))

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
	ctx, cancel := context.WithTimeout(bctx, 120*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-searched="1"]`))); err != nil {
		t.Fatalf("chromium: the page's first search did not finish: %v (error shown: %q)", err,
			eval[string](ctx, t, `document.getElementById("error").textContent`))
	}
	bars := `[...document.querySelectorAll("#bars rect.bar")].map(r => Number(r.dataset.value))`
	talkers := `[...document.querySelectorAll("#top-table tbody tr")].map(tr => [...tr.cells].map(c => c.textContent).join(" "))`
	flowRows := `[...document.querySelectorAll("#flow-table tbody tr")].map(tr => [tr.cells[6].textContent, tr.cells[8].textContent, tr.cells[9].textContent, tr.cells[10].textContent].join(" "))`
	if got, want := eval[[]int](ctx, t, bars), []int{5000, 3000, 2700}; !reflect.DeepEqual(got, want) {
		t.Errorf("chart bars (bytes per bucket, oldest first) %v, want %v", got, want)
	}
	if got, want := eval[[]string](ctx, t, talkers), []string{"10.0.0.1 7000 70 2", "10.0.0.2 3000 30 1", "10.0.0.3 700 7 1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top talkers %q, want %q", got, want)
	}
	if got := eval[[]string](ctx, t, flowRows); len(got) != 4 {
		t.Errorf("flow table rows %q, want 4", got)
	}
	if s := eval[string](ctx, t, `document.getElementById("summary").textContent`); s != "4 flows, 10.7 kB; showing the newest 4" {
		t.Errorf("summary %q", s)
	}
	if s := eval[string](ctx, t, `document.getElementById("ingest").textContent`); s != "collector c1 (embedded): 4 stored, 0 dropped, 0 socket drops, 0 decode errors" {
		t.Errorf("ingest line %q", s)
	}

	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#src`), "10.0.0.1/32"),
		chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-searched="2"]`)),
	)
	if err != nil {
		t.Fatalf("chromium: the search form: %v", err)
	}
	if got, want := eval[[]int](ctx, t, bars), []int{5000, 2000}; !reflect.DeepEqual(got, want) {
		t.Errorf("filtered chart bars %v, want %v", got, want)
	}
	if got, want := eval[[]string](ctx, t, talkers), []string{"10.0.0.1 7000 70 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("filtered top talkers %q, want %q", got, want)
	}
	if got, want := eval[[]string](ctx, t, flowRows), []string{"10.0.0.1 10.9.0.2 443 2000", "10.0.0.1 10.9.0.1 80 5000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("filtered flow table %q, want %q (newest first)", got, want)
	}
	// A bad filter is the collector's clear error, shown on the page.
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#src`), "10.0.0.300"),
		chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`#error`)),
	)
	if err != nil {
		t.Fatalf("chromium: a bad filter: %v", err)
	}
	if e := eval[string](ctx, t, `document.getElementById("error").textContent`); !bytes.Contains([]byte(e), []byte("src:")) {
		t.Errorf("error shown %q, want one naming src", e)
	}
}
