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

// TestOpenStackPlugOntoABridgeBeingDeleted: os-vif plugs a VM port onto a bridge ovsplaned
// owns, and the operator then drops that bridge from ovsplaned's configuration. Deleting the
// bridge would delete os-vif's port with it, so the daemon refuses: the bridge (its local port
// included) and os-vif's port stay in OVSDB unchanged (same UUID, same external_ids), the
// bridge's status is an error
// naming the port and the command that releases it, and once os-vif unplugs the port the
// daemon completes the deletion. Nothing of os-vif's is lost at any point.
func TestOpenStackPlugOntoABridgeBeingDeleted(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedOSVIF)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	h := newDaemonHome(t, "osd-", "", 6000)
	const withOld = `
bridges:
  - name: br-keep
    datapath_type: netdev
  - name: br-old
    datapath_type: netdev
`
	const withoutOld = `
bridges:
  - name: br-keep
    datapath_type: netdev
`
	if err := os.WriteFile(h.conf, []byte(withOld), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(ctx, time.Minute, (*daemonProc).kill, "--config", h.conf, "--data-dir", h.dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info")
	statusOf := func(ctx context.Context, key string) (*ovsplanev1.Status, error) {
		resp, err := h.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Msg.GetStatuses() {
			if s.GetKey() == key {
				return s, nil
			}
		}
		return nil, nil
	}
	lab.WaitFor(t, time.Minute, "br-old ready", func(ctx context.Context) error {
		s, err := statusOf(ctx, "bridge/br-old")
		if err != nil || s == nil || s.GetState() != ovsplanev1.State_STATE_READY {
			return fmt.Errorf("bridge/br-old: %v, %v", s, err)
		}
		return nil
	})

	vif := lab.VIF{Kind: lab.VIFOpenVSwitch, ID: "5ea1b2c3-d4e5-4f60-8a1b-2c3d4e5f6a7b", Address: "fa:16:3e:00:30:01",
		InstanceUUID: "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a", Bridge: "br-old", DatapathType: "netdev"}
	if log, err := lab.OSVIFPlugWith(ctx, db.Endpoint, vif, lab.OSVIFOptions{}); err != nil {
		t.Fatalf("os-vif plug onto br-old: %v\n%s", err, log)
	}
	port := vif.PortName()
	before := osvifRows(t, db, []string{port})

	// The operator drops br-old; the daemon must not take os-vif's port with it.
	if err := os.WriteFile(h.conf, []byte(withoutOld), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{})); err != nil {
		t.Fatalf("reload: %v", err)
	}
	lab.WaitFor(t, time.Minute, "br-old's deletion refused, naming os-vif's port", func(ctx context.Context) error {
		s, err := statusOf(ctx, "bridge/br-old")
		if err != nil || s == nil {
			return fmt.Errorf("bridge/br-old: %v, %v", s, err)
		}
		if s.GetState() != ovsplanev1.State_STATE_ERROR || !strings.Contains(s.GetError(), port) {
			return fmt.Errorf("bridge/br-old: %v %q, want an error naming port %s", s.GetState(), s.GetError(), port)
		}
		return nil
	})
	if got := osvifRows(t, db, []string{port}); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("os-vif's rows changed while the daemon refused to delete br-old:\nbefore %v\nafter  %v", before, got)
	}
	// The bridge stays whole: its local port goes only with it.
	if _, _, err := db.VsctlErr(ctx, "get", "Port", "br-old", "name"); err != nil {
		t.Errorf("br-old's local port is gone while the bridge's deletion was refused: %v", err)
	}
	if got := db.Vsctl(t, "port-to-br", port); strings.TrimSpace(got) != "br-old" {
		t.Errorf("os-vif's port %s is on %q, want br-old", port, got)
	}
	if got := db.Get(t, "Interface", port, "external_ids:iface-id"); strings.Trim(got, `"`) != vif.ID {
		t.Errorf("iface-id of %s = %s, want %s", port, got, vif.ID)
	}

	// os-vif unplugs (the VM is gone): the daemon then deletes the bridge it no longer wants.
	if log, err := lab.OSVIFUnplugWith(ctx, db.Endpoint, vif, lab.OSVIFOptions{}); err != nil {
		t.Fatalf("os-vif unplug: %v\n%s", err, log)
	}
	lab.WaitFor(t, 2*time.Minute, "br-old deleted once its last foreign port left", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-br")
		if err != nil {
			return err
		}
		if strings.Contains(out, "br-old") {
			return fmt.Errorf("bridges: %q", out)
		}
		return nil
	})
	if out := db.Vsctl(t, "list-br"); !strings.Contains(out, "br-keep") {
		t.Errorf("bridges after the deletion: %q, want br-keep kept", out)
	}
}
