package metrics_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/vswitchd/metrics"
)

// Each repair of a column in conflict counts and holds the gauge at 1; the end sets it to 0
// and keeps the count; other columns are series of their own.
func TestConflicts(t *testing.T) {
	m := metrics.New("1.2.3", "ovs", nil)
	c := metrics.NewConflicts(m)
	c.Observe("bridge/br-int", "datapath_type", true)
	c.Observe("bridge/br-int", "datapath_type", true)
	c.Observe("bridge/br-phy", "fail_mode", true)
	c.Observe("bridge/br-phy", "fail_mode", false)
	out := scrape(t, m)
	for _, want := range []string{
		`ovsplane_reconcile_conflict{column="datapath_type",object="bridge/br-int"} 1`,
		`ovsplane_reconcile_conflict_repairs_total{column="datapath_type",object="bridge/br-int"} 2`,
		`ovsplane_reconcile_conflict{column="fail_mode",object="bridge/br-phy"} 0`,
		`ovsplane_reconcile_conflict_repairs_total{column="fail_mode",object="bridge/br-phy"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
