//go:build linux

package integrations

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/vsctldiff"
)

// zstackHost is a private Open vSwitch with vsctl in the place of the ZStack agent's ovs-vsctl.
type zstackHost struct {
	db    *lab.OVSDB
	vsctl string
}

// runCtx runs one agent command line (ovs-vsctl's arguments, split like a shell) through vsctl
// on the host's database and returns its stdout and exit status (-1 when it could not run, with
// the reason in place of stdout).
func (h *zstackHost) runCtx(ctx context.Context, line string) (string, int) {
	words, err := vsctldiff.SplitWords(line)
	if err != nil {
		return err.Error(), -1
	}
	cmd := exec.CommandContext(ctx, h.vsctl, append([]string{"--db=" + h.db.Endpoint}, words...)...)
	cmd.Env = append(cmd.Environ(), h.db.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if code := exitCode(err); code < 0 {
		return fmt.Sprintf("%v: %s", err, stderr.String()), code
	}
	return stdout.String(), exitCode(err)
}

// run is runCtx bounded by a minute of the test's context; a line that cannot run fails t.
func (h *zstackHost) run(t *testing.T, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, code := h.runCtx(ctx, line)
	if code < 0 {
		t.Fatalf("vsctl %s: %s", line, out)
	}
	return out, code
}

// must runs line and fails the test unless it exits 0.
func (h *zstackHost) must(t *testing.T, line string) string {
	t.Helper()
	out, code := h.run(t, line)
	if code != 0 {
		t.Fatalf("vsctl %s: exit %d", line, code)
	}
	return out
}

// zstackRows is what the agent reads back about its own objects: it must not change because
// ovsplaned runs beside it.
func (h *zstackHost) zstackRows(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, l := range []string{
		"--timeout=5 list-ports br_uplink0",
		"get Bridge br_uplink0 datapath_type external_ids",
		"get Port vnic7.0 tag external_ids",
		"get Interface vnic7.0 type options external_ids",
	} {
		b.WriteString(h.must(t, l))
	}
	return b.String()
}

// statuses returns the daemon's ListStatus as key → "state error".
func (d *daemon) statuses(ctx context.Context) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://ovsplaned/ovsplane.v1.SwitchService/ListStatus", strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ListStatus: %s %s %v", res.Status, body, err)
	}
	var msg struct {
		Statuses []struct{ Key, State, Error string }
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range msg.Statuses {
		out[s.Key] = strings.TrimSpace(s.State + " " + s.Error)
	}
	return out, nil
}

// TestZStackHostBesideOvsplaned runs the ZStack agent's command lines through vsctl on an Open
// vSwitch that ovsplaned manages too, as docs/zstack.md describes the host: the agent's rows and
// other_config keys are never touched by the daemon (a configuration that names them is refused
// with the owner and the fix), and when the agent's teardown deletes every bridge and clears
// other_config, the daemon puts back exactly what it owns and nothing of the agent's.
func TestZStackHostBesideOvsplaned(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	h := &zstackHost{db: lab.StartOVSDB(t), vsctl: buildTool(t, t.TempDir(), "vsctl")}
	h.db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})

	// The agent sets the host up first (Ovs._initOvsDBSetting, configDpdkForOvs, createBr,
	// _doCreateBackend).
	for _, l := range []string{
		"--no-wait set Open_vSwitch . external-ids:system-id=5f0c7a52-1d1e-4c1a-9f3e-2b7d0c1e9a41 external-ids:rundir=/var/run/openvswitch",
		"--no-wait set Open_vSwitch . other_config:dpdk-init=true",
		"--no-wait set Open_vSwitch . other_config:pmd-cpu-mask=0x6",
		"add-br br_uplink0 -- set Bridge br_uplink0 datapath_type=netdev",
		"add-port br_uplink0 vnic7.0 -- set Interface vnic7.0 type=dpdkvhostuserclient options:vhost-server-path=/var/run/zstack/dpdkvhostuserclient/vm-a/vnic7.0",
		"set Port vnic7.0 tag=100",
		"set Interface vnic7.0 external_ids:vm-id=0a1b2c3d4e5f40718293a4b5c6d7e8f9",
	} {
		h.must(t, l)
	}
	before := h.zstackRows(t)

	// ovsplaned with a bridge of its own, one of the agent's by mistake, and a key of its own.
	cfg := filepath.Join(t.TempDir(), "ovsplaned.yaml")
	if err := os.WriteFile(cfg, []byte(`other_config:
  tx-flush-interval: "50"
bridges:
  - name: br-ovsp
    datapath_type: netdev
    ports:
      - name: op1
        interfaces: [{name: op1, type: internal}]
  - name: br_uplink0
    datapath_type: netdev
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config", cfg, "--ovsdb-endpoints", h.db.Endpoint)
	var last string
	converged := func(ctx context.Context) error {
		err := convergedOnce(ctx, d, h)
		if err != nil && err.Error() != last && ctx.Err() == nil {
			last = err.Error()
			t.Logf("not yet: %v", err)
		}
		return err
	}
	lab.WaitFor(t, 60*time.Second, "ovsplaned to converge beside the agent's objects", converged)
	if after := h.zstackRows(t); after != before {
		t.Errorf("ovsplaned changed the agent's rows:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out := h.must(t, "get Open_vSwitch . other_config:pmd-cpu-mask"); out != "\"0x6\"\n" {
		t.Errorf("the agent's pmd-cpu-mask is %q, want \"0x6\" (ovsplaned must not take a key it did not set)", out)
	}

	// The agent's teardown (OvsBaseCtl.deleteBrs, clearOvsConfig) hits the daemon's objects too.
	h.must(t, "--timeout=5 del-br br-ovsp")
	h.must(t, "--no-wait clear Open_vSwitch . other-config")
	lab.WaitFor(t, 60*time.Second, "ovsplaned to put back its bridge and key", func(ctx context.Context) error {
		if _, code := h.run(t, "br-exists br-ovsp"); code != 0 {
			return fmt.Errorf("br-ovsp not back (br-exists exit %d)", code)
		}
		return converged(ctx)
	})
	if out, code := h.run(t, "get Open_vSwitch . other_config:pmd-cpu-mask"); code != 1 {
		t.Errorf("after the agent cleared other_config, pmd-cpu-mask is %q: ovsplaned wrote back a key it does not own", out)
	}
	if after := h.zstackRows(t); after != before {
		t.Errorf("the agent's rows changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if ids := h.must(t, "get Open_vSwitch . external_ids:system-id"); ids != "\"5f0c7a52-1d1e-4c1a-9f3e-2b7d0c1e9a41\"\n" {
		t.Errorf("the agent's system-id is %q", ids)
	}
}

// convergedOnce checks once that ovsplaned has converged beside the agent: its own bridge and
// port ready, the agent's bridge refused as not its own, its other_config key written.
func convergedOnce(ctx context.Context, d *daemon, h *zstackHost) error {
	st, err := d.statuses(ctx)
	if err != nil {
		return err
	}
	if st["bridge/br-ovsp"] != "STATE_READY" || st["port/op1"] != "STATE_READY" {
		return fmt.Errorf("ovsplaned's own objects not ready: %v", st)
	}
	if !strings.Contains(st["bridge/br_uplink0"], "owned by nobody") {
		return fmt.Errorf("bridge/br_uplink0 is %q, want an error saying ovsplane does not own it", st["bridge/br_uplink0"])
	}
	if out, code := h.runCtx(ctx, "get Open_vSwitch . other_config:tx-flush-interval"); code != 0 || out != "\"50\"\n" {
		return fmt.Errorf("other_config:tx-flush-interval is %q (exit %d), want \"50\"", out, code)
	}
	return nil
}
