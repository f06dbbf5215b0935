//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// ovsplanedPkg is the daemon's main package, built once per test binary.
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// jobConfig is the YAML flow mapping of one stripe job's config: node self in ns over links,
// towards peer.
func jobConfig(self, peer int, ns string, links []string) string {
	var ls []string
	for i, l := range links {
		ls = append(ls, fmt.Sprintf("{interface: %s, capacity_mbit: %d}", l, 100*(i+1)))
	}
	return fmt.Sprintf("{node: %d, netns: %s, links: [%s], peers: [{node: %d}], policy: seed, period_ms: 20, delta: 0.1}",
		self, ns, strings.Join(ls, ", "), peer)
}

// statsRow is one job of `vsctl --format json plugin stats stripe`.
type statsRow struct {
	Name, Type, State string
	Metrics           []struct {
		Name   string
		Kind   string
		Value  json.Number
		Labels map[string]string
	}
}

// value is a metric's value in row (false when absent).
func (r statsRow) value(name string, labels map[string]string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name != name || len(m.Labels) != len(labels) {
			continue
		}
		same := true
		for k, v := range labels {
			same = same && m.Labels[k] == v
		}
		if same {
			f, err := m.Value.Float64()
			return f, err == nil
		}
	}
	return 0, false
}

// TestDaemonRunsStripeJobs runs the real ovsplaned with the real stripe plugin (built, pinned
// by SHA-256) and two stripe jobs from its configuration file, node 1 and node 2, each in its
// own namespace, joined by four veth pairs: `vsctl plugin stats stripe` shows both jobs
// running, each knowing its peer on all four links with hellos on every link's counters, and
// the plugin's --top view (one frame) says the same.
func TestDaemonRunsStripeJobs(t *testing.T) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	var linksA, linksB []string
	for range 4 {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
		linksA, linksB = append(linksA, p.A.Name), append(linksB, p.B.Name)
	}
	db := lab.StartOVSDB(t)
	dir := testkit.ShortTempDir(t, "stripee2e-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-stripe")
	conf := filepath.Join(dir, "ovsplaned.yaml")
	yaml := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: stripe
    path: ovsplane-plugin-stripe
    sha256: %s
    jobs:
      - name: node1
        type: stripe
        config: %s
      - name: node2
        type: stripe
        config: %s
`, pluginDir, sum, jobConfig(1, 2, a.Name, linksA), jobConfig(2, 1, b.Name, linksB))
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
	sock := "unix:" + filepath.Join(dir, "ovsplaned.sock")
	var rows []statsRow
	var text string
	lab.WaitFor(t, time.Minute, "both stripe jobs running and knowing their peer on every link", func(ctx context.Context) error {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
		var out, errOut bytes.Buffer
		rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", sock, "--format", "json", "plugin", "stats", "stripe"},
			Stdout: &out, Stderr: &errOut})
		if rc != 0 && out.Len() == 0 {
			return fmt.Errorf("vsctl plugin stats stripe: exit %d: %s", rc, errOut.String())
		}
		rows = nil
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return fmt.Errorf("vsctl plugin stats stripe: %v: %s", err, out.String())
		}
		if len(rows) != 2 {
			return fmt.Errorf("%d jobs: %s", len(rows), out.String())
		}
		for _, r := range rows {
			if r.State != "running" || r.Type != "stripe" {
				return fmt.Errorf("job %s: %s", r.Name, r.State)
			}
			peer := "2"
			if r.Name == "node2" {
				peer = "1"
			}
			if v, ok := r.value("stripe_peer_known", map[string]string{"peer": peer}); !ok || v != 1 {
				return fmt.Errorf("job %s: peer %s not known yet", r.Name, peer)
			}
			// The peer is known from its first hello; every link learns its MAC from its own.
			links := linksA
			if r.Name == "node2" {
				links = linksB
			}
			for _, l := range links {
				if v, ok := r.value("stripe_link_peer_macs", map[string]string{"peer": peer, "link": l}); !ok || v != 1 {
					return fmt.Errorf("job %s link %s: peer MAC not learned yet", r.Name, l)
				}
			}
		}
		out.Reset()
		if rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", sock, "plugin", "stats", "stripe"},
			Stdout: &out, Stderr: &errOut}); rc != 0 {
			return fmt.Errorf("vsctl plugin stats stripe (text): exit %d: %s", rc, errOut.String())
		}
		text = out.String()
		return nil
	})
	t.Logf("vsctl plugin stats stripe:\n%s", text)
	for _, r := range rows {
		links, peer := linksA, "2"
		if r.Name == "node2" {
			links, peer = linksB, "1"
		}
		for _, l := range links {
			labels := map[string]string{"peer": peer, "link": l}
			if v, ok := r.value("stripe_link_peer_macs", labels); !ok || v != 1 {
				t.Errorf("job %s link %s: %v peer MACs (%t), want 1", r.Name, l, v, ok)
			}
			if v, ok := r.value("stripe_link_tx_bytes", labels); !ok || v == 0 {
				t.Errorf("job %s link %s: no bytes sent (hellos go on every link)", r.Name, l)
			}
		}
	}
	for _, want := range []string{"node1", "node2", `stripe_link_tx_load{link="` + linksA[0] + `",peer="2"}`, "stripe_link_balance_degree{", "stripe_reorder_depth{peer=\"1\"}"} {
		if !strings.Contains(text, want) {
			t.Errorf("vsctl plugin stats stripe lacks %q", want)
		}
	}

	var out, errOut bytes.Buffer
	if rc := runCLI([]string{"--top", "--once", "--daemon", sock}, &out, &errOut); rc != 0 {
		t.Fatalf("--top --once: exit %d: %s", rc, errOut.String())
	}
	t.Logf("--top --once:\n%s", out.String())
	for _, want := range []string{"JOB node1  PEER 2  running  known yes", "JOB node2  PEER 1  running  known yes", "  " + linksA[3] + "  yes     1 ", "  " + linksB[0] + "  yes     1 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--top --once lacks %q", want)
		}
	}
}
