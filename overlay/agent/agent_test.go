//go:build linux

package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/agent"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// recorder is a fake Installer remembering every install.
type recorder struct {
	mu       sync.Mutex
	versions []int64
	last     map[string]string
}

func (r *recorder) Install(_ context.Context, v int64, routes map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, v)
	r.last = maps.Clone(routes)
	return nil
}

func (r *recorder) get() ([]int64, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.versions), maps.Clone(r.last)
}

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

// run runs f in a goroutine until the returned stop is called (also at cleanup).
func run(t *testing.T, f func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = f(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

var specs = []fabric.NodeSpec{{Name: "s1", Kind: fabric.KindSuper}, {Name: "s2", Kind: fabric.KindSuper},
	{Name: "o1", Kind: fabric.KindOrdinary}, {Name: "o2", Kind: fabric.KindOrdinary}}

func newAgent(t *testing.T, fc *fabric.Client, spec fabric.NodeSpec, inst agent.Installer) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Fabric: fc, Node: spec, Installer: inst, Period: 50 * time.Millisecond,
		MaxBackoff: 400 * time.Millisecond, StepTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitAll waits until every agent installed and acked version v and MinApplied is v.
func waitAll(t *testing.T, fc *fabric.Client, agents map[string]*agent.Agent, v int64) {
	t.Helper()
	lab.WaitFor(t, 20*time.Second, fmt.Sprintf("every agent at version %d", v), func(ctx context.Context) error {
		for n, a := range agents {
			if s := a.Stats(); s.Installed != v || s.Applied != v {
				return fmt.Errorf("agent %s: %+v", n, s)
			}
		}
		minV, per, err := fc.MinApplied(ctx)
		if err != nil || minV != v {
			return fmt.Errorf("MinApplied %d %v, %v", minV, per, err)
		}
		return nil
	})
}

func report(t *testing.T, fc *fabric.Client, a, b string, latencyUs int64) {
	t.Helper()
	if err := fc.ReportLink(t.Context(), fabric.LinkReport{A: a, B: b, BandwidthKbps: 100_000, LatencyUs: latencyUs}); err != nil {
		t.Fatal(err)
	}
}

// TestAgentsFollowVersions: agents install and ack each version once; MinApplied reaches the
// newest; with the whole cluster stopped they keep their tables and catch up when it is back;
// a restarted agent resumes from its stored version and catches up.
func TestAgentsFollowVersions(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "../fabric/schema/fabric.ovsschema")
	fc := open(t, cl)
	for _, s := range specs {
		if err := fc.RegisterNode(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	report(t, fc, "s1", "s2", 5000)
	report(t, fc, "o1", "s1", 5000)
	report(t, fc, "o2", "s2", 5000)
	ctl, err := controller.New(controller.Config{Fabric: open(t, cl), Holder: "ctl", CostHysteresis: controller.MinCostHysteresis, LeaseTTL: time.Second, Period: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctl.Run)
	lab.WaitFor(t, 10*time.Second, "version 1", func(context.Context) error {
		if s := ctl.Stats(); s.Version != 1 {
			return fmt.Errorf("controller %+v", s)
		}
		return nil
	})
	agents := map[string]*agent.Agent{}
	recs := map[string]*recorder{}
	stops := map[string]func(){}
	for _, s := range specs {
		recs[s.Name] = &recorder{}
		agents[s.Name] = newAgent(t, open(t, cl), s, recs[s.Name])
		stops[s.Name] = run(t, agents[s.Name].Run)
	}
	waitAll(t, fc, agents, 1)
	report(t, fc, "s1", "s2", 7000)
	waitAll(t, fc, agents, 2)
	for n, a := range agents {
		vs, last := recs[n].get()
		if s := a.Stats(); s.Acks != 2 || !slices.Equal(vs, []int64{1, 2}) || !maps.Equal(last, s.Routes) {
			t.Errorf("agent %s: stats %+v, installs %v; want versions 1 and 2 installed and acked once each", n, s, vs)
		}
	}
	if _, last := recs["o1"].get(); last["s2"] == "" {
		t.Fatalf("o1's table has no route to s2: %v", last)
	}

	// The whole fabric goes away: agents keep their tables and count errors.
	for _, m := range cl.Members {
		m.Stop(t)
	}
	lab.WaitFor(t, 20*time.Second, "agents to notice the fabric is gone", func(context.Context) error {
		for n, a := range agents {
			if s := a.Stats(); s.Reachable || s.Errors == 0 {
				return fmt.Errorf("agent %s: %+v", n, s)
			}
		}
		return nil
	})
	for n, a := range agents {
		vs, last := recs[n].get()
		if s := a.Stats(); s.Installed != 2 || len(vs) != 2 || len(last) == 0 {
			t.Errorf("agent %s while the fabric is down: %+v, installs %v, table %v; want version 2 kept", n, s, vs, last)
		}
	}
	for _, m := range cl.Members {
		m.Start(t)
	}
	cl.Leader(t, 20*time.Second, lab.ClusterSize)
	before := map[string]map[string]string{}
	for n := range agents {
		_, before[n] = recs[n].get()
	}
	report(t, fc, "o1", "s1", 9000)
	waitAll(t, fc, agents, 3)
	// o1–s1 moved only o1's and s1's tables: s2 and o2 ack version 3 without reading theirs
	// and reinstall the same table under it; o1 and s1 read theirs.
	for n, a := range agents {
		vs, last := recs[n].get()
		s := a.Stats()
		wantUnchanged := map[string]int{"s1": 0, "o1": 0, "s2": 1, "o2": 1}[n]
		if s.Unchanged != wantUnchanged || vs[len(vs)-1] != 3 || maps.Equal(last, before[n]) != (wantUnchanged == 1) {
			t.Errorf("agent %s at version 3: %+v, installs %v, table %v (before %v); want %d acked unchanged", n, s, vs, last, before[n], wantUnchanged)
		}
	}

	// o2's agent restarts while a version is published: it resumes and catches up.
	stops["o2"]()
	report(t, fc, "o2", "s2", 9000)
	lab.WaitFor(t, 10*time.Second, "version 4", func(context.Context) error {
		if s := ctl.Stats(); s.Version != 4 {
			return fmt.Errorf("controller %+v", s)
		}
		return nil
	})
	if minV, _, err := fc.MinApplied(t.Context()); err != nil || minV != 3 {
		t.Errorf("MinApplied with o2 stopped = %d, %v; want 3", minV, err)
	}
	rec := &recorder{}
	agents["o2"] = newAgent(t, open(t, cl), specs[3], rec)
	run(t, agents["o2"].Run)
	waitAll(t, fc, agents, 4)
	vs, _ := rec.get()
	if s := agents["o2"].Stats(); s.Resumed != 3 || s.Acks != 1 || !slices.Equal(vs, []int64{4}) {
		t.Errorf("restarted o2: %+v, installs %v; want resumed at 3, version 4 installed and acked once", s, vs)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	good := agent.Config{Fabric: &fabric.Client{}, Node: specs[0], Installer: &recorder{}}
	for _, mod := range []func(*agent.Config){
		func(c *agent.Config) { c.Fabric = nil },
		func(c *agent.Config) { c.Installer = nil },
		func(c *agent.Config) { c.Node.Name = "bad name" },
		func(c *agent.Config) { c.Period = time.Millisecond },
		func(c *agent.Config) { c.Period, c.MaxBackoff = time.Second, time.Millisecond },
	} {
		cfg := good
		mod(&cfg)
		if _, err := agent.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := agent.New(good); err != nil {
		t.Errorf("New(good): %v", err)
	}
}
