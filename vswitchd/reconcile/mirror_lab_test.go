package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestLabMirror: on the real ovs-vswitchd (dummy datapath), a bridge's desired mirror (packets
// received on p1, out of p3) becomes an owned Mirror row naming the ports; packets received on
// p1 are copied out of p3 (which, as a mirror output, gets nothing else) and counted in the
// mirror's statistics; an operator clearing the bridge's mirrors is drift, repaired; a second
// reconciler (a restarted daemon) rewrites nothing; dropping the mirror removes the row.
func TestLabMirror(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	one := func(v int) *int { return &v }
	port := func(name string, ofport int) model.Port {
		return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, OFPortRequest: one(ofport)}}}
	}
	span := model.Mirror{Name: "span", SelectSrcPorts: []string{"p1"}, OutputPort: "p3"}
	br := func(ms ...model.Mirror) model.Bridge {
		return model.Bridge{Name: "br0", FailMode: "standalone", Mirrors: ms,
			Ports: []model.Port{port("p1", 1), port("p2", 2), port("p3", 3)}}
	}
	r := labReconciler(t, db, desired(br(span)))
	labState(t, r, "mirror/br0/span", model.StateReady)
	labState(t, r, "interface/p3", model.StateReady)
	if ext := db.Get(t, "Mirror", "span", "external_ids"); !strings.Contains(ext, ovsdb.OwnerKey+"=ovsplane") {
		t.Errorf("mirror external_ids %s, want owned", ext)
	}
	p1 := strings.Trim(db.Get(t, "Port", "p1", "_uuid"), `"`)
	p3 := strings.Trim(db.Get(t, "Port", "p3", "_uuid"), `"`)
	if src, out := db.Get(t, "Mirror", "span", "select_src_port"), db.Get(t, "Mirror", "span", "output_port"); src != "["+p1+"]" || out != p3 {
		t.Errorf("mirror select_src_port %s output_port %s, want [%s] and %s", src, out, p1, p3)
	}

	lab.WaitFor(t, 60*time.Second, "mirrored packets out of p3", func(ctx context.Context) error {
		if _, stderr, err := vs.AppctlErr(ctx, "netdev-dummy/receive", "p1", udpPacket(1)); err != nil {
			return fmt.Errorf("netdev-dummy/receive: %w: %s", err, stderr)
		}
		out, _, err := db.VsctlErr(ctx, "get", "Mirror", "span", "statistics:tx_packets")
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || n == 0 {
			return fmt.Errorf("mirror tx_packets %q", out)
		}
		tx, _, err := db.VsctlErr(ctx, "get", "Interface", "p3", "statistics:tx_packets")
		if err != nil || strings.TrimSpace(tx) == "0" {
			return fmt.Errorf("p3 tx_packets %q %v", tx, err)
		}
		return nil
	})

	// Drift: an operator clears the bridge's mirrors; the reconciler creates it again.
	db.Vsctl(t, "clear", "Bridge", "br0", "mirrors")
	lab.WaitFor(t, 60*time.Second, "mirror recreated", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "get", "Bridge", "br0", "mirrors")
		if err != nil || strings.TrimSpace(out) == "[]" {
			return fmt.Errorf("bridge mirrors %q %v", out, err)
		}
		return nil
	})
	labState(t, r, "mirror/br0/span", model.StateReady)

	// A second reconciler (a restarted daemon): no rewrite.
	uuid, ext := db.Get(t, "Mirror", "span", "_uuid"), db.Get(t, "Mirror", "span", "external_ids")
	r2 := labReconciler(t, db, desired(br(span)))
	labState(t, r2, "mirror/br0/span", model.StateReady)
	if err := r2.Reconcile(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second reconciler's pass: %v", err)
	}
	if u, e := db.Get(t, "Mirror", "span", "_uuid"), db.Get(t, "Mirror", "span", "external_ids"); u != uuid || e != ext {
		t.Errorf("after a restart: mirror %s %s, want unchanged %s %s", u, e, uuid, ext)
	}

	// Dropped: unlinked, and OVSDB deletes the row.
	r.Update(desired(br()))
	r2.Update(desired(br()))
	lab.WaitFor(t, 60*time.Second, "mirror removed", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "--columns=_uuid", "list", "Mirror")
		if err != nil || strings.TrimSpace(out) != "" {
			return fmt.Errorf("Mirror rows %q %v", out, err)
		}
		return nil
	})
	// r2 may have deleted the row before r's own pass (kicked by its Update) ended: the
	// status goes with that pass.
	lab.WaitFor(t, 60*time.Second, "mirror status gone", func(context.Context) error {
		if st, ok := statusOf(r, "mirror/br0/span"); ok {
			return fmt.Errorf("mirror status still there after it was dropped: %+v", st)
		}
		return nil
	})
}
