//go:build linux

package overlaybed

import (
	"slices"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/lab/udprelay"
)

// fabricSchema is the fabric database's schema, relative to this package.
const fabricSchema = "../../../overlay/fabric/schema/fabric.ovsschema"

// TestPluginBed runs the short bed plus a second super node with the real ovsplaned and
// overlay plugin on every site and the fabric cluster: the controller publishes a route
// version, every site acks it, and a1's pings reach b1 (other carrier) through the super node
// s1, the nearer super, as the relays' counters show. Then the a1–s1 path degrades by 100 ms:
// the route moves to s2 and every site acks a version at least as new as the one that moved it. No timing is
// asserted beyond the relays' delay floor and generous timeouts.
func TestPluginBed(t *testing.T) {
	lab.Require(t, lab.NeedTraffic, lab.NeedOVS)
	sites := append(ShortSites(), DefaultSites()[len(DefaultSites())-1]) // s2, 20 ms
	b := New(t, Spec{Sites: sites, PluginRoutes: true})
	p := b.StartPlugin(t, PluginSpec{FabricSchema: fabricSchema})
	c := p.WaitLinks(t, b, 4*time.Minute) // bounded; slow only when the machine is loaded
	t.Logf("route version %d, sites at %v", c.Version, c.Applied)
	path, st := p.ObserveSteadyPath(t, b, "a1", "b1", 5, 2*time.Minute)
	t.Logf("a1→b1: path %v, %d/%d replies, rtt %v", path, st.Received, st.Transmitted, st.AvgRTT)
	if want := []string{"a1", "s1", "b1"}; !slices.Equal(path, want) {
		t.Fatalf("a1→b1 took %v, want %v (ordinary sites never talk directly; s1 is the nearer super); %s", path, want, p.Describe(t.Context()))
	}
	// The path (from the relays' counters) is the assertion; the round trip is only logged.
	t.Logf("a1→b1 round trip %v (the relays' delay: %v)", st.AvgRTT, 4*DefaultSuperDelay)

	m := b.MeasureMove(t, p, "a1", "b1", "a1", "s1", udprelay.Shape{Delay: DefaultSuperDelay + 100*time.Millisecond}, time.Minute)
	if want := []string{"a1", "s2", "b1"}; !slices.Equal(m.After, want) {
		t.Errorf("after degrading a1-s1, a1→b1 took %v, want %v; %s", m.After, want, p.Describe(t.Context()))
	}
	if m.Acked < m.Moved || m.Version < 1 {
		t.Errorf("move %+v: acks before the move or no version", m)
	}
}
