//go:build linux

package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// benchDaemon is a real ovsplaned process (the binary, as users run it) on a lab OVSDB, with
// its API client and its /metrics address.
type benchDaemon struct {
	tb      testing.TB
	bin     string
	db      *lab.OVSDB
	dir     string
	conf    string
	metrics string // HOST:PORT
	API     *client.Client
	// logLevel is the daemon's --log-level (default warn).
	logLevel string
	// args are more command-line arguments (--batch-depth).
	args []string

	proc *testkit.Proc // nil when not running
	out  *testkit.LogBuffer
}

// ovsplanedPkg is the daemon's main package, built once per test binary (testkit.BuildOnce).
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// daemonBridgeConfig is the configuration the benchmarks run ovsplaned with: the bridge the
// ports go on, owned by the daemon.
const daemonBridgeConfig = "bridges:\n  - name: br0\n    datapath_type: netdev\n"

// newBenchDaemon prepares (does not start) an ovsplaned for db.
func newBenchDaemon(tb testing.TB, db *lab.OVSDB) *benchDaemon {
	tb.Helper()
	dir := testkit.ShortTempDir(tb, "opb-") // the API socket path must fit 107 bytes
	conf := filepath.Join(dir, "ovsplaned.yaml")
	if err := os.WriteFile(conf, []byte(daemonBridgeConfig), 0o644); err != nil {
		tb.Fatal(err)
	}
	addr := testkit.FreeTCPAddr(tb)
	api, err := client.Dial("unix:" + filepath.Join(dir, "ovsplaned.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	d := &benchDaemon{tb: tb, bin: testkit.BuildOnce(tb, ovsplanedPkg), db: db, dir: dir, conf: conf, metrics: addr, API: api}
	tb.Cleanup(func() {
		d.kill()
		api.Close()
		if tb.Failed() && d.out != nil {
			tb.Logf("ovsplaned log (tail):\n%s", d.out.Tail(3000))
		}
	})
	return d
}

// start runs the daemon and returns once its API answers with OVSDB connected and no object
// pending, and how long that took from the exec.
func (d *benchDaemon) start(ctx context.Context) time.Duration {
	d.tb.Helper()
	t0 := time.Now()
	cmd := exec.Command(d.bin, append([]string{"--config", d.conf, "--data-dir", d.dir, "--ovsdb-endpoints", d.db.Endpoint,
		"--metrics-address", d.metrics, "--log-level", cmp.Or(d.logLevel, "warn")}, d.args...)...)
	// The benchmarks' own OVSPLANE_* knobs are not the daemon's settings (it refuses unknown ones).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OVSPLANE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	d.proc = testkit.Start(d.tb, cmd)
	d.out = d.proc.Out
	for {
		h, err := d.API.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err == nil && h.Msg.OvsdbConnected && h.Msg.Objects["pending"] == 0 && h.Msg.Objects["ready"] > 0 {
			return time.Since(t0)
		}
		select {
		case <-d.proc.Done():
			d.tb.Fatalf("ovsplaned exited at start:\n%s", d.out.String())
		case <-ctx.Done():
			d.tb.Fatalf("ovsplaned not ready: %v (last: %v %v)", ctx.Err(), h, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop asks the daemon to exit (SIGTERM) and waits.
func (d *benchDaemon) stop() {
	if d.proc == nil {
		return
	}
	if !d.proc.Stop(30 * time.Second) {
		d.tb.Errorf("ovsplaned did not exit within 30 s of SIGTERM")
	}
	d.proc = nil
}

func (d *benchDaemon) kill() {
	if d.proc == nil {
		return
	}
	d.proc.Kill()
	d.proc = nil
}

// rssKB returns the daemon's resident set and its peak (VmRSS, VmHWM) in KiB.
func (d *benchDaemon) rssKB() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.proc.Cmd.Process.Pid))
	if err != nil {
		d.tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			peak = v
		}
	}
	return rss, peak
}

// metric returns the value of one exposition line (name with labels, as printed), 0 when absent.
func (d *benchDaemon) metric(series string) float64 {
	resp, err := http.Get("http://" + d.metrics + "/metrics")
	if err != nil {
		d.tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		d.tb.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				d.tb.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

func internalAPIPort(name string) *ovsplanev1.Port {
	return &ovsplanev1.Port{Name: name, Interfaces: []*ovsplanev1.Interface{{Name: name, Type: "internal"}}}
}

// applyPorts applies names through the API with at most inFlight requests at once and fails
// unless every port comes back ready with an ofport.
func (d *benchDaemon) applyPorts(ctx context.Context, names []string, inFlight int) {
	d.tb.Helper()
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, n := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := d.API.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: internalAPIPort(n)}))
			if err == nil {
				if ifs := resp.Msg.Port.GetInterfaces(); len(ifs) != 1 || ifs[0].GetOfport() <= 0 {
					err = fmt.Errorf("port %s: no ofport: %v", n, resp.Msg.Port)
				}
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		d.tb.Fatal(firstErr)
	}
}
