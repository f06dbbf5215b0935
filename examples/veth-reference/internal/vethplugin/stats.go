package vethplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// JobConfig is the configuration of a veth-stats job.
type JobConfig struct {
	// Ports are the veth ports to sample; empty means all of the plugin's pairs.
	Ports []string `json:"ports,omitempty"`
	// IntervalMS is the sampling period (default DefaultJobIntervalMS, at least MinJobIntervalMS).
	IntervalMS int `json:"interval_ms,omitempty"`
}

// Sampling periods of jobs and of the Stats stream.
const (
	DefaultJobIntervalMS = 1000
	MinJobIntervalMS     = 100
)

const jobSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "ports": {"type": "array", "items": {"type": "string"}, "description": "veth ports to sample (default all)"},
    "interval_ms": {"type": "integer", "minimum": 100, "default": 1000}
  }
}`

const jobDoc = `Samples the kernel counters (packets, bytes, drops; rx and tx) of both ends of veth pairs
every interval_ms. Counters count from the job's start; the gauge rate_pps is the packets per second
received by the host end (traffic entering the switch) over the last period.`

// job is a running veth-stats job: a goroutine that samples the kernel and keeps the last sample.
type job struct {
	cfg    JobConfig
	raw    []byte
	cancel context.CancelFunc
	done   chan struct{}

	// base holds each end's counters at the job's start, keyed "<port>/<end>"; only the
	// sampling goroutine (and Start, before it runs) touches it.
	base map[string]veth.Counters

	mu   sync.Mutex
	last api.StatsSample
}

// Start starts a veth-stats job sampling in the background until Stop or Close. Idempotent; a
// new config restarts the job.
func (p *Plugin) Start(ctx context.Context, j api.Job) (string, error) {
	if _, err := p.config(); err != nil {
		return "", err
	}
	if j.Type != StatsJobType {
		return "", api.Errorf(api.InvalidArgument, "job %s: type %q is not %s", j.Name, j.Type, StatsJobType)
	}
	cfg, err := parseJobConfig(j.Config)
	if err != nil {
		return "", api.Errorf(api.InvalidArgument, "job %s: %w", j.Name, err)
	}
	p.mu.Lock()
	old := p.jobs[j.Name]
	if old != nil && bytes.Equal(old.raw, j.Config) {
		p.mu.Unlock()
		return statusOfJob(cfg), nil
	}
	jctx, cancel := context.WithCancel(p.jobsCtx)
	nj := &job{cfg: cfg, raw: bytes.Clone(j.Config), cancel: cancel, done: make(chan struct{}), base: map[string]veth.Counters{}}
	p.jobs[j.Name] = nj
	p.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
	}
	nj.sample(p, j.Name) // a first sample before Start returns
	go nj.run(jctx, p, j.Name)
	p.log.Info("job started", "job", j.Name, "ports", cfg.Ports, "interval_ms", cfg.IntervalMS)
	return statusOfJob(cfg), ctx.Err()
}

// Stop stops a job and waits for it; unknown jobs are already stopped.
func (p *Plugin) Stop(_ context.Context, name string) error {
	p.mu.Lock()
	j := p.jobs[name]
	delete(p.jobs, name)
	p.mu.Unlock()
	if j != nil {
		j.cancel()
		<-j.done
		p.log.Info("job stopped", "job", name)
	}
	return nil
}

// Stats sends the latest sample of each selected job every interval (req.IntervalMillis,
// default DefaultJobIntervalMS) until ctx ends. An unknown job name is NotFound.
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	p.mu.Lock()
	for _, n := range req.Jobs {
		if p.jobs[n] == nil {
			p.mu.Unlock()
			return api.Errorf(api.NotFound, "job %s is not running", n)
		}
	}
	p.mu.Unlock()
	every := time.Duration(max(req.IntervalMillis, MinJobIntervalMS)) * time.Millisecond
	if req.IntervalMillis == 0 {
		every = DefaultJobIntervalMS * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, s := range p.samples(req.Jobs) {
			if err := send(s); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// samples returns the last sample of the named jobs (all when names is empty), by job name.
func (p *Plugin) samples(names []string) []api.StatsSample {
	p.mu.Lock()
	var jobs []*job
	for _, n := range slices.Sorted(maps.Keys(p.jobs)) {
		if len(names) == 0 || slices.Contains(names, n) {
			jobs = append(jobs, p.jobs[n])
		}
	}
	p.mu.Unlock()
	out := make([]api.StatsSample, 0, len(jobs))
	for _, j := range jobs {
		j.mu.Lock()
		if j.last.Job != "" {
			out = append(out, j.last)
		}
		j.mu.Unlock()
	}
	return out
}

// run samples every period until ctx ends.
func (j *job) run(ctx context.Context, p *Plugin, name string) {
	defer close(j.done)
	t := time.NewTicker(time.Duration(j.cfg.IntervalMS) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j.sample(p, name)
	}
}

// sample reads the counters of the job's ports and stores a sample, counting from j.base
// (filled on first sight of an end, reset when a counter went backwards: a recreated pair).
func (j *job) sample(p *Plugin, name string) {
	states, err := p.kernel().List()
	if err != nil {
		p.log.Warn("stats job: cannot list pairs", "job", name, "err", err)
		return
	}
	now := p.now()
	s := api.StatsSample{Job: name, TimeUnixNano: now.UnixNano()}
	j.mu.Lock()
	prev, prevTime := j.last, time.Unix(0, j.last.TimeUnixNano)
	j.mu.Unlock()
	n := 0
	for _, st := range states {
		if len(j.cfg.Ports) > 0 && !slices.Contains(j.cfg.Ports, st.Spec.Port) {
			continue
		}
		n++
		for _, end := range []struct {
			name string
			c    veth.Counters
		}{{"host", st.Host}, {"peer", st.Peer}} {
			key := st.Spec.Port + "/" + end.name
			b, ok := j.base[key]
			if !ok || end.c.RxPackets < b.RxPackets || end.c.TxPackets < b.TxPackets {
				b = end.c
				j.base[key] = b
			}
			c := sub(end.c, b)
			s.Metrics = append(s.Metrics, counterMetrics(st.Spec.Port, end.name, c)...)
		}
		if rate, ok := ratePPS(prev, prevTime, now, st.Spec.Port, s.Metrics); ok {
			s.Metrics = append(s.Metrics, api.Metric{Name: "rate_pps", Kind: api.MetricGauge, Value: rate,
				Labels: map[string]string{"port": st.Spec.Port, "end": "host", "dir": "rx"}})
		}
	}
	s.Metrics = append(s.Metrics, api.Metric{Name: "pairs", Kind: api.MetricGauge, Value: float64(n)})
	j.mu.Lock()
	j.last = s
	j.mu.Unlock()
}

// counterMetrics returns the six counters of one end.
func counterMetrics(port, end string, c veth.Counters) []api.Metric {
	l := func() map[string]string { return map[string]string{"port": port, "end": end} }
	return []api.Metric{
		{Name: "rx_packets", Kind: api.MetricCounter, Value: float64(c.RxPackets), Labels: l()},
		{Name: "tx_packets", Kind: api.MetricCounter, Value: float64(c.TxPackets), Labels: l()},
		{Name: "rx_bytes", Kind: api.MetricCounter, Value: float64(c.RxBytes), Labels: l()},
		{Name: "tx_bytes", Kind: api.MetricCounter, Value: float64(c.TxBytes), Labels: l()},
		{Name: "rx_dropped", Kind: api.MetricCounter, Value: float64(c.RxDropped), Labels: l()},
		{Name: "tx_dropped", Kind: api.MetricCounter, Value: float64(c.TxDropped), Labels: l()},
	}
}

// ratePPS computes the host end's received packets per second between the previous sample
// and the metrics of this one.
func ratePPS(prev api.StatsSample, prevTime, now time.Time, port string, cur []api.Metric) (float64, bool) {
	find := func(ms []api.Metric) (float64, bool) {
		for _, m := range ms {
			if m.Name == "rx_packets" && m.Labels["port"] == port && m.Labels["end"] == "host" {
				return m.Value, true
			}
		}
		return 0, false
	}
	was, ok1 := find(prev.Metrics)
	is, ok2 := find(cur)
	dt := now.Sub(prevTime).Seconds()
	if !ok1 || !ok2 || dt <= 0 || is < was {
		return 0, false
	}
	return (is - was) / dt, true
}

// sub returns c - b per counter.
func sub(c, b veth.Counters) veth.Counters {
	return veth.Counters{RxPackets: c.RxPackets - b.RxPackets, TxPackets: c.TxPackets - b.TxPackets,
		RxBytes: c.RxBytes - b.RxBytes, TxBytes: c.TxBytes - b.TxBytes,
		RxDropped: c.RxDropped - b.RxDropped, TxDropped: c.TxDropped - b.TxDropped}
}

// parseJobConfig decodes and checks a job's configuration.
func parseJobConfig(raw []byte) (JobConfig, error) {
	var c JobConfig
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return JobConfig{}, fmt.Errorf("config: %w", err)
		}
	}
	if c.IntervalMS == 0 {
		c.IntervalMS = DefaultJobIntervalMS
	}
	if c.IntervalMS < MinJobIntervalMS {
		return JobConfig{}, fmt.Errorf("config.interval_ms: %d below %d", c.IntervalMS, MinJobIntervalMS)
	}
	return c, nil
}

// statusOfJob describes a job for humans.
func statusOfJob(c JobConfig) string {
	what := "all veth pairs"
	if len(c.Ports) > 0 {
		what = fmt.Sprintf("ports %v", c.Ports)
	}
	return fmt.Sprintf("sampling %s every %d ms", what, c.IntervalMS)
}
