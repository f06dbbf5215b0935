package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/vswitchd/jobs"
)

// ports is what Options.Ports returns, changed by the test.
type ports struct {
	mu  sync.Mutex
	set []jobs.PortJobs
}

func (p *ports) get() []jobs.PortJobs {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]jobs.PortJobs(nil), p.set...)
}

func (p *ports) put(set ...jobs.PortJobs) {
	p.mu.Lock()
	p.set = set
	p.mu.Unlock()
}

// hostInfos adapts the host's statuses to Options.Plugins.
func hostInfos(h *host.Host) func() []model.PluginInfo {
	return func() []model.PluginInfo {
		var out []model.PluginInfo
		for _, st := range h.Plugins() {
			out = append(out, st.Info())
		}
		return out
	}
}

func tickerJob(name, config string) api.Job {
	return api.Job{Name: name, Type: "ticker", Config: []byte(config)}
}

// The manager against the real plugin host running the test plugin as a real process: the
// configuration's and the ports' jobs run and report samples; jobs past a port's bound, with a
// config that is not a JSON object, or with a name already taken are refused with a log line
// naming them, and the others run; a port's jobs stop when the port goes; Run ends when its
// context does.
func TestManagerWithRealPlugin(t *testing.T) {
	dir := testkit.ShortTempDir(t, "jobs")
	pdir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, "./testdata/tickplugin", pdir, "tick")
	var logs testkit.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.Tail(6000))
		}
	})
	h, err := host.New(host.Options{PluginDir: pdir, DataDir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	if err := h.Start(ctx, []model.Plugin{{Name: "tick", Path: "tick", SHA256: sum}}); err != nil {
		t.Fatal(err)
	}

	var pj ports
	many := make([]api.Job, limits.MaxJobsPerPort+1)
	for i := range many {
		many[i] = tickerJob(fmt.Sprintf("p1-j%d", i), `{"every_ms": 5}`)
	}
	pj.put(jobs.PortJobs{Plugin: "tick", Port: "p1", Jobs: many},
		jobs.PortJobs{Plugin: "tick", Port: "p2", Jobs: []api.Job{tickerJob("p2-bad", `[1]`), tickerJob("clock", `{}`)}})
	m := jobs.New(jobs.Options{DataPaths: h, Plugins: hostInfos(h), Ports: pj.get, Logger: log,
		Interval: 20 * time.Millisecond, Resync: 50 * time.Millisecond, MinBackoff: 20 * time.Millisecond})
	m.SetConfig([]model.Plugin{{Name: "tick", Jobs: []model.PluginJob{{Name: "clock", Type: "ticker", Config: map[string]any{"every_ms": 5}},
		{Name: "haunted", Type: "ticker", Config: map[string]any{"bad": "ghost"}}}}})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()

	byName := func() map[string]model.JobInfo {
		out := map[string]model.JobInfo{}
		for _, j := range m.Plugin("tick") {
			out[j.Name] = j
		}
		return out
	}
	ticks := func(j model.JobInfo) float64 {
		for _, x := range j.Metrics {
			if x.Name == "ticks" {
				return x.Value
			}
		}
		return -1
	}
	testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		js := byName()
		for _, n := range []string{"clock", "p1-j0", "p1-j7"} {
			if j := js[n]; j.State != model.JobRunning || ticks(j) <= 0 {
				return fmt.Errorf("%s: %+v", n, j)
			}
		}
		return nil
	})
	js := byName()
	if j := js["p1-j8"]; j.State != model.JobError || !strings.Contains(j.Error, `port "p1" asks for 9 jobs, more than 8`) {
		t.Errorf("the 9th job of p1: %+v", j)
	}
	if j := js["p2-bad"]; j.State != model.JobError || !strings.Contains(j.Error, `plugin "tick", port "p2": job "p2-bad": config must be a JSON object`) {
		t.Errorf("p2-bad: %+v", j)
	}
	if j := js["clock"]; j.Port != "" || j.Status != "ticking every 5ms" || j.Starts != 1 {
		t.Errorf("clock (the configuration's, not p2's): %+v", j)
	}
	if !strings.Contains(logs.String(), `already the job of the configuration file`) {
		t.Errorf("no log line for p2's clock")
	}
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), `sample of job \"ghost\", which is not one of the plugin's running jobs`) {
			return errors.New("no log line for the samples of a job nobody started")
		}
		if j := byName()["haunted"]; j.State != model.JobRunning || ticks(j) < 0 || j.Error != "" {
			return fmt.Errorf("haunted, whose own samples are good: %+v", j)
		}
		return nil
	})

	pj.put(jobs.PortJobs{Plugin: "tick", Port: "p2", Jobs: []api.Job{tickerJob("p2-ok", `{}`)}})
	m.Kick()
	testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		js := byName()
		if _, ok := js["p1-j0"]; ok {
			return errors.New("p1-j0 still there")
		}
		if j := js["p2-ok"]; j.State != model.JobRunning {
			return fmt.Errorf("p2-ok: %+v", j)
		}
		if !strings.Contains(logs.String(), "job=p1-j7") || strings.Count(logs.String(), `msg="job stopped"`) < limits.MaxJobsPerPort {
			return errors.New("the plugin has not stopped p1's jobs")
		}
		return nil
	})

	// A reloaded configuration: clock's config changes (started again with it), haunted goes.
	m.SetConfig([]model.Plugin{{Name: "tick", Jobs: []model.PluginJob{{Name: "clock", Type: "ticker", Config: map[string]any{"every_ms": 7}}}}})
	testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		js := byName()
		if _, ok := js["haunted"]; ok {
			return errors.New("haunted still there")
		}
		if j := js["clock"]; j.Status != "ticking every 7ms" || j.Starts != 1 || j.State != model.JobRunning {
			return fmt.Errorf("clock: %+v", j)
		}
		if !strings.Contains(logs.String(), "job=haunted") || !regexp.MustCompile(`msg="job stopped".*job=haunted`).MatchString(logs.String()) {
			return errors.New("the plugin has not stopped haunted")
		}
		return nil
	})

	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end 10 s after its context")
	}
}

// A plugin whose Start does not answer delays only its own jobs: a job of another plugin
// configured while the hung Start waits for the host's call timeout (a minute) runs at once.
func TestHungStartDelaysOnlyItsPlugin(t *testing.T) {
	dir := testkit.ShortTempDir(t, "jobs")
	pdir := filepath.Join(dir, "plugins")
	sumTick := testkit.InstallPlugin(t, "./testdata/tickplugin", pdir, "tick")
	sumTock := testkit.InstallPlugin(t, "./testdata/tickplugin", pdir, "tock")
	var logs testkit.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h, err := host.New(host.Options{PluginDir: pdir, DataDir: dir, Logger: log, CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	plugins := []model.Plugin{
		{Name: "tick", Path: "tick", SHA256: sumTick, Jobs: []model.PluginJob{{Name: "stuck", Type: "ticker", Config: map[string]any{"hang": true}}}},
		{Name: "tock", Path: "tock", SHA256: sumTock, Jobs: []model.PluginJob{{Name: "clock", Type: "tocker"}}},
	}
	if err := h.Start(ctx, plugins); err != nil {
		t.Fatal(err)
	}
	m := jobs.New(jobs.Options{DataPaths: h, Plugins: hostInfos(h), Logger: log, Resync: 50 * time.Millisecond})
	m.SetConfig(plugins[:1])
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = m.Run(runCtx) }()
	testkit.EventuallyTrue(t, 30*time.Second, 20*time.Millisecond, "tick's Start hanging", func() bool {
		return strings.Contains(logs.String(), "job start hangs")
	})
	m.SetConfig(plugins)
	testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		tock := m.Plugin("tock")
		if len(tock) != 1 || tock[0].State != model.JobRunning {
			return fmt.Errorf("tock: %+v", tock)
		}
		return nil
	})
	if tick := m.Plugin("tick"); len(tick) != 1 || tick[0].State != model.JobWaiting {
		t.Errorf("tick's stuck job left waiting before its Start timed out: %+v", tick)
	}
}
