//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
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

	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var ovsplanedBuild struct {
	once sync.Once
	path string
	err  error
}

// ovsplanedBin builds cmd/ovsplaned once per test binary.
func ovsplanedBin(tb testing.TB) string {
	tb.Helper()
	ovsplanedBuild.once.Do(func() {
		root, err := benchModuleRoot()
		if err != nil {
			ovsplanedBuild.err = err
			return
		}
		dir, err := os.MkdirTemp("", "ovsplaned-bench-")
		if err != nil {
			ovsplanedBuild.err = err
			return
		}
		ovsplanedBuild.path = filepath.Join(dir, "ovsplaned")
		cmd := exec.Command("go", "build", "-o", ovsplanedBuild.path, "./cmd/ovsplaned")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			ovsplanedBuild.err = fmt.Errorf("go build ./cmd/ovsplaned: %w\n%s", err, out)
		}
	})
	if ovsplanedBuild.err != nil {
		tb.Fatal(ovsplanedBuild.err)
	}
	return ovsplanedBuild.path
}

// daemonBridgeConfig is the configuration the benchmarks run ovsplaned with: the bridge the
// ports go on, owned by the daemon.
const daemonBridgeConfig = "bridges:\n  - name: br0\n    datapath_type: netdev\n"

// newBenchDaemon prepares (does not start) an ovsplaned for db.
func newBenchDaemon(tb testing.TB, db *lab.OVSDB) *benchDaemon {
	tb.Helper()
	dir, err := os.MkdirTemp("", "opb-") // short: the API socket path must fit 107 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "ovsplaned.yaml")
	if err := os.WriteFile(conf, []byte(daemonBridgeConfig), 0o644); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	api, err := client.Dial("unix:" + filepath.Join(dir, "ovsplaned.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	d := &benchDaemon{tb: tb, bin: ovsplanedBin(tb), db: db, dir: dir, conf: conf, metrics: addr, API: api}
	tb.Cleanup(func() {
		d.kill()
		api.Close()
		if tb.Failed() && d.out != nil {
			tb.Logf("ovsplaned log (tail):\n%s", lastBytes(d.out.String(), 3000))
		}
	})
	return d
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// start runs the daemon and returns once its API answers with OVSDB connected and no object
// pending, and how long that took from the exec.
func (d *benchDaemon) start(ctx context.Context) time.Duration {
	d.tb.Helper()
	d.out = &lockedBuffer{}
	t0 := time.Now()
	d.cmd = exec.Command(d.bin, "--config", d.conf, "--data-dir", d.dir, "--ovsdb-endpoints", d.db.Endpoint,
		"--metrics-address", d.metrics, "--log-level", cmp.Or(d.logLevel, "warn"))
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	// The benchmarks' own OVSPLANE_* knobs are not the daemon's settings (it refuses unknown ones).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OVSPLANE_") {
			d.cmd.Env = append(d.cmd.Env, kv)
		}
	}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		d.tb.Fatal(err)
	}
	d.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(d.cmd, d.done)
	for {
		h, err := d.API.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err == nil && h.Msg.OvsdbConnected && h.Msg.Objects["pending"] == 0 && h.Msg.Objects["ready"] > 0 {
			return time.Since(t0)
		}
		select {
		case <-d.done:
			d.tb.Fatalf("ovsplaned exited at start:\n%s", d.out.String())
		case <-ctx.Done():
			d.tb.Fatalf("ovsplaned not ready: %v (last: %v %v)", ctx.Err(), h, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop asks the daemon to exit (SIGTERM) and waits.
func (d *benchDaemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.tb.Errorf("ovsplaned did not exit within 30 s of SIGTERM")
		d.kill()
	}
	d.cmd = nil
}

func (d *benchDaemon) kill() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
}

// rssKB returns the daemon's resident set and its peak (VmRSS, VmHWM) in KiB.
func (d *benchDaemon) rssKB() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
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
