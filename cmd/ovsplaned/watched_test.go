//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// configuredRecord is one line of the watchrec test plugin's configured.log.
type configuredRecord struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

// The real ovsplaned, a real ovsdb-server and ovs-vswitchd, and the watchrec plugin, which
// sets a status on every interface named vhu* (its summary quoting other_config:pmd-cpu-mask
// of its facts) and contributes global config that changes with every Configure (the number
// of its Configure calls, plus vhost-async-support and a dpdk-extra fragment):
//   - a dpdkvhostuserclient port ovs-vsctl adds (a foreign row) gets the plugin's status in the
//     API's ListStatus (owner foreign, its bridge and port), in `vsctl status` (table and
//     JSON) and in the ovsplane_plugin_interface_status gauge; it goes when ovs-vsctl deletes
//     the port;
//   - ovs-vsctl setting other_config:pmd-cpu-mask configures the plugin again, once, with the
//     new value in its facts, and the status is recomputed (the watch is resynced after the
//     Configure); the daemon writing the plugin's changed contribution configures nothing:
//     every Configure after the first is caused by an operator's change (the plugin's keys
//     aside, each Configure's other_config differs from the previous one's), and an operator's
//     second change is Configure number 3.
func TestDaemonWatchedStatusesAndOtherConfigFacts(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	db.Vsctl(t, "set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x2")
	db.Vsctl(t, "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev")
	dir := testkit.ShortTempDir(t, "ows-")
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
    config:
      statuses:
        - prefix: vhu
          level: warning
          summary: "CPU copy (pmd-cpu-mask {pmd-cpu-mask})"
          details: {numa: "1"}
      contribute:
        other_config: {vhost-async-support: "true"}
        dpdk_extra: ["--no-telemetry"]
        count_key: watchrec-configures
`, metricsAddr, pluginDir, sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", `WATCHREC_FILTER={"Bridges":["br-int"]}`}
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
			t.Logf("ovsplaned log (tail):\n%s", stderr.Tail(80))
		}
	})
	sock := "unix:" + filepath.Join(dir, "ovsplaned.sock")
	c, err := client.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	eventually := func(what string, cond func() error) {
		t.Helper()
		testkit.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
			select {
			case err := <-done:
				done <- err
				t.Fatalf("ovsplaned stopped: %v", err)
			default:
			}
			if err := cond(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		})
	}
	configured := func() []configuredRecord {
		data, _ := os.ReadFile(filepath.Join(dir, "plugin-data", "watchrec", "configured.log"))
		var out []configuredRecord
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var r configuredRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("configured.log: %v", err)
			}
			out = append(out, r)
		}
		return out
	}
	otherConfig := func(key string) string {
		out, _, err := db.VsctlErr(t.Context(), "--if-exists", "get", "Open_vSwitch", ".", "other_config:"+key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Trim(out, `"`)
	}
	watched := func() ([]*v1.WatchedStatus, error) {
		st, err := c.ListStatus(t.Context(), connect.NewRequest(&v1.ListStatusRequest{}))
		if err != nil {
			return nil, err
		}
		return st.Msg.GetWatched(), nil
	}
	wantWatched := func(what, summary string) *v1.WatchedStatus {
		t.Helper()
		var got *v1.WatchedStatus
		eventually(what, func() error {
			ws, err := watched()
			if err != nil {
				return err
			}
			if len(ws) != 1 || ws[0].GetSummary() != summary {
				return fmt.Errorf("watched statuses %v, want vhu1's %q", ws, summary)
			}
			got = ws[0]
			return nil
		})
		return got
	}

	// The start: one Configure (pmd-cpu-mask 0x2 in its facts), the contribution written.
	eventually("the start's Configure and contribution", func() error {
		if recs := configured(); len(recs) != 1 || recs[0].Facts.OtherConfig["pmd-cpu-mask"] != "0x2" {
			return fmt.Errorf("Configure records %+v", recs)
		}
		if v, n, x := otherConfig("vhost-async-support"), otherConfig("watchrec-configures"), otherConfig("dpdk-extra"); v != "true" || n != "1" || x != "--no-telemetry" {
			return fmt.Errorf("other_config vhost-async-support %q, watchrec-configures %q, dpdk-extra %q", v, n, x)
		}
		return nil
	})

	// A foreign vhost-user port gets the plugin's status.
	db.Vsctl(t, "add-port", "br-int", "vhu1", "--", "set", "Interface", "vhu1", "type=dpdkvhostuserclient",
		"options:vhost-server-path="+filepath.Join(dir, "vhu1.sock"))
	w := wantWatched("vhu1's status", "CPU copy (pmd-cpu-mask 0x2)")
	if w.GetPlugin() != "watchrec" || w.GetInterface() != "vhu1" || w.GetBridge() != "br-int" || w.GetPort() != "vhu1" ||
		w.GetOwner() != "foreign" || w.GetLevel() != "warning" || w.GetDetails()["numa"] != "1" {
		t.Errorf("vhu1's watched status %v", w)
	}
	vsctl := testkit.BuildOnce(t, "../vsctl")
	out, err := exec.CommandContext(t.Context(), vsctl, "--daemon="+sock, "status", "vhu1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PLUGIN") || !strings.Contains(string(out), "watchrec") ||
		!strings.Contains(string(out), "warning") || !strings.Contains(string(out), "CPU copy (pmd-cpu-mask 0x2)") {
		t.Errorf("vsctl status vhu1: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(t.Context(), vsctl, "--daemon="+sock, "--format=json", "status", "interface/vhu1").Output()
	var rows []map[string]any
	if jerr := json.Unmarshal(out, &rows); err != nil || jerr != nil || len(rows) != 1 || rows[0]["kind"] != "watched" ||
		rows[0]["plugin"] != "watchrec" || rows[0]["owner"] != "foreign" || rows[0]["level"] != "warning" {
		t.Errorf("vsctl --format=json status interface/vhu1: %v %v\n%s", err, jerr, out)
	}
	eventually("the status gauge", func() error {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if want := `ovsplane_plugin_interface_status{level="warning",plugin="watchrec"} 1`; !strings.Contains(string(body), want) {
			return fmt.Errorf("no %s in /metrics", want)
		}
		return nil
	})

	// The operator changes pmd-cpu-mask: one Configure with the new value, the status
	// recomputed, the changed contribution written (and no Configure for that).
	db.Vsctl(t, "set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x6")
	wantWatched("vhu1's status after the new pmd-cpu-mask", "CPU copy (pmd-cpu-mask 0x6)")
	eventually("the contribution of the second Configure written", func() error {
		if n := otherConfig("watchrec-configures"); n != "2" {
			return fmt.Errorf("watchrec-configures %q", n)
		}
		return nil
	})
	db.Vsctl(t, "set", "Open_vSwitch", ".", "other_config:watch-probe=1")
	eventually("the Configure after the probe", func() error {
		recs := configured()
		if last := recs[len(recs)-1]; last.Facts.OtherConfig["watch-probe"] != "1" {
			return fmt.Errorf("%d Configure records, the last without the probe", len(recs))
		}
		return nil
	})
	recs := configured()
	if len(recs) != 3 || recs[1].Facts.OtherConfig["pmd-cpu-mask"] != "0x6" {
		t.Errorf("%d Configure calls, want 3 (start, pmd-cpu-mask, probe); the second's pmd-cpu-mask %q",
			len(recs), recs[min(1, len(recs)-1)].Facts.OtherConfig["pmd-cpu-mask"])
	}
	ours := []string{"vhost-async-support", "watchrec-configures", "dpdk-extra"}
	for i := 1; i < len(recs); i++ {
		prev, cur := maps.Clone(recs[i-1].Facts.OtherConfig), maps.Clone(recs[i].Facts.OtherConfig)
		for _, k := range ours {
			delete(prev, k)
			delete(cur, k)
		}
		if maps.Equal(prev, cur) || recs[i].PID != recs[0].PID {
			t.Errorf("Configure %d (pid %d) had no operator's change since the previous one: other_config %v", i+1, recs[i].PID, recs[i].Facts.OtherConfig)
		}
	}

	// The port goes: its status goes.
	db.Vsctl(t, "del-port", "br-int", "vhu1")
	eventually("vhu1's status gone", func() error {
		ws, err := watched()
		if err != nil || len(ws) != 0 {
			return fmt.Errorf("watched statuses %v, %v", ws, err)
		}
		return nil
	})
	out, _ = exec.CommandContext(t.Context(), vsctl, "--daemon="+sock, "status").CombinedOutput()
	if strings.Contains(string(out), "vhu1") || strings.Contains(string(out), "PLUGIN") {
		t.Errorf("vsctl status after del-port:\n%s", out)
	}
}
