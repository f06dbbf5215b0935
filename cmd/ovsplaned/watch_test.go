//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// watchRecord is one line of the watchrec test plugin's events.log (vswitchd/watch/testdata).
type watchRecord struct {
	PID    int                `json:"pid"`
	Failed bool               `json:"failed"`
	Batch  api.PortEventBatch `json:"batch"`
}

// ovsplaned delivers to a watcher plugin of its configuration: the snapshot at start, a port
// ovs-vsctl adds, and, after the plugin is killed and restarted by the host (the host's state
// changes reach the dispatcher), a fresh snapshot from the new process.
func TestDaemonDeliversToWatcherPlugins(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	db.Vsctl(t, "add-br", "brw", "--", "add-port", "brw", "early")
	dir := testkit.ShortTempDir(t, "opw-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, "../../vswitchd/watch/testdata/watchrec", pluginDir, "watchrec")
	conf := filepath.Join(dir, "ovsplaned.yaml")
	metricsAddr := testkit.FreeTCPAddr(t)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
metrics:
  address: %s
plugin_dir: %s
plugins:
  - name: watchrec
    path: watchrec
    sha256: %s
    env: [WATCHREC_FILTER]
`, metricsAddr, pluginDir, sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", `WATCHREC_FILTER={"Bridges":["brw"]}`}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testkit.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", conf, "--data-dir", dir, "--ovsdb-endpoints", db.Endpoint, "--log-level", "info"},
			env, make(chan os.Signal), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", stderr.Tail(60))
		}
	})

	records := func() []watchRecord {
		data, _ := os.ReadFile(filepath.Join(dir, "plugin-data", "watchrec", "events.log"))
		var out []watchRecord
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var r watchRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err == nil && !r.Failed {
				out = append(out, r)
			}
		}
		return out
	}
	// waitFor waits for a record holding an event on iface from a process other than notPID,
	// in a snapshot when resync is set, and returns its pid.
	waitFor := func(what, iface string, resync bool, notPID int) int {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			inSnapshot := false
			for _, r := range records() {
				if r.PID == notPID {
					continue
				}
				if r.Batch.Resync {
					inSnapshot = true
				}
				for _, ev := range r.Batch.Events {
					if ev.Interface == iface && ev.Bridge == "brw" && ev.Kind == api.EventAdded && (!resync || inSnapshot) {
						return r.PID
					}
				}
				if r.Batch.ResyncDone {
					inSnapshot = false
				}
			}
			select {
			case err := <-done:
				done <- err
				t.Fatalf("ovsplaned stopped: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the plugin never saw %s; records %+v", what, records())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := waitFor("the start-up snapshot", "early", true, 0)
	db.Vsctl(t, "add-port", "brw", "late")
	waitFor("a port ovs-vsctl added", "late", false, 0)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := waitFor("the snapshot after a restart", "late", true, first)
	t.Logf("watchrec pid %d, after SIGKILL pid %d", first, second)

	// The queue's counters reach /metrics: two snapshots done (start, restart), events
	// delivered, nothing pending past the bound.
	testkit.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		vals := map[string]float64{}
		for _, line := range strings.Split(string(body), "\n") {
			name, v, ok := strings.Cut(line, `{plugin="watchrec"} `)
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", line, err)
			}
			vals[name] = f
		}
		if vals["ovsplane_watch_resyncs_total"] < 2 || vals["ovsplane_watch_events_total"] < 3 ||
			vals["ovsplane_watch_pending_max"] <= 0 || vals["ovsplane_watch_pending"] > vals["ovsplane_watch_pending_max"] {
			return fmt.Errorf("watch metrics %v", vals)
		}
		return nil
	})
}
