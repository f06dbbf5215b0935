package stripeplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Name is the plugin's name (api.Info.Name), the name of its entry in the daemon's config.
const Name = "stripe"

// Version is the plugin's version.
const Version = "0.1.0"

// JobType is the plugin's job type.
const JobType = "stripe"

// Stats intervals: the default, and the shortest a request gets.
const (
	DefaultStatsInterval = time.Second
	MinStatsInterval     = 100 * time.Millisecond
)

// MaxJobs bounds the jobs the plugin runs at once.
const MaxJobs = 64

// Options configure a Plugin.
type Options struct {
	// Logger receives the plugin's log; nil discards it.
	Logger *slog.Logger
}

// Plugin is the stripe plugin: sdk.Base (no plugin configuration, always healthy until a job
// says otherwise) and api.DataPath. Safe for concurrent use.
type Plugin struct {
	sdk.Base
	log  *slog.Logger
	life context.Context // the jobs' lifetime, ended by Close
	end  context.CancelFunc

	ops  sync.Mutex // serialises Start, Stop and Close
	mu   sync.Mutex // guards jobs and closed
	jobs map[string]*job
	done bool
	ovs  ovsState // the ovs-dpdk mode's bridges and flow problems, guarded by mu
}

// New returns a Plugin without jobs; Close stops them.
func New(opts Options) *Plugin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Plugin{log: log, jobs: map[string]*job{}}
	p.life, p.end = context.WithCancel(context.Background())
	return p
}

// Info describes the plugin: the job type stripe.
func (p *Plugin) Info(context.Context) (api.Info, error) {
	lanes, err := lanesType()
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Types:       []api.ObjectType{{Name: JobType, Kind: api.ObjectKindJob, OptionsSchema: configSchema, Doc: configDoc}, lanes},
		Description: "stripe: one connection over several NICs (kernel NICs, or OVS-DPDK NICs through lanes), load-balanced, in order",
	}, nil
}

// Health is OK when every job's engines run, know their peer and can use every link;
// Degraded (naming the peers unknown and the links unusable) otherwise; Failing when an engine
// stopped.
func (p *Plugin) Health(context.Context) (api.Health, error) {
	p.mu.Lock()
	jobs := slices.Collect(maps.Values(p.jobs))
	p.mu.Unlock()
	slices.SortFunc(jobs, func(a, b *job) int { return strings.Compare(a.name, b.name) })
	var probs []string
	failing := false
	for _, j := range jobs {
		for _, p := range j.peers {
			failing = failing || !p.running()
		}
		probs = append(probs, j.problems()...)
	}
	probs = append(probs, p.ovsProblems()...)
	switch {
	case failing:
		return api.Health{State: api.HealthFailing, Message: strings.Join(probs, "; ")}, nil
	case len(probs) > 0:
		return api.Health{State: api.HealthDegraded, Message: strings.Join(probs, "; ")}, nil
	}
	return api.Health{State: api.HealthOK, Message: fmt.Sprintf("%d stripe jobs", len(jobs))}, nil
}

// Start starts a stripe job: its links opened (in its netns), one engine per peer. A job
// running with the same configuration is left alone; with another it is stopped and started
// again. A bad configuration is InvalidArgument naming the field; a NIC that does not exist
// is FailedPrecondition, and nothing stays open.
func (p *Plugin) Start(ctx context.Context, j api.Job) (string, error) {
	if j.Type != JobType {
		return "", sdk.Invalid(api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a job type of this plugin (%s)", j.Type, JobType)})
	}
	if err := limits.CheckJob(j.Name, j.Type, nil); err != nil {
		return "", sdk.Invalid(api.Problem{Field: "name", Message: err.Error()})
	}
	cfg, err := ParseConfig(j.Config)
	if err != nil {
		return "", err
	}
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	old, closed, n := p.jobs[j.Name], p.done, len(p.jobs)
	p.mu.Unlock()
	switch {
	case closed:
		return "", api.Errorf(api.Unavailable, "job %s: the plugin is shutting down", j.Name)
	case old != nil && sameConfig(old.cfg, cfg):
		return old.status(), nil
	case old == nil && n >= MaxJobs:
		return "", api.Errorf(api.FailedPrecondition, "job %s: %d stripe jobs already run, the most this plugin runs; stop one first", j.Name, n)
	}
	if err := p.checkOVS(j.Name, cfg); err != nil {
		return "", err
	}
	if old != nil {
		p.log.Info("stripe job: configuration changed, restarting", "job", j.Name)
		if err := p.remove(ctx, old); err != nil {
			return "", err
		}
	}
	dir, err := p.socketDir()
	if err != nil {
		return "", api.Errorf(api.FailedPrecondition, "job %s: config.endpoint.unix: %v: set endpoint.unix", j.Name, err)
	}
	nj, err := startJob(ctx, p.life, p.log, j.Name, dir, cfg)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.jobs[j.Name] = nj
	p.mu.Unlock()
	return nj.status(), nil
}

// sameConfig reports whether two configurations are equal.
func sameConfig(a, b Config) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// remove stops a job and forgets it (also when ctx ended first: its links close once its
// engines return).
func (p *Plugin) remove(ctx context.Context, j *job) error {
	p.mu.Lock()
	if p.jobs[j.name] == j {
		delete(p.jobs, j.name)
	}
	p.mu.Unlock()
	return j.stop(ctx, p.log)
}

// Stop stops a job and closes its links; an unknown job is already stopped.
func (p *Plugin) Stop(ctx context.Context, name string) error {
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	j := p.jobs[name]
	p.mu.Unlock()
	if j == nil {
		return nil
	}
	return p.remove(ctx, j)
}

// Close stops every job (bounded by ctx) and refuses new ones; it belongs after sdk.Serve
// returns.
func (p *Plugin) Close(ctx context.Context) error {
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	p.done = true
	jobs := slices.Collect(maps.Values(p.jobs))
	p.mu.Unlock()
	var first error
	for _, j := range jobs {
		if err := p.remove(ctx, j); err != nil && first == nil {
			first = err
		}
	}
	p.end()
	return first
}

// Stats sends a sample of each selected job at once and then every interval (the request's,
// at least MinStatsInterval; DefaultStatsInterval when 0) until ctx ends.
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := DefaultStatsInterval
	if req.IntervalMillis > 0 {
		every = max(time.Duration(req.IntervalMillis)*time.Millisecond, MinStatsInterval)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.mu.Lock()
		jobs := slices.Collect(maps.Values(p.jobs))
		p.mu.Unlock()
		slices.SortFunc(jobs, func(a, b *job) int { return strings.Compare(a.name, b.name) })
		for _, j := range jobs {
			if len(req.Jobs) > 0 && !slices.Contains(req.Jobs, j.name) {
				continue
			}
			now := time.Now()
			if err := send(api.StatsSample{Job: j.name, TimeUnixNano: now.UnixNano(), Metrics: j.metrics(now)}); err != nil {
				return err
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
