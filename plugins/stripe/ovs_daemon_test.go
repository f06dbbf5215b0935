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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestDaemonRunsOVSMode runs the real ovsplaned with the real stripe plugin and one Open vSwitch
// (userspace datapath) in namespace A. Its configuration file holds bridge br0 with four NICs (the
// A ends of four veth pairs, system ports) and one stripe-lanes object stl0 (count 4), a job
// node1 in mode ovs-dpdk binding lane i to NIC i, and a job node2 in kernel mode on the B ends in
// namespace B. The daemon writes the lanes (the plugin's Attach), programs the plugin's rules
// (its Flows, through the daemon's flow syncer) and starts both jobs: each then knows its peer on
// all four links, so hellos crossed every lane both ways, and the bridge holds the twelve rules
// with the plugin's cookie, whose lane→NIC and NIC→lane rules matched packets.
func TestDaemonRunsOVSMode(t *testing.T) {
	runDaemonOVSMode(t, false)
}

// TestDaemonRunsOVSModeVethLanes is TestDaemonRunsOVSMode on ovs-vswitchd-dpdk: the NICs are
// DPDK af_packet ports on the A ends, and the lanes object has kind dpdk (netns A), so the
// plugin's Attach makes four veth pairs whose lane ends are DPDK ports and the job (lane_kind
// veth) opens the other ends. Besides TestDaemonRunsOVSMode's checks, a PMD thread polls every
// lane (dpif-netdev/pmd-rxq-show lists stl0..stl3).
func TestDaemonRunsOVSModeVethLanes(t *testing.T) {
	lab.Require(t, lab.NeedNetns, lab.NeedDPDK)
	runDaemonOVSMode(t, true)
}

// runDaemonOVSMode is TestDaemonRunsOVSMode, with DPDK NICs and veth lanes of kind dpdk when
// veth is set.
func runDaemonOVSMode(t *testing.T, veth bool) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	var linksA, linksB []string
	for range 4 {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
		linksA, linksB = append(linksA, p.A.Name), append(linksB, p.B.Name)
		lab.DisableOffloads(t, a, p.A.Name)
		lab.DisableOffloads(t, b, p.B.Name)
	}
	db := lab.StartOVSDB(t)
	mode, laneOpts, laneKind, laneType, laneLabel := lab.Userspace, "", "", "internal", "%s"
	if veth {
		mode, laneOpts, laneKind, laneType, laneLabel = lab.DPDK, ", kind: dpdk, netns: "+a.Name, " lane_kind: veth,", "dpdk", "%se"
	}
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: mode, Netns: a})
	dir := testkit.ShortTempDir(t, "stripeovs-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-stripe")
	var ports, bind, kern []string
	for i := range 4 {
		nic := fmt.Sprintf("      - {name: %s, interfaces: [{name: %s}]}", linksA[i], linksA[i])
		if veth {
			nic = fmt.Sprintf("      - {name: %s, interfaces: [{name: %s, type: dpdk, options: {dpdk-devargs: %q}}]}", linksA[i], linksA[i], sw.AFPacketDevargs(linksA[i]))
		}
		ports = append(ports, nic)
		bind = append(bind, fmt.Sprintf("{interface: %s, lane: stl%d, capacity_mbit: 100}", linksA[i], i))
		kern = append(kern, fmt.Sprintf("{interface: %s, capacity_mbit: 100}", linksB[i]))
	}
	yaml := fmt.Sprintf(`
plugin_dir: %s
bridges:
  - name: br0
    datapath_type: netdev
    ports:
%s
      - {name: stl0, interfaces: [{name: stl0, type: stripe-lanes, options: {count: "4"%s}}]}
plugins:
  - name: stripe
    path: ovsplane-plugin-stripe
    sha256: %s
    jobs:
      - name: node1
        type: stripe
        config: {node: 1, mode: ovs-dpdk, bridge: br0,%s netns: %s, links: [%s], peers: [{node: 2}], policy: round-robin}
      - name: node2
        type: stripe
        config: {node: 2, netns: %s, links: [%s], peers: [{node: 1}], policy: round-robin}
`, pluginDir, strings.Join(ports, "\n"), laneOpts, sum, laneKind, a.Name, strings.Join(bind, ", "), b.Name, strings.Join(kern, ", "))
	conf := filepath.Join(dir, "ovsplaned.yaml")
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
	lab.WaitFor(t, 2*time.Minute, "both stripe jobs knowing their peer on all four links", func(ctx context.Context) error {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
		var out, errOut bytes.Buffer
		rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", sock, "--format", "json", "plugin", "stats", "stripe"},
			Stdout: &out, Stderr: &errOut})
		if rc != 0 && out.Len() == 0 {
			return fmt.Errorf("vsctl plugin stats stripe: exit %d: %s", rc, errOut.String())
		}
		var rows []statsRow
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return fmt.Errorf("vsctl plugin stats stripe: %v: %s", err, out.String())
		}
		if len(rows) != 2 {
			return fmt.Errorf("%d jobs: %s", len(rows), out.String())
		}
		for _, r := range rows {
			peer, links := "2", []string{}
			for i := range 4 {
				links = append(links, fmt.Sprintf(laneLabel, fmt.Sprintf("stl%d", i)))
			}
			if r.Name == "node2" {
				peer, links = "1", linksB
			}
			if r.State != "running" {
				return fmt.Errorf("job %s: %s", r.Name, r.State)
			}
			for _, l := range links {
				if v, ok := r.value("stripe_link_peer_macs", map[string]string{"peer": peer, "link": l}); !ok || v != 1 {
					return fmt.Errorf("job %s link %s: %v peer MACs", r.Name, l, v)
				}
			}
		}
		return nil
	})
	for i := range 4 {
		lane := fmt.Sprintf("stl%d", i)
		if got := strings.Trim(db.Get(t, "Port", lane, "external_ids:ovsplane-plugin"), `"`); got != "stripe" {
			t.Errorf("lane %s: external_ids:ovsplane-plugin %q, want the plugin's tag", lane, got)
		}
		if got := db.Get(t, "Interface", lane, "type"); got != laneType {
			t.Errorf("lane %s: type %q", lane, got)
		}
	}
	if veth {
		rxq := sw.Appctl(t, "dpif-netdev/pmd-rxq-show")
		for i := range 4 {
			if !regexp.MustCompile(fmt.Sprintf(`port: +stl%d +queue-id`, i)).MatchString(rxq) {
				t.Errorf("lane stl%d is not polled by a PMD thread; pmd-rxq-show:\n%s", i, rxq)
			}
		}
	}
	dump, err := a.Exec(t.Context(), "ovs-ofctl", "-O", "OpenFlow13", "--no-names", "dump-flows", sw.OpenFlowTarget("br0"), "dl_type=0x88b5")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`cookie=0xa5[0-9a-f]*,.*n_packets=([0-9]+),.*priority=40000.*actions=output:[0-9]+`)
	var matched, rules int
	for line := range strings.Lines(dump) {
		if m := rule.FindStringSubmatch(line); m != nil {
			rules++
			if m[1] != "0" {
				matched++
			}
		}
	}
	if rules != 8 || matched != 8 {
		t.Errorf("%d stripe rules of the plugin's cookie, %d with packets; want 8 and 8 (lane→NIC and NIC→lane per link):\n%s", rules, matched, dump)
	}
}
