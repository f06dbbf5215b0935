//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// ovsplanedPkg is the daemon's main package, built once per test binary.
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// TestDaemonRunsFlowmonCollector runs the real ovsplaned with the real flowmon plugin (built
// with cgo, pinned) and a flowmon-collector job on the embedded store, sends the job NetFlow v5
// records, and finds them through the daemon's API (/flowmon/v1/query, which forwards to the
// job's socket in the plugin's data dir) with `flowmon query --daemon`: the socket path the
// plugin serves is the one the daemon looks for.
func TestDaemonRunsFlowmonCollector(t *testing.T) {
	db := lab.StartOVSDB(t)
	dir := testkit.ShortTempDir(t, "fme2e-")
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pluginDir, "ovsplane-plugin-flowmon")
	testkit.Build(t, ".", bin, "-trimpath", "-buildvcs=false") // cgo on: DuckDB
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
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
`, pluginDir, testkit.FileSHA256(t, bin), port)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", conf, "--data-dir", dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		daemon.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", daemon.Out.Tail(6000))
		}
	})
	api := filepath.Join(dir, "ovsplaned.sock")
	lab.WaitFor(t, 2*time.Minute, "the collector job's socket in the plugin's data dir", func(context.Context) error {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
		_, err := os.Stat(filepath.Join(dir, "plugin-data", "flowmon", "c1.sock"))
		return err
	})
	now := time.Now().Truncate(time.Second)
	recs := []flow.Record{{Start: now.Add(-2 * time.Second).UnixNano(), End: now.Add(-time.Second).UnixNano(), Src: netip.MustParseAddr("198.51.100.7"),
		Dst: netip.MustParseAddr("198.51.100.8"), Proto: 17, SrcPort: 5000, DstPort: 53, Bytes: 999, Packets: 3}}
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(nftest.AppendV5(nil, nftest.V5Header{SysUptime: 10000, UnixSecs: uint32(now.Unix())}, recs)); err != nil {
		t.Fatal(err)
	}
	client := query.NewClientAt(api, apiPrefix, 0)
	lab.WaitFor(t, time.Minute, "the record through the daemon's API", func(ctx context.Context) error {
		res, err := client.Query(ctx, query.Query{Kind: query.Flows, From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 5})
		if err != nil {
			return err
		}
		if len(res.Records) != 1 || res.Records[0].Bytes != 999 {
			return fmt.Errorf("records %+v", res.Records)
		}
		return nil
	})
	code, out, errOut := cli("query", "--daemon", "unix:"+api, "--since", "1h", "--top", "dport", "--format", "csv")
	if code != 0 || out != "dstport,bytes,packets,flows\n53,999,3,1\n" {
		t.Fatalf("flowmon query --daemon: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli("top", "--daemon", "unix:"+api, "--once", "--window", "1h", "--key", "dst")
	if code != 0 || !strings.Contains(out, "collector c1 (embedded store") || !strings.Contains(strings.Join(strings.Fields(out), " "), "198.51.100.8 999 3 1 100.0%") {
		t.Errorf("flowmon top --once: %d\n%s\n%s", code, out, errOut)
	}
	st, err := client.Status(t.Context())
	if err != nil || st.Job != "c1" || st.Counters["stored"] != 1 || !strings.Contains(st.Store, "embedded") {
		t.Errorf("status through the API: %+v, %v", st, err)
	}
}
