// Package overlayapitest builds a small overlay fabric on a real 3-member clustered OVSDB for
// the overlay view's tests (vswitchd/overlayapi, vsctl overlay, the page in Chromium). Test
// support only.
package overlayapitest

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Fabric is a started cluster holding the fixture, with a client to change it.
type Fabric struct {
	Cluster *lab.OVSDBCluster
	Client  *fabric.Client
}

// The fixture: two super nodes on two carriers, three ordinary nodes.
//
//	o1 ─(100 Mbit/s, 5 ms)─ s1 ─(1 Gbit/s, 5 ms)─ s2 ─(100 Mbit/s, 5 ms)─ o2
//	o3 ─(1 Gbit/s, 130 ms)─ s1,  o3 ─(1 Gbit/s, 1 ms)─ s2
//	o1 ─ o2 measured too (two ordinary ends: never used)
//
// Route version 1 is published from exactly these links; s1, s2, o1 and o2 acked it, o3 did
// not (applied 0). The lookup o1 → o2 is o1 s1 s2 o2 at cost 15000 + 6000 + 15000 = 36000.
const (
	LookupSrc  = "o1"
	LookupDst  = "o2"
	LookupCost = 36000
	Version    = 1
	Lagging    = "o3"
)

// LookupPath is the fixture's path from LookupSrc to LookupDst.
func LookupPath() []string { return []string{"o1", "s1", "s2", "o2"} }

// SchemaPath is the fabric schema's absolute path.
func SchemaPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "overlay", "fabric", "schema", "fabric.ovsschema")
}

// Start starts a 3-member cluster (lab.StartOVSDBCluster: it requires Open vSwitch's
// ovsdb-server) and writes the fixture through overlay/fabric's client.
func Start(t testing.TB) *Fabric {
	t.Helper()
	cl := lab.StartOVSDBCluster(t, SchemaPath())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := fabric.Open(ctx, fabric.Config{Endpoints: cl.Endpoints(), Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("overlayapitest: open the fabric: %v", err)
	}
	t.Cleanup(c.Close)
	for _, n := range []fabric.NodeSpec{
		{Name: "s1", Kind: fabric.KindSuper, Carriers: []string{"carrier-a", "carrier-b"}, Underlay: []string{"192.0.2.1:4789"}},
		{Name: "s2", Kind: fabric.KindSuper, Carriers: []string{"carrier-a", "carrier-b"}, Underlay: []string{"192.0.2.2:4789"}},
		{Name: "o1", Kind: fabric.KindOrdinary, Carriers: []string{"carrier-a"}, Underlay: []string{"198.51.100.1"}},
		{Name: "o2", Kind: fabric.KindOrdinary, Carriers: []string{"carrier-b"}, Underlay: []string{"198.51.100.2"}},
		{Name: "o3", Kind: fabric.KindOrdinary, Carriers: []string{"carrier-b"}, Underlay: []string{"198.51.100.3"}},
	} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatalf("overlayapitest: register %s: %v", n.Name, err)
		}
	}
	for _, l := range []fabric.LinkReport{
		{A: "o1", B: "s1", BandwidthKbps: 100_000, LatencyUs: 5_000, LossPPM: 100},
		{A: "s1", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 5_000},
		{A: "o2", B: "s2", BandwidthKbps: 100_000, LatencyUs: 5_000},
		{A: "o3", B: "s1", BandwidthKbps: 1_000_000, LatencyUs: 130_000},
		{A: "o3", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 1_000},
		{A: "o1", B: "o2", BandwidthKbps: 10_000, LatencyUs: 130_000, LossPPM: 20_000},
	} {
		if err := c.ReportLink(ctx, l); err != nil {
			t.Fatalf("overlayapitest: report %s–%s: %v", l.A, l.B, err)
		}
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	links, err := c.Links(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tables, _, err := controller.Tables(nodes, links)
	if err != nil {
		t.Fatalf("overlayapitest: route tables: %v", err)
	}
	if p, err := c.PublishRoutes(ctx, nil, Version, tables); err != nil || !p.Wrote {
		t.Fatalf("overlayapitest: publish version %d: %+v, %v", Version, p, err)
	}
	for _, n := range []string{"s1", "s2", "o1", "o2"} {
		if _, err := c.AckVersion(ctx, n, Version); err != nil {
			t.Fatalf("overlayapitest: %s acks %d: %v", n, Version, err)
		}
	}
	return &Fabric{Cluster: cl, Client: c}
}
