//go:build linux

package overlaybed

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// fabricSchema is the fabric database's schema, relative to this package.
const fabricSchema = "../../../overlay/fabric/schema/fabric.ovsschema"

// TestPluginBed runs the short bed with the real ovsplaned and overlay plugin on every site and
// the fabric cluster: the controller publishes a route version, every site acks it, and a1's
// pings reach b1 (other carrier) through the super node s1, as the relays' counters show.
func TestPluginBed(t *testing.T) {
	lab.Require(t, lab.NeedTraffic, lab.NeedOVS)
	b := New(t, Spec{Sites: ShortSites, PluginRoutes: true})
	p := b.StartPlugin(t, PluginSpec{FabricSchema: fabricSchema})
	c := p.WaitConverged(t, b, 0, 2*time.Minute)
	t.Logf("route version %d, sites at %v", c.Version, c.Applied)
	lab.WaitFor(t, 30*time.Second, "a1 reaching b1 over the overlay", func(ctx context.Context) error {
		return b.Warm(ctx, "a1", "b1")
	})
	path, st, err := b.ObservePath(t.Context(), "a1", "b1", 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a1→b1: path %v, %d/%d replies, rtt %v", path, st.Received, st.Transmitted, st.AvgRTT)
	if want := []string{"a1", "s1", "b1"}; !slices.Equal(path, want) {
		t.Errorf("a1→b1 took %v, want %v (ordinary sites never talk directly)", path, want)
	}
	if floor := 4 * DefaultSuperDelay; st.AvgRTT < floor {
		t.Errorf("a1→b1 round trip %v, below the relays' %v", st.AvgRTT, floor)
	}
}
