//go:build linux

package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// TestLabOSVIFDatapathConflict is the known fight between os-vif and ovsplane, with the real
// os-vif (Debian's python3-os-vif over python3-ovsdbapp) on a real ovsdb-server and
// ovs-vswitchd: the reconciler owns br-int with datapath_type netdev; every plug of a plain OVS
// VIF whose port profile carries no datapath_type makes os-vif write "system" onto the bridge
// (ovsdbapp add_br may_exist), and the reconciler sets it back. The first repairs are plain
// drift; the third within the window is a conflict: the bridge's status is an error naming
// the column, os-vif's value and the fix (Neutron's [ovs] datapath_type), one error line is
// logged, and OnConflict reports every repair from then on. The reconciler keeps repairing
// (the bridge ends netdev after every plug), and os-vif's ports are left as os-vif wrote
// them. A VIF whose profile carries datapath_type netdev (the fix) flips nothing.
func TestLabOSVIFDatapathConflict(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedOSVIF)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var reports []reconcile.Conflict
	logs := &testkit.LogBuffer{}
	r := labReconcilerWith(t, db, desired(model.Bridge{Name: "br-int", DatapathType: "netdev", Ports: []model.Port{internalPort("cfg0")}}),
		reconcile.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second,
			DriftDelay: 100 * time.Millisecond, ConflictRepairs: 3, ConflictWindow: time.Hour,
			OnConflict: func(c reconcile.Conflict) {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, c)
			}})
	labState(t, r, "bridge/br-int", model.StateReady)
	labState(t, r, "interface/cfg0", model.StateReady)

	vif := func(i int) lab.VIF {
		return lab.VIF{Kind: lab.VIFOpenVSwitch, ID: fmt.Sprintf("4e5f6a%02d-8c9d-4e0f-9a1b-2c3d4e5f6000", i),
			Address: fmt.Sprintf("fa:16:3e:00:10:%02x", i), InstanceUUID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reports)
	}
	// plug plugs VIF i and waits until the reconciler has set the datapath back to netdev.
	plug := func(v lab.VIF) {
		t.Helper()
		if err := lab.OSVIFPlug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
		lab.WaitFor(t, time.Minute, "br-int back to netdev after plugging "+v.PortName(), func(ctx context.Context) error {
			out, _, err := db.VsctlErr(ctx, "get", "Bridge", "br-int", "datapath_type")
			if err != nil {
				return err
			}
			if out != "netdev" {
				return fmt.Errorf("datapath_type %s", out)
			}
			return nil
		})
	}
	for i := 1; i <= 2; i++ {
		plug(vif(i))
		if s, _ := statusOf(r, "bridge/br-int"); s.State == model.StateError && strings.Contains(s.Error, "conflict") {
			t.Fatalf("after %d repairs (threshold 3) br-int is already in conflict: %+v", i, s)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("OnConflict called %d times before the threshold", n)
	}
	plug(vif(3))
	s := labState(t, r, "bridge/br-int", model.StateError)
	for _, want := range []string{`another OVSDB writer keeps setting bridge "br-int" datapath_type to "system"`,
		`repaired it to "netdev" 3 times`, "os-vif", "[ovs] datapath_type = netdev", "openvswitch_agent.ini"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("br-int's status %q lacks %q", s.Error, want)
		}
	}
	if n := strings.Count(logs.String(), "conflict with another OVSDB writer"); n != 1 {
		t.Errorf("the conflict was logged %d times, want once:\n%s", n, logs.String())
	}
	// Still repaired, and every further repair is reported.
	plug(vif(4))
	lab.WaitFor(t, 30*time.Second, "OnConflict for the 3rd and 4th repairs", func(context.Context) error {
		if n := count(); n < 2 {
			return fmt.Errorf("%d reports", n)
		}
		return nil
	})
	mu.Lock()
	first, last := reports[0], reports[len(reports)-1]
	mu.Unlock()
	if !first.Active || first.Repairs != 3 || first.Column != "datapath_type" || first.Theirs != "system" || first.Ours != "netdev" ||
		first.Key() != "bridge/br-int" || !last.Active || last.Repairs != 4 {
		t.Errorf("OnConflict reports: first %+v, last %+v", first, last)
	}
	// The fix: a profile carrying datapath_type netdev writes netdev, which is no change.
	fixed := vif(5)
	fixed.DatapathType = "netdev"
	if err := lab.OSVIFPlug(ctx, db.Endpoint, fixed); err != nil {
		t.Fatal(err)
	}
	if got := db.Get(t, "Bridge", "br-int", "datapath_type"); got != "netdev" {
		t.Errorf("br-int datapath_type %s after a plug with the fixed profile", got)
	}
	// os-vif's ports stay as os-vif wrote them: on br-int, untagged, with their external_ids.
	for i := 1; i <= 5; i++ {
		v := vif(i)
		ext := db.Get(t, "Interface", v.PortName(), "external_ids")
		if strings.Contains(ext, ovsdb.OwnerKey) || !strings.Contains(ext, v.ID) || !strings.Contains(ext, v.Address) {
			t.Errorf("os-vif's interface %s: external_ids %s", v.PortName(), ext)
		}
		if got := db.Vsctl(t, "port-to-br", v.PortName()); got != "br-int" {
			t.Errorf("os-vif's port %s on %q", v.PortName(), got)
		}
	}
}

// TestLabAgentFailModeConflict: the other writer Neutron's OVS agent is on the bridges it
// programs — ovs-vsctl set-fail-mode secure and set Bridge protocols, as the agent does at
// every start — against a bridge ovsplaned owns without either: the third repair of each
// column within the window is a conflict, both columns named in the bridge's status with the
// agent's values and the fix; the reconciler keeps repairing.
func TestLabAgentFailModeConflict(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	r := labReconcilerWith(t, db, desired(model.Bridge{Name: "br-phy", DatapathType: "netdev"}),
		reconcile.Options{DriftDelay: 100 * time.Millisecond, ConflictRepairs: 3, ConflictWindow: time.Hour})
	labState(t, r, "bridge/br-phy", model.StateReady)
	for i := 1; i <= 3; i++ {
		db.Vsctl(t, "set-fail-mode", "br-phy", "secure", "--", "set", "Bridge", "br-phy", "protocols=OpenFlow10,OpenFlow13")
		lab.WaitFor(t, time.Minute, "br-phy repaired", func(ctx context.Context) error {
			fm, _, err := db.VsctlErr(ctx, "get-fail-mode", "br-phy")
			if err != nil {
				return err
			}
			pr, _, err := db.VsctlErr(ctx, "get", "Bridge", "br-phy", "protocols")
			if err != nil {
				return err
			}
			if fm != "" || pr != "[]" {
				return fmt.Errorf("fail_mode %q, protocols %s", fm, pr)
			}
			return nil
		})
	}
	s := labState(t, r, "bridge/br-phy", model.StateError)
	for _, want := range []string{`bridge "br-phy" fail_mode to "secure"`, `bridge "br-phy" protocols to "OpenFlow10,OpenFlow13"`,
		"Neutron OVS agent", "give the bridge the same fail_mode"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("br-phy's status %q lacks %q", s.Error, want)
		}
	}
}
