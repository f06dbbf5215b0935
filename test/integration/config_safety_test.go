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
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 5*time.Minute)
	db := lab.StartOVSDB(t)
	db.StartVswitchd(t, lab.VswitchdSpec{Mode: lab.Dummy})
	l := newDaemonLab(t, db)
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
	p = l.start(ctx)
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
