package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// labReconciler dials the lab's OVSDB and runs a Reconciler for d until the test ends.
func labReconciler(t *testing.T, db *lab.OVSDB, d config.DesiredState) *reconcile.Reconciler {
	t.Helper()
	return labReconcilerWith(t, db, d, reconcile.Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second})
}

// labReconcilerWith is labReconciler with opts (a nil Logger discards the logs).
func labReconcilerWith(t *testing.T, db *lab.OVSDB, d config.DesiredState, opts reconcile.Options) *reconcile.Reconciler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	r := reconcile.New(c, d, opts)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	return r
}

// labState waits until the object key has state st and returns its status.
func labState(t *testing.T, r *reconcile.Reconciler, key string, st model.State) model.Status {
	t.Helper()
	var got model.Status
	lab.WaitFor(t, 60*time.Second, key+" "+string(st), func(context.Context) error {
		s, ok := statusOf(r, key)
		if !ok || s.State != st {
			return fmt.Errorf("%s: %+v (found %v)", key, s, ok)
		}
		got = s
		return nil
	})
	return got
}

func internalPort(name string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "internal"}}}
}

// TestLabConflictIsolated: on a real ovsdb-server and ovs-vswitchd, a configured port whose
// name belongs to a port ovs-vsctl created on another bridge reports the conflict as its own
// error, while an unrelated owned port deleted behind the reconciler's back is recreated and
// the other bridge is created; the foreign bridge and port stay as they were.
func TestLabConflictIsolated(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	db.Vsctl(t, "add-br", "brx", "--", "add-port", "brx", "taken0", "--", "set", "Interface", "taken0", "type=internal")

	r := labReconciler(t, db, desired(
		model.Bridge{Name: "br0", Ports: []model.Port{internalPort("p1"), internalPort("p2"), internalPort("taken0")}},
		model.Bridge{Name: "br1", Ports: []model.Port{internalPort("q1")}}))
	for _, k := range []string{"bridge/br0", "bridge/br1", "interface/p1", "interface/p2", "interface/q1"} {
		labState(t, r, k, model.StateReady)
	}
	s := labState(t, r, "port/taken0", model.StateError)
	for _, part := range []string{`port "taken0" refused`, ovsdb.ErrNotOwned.Error(), "remove or rename it by hand, or pick another name"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("port/taken0 error %q does not contain %q", s.Error, part)
		}
	}

	// Drift repaired beside the conflict.
	db.Vsctl(t, "del-port", "br0", "p2")
	labState(t, r, "interface/p2", model.StateReady)
	lab.WaitFor(t, 60*time.Second, "p2 back on br0", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-ports", "br0")
		if err != nil {
			return err
		}
		if got := strings.Join(strings.Fields(out), " "); got != "p1 p2" {
			return fmt.Errorf("ports of br0: %q, want \"p1 p2\"", got)
		}
		return nil
	})
	if got := strings.Join(strings.Fields(db.Vsctl(t, "list-ports", "brx")), " "); got != "taken0" {
		t.Errorf("ports of brx: %q, want the foreign taken0 only", got)
	}
	if ext := db.Get(t, "Port", "taken0", "external_ids"); strings.Contains(ext, ovsdb.OwnerKey) {
		t.Errorf("foreign port taken0 was tagged: %s", ext)
	}
	if s, _ := statusOf(r, "port/taken0"); s.State != model.StateError {
		t.Errorf("port/taken0 %+v, want still in error while the foreign port holds the name", s)
	}
}

// TestLabDatapathFailureIsAnError: a bridge whose datapath ovs-vswitchd cannot create (an
// unknown datapath_type) reports that as its status, with the types this ovs-vswitchd supports,
// instead of staying pending forever; its ports report why they have no ofport, and a good
// bridge beside it is ready.
func TestLabDatapathFailureIsAnError(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	r := labReconciler(t, db, desired(
		model.Bridge{Name: "br0", Ports: []model.Port{internalPort("p1")}},
		model.Bridge{Name: "brbad", DatapathType: "bogus", Ports: []model.Port{internalPort("b1")}}))
	labState(t, r, "bridge/br0", model.StateReady)
	labState(t, r, "interface/p1", model.StateReady)
	s := labState(t, r, "bridge/brbad", model.StateError)
	for _, part := range []string{`could not create bridge "brbad"`, `datapath_type "bogus" is not one this ovs-vswitchd supports`, "netdev"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("bridge/brbad error %q does not contain %q", s.Error, part)
		}
	}
	is := labState(t, r, "interface/b1", model.StateError)
	if !strings.Contains(is.Error, `its bridge "brbad" does not exist in ovs-vswitchd`) {
		t.Errorf("interface/b1 error %q does not name its bridge's failure", is.Error)
	}
	labState(t, r, "port/b1", model.StateError)
	// The row stays as written (ovsplane reports, it does not undo); fixing the type fixes it.
	if got := db.Get(t, "Bridge", "brbad", "datapath_type"); got != "bogus" {
		t.Errorf("brbad datapath_type %s, want bogus kept", got)
	}
	r.Update(desired(
		model.Bridge{Name: "br0", Ports: []model.Port{internalPort("p1")}},
		model.Bridge{Name: "brbad", DatapathType: "netdev", Ports: []model.Port{internalPort("b1")}}))
	labState(t, r, "bridge/brbad", model.StateReady)
	labState(t, r, "interface/b1", model.StateReady)
}

// TestLabNoFalseBridgeErrors: while bridges are created one after another on real
// ovs-vswitchd (dummy and userspace datapaths), no status ever reports a bridge or interface
// error — the failed-datapath check (ovsdb.Client.BridgeErrors) must not flag a bridge that
// ovs-vswitchd is still setting up.
func TestLabNoFalseBridgeErrors(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	for _, mode := range []lab.Mode{lab.Dummy, lab.Userspace} {
		t.Run(mode.String(), func(t *testing.T) {
			db := lab.StartOVSDB(t)
			db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: mode})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint}, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var mu sync.Mutex
			var bad []string
			r := reconcile.New(c, config.DesiredState{}, reconcile.Options{Logger: quiet, OnChange: func(ch []model.Status) {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range ch {
					if s.State == model.StateError {
						bad = append(bad, fmt.Sprintf("%s %s", s.Key(), s.Error))
					}
				}
			}})
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- r.Run(runCtx) }()
			defer func() { stop(); <-done }()
			var bridges []model.Bridge
			for i := range 6 {
				bridges = append(bridges, model.Bridge{Name: fmt.Sprintf("br%d", i), DatapathType: "netdev",
					Ports: []model.Port{internalPort(fmt.Sprintf("p%d", i))}})
				r.Update(desired(bridges...))
				labState(t, r, fmt.Sprintf("bridge/br%d", i), model.StateReady)
				labState(t, r, fmt.Sprintf("interface/p%d", i), model.StateReady)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Errorf("errors reported for bridges that ovs-vswitchd created: %v", bad)
			}
		})
	}
}

// TestLabSystemDatapath: a bridge of the kernel datapath (datapath_type unset, the default of
// the configuration file) on a real, non-dummy ovs-vswitchd is ready where the openvswitch
// kernel module is loaded, and otherwise an error that names the module and the netdev
// alternative — never pending forever. The machines of ovs-lab.md have no such module.
func TestLabSystemDatapath(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace})
	r := labReconciler(t, db, desired(model.Bridge{Name: "brk", Ports: []model.Port{internalPort("k1")}},
		model.Bridge{Name: "bru", DatapathType: "netdev"}))
	labState(t, r, "bridge/bru", model.StateReady)
	if _, err := os.Stat("/sys/module/openvswitch"); err == nil {
		labState(t, r, "bridge/brk", model.StateReady)
		return
	}
	s := labState(t, r, "bridge/brk", model.StateError)
	for _, part := range []string{`could not create bridge "brk"`, "openvswitch kernel module", "modprobe openvswitch", `datapath_type "netdev"`} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("bridge/brk error %q does not contain %q", s.Error, part)
		}
	}
	labState(t, r, "interface/k1", model.StateError)
}
