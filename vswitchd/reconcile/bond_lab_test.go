package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestLabBondSettings: on the real ovs-vswitchd (dummy datapath), an active-backup bond's
// typed settings reach the bond (ovs-appctl bond/show reports the updelay, the downdelay and
// the primary, which becomes the active member); an operator's edit of one of its
// other_config keys is repaired; dropping the settings returns the bond to OVS's defaults.
func TestLabBondSettings(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	n := func(v int) *int { return &v }
	br := func(b *model.Bond) model.Bridge {
		return model.Bridge{Name: "br0", FailMode: "standalone", Ports: []model.Port{{Name: "bond0", BondMode: "active-backup",
			Bond: b, Interfaces: []model.Interface{{Name: "e0"}, {Name: "e1"}}}}}
	}
	r := labReconciler(t, db, desired(br(&model.Bond{Updelay: n(250), Downdelay: n(150), DetectMode: "carrier", Primary: "e1"})))
	labState(t, r, "port/bond0", model.StateReady)
	show := func(want ...string) string {
		t.Helper()
		var out string
		lab.WaitFor(t, 60*time.Second, "bond/show with "+strings.Join(want, ", "), func(ctx context.Context) error {
			var err error
			if out, _, err = vs.AppctlErr(ctx, "bond/show", "bond0"); err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("bond/show lacks %q:\n%s", w, out)
				}
			}
			return nil
		})
		return out
	}
	out := show("updelay: 250 ms", "downdelay: 150 ms", "active-backup primary: e1", "active member mac: ", "(e1)\n")
	t.Logf("ovs-appctl bond/show bond0:\n%s", out)

	// Drift: an operator changes the primary; the reconciler puts it back.
	db.Vsctl(t, "set", "Port", "bond0", "other_config:bond-primary=e0")
	lab.WaitFor(t, 60*time.Second, "bond-primary repaired", func(context.Context) error {
		if got := db.Get(t, "Port", "bond0", "other_config:bond-primary"); got != "e1" {
			return fmt.Errorf("bond-primary %s", got)
		}
		return nil
	})
	show("active-backup primary: e1")

	// Dropped: OVS's defaults again.
	r.Update(desired(br(nil)))
	show("updelay: 0 ms", "downdelay: 0 ms")
	if oc := db.Get(t, "Port", "bond0", "other_config"); strings.Contains(oc, "bond-primary") {
		t.Errorf("other_config %s still has bond-primary", oc)
	}
}
