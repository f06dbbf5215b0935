//go:build linux

package overlaybed

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestWaitLinksTakesTheVersionThatHoldsEveryLink plays the controller and the agents by hand on
// a real fabric cluster, in the order that made TestPluginBed hang in CI: the version holding
// the last link is published and acked before WaitLinks looks, and none follows (the
// controller publishes only when the tables move). WaitLinks must return that version; it
// used to wait for a newer one until its timeout. On the way, linksConverged must say what is
// missing: a link not measured, then a version that predates a link.
func TestWaitLinksTakesTheVersionThatHoldsEveryLink(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	cl := lab.StartOVSDBCluster(t, fabricSchema)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	fc, err := fabric.Open(ctx, fabric.Config{Endpoints: cl.Endpoints(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open the fabric: %v", err)
	}
	t.Cleanup(fc.Close)
	specs := append(ShortSites(), SiteSpec{Name: "s2", Carriers: []string{"A", "B"}, Super: true})
	b := &Bed{}
	for i, ss := range specs {
		b.Sites = append(b.Sites, &Site{SiteSpec: ss, Index: i + 1})
		kind := fabric.KindOrdinary
		if ss.Super {
			kind = fabric.KindSuper
		}
		spec := fabric.NodeSpec{Name: ss.Name, Kind: kind, Carriers: ss.Carriers, Underlay: []string{fmt.Sprintf("10.80.0.%d", i+1)}}
		if err := fc.RegisterNode(ctx, spec); err != nil {
			t.Fatalf("register %s: %v", ss.Name, err)
		}
	}
	p := &Plugin{Cluster: cl, Fabric: fc}
	want := b.probedLinks()
	if got := strings.Join(want, " "); got != "a1-s1 a1-s2 b1-s1 b1-s2 s1-s2" {
		t.Fatalf("probed links %q", got)
	}
	report := func(a, b string, latencyUs int64) {
		t.Helper()
		if err := fc.ReportLink(ctx, fabric.LinkReport{A: a, B: b, BandwidthKbps: 50_000, LatencyUs: latencyUs}); err != nil {
			t.Fatalf("report %s-%s: %v", a, b, err)
		}
	}
	// publish publishes the tables the fabric's nodes and links give, as the controller does,
	// and acks the version for every site, as the agents do.
	publish := func(version int64) {
		t.Helper()
		nodes, err := fc.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		links, err := fc.Links(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tables, _, err := controller.Tables(nodes, links)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fc.PublishRoutes(ctx, nil, version, tables); err != nil {
			t.Fatalf("publish version %d: %v", version, err)
		}
		for _, s := range b.Sites {
			if _, err := fc.AckVersion(ctx, s.Name, version); err != nil {
				t.Fatalf("ack version %d for %s: %v", version, s.Name, err)
			}
		}
	}

	report("a1", "s1", 5_000)
	report("b1", "s1", 5_000)
	report("a1", "s2", 20_000)
	report("b1", "s2", 20_000)
	publish(1)
	if _, err := p.linksConverged(ctx, b, want); err == nil || !strings.Contains(err.Error(), "not measured yet: [s1-s2]") {
		t.Fatalf("before s1-s2 was measured: %v, want it named as not measured", err)
	}
	report("s1", "s2", 20_000)
	if _, err := p.linksConverged(ctx, b, want); err == nil || !strings.Contains(err.Error(), "route version 1 predates the measured links") {
		t.Fatalf("version 1 lacks s1-s2: %v, want it named as predating the links", err)
	}
	publish(2)
	c := p.WaitLinks(t, b, time.Minute)
	if c.Version != 2 || c.MinApplied != 2 {
		t.Errorf("WaitLinks returned %+v, want version 2 acked everywhere", c)
	}
	d := p.Describe(ctx)
	for _, part := range []string{"route version 2, acked map[a1:2 b1:2 s1:2 s2:2]", "; link s1-s2: 20000 µs, 50000 kbit/s, loss 0 ppm at ", "; a1 routes map["} {
		if !strings.Contains(d, part) {
			t.Errorf("Describe: %s\nwant it to hold %q", d, part)
		}
	}
}
