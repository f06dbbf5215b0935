package jobs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// refusalLogEvery is how often a plugin's refused samples are logged after the first.
const refusalLogEvery = 30 * time.Second

// stoppedGrace is how long samples of a stopped job are dropped quietly (the plugin's stream
// may still carry one) before they count as samples of an unknown job.
const stoppedGrace = 5 * time.Second

// syncPlugin brings one plugin's process to its wanted jobs: after a restart (another PID)
// nothing is started any more; jobs no longer wanted are stopped, wanted ones started, and the
// stats stream is kept open while jobs run.
func (m *Manager) syncPlugin(ctx context.Context, p *pluginJobs, info model.PluginInfo) {
	name := p.name
	running := info.State == "running" && info.PID != 0
	m.mu.Lock()
	if !running || p.pid != info.PID {
		p.started = map[string]api.Job{}
		p.pid = 0
		if running {
			p.pid = info.PID
			for _, j := range p.jobs { // none runs in the new process yet
				if j.refused == "" {
					j.state, j.err, j.retryAt, j.backoff = model.JobWaiting, fmt.Sprintf("starting in plugin %q's process %d", name, info.PID), time.Time{}, 0
				}
			}
		}
		m.endStream(p)
	}
	if !running {
		why := fmt.Sprintf("plugin %q is %s", name, info.State)
		switch {
		case info.State == "":
			why = fmt.Sprintf("plugin %q is not configured", name)
		case info.Reason != "":
			why += ": " + info.Reason
		}
		for _, j := range p.jobs {
			if j.refused == "" {
				j.state, j.err = model.JobWaiting, why
			}
		}
		if len(p.jobs) == 0 {
			if m.plugins[name] == p {
				delete(m.plugins, name)
			}
		}
		m.mu.Unlock()
		return
	}
	var stops []string
	for n, spec := range p.started {
		if j := p.jobs[n]; j == nil || j.refused != "" || !sameJob(j.spec, spec) && j.spec.Type != spec.Type {
			stops = append(stops, n)
		}
	}
	now := time.Now()
	var starts []api.Job
	for _, n := range slices.Sorted(maps.Keys(p.jobs)) {
		j := p.jobs[n]
		if spec, ok := p.started[n]; j.refused != "" || ok && sameJob(spec, j.spec) || now.Before(j.retryAt) {
			continue
		}
		starts = append(starts, j.spec)
	}
	m.mu.Unlock()

	for _, n := range stops {
		m.stop(ctx, p, n)
	}
	for _, spec := range starts {
		m.start(ctx, p, spec, info.Types)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if len(p.started) == 0 {
		m.endStream(p)
		if len(p.jobs) == 0 {
			if m.plugins[name] == p {
				delete(m.plugins, name)
			}
		}
		return
	}
	if p.stream == nil || p.stream.ended && !time.Now().Before(p.stream.retryAt) {
		m.openStream(ctx, p)
	}
}

// stop stops a started job that is no longer wanted (or whose type changed). A failure is
// logged and the job forgotten: it ends with the plugin's process at the latest.
func (m *Manager) stop(ctx context.Context, p *pluginJobs, name string) {
	m.mu.Lock()
	spec := p.started[name]
	delete(p.started, name)
	p.stopped[name] = time.Now()
	m.mu.Unlock()
	dp, plugin, ok := m.opts.DataPaths.DataPath(spec.Type)
	if !ok || plugin != p.name {
		return
	}
	if err := dp.Stop(ctx, name); err != nil {
		m.log.Warn("plugin could not stop a data-path job", "plugin", p.name, "job", name, "error", err)
		return
	}
	m.log.Info("data-path job stopped", "plugin", p.name, "job", name)
}

// start starts one wanted job and records the outcome on it (if it is still wanted as such).
// types are the plugin's object types, for the message of a type it does not serve.
func (m *Manager) start(ctx context.Context, p *pluginJobs, spec api.Job, types []string) {
	var status string
	dp, plugin, ok := m.opts.DataPaths.DataPath(spec.Type)
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("plugin %q serves no job type %q (its types: %s); give the job one of its job types", p.name, spec.Type, strings.Join(types, ", "))
	case plugin != p.name:
		err = fmt.Errorf("job type %q is plugin %q's, not plugin %q's; give the job one of %q's job types", spec.Type, plugin, p.name, p.name)
	default:
		status, err = dp.Start(ctx, spec)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := p.jobs[spec.Name]
	if err == nil {
		p.started[spec.Name] = spec
	}
	if j == nil || !sameJob(j.spec, spec) {
		return // changed meanwhile: the next pass sees to it
	}
	if err != nil && ctx.Err() != nil {
		return // the daemon is stopping
	}
	if err != nil {
		j.backoff = min(max(2*j.backoff, m.opts.MinBackoff), m.opts.MaxBackoff)
		j.retryAt = time.Now().Add(j.backoff)
		if j.state != model.JobError || j.err != err.Error() {
			m.log.Error("data-path job did not start; retrying", "plugin", p.name, "job", spec.Name, "port", j.port, "retry_in", j.backoff, "error", err)
		}
		j.state, j.err = model.JobError, err.Error()
		return
	}
	j.state, j.err, j.status, j.backoff = model.JobRunning, "", limitText(status), 0
	j.starts++
	m.log.Info("data-path job started", "plugin", p.name, "job", spec.Name, "type", spec.Type, "port", j.port, "pid", p.pid, "starts", j.starts)
}

// openStream opens p's stats stream in its current process. Called with m.mu held.
func (m *Manager) openStream(ctx context.Context, p *pluginJobs) {
	var dp api.DataPath
	for _, spec := range p.started {
		if d, plugin, ok := m.opts.DataPaths.DataPath(spec.Type); ok && plugin == p.name {
			dp = d
			break
		}
	}
	if dp == nil {
		return
	}
	prev := p.stream
	sctx, cancel := context.WithCancel(ctx)
	st := &stream{pid: p.pid, cancel: cancel, done: make(chan struct{})}
	if prev != nil {
		st.backoff = prev.backoff
	}
	p.stream = st
	req := api.StatsRequest{IntervalMillis: uint32(min(m.opts.Interval.Milliseconds(), 1<<31))}
	go func() {
		defer close(st.done)
		err := dp.Stats(sctx, req, func(s api.StatsSample) error {
			m.sample(p, st, s)
			return nil
		})
		m.mu.Lock()
		st.ended = true
		st.backoff = min(max(2*st.backoff, m.opts.MinBackoff), m.opts.MaxBackoff)
		st.retryAt = time.Now().Add(st.backoff)
		m.mu.Unlock()
		if sctx.Err() == nil {
			m.log.Warn("a plugin's stats stream ended; opening it again", "plugin", p.name, "retry_in", st.backoff, "error", err)
			m.Kick()
		}
	}()
}

// endStream cancels p's stream (it ends on its own). Called with m.mu held.
func (m *Manager) endStream(p *pluginJobs) {
	if p.stream != nil {
		p.stream.cancel()
		p.stream = nil
	}
}

// closeStreams ends every stream and waits for them.
func (m *Manager) closeStreams() {
	m.mu.Lock()
	var done []chan struct{}
	for _, p := range m.plugins {
		if p.stream != nil {
			done = append(done, p.stream.done)
			m.endStream(p)
		}
	}
	m.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

// sample checks and keeps one sample of p's stream st.
func (m *Manager) sample(p *pluginJobs, st *stream, s api.StatsSample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.stream != st {
		return // a stream being ended
	}
	st.backoff = 0
	if _, started := p.started[s.Job]; !started || p.jobs[s.Job] == nil {
		// A job being started (its Start has not returned yet) or just stopped: dropped
		// quietly; any other name is refused below.
		if p.jobs[s.Job] != nil || time.Since(p.stopped[s.Job]) < stoppedGrace {
			return
		}
	}
	for n, at := range p.stopped {
		if time.Since(at) >= stoppedGrace {
			delete(p.stopped, n)
		}
	}
	t, metrics, err := checkSample(s, func(name string) bool {
		_, ok := p.started[name]
		return ok && p.jobs[name] != nil
	})
	if err != nil {
		first := false
		if j := p.jobs[s.Job]; j != nil {
			j.sampleErr = "last sample refused: " + err.Error()
			first, j.refusalLogged = !j.refusalLogged, true
		}
		p.refusals++
		if now := time.Now(); first || now.Sub(p.loggedAt) >= refusalLogEvery {
			m.log.Error("plugin sent a stats sample the daemon refuses; the job's previous sample stays", "plugin", p.name,
				"job", clip(s.Job), "refused_since_last_log", p.refusals, "error", err)
			p.loggedAt, p.refusals = now, 0
		}
		return
	}
	j := p.jobs[s.Job]
	j.sampleTime, j.metrics, j.sampleErr = t, metrics, ""
}

// limitText bounds a plugin's status text.
func limitText(s string) string {
	const maxStatus = 1024
	if len(s) > maxStatus {
		return s[:maxStatus] + "…"
	}
	return s
}
