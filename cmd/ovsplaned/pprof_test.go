package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
)

// runDaemon runs ovsplaned on the embedded OVSDB with args added, until the test ends, and
// returns once its metrics answer on port (127.0.0.1), with its data dir and stderr.
func runDaemon(t *testing.T, port int, args ...string) (string, *testkit.LogBuffer) {
	t.Helper()
	dir := testkit.ShortTempDir(t, "ovsplaned-") // unix socket paths
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testkit.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--embedded", "--data-dir", dir, "--log-level", "error"}, args...), nil, make(chan os.Signal), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
	for deadline := time.Now().Add(60 * time.Second); ; {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the daemon stopped: %v\n%s", err, stderr)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return dir, stderr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 60s\n%s", url, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pprofStatus(t *testing.T, port int) int {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Go's profiles were served on the metrics address, whatever it was (issue 12 item 4): they
// are off unless metrics.pprof says so. The audit log is on even at log level error.
func TestPprofOffByDefault(t *testing.T) {
	port := testkit.FreeTCPPort(t)
	dir, stderr := runDaemon(t, port, "--metrics-address", "127.0.0.1:"+strconv.Itoa(port))
	if code := pprofStatus(t, port); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ without metrics.pprof: HTTP %d, want 404", code)
	}
	c, err := client.Dial("unix:" + filepath.Join(dir, model.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ApplyBridge(t.Context(), connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "br-audit"}})); err != nil {
		t.Fatalf("ApplyBridge: %v", err)
	}
	var line string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "api audit") {
			line = l
		}
	}
	for _, want := range []string{"log=audit", "procedure=/ovsplane.v1.SwitchService/ApplyBridge", "transport=unix", "uid=" + strconv.Itoa(os.Geteuid()), "bridge=br-audit", "result=ok"} {
		if !strings.Contains(line, want) {
			t.Errorf("audit line %q lacks %s (log level error must not silence it)\n%s", line, want, stderr)
		}
	}
}

func TestPprofOnLoopback(t *testing.T) {
	port := testkit.FreeTCPPort(t)
	runDaemon(t, port, "--metrics-address", "127.0.0.1:"+strconv.Itoa(port), "--metrics-pprof=true")
	if code := pprofStatus(t, port); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/ with metrics.pprof on loopback: HTTP %d, want 200", code)
	}
}

// On an address that is not loopback the profiles need metrics.pprof_any_address as well.
func TestPprofOnNetworkAddressNeedsExplicitFlag(t *testing.T) {
	port := testkit.FreeTCPPort(t)
	addr := "0.0.0.0:" + strconv.Itoa(port)
	err := run(t.Context(), []string{"--embedded", "--data-dir", t.TempDir(), "--metrics-address", addr, "--metrics-pprof=true"},
		nil, make(chan os.Signal), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics.pprof") || !strings.Contains(err.Error(), "metrics.pprof_any_address") {
		t.Fatalf("pprof on %s without metrics.pprof_any_address: %v, want refused naming the key", addr, err)
	}
	runDaemon(t, port, "--metrics-address", addr, "--metrics-pprof=true", "--metrics-pprof-any-address=true")
	if code := pprofStatus(t, port); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/ with metrics.pprof and metrics.pprof_any_address on %s: HTTP %d, want 200", addr, code)
	}
}
