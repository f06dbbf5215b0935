package flowmonplugin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Names of the plugin and its types.
const (
	// Name is the plugin's name (api.Info.Name), the name of its entry in the daemon's config
	// and of its data dir, <data_dir>/plugin-data/flowmon, where the query sockets are.
	Name = "flowmon"
	// Version is the plugin's version.
	Version = "0.1.0"
	// JobCollector is the collector's job type: receivers, decoders, the store and the query
	// socket.
	JobCollector = "flowmon-collector"
	// JobGen is the traffic generator's job type.
	JobGen = "flowmon-gen"
)

// Stats intervals: the default, and the shortest a request gets.
const (
	DefaultStatsInterval = time.Second
	MinStatsInterval     = 100 * time.Millisecond
)

// MaxJobs bounds the jobs the plugin runs at once.
const MaxJobs = 64

// FactsRefresh is how often the plugin asks the daemon for the bridges' ports again (through
// FlowProgrammer.Flows, which answers no flows) while a collector job runs.
const FactsRefresh = 5 * time.Second

// StoreSpec is a collector's store as Options.OpenStore receives it: Path is absolute.
type StoreSpec struct {
	Kind      string // StoreEmbedded or StorePostgres
	Path      string // the embedded store's file
	DSN       string // PostgreSQL's connection string
	Retention time.Duration
}

// Options configure a Plugin.
type Options struct {
	// Logger receives the plugin's log; nil discards it.
	Logger *slog.Logger
	// OpenStore opens a collector's store; the binary links the stores (DuckDB needs cgo), so
	// the plugin's core does not. Nil: collector jobs fail with FailedPrecondition.
	OpenStore func(ctx context.Context, spec StoreSpec) (store.Store, error)
	// DataDir replaces HostFacts.DataDir (tests, and runs by hand); empty uses the daemon's.
	DataDir string
}

// job is what the plugin runs: a collector or a generator.
type job interface {
	// name and typ identify the job; config is the configuration it started with.
	name() string
	typ() string
	config() []byte
	// stop ends the job, bounded by ctx.
	stop(ctx context.Context) error
	// problems says what is wrong now, for Health; failed says whether the job ended.
	problems() (probs []string, failed bool)
	// metrics is the job's stats sample.
	metrics() []api.Metric
}

// Plugin is the flowmon plugin: job types flowmon-collector and flowmon-gen (DataPath), and a
// FlowProgrammer that programs no flows but learns every bridge's ports for enrichment. It
// takes no plugin-wide configuration. Safe for concurrent use.
type Plugin struct {
	sdk.Base
	opts Options
	log  *slog.Logger
	life context.Context
	end  context.CancelFunc

	ops     sync.Mutex // serialises Start, Stop and Close
	mu      sync.Mutex // guards jobs, done and bridges
	jobs    map[string]job
	done    bool
	bridges map[string]map[string]uint32 // bridge → interface name → ofport, from Flows
}

// New returns a Plugin without jobs; Close stops them.
func New(opts Options) *Plugin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Plugin{opts: opts, log: log, jobs: map[string]job{}, bridges: map[string]map[string]uint32{}}
	p.life, p.end = context.WithCancel(context.Background())
	return p
}

// Info describes the plugin.
func (p *Plugin) Info(context.Context) (api.Info, error) {
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Types: []api.ObjectType{
			{Name: JobCollector, Kind: api.ObjectKindJob, OptionsSchema: collectorSchema, Doc: collectorDoc},
			{Name: JobGen, Kind: api.ObjectKindJob, OptionsSchema: genSchema, Doc: genDoc},
		},
		Description: "flowmon: OVS flow export (NetFlow v5/v9, IPFIX) collected, stored (embedded DuckDB or PostgreSQL) and queried; a traffic generator",
	}, nil
}

// dataDir is where the plugin keeps its stores and query sockets: Options.DataDir, the
// daemon's plugin data dir, else the working directory (the host starts the plugin there).
func (p *Plugin) dataDir() (string, error) {
	if p.opts.DataDir != "" {
		return p.opts.DataDir, nil
	}
	if req, ok := p.Configured(); ok && req.Facts.DataDir != "" {
		return req.Facts.DataDir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("the plugin's working directory: %w", err)
	}
	return dir, nil
}

// sortedJobs returns the jobs sorted by name.
func (p *Plugin) sortedJobs() []job {
	p.mu.Lock()
	jobs := slices.Collect(maps.Values(p.jobs))
	p.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return strings.Compare(a.name(), b.name()) })
	return jobs
}

// Health is OK when every job runs as it should; Degraded naming the job and what is wrong
// (a store failing, records dropped, a generator that ended with loss); Failing when a job
// ended with an error.
func (p *Plugin) Health(context.Context) (api.Health, error) {
	var probs []string
	failing := false
	jobs := p.sortedJobs()
	for _, j := range jobs {
		pr, failed := j.problems()
		probs = append(probs, pr...)
		failing = failing || failed
	}
	switch {
	case failing:
		return api.Health{State: api.HealthFailing, Message: strings.Join(probs, "; ")}, nil
	case len(probs) > 0:
		return api.Health{State: api.HealthDegraded, Message: strings.Join(probs, "; ")}, nil
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.typ()+" "+j.name())
	}
	if len(names) == 0 {
		return api.Health{State: api.HealthOK, Message: "no flowmon jobs"}, nil
	}
	return api.Health{State: api.HealthOK, Message: "running " + strings.Join(names, ", ")}, nil
}

// Start starts a flowmon-collector or flowmon-gen job. A job running with the same
// configuration is left alone; with another it is restarted. A bad configuration is
// InvalidArgument naming the field; a listen address or store that cannot be opened is
// FailedPrecondition, and nothing stays open.
func (p *Plugin) Start(ctx context.Context, j api.Job) (string, error) {
	if err := limits.CheckJob(j.Name, j.Type, nil); err != nil {
		return "", sdk.Invalid(api.Problem{Field: "name", Message: err.Error()})
	}
	var cs collectorSettings
	var gs genSettings
	var err error
	switch j.Type {
	case JobCollector:
		cs, err = parseCollector(j.Config)
	case JobGen:
		gs, err = parseGen(j.Config)
	default:
		err = sdk.Invalid(api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a job type of this plugin (%s, %s)", j.Type, JobCollector, JobGen)})
	}
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
	case old != nil && old.typ() == j.Type && bytes.Equal(old.config(), j.Config):
		return "running", nil
	case old == nil && n >= MaxJobs:
		return "", api.Errorf(api.FailedPrecondition, "job %s: %d flowmon jobs already run, the most this plugin runs; stop one first", j.Name, n)
	}
	if old != nil {
		p.log.Info("flowmon job: configuration changed, restarting", "job", j.Name)
		if err := p.remove(ctx, old); err != nil {
			return "", err
		}
	}
	dir, err := p.dataDir()
	if err != nil {
		return "", api.Errorf(api.FailedPrecondition, "job %s: %v", j.Name, err)
	}
	var nj job
	var status string
	if j.Type == JobCollector {
		var cj *collectorJob
		cj, err = p.startCollector(ctx, j.Name, bytes.Clone(j.Config), dir, cs)
		if err == nil {
			nj, status = cj, cj.status()
		}
	} else {
		var gj *genJob
		gj, err = p.startGen(j.Name, bytes.Clone(j.Config), gs)
		if err == nil {
			nj, status = gj, "generating "+gs.String()
		}
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.jobs[j.Name] = nj
	p.mu.Unlock()
	return status, nil
}

// remove stops a job and forgets it.
func (p *Plugin) remove(ctx context.Context, j job) error {
	p.mu.Lock()
	if p.jobs[j.name()] == j {
		delete(p.jobs, j.name())
	}
	p.mu.Unlock()
	return j.stop(ctx)
}

// Stop stops a job; an unknown job is already stopped.
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

// Close stops every job (bounded by ctx) and refuses new ones; it belongs after sdk.Serve.
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

// Flows programs no flows: the daemon calls it per bridge with the bridge's interfaces and
// OpenFlow port numbers, which the collectors use to name the ports of records. While a
// collector runs it asks to be called again every FactsRefresh, so new ports are learnt.
func (p *Plugin) Flows(_ context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	ports := make(map[string]uint32, len(bridge.Ports))
	for _, bp := range bridge.Ports {
		if bp.Ofport > 0 && bp.Ofport <= 0xffff && bp.Interface != "" {
			ports[bp.Interface] = uint32(bp.Ofport)
		}
	}
	p.mu.Lock()
	changed := !maps.Equal(p.bridges[bridge.Name], ports)
	if len(p.bridges) < limits.MaxObjectsPerBatch || p.bridges[bridge.Name] != nil {
		p.bridges[bridge.Name] = ports
	}
	collectors := 0
	for _, j := range p.jobs {
		if j.typ() == JobCollector {
			collectors++
		}
	}
	p.mu.Unlock()
	if changed {
		for _, j := range p.sortedJobs() {
			if cj, ok := j.(*collectorJob); ok {
				cj.updateFacts(p.bridgeFacts())
			}
		}
	}
	if collectors == 0 {
		return api.FlowSet{}, nil
	}
	return api.FlowSet{RefreshMillis: uint32(FactsRefresh.Milliseconds())}, nil
}

// bridgeFacts copies the bridges' ports learnt from Flows.
func (p *Plugin) bridgeFacts() map[string]map[string]uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]map[string]uint32, len(p.bridges))
	for b, ports := range p.bridges {
		out[b] = maps.Clone(ports)
	}
	return out
}

// Stats sends a sample of each selected job at once and then every interval until ctx ends.
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := DefaultStatsInterval
	if req.IntervalMillis > 0 {
		every = max(time.Duration(req.IntervalMillis)*time.Millisecond, MinStatsInterval)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, j := range p.sortedJobs() {
			if len(req.Jobs) > 0 && !slices.Contains(req.Jobs, j.name()) {
				continue
			}
			m := j.metrics()
			if len(m) > limits.MaxMetricsPerSample {
				m = m[:limits.MaxMetricsPerSample]
			}
			if err := send(api.StatsSample{Job: j.name(), TimeUnixNano: time.Now().UnixNano(), Metrics: m}); err != nil {
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

// gauge and counter build metrics.
func gauge(name string, v float64, labels map[string]string) api.Metric {
	return api.Metric{Name: name, Kind: api.MetricGauge, Value: v, Labels: labels}
}

func counter(name string, v float64, labels map[string]string) api.Metric {
	return api.Metric{Name: name, Kind: api.MetricCounter, Value: v, Labels: labels}
}
