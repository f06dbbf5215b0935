//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/test/lab"
)

// scaleResult is what one scale run measured.
type scaleResult struct {
	ports             int
	build             time.Duration // creating the ports through the API
	baseRSS           int64         // before any API port (KiB)
	burstRSS, peakKB  int64         // right as the build's last call returns, and the peak (VmHWM) until then
	rssKB             int64         // after the build, once the daemon is quiet
	restart           time.Duration // exec to API answering with every object ready (the resync)
	restartTxns       float64       // OVSDB transactions the restarted daemon sent before ready
	readyRSS          int64         // right when the restarted daemon is ready
	restartRSS        int64         // after the restart, once the daemon is quiet
	listP50           time.Duration // ListPorts of the bridge (every port, statuses included)
	steadyRSS         int64         // after the extra ports, once quiet: the daemon at rest at that size
	heapMB            float64       // Go heap in use then (go_memstats_heap_inuse_bytes)
	baseLiveMB        float64       // live Go heap (allocated bytes right after a forced GC) before any API port
	liveMB            float64       // the same at rest at full size
	liveInuseMB       float64       // Go heap in use (spans holding live objects) then: live plus fragmentation
	cpu               float64       // CPU seconds of the restarted daemon until then
	gcs               float64       // its garbage collections until then
	releases          float64       // its hand-backs of free memory to the OS until then (burstRelease)
	commitP50, ackP50 time.Duration // one extra port: commit to OVSDB, then ovs-vswitchd's ack
	totalP50          time.Duration // one extra port: the API call, ack included
	extra             int
	profile           string // the heap profile taken at rest, when asked for (OVSPLANE_SCALE_PROFILE)
}

// scaleConfig is the benchmark daemon's configuration: daemonBridgeConfig with Go's profiles
// served on the metrics address (a loopback address), so the run can force a garbage collection
// and read the live heap.
const scaleConfig = daemonBridgeConfig + "metrics:\n  pprof: true\n"

// runScale builds n ports through ovsplaned's API (concurrent requests, so the batcher makes
// large batches), restarts the daemon, lists the ports and adds `extra` ports one at a time.
// The daemon runs with no GOMEMLIMIT (unless the caller's environment sets one: the run logs it).
func runScale(tb testing.TB, n, extra int) scaleResult {
	lab.Require(tb, lab.NeedOVS)
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	db := lab.StartOVSDB(tb)
	db.StartOVSVswitchd(tb, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	d := newBenchDaemon(tb, db)
	if err := os.WriteFile(d.conf, []byte(scaleConfig), 0o644); err != nil {
		tb.Fatal(err)
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		tb.Logf("scale: GOMEMLIMIT=%s is set in the environment: the daemon runs with it", v)
	}
	if v := os.Getenv("OVSPLANE_SCALE_APPLY_TIMEOUT"); v != "" {
		// ovs-vswitchd's reconfiguration of a 20,000-port switch on the dummy datapath takes
		// about the default 2 minutes here: an operator with such a switch raises it.
		d.args = append(d.args, "--ovsdb-apply-timeout", v)
		tb.Logf("scale: the daemon runs with ovsdb.apply_timeout %s", v)
	}
	d.start(ctx)
	res := scaleResult{ports: n, extra: extra}
	res.baseLiveMB, _ = d.liveHeapMB(ctx, "")
	res.baseRSS, _ = d.rssKB()

	names := make([]string, n)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	t0 := time.Now()
	d.applyPorts(ctx, names, 1000)
	res.build = time.Since(t0)
	res.burstRSS, res.peakKB = d.rssKB()
	// What the daemon holds with n ports, rather than what the build's thousand calls in flight
	// held a moment ago (their goroutines' stacks, requests and plans: the peak, reported apart).
	d.settled(ctx)
	res.rssKB, _ = d.rssKB()

	d.stop()
	res.restart = d.start(ctx)
	res.restartTxns = d.metric(`ovsplane_ovsdb_transaction_duration_seconds_count{result="ok"}`) +
		d.metric(`ovsplane_ovsdb_transaction_duration_seconds_count{result="error"}`)
	res.readyRSS, _ = d.rssKB()
	d.settled(ctx)
	res.restartRSS, _ = d.rssKB()

	var lists []time.Duration
	for range 11 {
		t0 := time.Now()
		resp, err := d.API.ListPorts(ctx, connect.NewRequest(&ovsplanev1.ListPortsRequest{Bridge: "br0"}))
		if err != nil {
			tb.Fatal(err)
		}
		lists = append(lists, time.Since(t0))
		if len(resp.Msg.Ports) != n {
			tb.Fatalf("after the restart the daemon lists %d ports, want %d", len(resp.Msg.Ports), n)
		}
	}
	res.listP50 = p50(lists)

	var commits, acks, totals []time.Duration
	for i := range extra {
		c0 := d.metric(`ovsplane_batch_commit_seconds_sum{result="ok"}`)
		a0 := d.metric(`ovsplane_batch_apply_seconds_sum`)
		t0 := time.Now()
		d.applyPorts(ctx, []string{fmt.Sprintf("x%d", i)}, 1)
		totals = append(totals, time.Since(t0))
		commits = append(commits, secs(d.metric(`ovsplane_batch_commit_seconds_sum{result="ok"}`)-c0))
		acks = append(acks, secs(d.metric(`ovsplane_batch_apply_seconds_sum`)-a0))
	}
	res.commitP50, res.ackP50, res.totalP50 = p50(commits), p50(acks), p50(totals)
	d.settled(ctx)
	res.steadyRSS, _ = d.rssKB()
	res.heapMB = d.metric("go_memstats_heap_inuse_bytes") / (1 << 20)
	res.cpu = d.metric("process_cpu_seconds_total")
	res.gcs = d.metric("go_gc_duration_seconds_count")
	res.releases = d.metric("ovsplane_memory_releases_total")
	if dir := os.Getenv("OVSPLANE_SCALE_PROFILE"); dir != "" {
		res.profile = filepath.Join(dir, fmt.Sprintf("ovsplaned-heap-%d.pb.gz", n))
	}
	d.quiet(ctx)
	res.liveMB, res.liveInuseMB = d.liveHeapMB(ctx, res.profile)
	d.stop()
	return res
}

// settled returns once the daemon is quiet (see quiet) and has had the time to hand back the
// memory a burst left behind: it does that a second after its last activity
// (cmd/ovsplaned's burstRelease).
func (d *benchDaemon) settled(ctx context.Context) {
	d.tb.Helper()
	d.quiet(ctx)
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
}

// quiet returns once no reconcile pass has ended for 2 s (twice the reconciler's drift delay),
// trying for at most a minute, so that the live heap at rest is read between passes, not in
// the middle of the drift pass that follows the last change (~1 KB per port of data that
// lives only during the pass).
func (d *benchDaemon) quiet(ctx context.Context) {
	d.tb.Helper()
	passes := func() float64 {
		return d.metric(`ovsplane_reconcile_duration_seconds_count{result="ok"}`) +
			d.metric(`ovsplane_reconcile_duration_seconds_count{result="error"}`)
	}
	for range 30 {
		before := passes()
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return
		}
		if passes() == before {
			return
		}
	}
	d.tb.Logf("scale: reconcile passes kept ending for a minute; the live heap is read anyway")
}

// liveHeapMB forces a garbage collection in the daemon (its heap profile with gc=1, which also
// sweeps the whole heap), optionally saving the profile at path, and returns right after it the
// allocated heap (the live data) and the heap in use (the live data plus what its spans waste).
func (d *benchDaemon) liveHeapMB(ctx context.Context, path string) (live, inuse float64) {
	d.tb.Helper()
	// Twice: objects cached in sync.Pools (the API's gzip compressors, ~1 MB each) survive one
	// collection in the pools' victim caches.
	d.heapProfile(ctx)
	prof := d.heapProfile(ctx)
	if path != "" {
		if err := os.WriteFile(path, prof, 0o644); err != nil {
			d.tb.Fatal(err)
		}
	}
	return d.metric("go_memstats_alloc_bytes") / (1 << 20), d.metric("go_memstats_heap_inuse_bytes") / (1 << 20)
}

// heapProfile returns the daemon's heap profile, taken after a garbage collection (gc=1).
func (d *benchDaemon) heapProfile(ctx context.Context) []byte {
	d.tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metrics+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		d.tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.tb.Fatal(err)
	}
	defer resp.Body.Close()
	prof, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.tb.Fatalf("heap profile: %v (HTTP %d)", err, resp.StatusCode)
	}
	return prof
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// liveKBPerPort is the live Go heap the API ports added, per port.
func (r scaleResult) liveKBPerPort() float64 {
	return (r.liveMB - r.baseLiveMB) * 1024 / float64(r.ports+r.extra)
}

func (r scaleResult) report(tb testing.TB) {
	tb.Logf("scale: %d ports built through the API in %s; daemon RSS %.1f MB once quiet (%.1f MB as the last call returned, peak %.1f MB during the build with 1,000 calls in flight; %.1f MB before any port)",
		r.ports, r.build.Round(time.Millisecond), float64(r.rssKB)/1024, float64(r.burstRSS)/1024, float64(r.peakKB)/1024, float64(r.baseRSS)/1024)
	tb.Logf("scale: restart to ready %s with %.0f OVSDB transactions; RSS after restart %.1f MB once quiet (%.1f MB when ready); ListPorts p50 %s",
		r.restart.Round(time.Millisecond), r.restartTxns, float64(r.restartRSS)/1024, float64(r.readyRSS)/1024, r.listP50.Round(100*time.Microsecond))
	tb.Logf("scale: one extra port (p50 of %d): committed to OVSDB in %s, ovs-vswitchd acknowledged %s later; API call %s",
		r.extra, r.commitP50.Round(100*time.Microsecond), r.ackP50.Round(time.Millisecond), r.totalP50.Round(time.Millisecond))
	tb.Logf("scale: at rest after the extra ports: RSS %.1f MB, Go heap in use %.1f MB; after a forced GC %.1f MB live in %.1f MB of heap in use (%.1f MB live before any port: %.2f KB per port); the restarted daemon used %.1f s of CPU in %d GCs and handed memory back to the OS %d times",
		float64(r.steadyRSS)/1024, r.heapMB, r.liveMB, r.liveInuseMB, r.baseLiveMB, r.liveKBPerPort(), r.cpu, int(r.gcs), int(r.releases))
	if r.profile != "" {
		tb.Logf("scale: heap profile at rest saved: go tool pprof -top -sample_index=inuse_space %s", r.profile)
	}
}

// Scale goals (issue 20) at 10,000 ports, and the noise margins a run may exceed them by before
// it fails: timings vary with the machine's load, memory hardly at all.
const (
	goalRSSMB      = 80                     // daemon RSS once quiet after the build and after the restart, and at rest
	goalRestart    = 2 * time.Second        // restart to ready, per 10,000 ports
	goalCommitP50  = 20 * time.Millisecond  // one extra port committed to OVSDB
	goalListP50    = 250 * time.Millisecond // ListPorts of every port, per 10,000 ports
	marginMemory   = 0.05
	marginTimings  = 0.25
	goalScalePorts = 10000
)

// checkGoals fails tb for each figure of r that misses its goal by more than its margin. The
// per-size goals (restart, list) grow linearly above 10,000 ports; the others do not.
func (r scaleResult) checkGoals(tb testing.TB) {
	tb.Helper()
	per := max(1, float64(r.ports)/goalScalePorts)
	over := func(what string, got, goal, margin float64, unit string) {
		if got > goal*(1+margin) {
			tb.Errorf("scale goal missed: %s %.1f %s, goal ≤ %.1f %s (+%.0f%% noise margin)", what, got, unit, goal, unit, margin*100)
		}
	}
	if r.restartTxns != 0 {
		tb.Errorf("scale goal missed: the restarted daemon sent %.0f OVSDB transactions although nothing changed (goal 0)", r.restartTxns)
	}
	over("restart to ready", r.restart.Seconds(), goalRestart.Seconds()*per, marginTimings, "s")
	over("one extra port committed, p50", ms(r.commitP50), ms(goalCommitP50), marginTimings, "ms")
	over("ListPorts p50", ms(r.listP50), ms(goalListP50)*per, marginTimings, "ms")
	over("RSS after the build, once quiet", float64(r.rssKB)/1024, goalRSSMB, marginMemory, "MB")
	over("RSS after the restart, once quiet", float64(r.restartRSS)/1024, goalRSSMB, marginMemory, "MB")
	over("RSS at rest", float64(r.steadyRSS)/1024, goalRSSMB, marginMemory, "MB")
}

// BenchmarkDaemonScale: 10,000 owned ports (OVSPLANE_SCALE_PORTS; `make bench-scale`, and
// `make bench-scale-20k`), checked against issue 20's goals (see checkGoals): RSS ≤ 80 MB with
// no GOMEMLIMIT once the daemon is quiet after the build and after the restart, and at rest (the
// peak during the build, with 1,000 API calls in flight, is reported, not checked), restart-to-ready ≤ 2 s with no transaction, one extra port committed in ≤ 20 ms
// p50 (ovs-vswitchd's acknowledgement reported apart), ListPorts p50 ≤ 250 ms. A figure that
// misses its goal by more than the noise margin fails the run. OVSPLANE_SCALE_PROFILE=DIR saves
// the heap profile at rest there; OVSPLANE_SCALE_EXTRA (1..1000, default 21) is how many extra
// ports it adds one by one (each waits for ovs-vswitchd's reconfiguration of every port: over a
// minute at 20,000); OVSPLANE_SCALE_APPLY_TIMEOUT, if set, is the daemon's ovsdb.apply_timeout.
//
//	go test -run '^$' -bench BenchmarkDaemonScale -benchtime 1x -timeout 60m ./bench/
func BenchmarkDaemonScale(b *testing.B) {
	n := goalScalePorts
	if v, err := strconv.Atoi(os.Getenv("OVSPLANE_SCALE_PORTS")); err == nil && v > 0 {
		n = v
	}
	extra := 21
	if v, err := strconv.Atoi(os.Getenv("OVSPLANE_SCALE_EXTRA")); err == nil && v > 0 && v <= 1000 {
		extra = v
	}
	for range b.N {
		r := runScale(b, n, extra)
		r.report(b)
		b.ReportMetric(float64(r.rssKB)/1024, "rss-MB")
		b.ReportMetric(float64(r.restartRSS)/1024, "restart-rss-MB")
		b.ReportMetric(float64(r.steadyRSS)/1024, "steady-rss-MB")
		b.ReportMetric(r.heapMB, "heap-inuse-MB")
		b.ReportMetric(r.liveMB, "live-heap-MB")
		b.ReportMetric(r.liveKBPerPort(), "live-KB/port")
		b.ReportMetric(r.cpu, "restarted-cpu-s")
		b.ReportMetric(float64(r.peakKB)/1024, "peak-rss-MB")
		b.ReportMetric(float64(r.burstRSS)/1024, "build-end-rss-MB")
		b.ReportMetric(float64(r.readyRSS)/1024, "ready-rss-MB")
		b.ReportMetric(r.restart.Seconds(), "restart-s")
		b.ReportMetric(r.restartTxns, "restart-txns")
		b.ReportMetric(ms(r.listP50), "list-p50-ms")
		b.ReportMetric(ms(r.commitP50), "extra-commit-p50-ms")
		b.ReportMetric(ms(r.ackP50), "extra-ack-p50-ms")
		b.ReportMetric(r.build.Seconds(), "build-s")
		r.checkGoals(b)
	}
}

// shortLiveKBPerPort bounds the live Go heap each API port adds (TestDaemonScaleShort). Measured
// 1.92 KB at 1,000 ports with the compact replica (decision 0007; 5.0–7.3 KB on libovsdb's cache,
// whose decoder buffer doubled in steps; see docs/benchmarks.md, "Scale without a memory
// limit"). The bound leaves room for noise, not for another copy of every port (the replica's
// rows alone are ~0.73 KB, libovsdb's cache was 2.6 KB).
const shortLiveKBPerPort = 3.0

// TestDaemonScaleShort is the CI form of BenchmarkDaemonScale: 1,000 ports. It checks what must
// hold at any size — the restart needs no transaction, every port comes back, each port costs
// a bounded amount of live heap — not timings.
func TestDaemonScaleShort(t *testing.T) {
	r := runScale(t, 1000, 5)
	r.report(t)
	if r.restartTxns != 0 {
		t.Errorf("the restarted daemon sent %.0f OVSDB transactions although nothing changed", r.restartTxns)
	}
	if r.releases < 1 {
		t.Errorf("the restarted daemon never handed the memory its start-up and the extra ports left behind back to the OS (ovsplane_memory_releases_total %.0f, want ≥ 1 once quiet)", r.releases)
	}
	if r.commitP50 <= 0 || r.ackP50 <= 0 {
		t.Errorf("commit/ack timings not measured: %v %v", r.commitP50, r.ackP50)
	}
	if kb := r.liveKBPerPort(); kb > shortLiveKBPerPort {
		t.Errorf("each API port adds %.2f KB of live heap (%.1f MB after a GC at rest, %.1f MB before any port), bound %.1f KB: something keeps more per port than it did",
			kb, r.liveMB, r.baseLiveMB, shortLiveKBPerPort)
	}
}
