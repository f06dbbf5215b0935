//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/test/lab"
)

const twoBridgeConfig = daemonConfig + `
  - name: br1
    datapath_type: netdev
    ports:
      - name: cfg1
        interfaces:
          - name: cfg1
            type: internal
`

// statusOfKey returns the daemon's status of key ("bridge/br1"…) from ListStatus.
func (l *daemonLab) statusOfKey(ctx context.Context, key string) (*ovsplanev1.Status, error) {
	resp, err := l.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
	if err != nil {
		return nil, err
	}
	for _, s := range resp.Msg.Statuses {
		if strings.ToLower(strings.TrimPrefix(s.Kind.String(), "KIND_"))+"/"+s.Name == key {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s not in the statuses", key)
}

// TestDaemonConfigBridgeWithAPIPorts defines what happens to a bridge of the configuration file
// that holds ports created through the API when the file drops it: a reload is refused, naming
// the bridge, its API ports and the fix, and changes nothing; a daemon started with such a file
// leaves the bridge as it is (not rewritten, not pruned) with its API ports, and reports the
// bridge as an error saying why; once the API ports are deleted, the bridge goes.
func TestDaemonConfigBridgeWithAPIPorts(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	if err := os.WriteFile(l.conf, []byte(twoBridgeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	p := l.start(ctx)
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br1", Port: apiPort("api1")})); err != nil {
		t.Fatal(err)
	}
	if _, err := l.api.WaitReady(ctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{Keys: []string{"port/api1", "port/cfg1", "bridge/br1"}})); err != nil {
		t.Fatal(err)
	}

	// The file drops br1: the reload is refused and nothing changes.
	if err := os.WriteFile(l.conf, []byte(daemonConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := l.api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("Reload dropping br1 = %v, want FailedPrecondition", err)
	}
	for _, part := range []string{"reload rejected", `bridge "br1" (ports api1)`, "delete those ports through the API first", "keep the bridge in the file"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Reload error %q does not contain %q", err, part)
		}
	}
	if _, err := l.api.GetBridge(ctx, connect.NewRequest(&ovsplanev1.GetBridgeRequest{Name: "br1"})); err != nil {
		t.Errorf("br1 no longer managed after the refused reload: %v", err)
	}
	if got := strings.Join(strings.Fields(db.Vsctl(t, "list-ports", "br1")), " "); got != "api1 cfg1" {
		t.Errorf("ports of br1 after the refused reload: %q, want \"api1 cfg1\"", got)
	}

	// A daemon started with that file: br1 stays as it is with api1; cfg1, no longer
	// configured, is pruned; the bridge's status says why it is left alone.
	p.stop(t)
	l.start(ctx) // stopped by the test's cleanup
	lab.WaitFor(t, 60*time.Second, "bridge/br1 reported as held by API ports", func(ctx context.Context) error {
		s, err := l.statusOfKey(ctx, "bridge/br1")
		if err != nil {
			return err
		}
		if s.State != ovsplanev1.State_STATE_ERROR || !strings.Contains(s.Error, "holds ports created through the API (api1)") ||
			!strings.Contains(s.Error, "add it back to the configuration file and reload, or delete those ports through the API") {
			return fmt.Errorf("bridge/br1: %v %q", s.State, s.Error)
		}
		return nil
	})
	lab.WaitFor(t, 60*time.Second, "cfg1 pruned, api1 kept", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-ports", "br1")
		if got := strings.Join(strings.Fields(out), " "); err != nil || got != "api1" {
			return fmt.Errorf("ports of br1: %q (%v), want \"api1\"", got, err)
		}
		return nil
	})
	if got := db.Get(t, "Bridge", "br1", "datapath_type"); got != "netdev" {
		t.Errorf("br1 datapath_type %s, want netdev kept (the bridge was rewritten)", got)
	}
	if resp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "api1"})); err != nil ||
		resp.Msg.Port.GetStatus().GetState() != ovsplanev1.State_STATE_READY {
		t.Errorf("api1 after the restart: %v %v, want ready", resp, err)
	}
	if s, err := l.statusOfKey(ctx, "bridge/br0"); err != nil || s.State != ovsplanev1.State_STATE_READY {
		t.Errorf("bridge/br0: %v %v, want ready", s, err)
	}

	// Deleting the API port releases the bridge: nothing holds it any more.
	if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: "api1"})); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 60*time.Second, "br1 removed", func(ctx context.Context) error {
		if _, _, err := db.VsctlErr(ctx, "br-exists", "br1"); err == nil {
			return fmt.Errorf("br1 still exists")
		}
		return nil
	})
	db.Vsctl(t, "br-exists", "br0")
}

// TestDaemonWritesControllers: the controllers of a configuration bridge and of an API bridge
// are written as Controller rows owned by ovsplane (they used to be echoed by GetBridge and
// never written), with the bridges' fail_mode; ovs-vswitchd acts on them (it listens on the
// punix: target and reports the tcp: one's state); an invalid target is refused by the API
// naming the field; dropping the file's controller removes only its row.
func TestDaemonWritesControllers(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	// ovs-vswitchd ignores unix: and punix: targets outside its run directory.
	sock := db.Dir + "/br0.ctl"
	withController := strings.Replace(daemonConfig, "    datapath_type: netdev\n",
		"    datapath_type: netdev\n    fail_mode: standalone\n    controller: [\"punix:"+sock+"\"]\n", 1)
	if err := os.WriteFile(l.conf, []byte(withController), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)
	const apiTarget = "tcp:127.0.0.1:1"
	if _, err := l.api.ApplyBridge(ctx, connect.NewRequest(&ovsplanev1.ApplyBridgeRequest{Bridge: &ovsplanev1.Bridge{
		Name: "brapi", DatapathType: "netdev", FailMode: "secure", Controller: []string{apiTarget}}})); err != nil {
		t.Fatal(err)
	}
	_, err := l.api.ApplyBridge(ctx, connect.NewRequest(&ovsplanev1.ApplyBridgeRequest{Bridge: &ovsplanev1.Bridge{
		Name: "brbad", Controller: []string{"tcp:127.0.0.1:6653\n"}}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "bridge.controller[0]") {
		t.Errorf("ApplyBridge with a control character in its controller: %v, want InvalidArgument naming bridge.controller[0]", err)
	}
	rowsOf := func(ctx context.Context, bridge string) (string, error) {
		out, _, err := db.VsctlErr(ctx, "--format=csv", "--data=bare", "--no-headings", "--columns=target,external_ids,status",
			"list", "Controller")
		if err != nil {
			return "", err
		}
		refs, _, err := db.VsctlErr(ctx, "get", "Bridge", bridge, "controller")
		return out + "refs " + refs, err
	}
	lab.WaitFor(t, 60*time.Second, "both bridges' controllers written and acted on", func(ctx context.Context) error {
		out, err := rowsOf(ctx, "br0")
		if err != nil {
			return err
		}
		for _, want := range []string{"punix:" + sock + ",", apiTarget + ",", "ovsplane-owner=ovsplane", "state=BACKOFF"} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("controllers %q lack %q", out, want)
			}
		}
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("ovs-vswitchd does not listen on the punix: target: %w", err)
		}
		return nil
	})
	if got := db.Get(t, "Bridge", "brapi", "fail_mode"); got != "secure" {
		t.Errorf("brapi fail_mode %s, want secure", got)
	}
	if got := db.Get(t, "Bridge", "br0", "fail_mode"); got != "standalone" {
		t.Errorf("br0 fail_mode %s, want standalone", got)
	}
	// The file drops br0's controller: only that row goes.
	if err := os.WriteFile(l.conf, []byte(daemonConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{})); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 60*time.Second, "br0's controller removed, brapi's kept", func(ctx context.Context) error {
		out, err := rowsOf(ctx, "br0")
		if err != nil {
			return err
		}
		if strings.Contains(out, "punix:") || !strings.Contains(out, apiTarget+",") || !strings.HasSuffix(strings.TrimSpace(out), "refs []") {
			return fmt.Errorf("controllers %q: want brapi's only, br0 referring to none", out)
		}
		return nil
	})
}

// TestDaemonReportsBridgeWithoutDatapath: a configuration bridge of the kernel datapath
// (datapath_type unset) on a real ovs-vswitchd that cannot open it (no openvswitch kernel
// module, as on the machines of ovs-lab.md) is reported through the API as an error naming the
// module and the netdev alternative, instead of pending forever; the netdev bridge beside it is
// ready. Where the module is loaded, the bridge is ready instead.
func TestDaemonReportsBridgeWithoutDatapath(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 5*time.Minute)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace})
	l := newDaemonLab(t, db)
	conf := daemonConfig + "  - name: brk\n    ports:\n      - name: k1\n        interfaces:\n          - name: k1\n            type: internal\n"
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)
	if _, err := l.api.WaitReady(ctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{Keys: []string{"bridge/br0", "port/cfg0"}})); err != nil {
		t.Fatal(err)
	}
	// WaitReady answers as soon as the bridge is ready or in error; pending until the deadline
	// is the behaviour this test rules out.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err := l.api.WaitReady(wctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{Keys: []string{"bridge/brk"}}))
	if _, statErr := os.Stat("/sys/module/openvswitch"); statErr == nil {
		if err != nil {
			t.Errorf("brk with the kernel module loaded: %v, want ready", err)
		}
		return
	}
	for _, part := range []string{"bridge/brk", `could not create bridge "brk"`, "modprobe openvswitch", `datapath_type "netdev"`} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("WaitReady(bridge/brk) = %v, want an error containing %q", err, part)
		}
	}
	resp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "k1"}))
	if err != nil || resp.Msg.Port.GetStatus().GetState() != ovsplanev1.State_STATE_ERROR ||
		!strings.Contains(resp.Msg.Port.GetStatus().GetError(), `its bridge "brk" does not exist in ovs-vswitchd`) {
		t.Errorf("port k1: %v %v, want an error naming its bridge's failure", resp, err)
	}
}
