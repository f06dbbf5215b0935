//go:build linux

package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

const schema = "../fabric/schema/fabric.ovsschema"

// open connects a fabric client to the cluster and closes it at cleanup.
func open(t *testing.T, cl *lab.OVSDBCluster) *fabric.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	c, err := fabric.Open(ctx, fabric.Config{Endpoints: cl.Endpoints(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("open fabric: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// seed registers two supers and two ordinary nodes on different carriers.
func seed(t *testing.T, fc *fabric.Client) {
	t.Helper()
	ctx := t.Context()
	for _, n := range []fabric.NodeSpec{{Name: "s1", Kind: fabric.KindSuper}, {Name: "s2", Kind: fabric.KindSuper},
		{Name: "o1", Kind: fabric.KindOrdinary}, {Name: "o2", Kind: fabric.KindOrdinary}} {
		if err := fc.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []fabric.LinkReport{{A: "s1", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 5000},
		{A: "o1", B: "s1", BandwidthKbps: 100_000, LatencyUs: 5000}, {A: "o2", B: "s2", BandwidthKbps: 100_000, LatencyUs: 5000},
		{A: "o1", B: "o2", BandwidthKbps: 100_000, LatencyUs: 1}} { // ordinary–ordinary: ignored
		if err := fc.ReportLink(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

func newController(t *testing.T, fc *fabric.Client, holder string) *controller.Controller {
	t.Helper()
	c, err := controller.New(controller.Config{Fabric: fc, Holder: holder, CostHysteresis: controller.MinCostHysteresis, LeaseTTL: time.Second, Period: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOneActiveAndTakeover: two controllers run; exactly one publishes; a metric change gives
// exactly one version; cancelling the active one hands over after lease expiry and the
// successor continues the sequence without gap or repeat.
func TestOneActiveAndTakeover(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, schema)
	fc := open(t, cl)
	seed(t, fc)
	ctls := []*controller.Controller{newController(t, open(t, cl), "ctl-a"), newController(t, open(t, cl), "ctl-b")}
	cancels := make([]context.CancelFunc, 2)
	done := make([]chan error, 2)
	for i, c := range ctls {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i], done[i] = cancel, make(chan error, 1)
		go func() { done[i] <- c.Run(ctx); close(done[i]) }()
		t.Cleanup(func() { cancel(); <-done[i] })
	}
	lab.WaitFor(t, 10*time.Second, "version 1 published", func(ctx context.Context) error {
		st, err := fc.Status(ctx)
		if err != nil || st.RouteVersion != 1 {
			return fmt.Errorf("status %+v, %v", st, err)
		}
		return nil
	})
	// Let both run several rounds with nothing changing.
	lab.WaitFor(t, 10*time.Second, "five skipped rounds", func(context.Context) error {
		for _, c := range ctls {
			if s := c.Stats(); s.Holding && s.Skipped >= 5 {
				return nil
			}
		}
		return fmt.Errorf("stats %+v %+v", ctls[0].Stats(), ctls[1].Stats())
	})
	a, b := ctls[0].Stats(), ctls[1].Stats()
	if a.Holding == b.Holding || a.Published+b.Published != 1 {
		t.Fatalf("want exactly one holder and one publish: a %+v, b %+v", a, b)
	}
	act := 0
	if b.Holding {
		act = 1
	}
	other := 1 - act
	if s := ctls[act].Stats(); s.LinksIgnored != 1 {
		t.Errorf("links ignored = %d, want 1 (the ordinary–ordinary link)", s.LinksIgnored)
	}
	tables, err := fc.Routes(t.Context(), 1)
	if err != nil {
		t.Fatalf("routes of version 1: %v, %v", tables, err)
	}
	if tables["o1"]["s2"] == "" || tables["s1"]["o1"] == "" || tables["o1"]["att.s1"] == "" {
		t.Fatalf("routes of version 1 miss entries: %v", tables)
	}
	// A metric change: exactly one new version.
	if err := fc.ReportLink(t.Context(), fabric.LinkReport{A: "s1", B: "s2", BandwidthKbps: 1_000_000, LatencyUs: 9000}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 10*time.Second, "version 2", func(ctx context.Context) error {
		if s := ctls[act].Stats(); s.Version != 2 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	skipped := ctls[act].Stats().Skipped
	lab.WaitFor(t, 10*time.Second, "three more skipped rounds", func(context.Context) error {
		if s := ctls[act].Stats(); s.Skipped < skipped+3 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	if st, err := fc.Status(t.Context()); err != nil || st.RouteVersion != 2 {
		t.Fatalf("after one metric change: %+v, %v; want version 2", st, err)
	}
	if s := ctls[act].Stats(); s.Published != 2 {
		t.Fatalf("active published %d, want 2", s.Published)
	}
	// Kill the active controller: the other takes over after expiry and continues.
	cancels[act]()
	<-done[act]
	lab.WaitFor(t, 10*time.Second, "takeover", func(context.Context) error {
		if s := ctls[other].Stats(); !s.Holding || s.Version != 2 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	if s := ctls[other].Stats(); s.Published != 0 {
		t.Fatalf("successor republished unchanged routes: %+v", s)
	}
	if err := fc.ReportLink(t.Context(), fabric.LinkReport{A: "o2", B: "s2", BandwidthKbps: 50_000, LatencyUs: 5000}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 10*time.Second, "version 3 from the successor", func(ctx context.Context) error {
		if s := ctls[other].Stats(); s.Version != 3 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	if s := ctls[other].Stats(); s.Published != 1 {
		t.Fatalf("successor stats %+v; want one publish", s)
	}
	if st, err := fc.Status(t.Context()); err != nil || st.RouteVersion != 3 {
		t.Fatalf("status %+v, %v; want version 3", st, err)
	}
	for v := int64(1); v <= 3; v++ {
		if tb, err := fc.Routes(t.Context(), v); err != nil || len(tb) == 0 {
			t.Errorf("version %d: %v, %v; want tables (no node acked, nothing dropped)", v, tb, err)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []controller.Config{
		{Holder: "x"},
		{Fabric: &fabric.Client{}, Holder: "bad name"},
		{Fabric: &fabric.Client{}, Holder: "x", LeaseTTL: time.Millisecond},
		{Fabric: &fabric.Client{}, Holder: "x", LeaseTTL: time.Second, Period: time.Second},
		{Fabric: &fabric.Client{}, Holder: "x", LeaseTTL: time.Second, Period: 100 * time.Millisecond, StaleAfter: 150 * time.Millisecond},
	} {
		if _, err := controller.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	// The default stale bound follows a long period.
	if _, err := controller.New(controller.Config{Fabric: &fabric.Client{}, Holder: "x", LeaseTTL: 3 * time.Minute, Period: time.Minute}); err != nil {
		t.Errorf("a 1 min period with the default stale bound: %v", err)
	}
}
