//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// ovsplanedPkg is the daemon's main package, built once per test binary.
const ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"

// fabricSchema is the fabric database's schema, relative to this package.
const fabricSchema = "../../overlay/fabric/schema/fabric.ovsschema"

// TestDaemonInstallsOverlayRoutes runs the real ovsplaned with the real overlay plugin (built,
// pinned) on a real ovs-vswitchd (userspace datapath, in a namespace) and a real 3-member
// fabric cluster. The daemon's configuration holds br-int with a port of the plugin's type
// overlay-tunnel, an overlay-agent job for ordinary node a and an overlay-controller job; the
// test registers the other nodes (supers s1, s2; ordinary b) and reports the links. It checks
// that the tunnel port lands as a flow-based vxlan interface, that the controller (the
// plugin's job) publishes version 1, that its flows land in ovs-vswitchd with a's next hop
// towards b (s1's underlay address) and the version in their cookie, and that a acks version
// 1 in the fabric. Then a–s1 degrades: the controller publishes version 2, whose flows send
// b's traffic to s2 instead and replace every flow of version 1, and a acks version 2. Last,
// the whole fabric cluster stops and the plugin is killed (SIGKILL): the daemon restarts it,
// the new process (no install, no fabric) serves version 2 from the table it stored, and the
// bridge's flows stay exactly version 2's.
func TestDaemonInstallsOverlayRoutes(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedNetns)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	cluster := lab.StartOVSDBCluster(t, fabricSchema)
	fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
	fc, err := fabric.Open(fctx, fabric.Config{Endpoints: cluster.Endpoints(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	fcancel()
	if err != nil {
		t.Fatalf("open fabric: %v", err)
	}
	t.Cleanup(fc.Close)
	for _, n := range []fabric.NodeSpec{
		{Name: "a", Kind: fabric.KindOrdinary, Carriers: []string{"c1"}, Underlay: []string{"10.10.0.2"}},
		{Name: "b", Kind: fabric.KindOrdinary, Carriers: []string{"c2"}, Underlay: []string{"10.20.0.3"}},
		{Name: "s1", Kind: fabric.KindSuper, Carriers: []string{"c1", "c2"}, Underlay: []string{"10.10.0.1", "10.20.0.1"}},
		{Name: "s2", Kind: fabric.KindSuper, Carriers: []string{"c1", "c2"}, Underlay: []string{"10.10.0.5", "10.20.0.5"}},
	} {
		if err := fc.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	link := func(a, b string, mbit, ms int64) {
		t.Helper()
		if err := fc.ReportLink(ctx, fabric.LinkReport{A: a, B: b, BandwidthKbps: mbit * 1000, LatencyUs: ms * 1000}); err != nil {
			t.Fatal(err)
		}
	}
	link("s1", "s2", 1000, 5)
	link("b", "s2", 100, 5)
	link("a", "s1", 100, 5)
	link("a", "s2", 100, 130) // expensive: a reaches b through s1 first

	ns := lab.NewNetns(t)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: ns})
	dir := testkit.ShortTempDir(t, "overlaye2e-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-overlay")
	remotes := `["` + strings.Join(cluster.Endpoints(), `", "`) + `"]`
	conf := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: overlay
    path: ovsplane-plugin-overlay
    sha256: %s
    jobs:
      - name: agent
        type: overlay-agent
        config:
          node: {name: a, kind: ordinary, carriers: [c1], underlay: ["10.10.0.2"]}
          fabric_remotes: %[3]s
          bridge: br-int
          tunnel_port: ovl0
          vni: 42
          prefixes: {a: ["192.168.1.0/24"], b: ["192.168.2.0/24"], s1: ["192.168.10.0/24"], s2: ["192.168.20.0/24", "fd00:20::/64"]}
          period_ms: 100
          flow_refresh_ms: 200
          probe: {disabled: true}
      - name: controller
        type: overlay-controller
        config: {holder: ctl-a, fabric_remotes: %[3]s, lease_ttl_ms: 2000, period_ms: 200}
bridges:
  - name: br-int
    datapath_type: netdev
    ports:
      - name: ovl0
        interfaces:
          - name: ovl0
            type: overlay-tunnel
            options: {tunnel: vxlan}
`, pluginDir, sum, remotes)
	if err := os.WriteFile(filepath.Join(dir, "ovsplaned.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", filepath.Join(dir, "ovsplaned.yaml"),
		"--data-dir", dir, "--ovsdb-endpoints", db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		daemon.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", daemon.Out.Tail(8000))
		}
	})

	ofctl := func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ovs-ofctl", "-O", "OpenFlow15", "--no-names", "--no-stats", "dump-flows", sw.OpenFlowTarget("br-int")).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ovs-ofctl dump-flows: %w: %s", err, out)
		}
		return string(out), nil
	}
	// ours are the dump's lines of the plugin's flows (cookies 0xa5…), normalised.
	ours := func(dump string) []string {
		var out []string
		for _, l := range strings.Split(dump, "\n") {
			if strings.Contains(l, "cookie=0xa5") {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	applied := func(ctx context.Context) (int64, error) {
		nodes, err := fc.Nodes(ctx)
		if err != nil {
			return 0, err
		}
		for _, n := range nodes {
			if n.Name == "a" {
				return n.AppliedVersion, nil
			}
		}
		return 0, fmt.Errorf("node a is not registered")
	}
	// remember keeps a condition's last error that is not the deadline's, logged if the test
	// fails (the last try may be cut short by the deadline and say only that).
	var last error
	t.Cleanup(func() {
		if t.Failed() && last != nil {
			t.Logf("last condition error: %v", last)
		}
	})
	remember := func(cond func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			err := cond(ctx)
			if err != nil && ctx.Err() == nil {
				last = err
			}
			return err
		}
	}
	// waitVersion waits until the bridge holds version v's flows only, b's next hop is
	// wantHop, and a acked v; it returns the plugin's flows.
	waitVersion := func(v int64, wantHop string) []string {
		t.Helper()
		var flows []string
		cookie := regexp.MustCompile(`cookie=0xa5[0-9a-f]{4}([0-9a-f]{10}),`)
		lab.WaitFor(t, 90*time.Second, fmt.Sprintf("route version %d on br-int (b via %s) and acked", v, wantHop), remember(func(ctx context.Context) error {
			if daemon.Exited() {
				t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
			}
			dump, err := ofctl(ctx)
			if err != nil {
				return err
			}
			flows = ours(dump)
			if len(flows) == 0 {
				return fmt.Errorf("no plugin flows yet:\n%s", dump)
			}
			for _, f := range flows {
				m := cookie.FindStringSubmatch(f)
				if m == nil || m[1] != fmt.Sprintf("%010x", v) {
					return fmt.Errorf("flow not of version %d: %s", v, f)
				}
			}
			want := "ip,nw_dst=192.168.2.0/24 actions=set_field:0x2a->tun_id,set_field:" + wantHop + "->tun_dst,output:"
			if !containsLine(flows, want) {
				return fmt.Errorf("no flow %q among:\n%s", want, strings.Join(flows, "\n"))
			}
			got, err := applied(ctx)
			if err != nil || got != v {
				return fmt.Errorf("a's applied version %d (%v), want %d", got, err, v)
			}
			return nil
		}))
		return flows
	}

	// The tunnel port: a flow-based vxlan interface written by the daemon.
	lab.WaitFor(t, time.Minute, "ovl0 as a flow-based vxlan port with an ofport", func(ctx context.Context) error {
		out, stderr, err := db.VsctlErr(ctx, "--", "get", "Interface", "ovl0", "type", "options", "ofport")
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		f := strings.Split(out, "\n")
		if len(f) != 3 || f[0] != "vxlan" || f[1] != `{key=flow, remote_ip=flow}` || f[2] == "[]" || f[2] == "-1" {
			return fmt.Errorf("ovl0: %q", out)
		}
		return nil
	})
	ofport := strings.TrimSpace(db.Vsctl(t, "get", "Interface", "ovl0", "ofport"))

	flows1 := waitVersion(1, "10.10.0.1")
	t.Logf("version 1 flows:\n%s", strings.Join(flows1, "\n"))
	for _, want := range []string{
		"ip,nw_dst=192.168.20.0/24 actions=set_field:0x2a->tun_id,set_field:10.10.0.1->tun_dst,output:" + ofport,
		"ipv6,ipv6_dst=fd00:20::/64 actions=set_field:0x2a->tun_id,set_field:10.10.0.1->tun_dst,output:" + ofport,
		"arp,arp_tpa=192.168.2.0/24 actions=set_field:0x2a->tun_id,set_field:10.10.0.1->tun_dst,output:" + ofport,
		"ip,nw_dst=192.168.1.0/24 actions=NORMAL",
		"priority=1500,in_port=" + ofport + " actions=drop",
	} {
		if !containsLine(flows1, want) {
			t.Errorf("version 1 lacks %q", want)
		}
	}
	for _, f := range flows1 {
		if strings.Contains(f, "in_port="+ofport) && strings.Contains(f, "tun_dst") {
			t.Errorf("ordinary node a relays: %s", f)
		}
	}

	// Degrade a–s1: the route to b moves to s2 (version 2), which replaces version 1.
	link("a", "s1", 100, 500)
	flows2 := waitVersion(2, "10.10.0.5")
	t.Logf("version 2 flows:\n%s", strings.Join(flows2, "\n"))
	if len(flows2) != len(flows1) {
		t.Errorf("version 2 has %d flows, version 1 had %d", len(flows2), len(flows1))
	}

	// The whole fabric goes away, and the plugin is killed: the daemon restarts it, and the new
	// process, which cannot reach the fabric, serves the table it stored: version 2's flows stay.
	for _, m := range cluster.Members {
		m.Stop(t)
	}
	old := pluginPID(t, daemon.Out.String())
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the plugin (pid %d): %v", old, err)
	}
	sock := "unix:" + filepath.Join(dir, "ovsplaned.sock")
	lab.WaitFor(t, time.Minute, "the restarted plugin serving version 2 without the fabric", remember(func(ctx context.Context) error {
		if pid := pluginPID(t, daemon.Out.String()); pid == old {
			return fmt.Errorf("plugin not restarted yet (pid %d)", pid)
		}
		var out, errOut bytes.Buffer
		if rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", sock, "--format", "json", "plugin", "stats", "overlay"},
			Stdout: &out, Stderr: &errOut}); rc != 0 {
			return fmt.Errorf("vsctl plugin stats overlay: exit %d: %s", rc, errOut.String())
		}
		var rows []struct {
			Name    string
			Metrics []struct {
				Name  string
				Value json.Number
			}
		}
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return fmt.Errorf("vsctl plugin stats overlay: %v: %s", err, out.String())
		}
		want := map[string]string{"overlay_served_version": "2", "overlay_installs": "0", "overlay_fabric_connected": "0"}
		for _, r := range rows {
			if r.Name != "agent" {
				continue
			}
			for _, m := range r.Metrics {
				if w, ok := want[m.Name]; ok && m.Value.String() == w {
					delete(want, m.Name)
				}
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("agent stats lack %v: %s", want, out.String())
		}
		return nil
	}))
	dump, err := ofctl(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ours(dump); strings.Join(got, "\n") != strings.Join(flows2, "\n") {
		t.Errorf("after the plugin's restart without the fabric the flows changed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(flows2, "\n"))
	}
}

// pluginPID returns the pid of the overlay plugin's latest start in the daemon's log.
func pluginPID(t *testing.T, log string) int {
	t.Helper()
	m := regexp.MustCompile(`msg="plugin running" plugin=overlay version=\S+ pid=(\d+)`).FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		t.Fatalf("no plugin start in the daemon's log")
	}
	pid, err := strconv.Atoi(m[len(m)-1][1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// containsLine reports whether some line contains s.
func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
