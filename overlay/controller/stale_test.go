//go:build linux

package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/agent"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// nopInstaller accepts every table.
type nopInstaller struct{}

func (nopInstaller) Install(context.Context, int64, map[string]string) error { return nil }

// goRun runs f until the returned stop is called (also at cleanup).
func goRun(t *testing.T, f func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = f(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestStaleNodes: agents heartbeat; when s3's and o2's agents stop, the controller marks both
// stale after its bound (visible in the nodes' health), publishes a version in which no node
// routes through the stale super s3 (the cheap s1–s3–s2 path gives way to the direct s1–s2
// link), keeps the stale ordinary o2 reachable through s2, and MinApplied is not held back by
// either; once s3's agent is back it is up again and routes use it again. Every publish also
// records MinApplied (hv_cfg) in Fabric_Global.
func TestStaleNodes(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, schema)
	fc := open(t, cl)
	specs := []fabric.NodeSpec{{Name: "s1", Kind: fabric.KindSuper}, {Name: "s2", Kind: fabric.KindSuper}, {Name: "s3", Kind: fabric.KindSuper},
		{Name: "o1", Kind: fabric.KindOrdinary}, {Name: "o2", Kind: fabric.KindOrdinary}}
	for _, n := range specs {
		if err := fc.RegisterNode(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []fabric.LinkReport{{A: "s1", B: "s2", LatencyUs: 50_000}, {A: "s1", B: "s3", LatencyUs: 5000},
		{A: "s3", B: "s2", LatencyUs: 5000}, {A: "o1", B: "s1", LatencyUs: 5000}, {A: "o2", B: "s2", LatencyUs: 5000}} {
		l.BandwidthKbps = 100_000
		if err := fc.ReportLink(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	ctl, err := controller.New(controller.Config{Fabric: open(t, cl), Holder: "ctl", CostHysteresis: controller.MinCostHysteresis, LeaseTTL: time.Second, Period: 100 * time.Millisecond,
		StaleAfter: 800 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	goRun(t, ctl.Run)
	stops := map[string]func(){}
	agents := map[string]*agent.Agent{}
	start := func(spec fabric.NodeSpec) {
		a, err := agent.New(agent.Config{Fabric: open(t, cl), Node: spec, Installer: nopInstaller{}, Period: 50 * time.Millisecond,
			Heartbeat: 100 * time.Millisecond, StepTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		if err != nil {
			t.Fatal(err)
		}
		agents[spec.Name], stops[spec.Name] = a, goRun(t, a.Run)
	}
	for _, s := range specs {
		start(s)
	}
	route := func(ctx context.Context, node, dst string) (int64, string, error) {
		st, err := fc.Status(ctx)
		if err != nil {
			return 0, "", err
		}
		tb, err := fc.Routes(ctx, st.RouteVersion)
		return st.RouteVersion, tb[node][dst], err
	}
	lab.WaitFor(t, 20*time.Second, "s1 routing to s2 through s3 and every node acked", func(ctx context.Context) error {
		v, hop, err := route(ctx, "s1", "s2")
		if err != nil || !strings.HasPrefix(hop, "s3 ") {
			return fmt.Errorf("version %d s1→s2 %q, %v", v, hop, err)
		}
		if st, err := fc.Status(ctx); err != nil || st.MinApplied != v {
			return fmt.Errorf("status %+v, %v; want min applied %d", st, err, v)
		}
		return nil
	})
	// Heartbeats keep everyone up well past the bound.
	time.Sleep(1500 * time.Millisecond)
	if s := ctl.Stats(); s.MarkedStale != 0 {
		t.Fatalf("controller marked %d nodes stale while every agent heartbeats: %+v", s.MarkedStale, s)
	}
	for n, a := range agents {
		if a.Stats().Heartbeats == 0 {
			t.Errorf("agent %s sent no heartbeat", n)
		}
	}
	v0, _, _ := route(t.Context(), "s1", "s2")
	// One metric change goes through the incremental path and gives exactly one version.
	before := ctl.Stats()
	if err := fc.ReportLink(t.Context(), fabric.LinkReport{A: "s1", B: "s3", BandwidthKbps: 100_000, LatencyUs: 6000}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 20*time.Second, "the metric change published", func(ctx context.Context) error {
		v, hop, err := route(ctx, "s1", "s2")
		if err != nil || v != v0+1 || hop != "s3 31000" {
			return fmt.Errorf("version %d s1→s2 %q, %v; want %d via s3 at 31000", v, hop, err, v0+1)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // a few more rounds: nothing else to compute
	if s := ctl.Stats(); s.Full != before.Full || s.Incremental != before.Incremental+1 || s.Published != before.Published+1 ||
		s.Unchanged <= before.Unchanged {
		t.Errorf("after one metric change: %+v, before %+v; want one incremental round, one publish, no full recompute", s, before)
	}
	v0++

	stops["s3"]()
	stops["o2"]()
	var vStale int64
	lab.WaitFor(t, 20*time.Second, "s3 and o2 stale, s1 routing direct to s2", func(ctx context.Context) error {
		nodes, err := fc.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if (n.Name == "s3" || n.Name == "o2") != (n.Health == fabric.HealthStale) {
				return fmt.Errorf("node %s health %s", n.Name, n.Health)
			}
		}
		v, hop, err := route(ctx, "s1", "s2")
		if err != nil || !strings.HasPrefix(hop, "s2 ") {
			return fmt.Errorf("version %d s1→s2 %q, %v", v, hop, err)
		}
		vStale = v
		return nil
	})
	if vStale <= v0 {
		t.Fatalf("version %d after s3 went stale, want above %d", vStale, v0)
	}
	tb, err := fc.Routes(t.Context(), vStale)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range tb {
		for dst, hop := range r {
			if strings.HasPrefix(hop, "s3 ") || dst == "s3" {
				t.Errorf("version %d: %s routes %s via %q: the stale s3 must not relay", vStale, n, dst, hop)
			}
		}
	}
	if !strings.HasPrefix(tb["s2"]["o2"], "o2 ") {
		t.Errorf("version %d: s2 → o2 = %q: the stale ordinary o2 stays reachable", vStale, tb["s2"]["o2"])
	}
	lab.WaitFor(t, 20*time.Second, "MinApplied at the new version despite the stale nodes", func(ctx context.Context) error {
		minV, per, err := fc.MinApplied(ctx)
		st, err2 := fc.Status(ctx)
		if err != nil || err2 != nil || minV != vStale || st.MinApplied != vStale || per["s3"] >= vStale {
			return fmt.Errorf("MinApplied %d %v (%v), stored %+v (%v)", minV, per, err, st, err2)
		}
		return nil
	})
	if s := ctl.Stats(); s.MarkedStale != 2 || s.LinksAvoided != 2 || s.MinApplied != vStale {
		t.Errorf("controller %+v: want 2 marked stale, s3's 2 links avoided, min applied %d", s, vStale)
	}

	start(specs[2]) // s3 is back
	lab.WaitFor(t, 20*time.Second, "s3 up and relaying again", func(ctx context.Context) error {
		v, hop, err := route(ctx, "s1", "s2")
		if err != nil || v <= vStale || !strings.HasPrefix(hop, "s3 ") {
			return fmt.Errorf("version %d s1→s2 %q, %v", v, hop, err)
		}
		nodes, err := fc.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Name == "s3" && n.Health != fabric.HealthUp {
				return fmt.Errorf("s3 health %s", n.Health)
			}
		}
		return nil
	})
}
