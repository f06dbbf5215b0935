package jobs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// DataPaths is what the Manager needs from the plugin host (plugins/host.Host.DataPath): the
// supervised data path of the plugin serving a job type, and that plugin's name.
type DataPaths interface {
	DataPath(jobType string) (d api.DataPath, plugin string, ok bool)
}

// PortJobs are the jobs one plugin port asks for (api.Attachment.Jobs).
type PortJobs struct {
	Plugin, Port string
	Jobs         []api.Job
}

// Options configure a Manager. DataPaths and Plugins are required.
type Options struct {
	DataPaths DataPaths
	// Plugins returns the configured plugins with their state and PID (the host's view).
	Plugins func() []model.PluginInfo
	// Ports returns the jobs of the plugin ports whose rows are written; nil: none.
	Ports  func() []PortJobs
	Logger *slog.Logger
	// Interval is the sampling interval asked of the plugins' stats streams (default 1s).
	Interval time.Duration
	// Resync is the period of the passes between kicks (default 1s).
	Resync time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed Start or an ended stats stream
	// is tried again (defaults 500ms and 30s).
	MinBackoff, MaxBackoff time.Duration
}

// Manager runs the data-path jobs; see the package doc. Its methods are safe for concurrent
// use; Run drives it.
type Manager struct {
	opts Options
	log  *slog.Logger
	kick chan struct{}
	// syncs are the plugins' passes in flight (Run waits for them when it ends).
	syncs sync.WaitGroup

	mu      sync.Mutex
	config  map[string][]api.Job // by plugin: the configuration file's jobs
	plugins map[string]*pluginJobs
}

// pluginJobs is one plugin's jobs. jobs, the per-job fields and stream are guarded by
// Manager.mu; pid and started are touched by the plugin's pass only (and read under mu).
type pluginJobs struct {
	name    string
	jobs    map[string]*job      // wanted, by name (refused ones included, to report them)
	pid     int                  // the process started's jobs run in; 0: none
	started map[string]api.Job   // jobs whose Start succeeded in pid
	stopped map[string]time.Time // jobs stopped lately, and when (see stoppedGrace)
	stream  *stream
	dups    map[string]string // names asked for twice, and why the second was refused
	// busy: a pass of this plugin is under way; again: a pass was skipped meanwhile.
	busy, again bool
	// refusals counts refused samples since the last log line; loggedAt is that line's time.
	refusals int
	loggedAt time.Time
}

type job struct {
	spec    api.Job
	port    string
	refused string // set: never started, and why
	state   model.JobState
	err     string
	status  string
	starts  int
	retryAt time.Time
	backoff time.Duration
	// the last accepted sample
	sampleTime time.Time
	metrics    []model.JobMetric
	sampleErr  string
	// refusalLogged: a refused sample of this job was logged (the first one always is).
	refusalLogged bool
}

// stream is one plugin's stats stream in one process.
type stream struct {
	pid     int
	cancel  context.CancelFunc
	done    chan struct{}
	ended   bool
	retryAt time.Time
	backoff time.Duration
}

// New returns a Manager; Run starts it.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	return &Manager{opts: opts, log: opts.Logger, kick: make(chan struct{}, 1),
		config: map[string][]api.Job{}, plugins: map[string]*pluginJobs{}}
}

// SetConfig takes the configuration file's jobs (each plugin entry's Jobs, validated by
// vswitchd/config) and asks for a pass.
func (m *Manager) SetConfig(plugins []model.Plugin) {
	cfg := map[string][]api.Job{}
	for _, p := range plugins {
		for _, j := range p.Jobs {
			conf, err := j.ConfigJSON()
			if err != nil { // validated: cannot happen; the job is then refused by CheckJob
				conf = []byte("not JSON")
			}
			cfg[p.Name] = append(cfg[p.Name], api.Job{Name: j.Name, Type: j.Type, Config: conf})
		}
	}
	m.mu.Lock()
	m.config = cfg
	m.mu.Unlock()
	m.Kick()
}

// Kick asks for a pass soon (a plugin's state or a port changed). It never blocks.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Run makes passes until ctx ends, then ends the stats streams and returns ctx's error. The
// jobs themselves are not stopped: they end with their plugins' processes.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.opts.Resync)
	defer t.Stop()
	for {
		m.pass(ctx)
		select {
		case <-ctx.Done():
			m.syncs.Wait()
			m.closeStreams()
			return ctx.Err()
		case <-m.kick:
		case <-t.C:
		}
	}
}

// pass updates the wanted jobs, then brings every plugin to them, each plugin on its own
// goroutine, without waiting: a plugin whose previous pass is still under way (a Start that
// does not answer waits for the host's call timeout) is skipped and passed again when it is
// done, so it delays only its own jobs.
func (m *Manager) pass(ctx context.Context) {
	var ports []PortJobs
	if m.opts.Ports != nil {
		ports = m.opts.Ports()
	}
	infos := map[string]model.PluginInfo{}
	for _, pi := range m.opts.Plugins() {
		infos[pi.Name] = pi
	}
	for _, name := range m.want(ports) {
		m.mu.Lock()
		p := m.plugins[name]
		busy := p.busy
		p.busy, p.again = true, busy
		m.mu.Unlock()
		if busy {
			continue
		}
		m.syncs.Go(func() {
			m.syncPlugin(ctx, p, infos[name])
			m.mu.Lock()
			again := p.again
			p.busy, p.again = false, false
			m.mu.Unlock()
			if again {
				m.Kick()
			}
		})
	}
}

// wanted is one job a pass wants, before the bounds are applied.
type wanted struct {
	spec    api.Job
	port    string
	refused string
}

// want recomputes every plugin's wanted jobs from the configuration and ports, keeping the
// state of the jobs that stay the same, and returns the plugins to sync (sorted).
func (m *Manager) want(ports []PortJobs) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := map[string][]wanted{}
	for _, name := range slices.Sorted(maps.Keys(m.config)) {
		for _, j := range m.config[name] {
			all[name] = append(all[name], wanted{spec: j})
		}
	}
	slices.SortFunc(ports, func(a, b PortJobs) int { return cmp.Compare(a.Plugin+"\x00"+a.Port, b.Plugin+"\x00"+b.Port) })
	for _, pj := range ports {
		for i, j := range pj.Jobs {
			w := wanted{spec: j, port: pj.Port}
			if i >= limits.MaxJobsPerPort {
				w.refused = fmt.Sprintf("port %q asks for %d jobs, more than %d (limits.MaxJobsPerPort)", pj.Port, len(pj.Jobs), limits.MaxJobsPerPort)
			}
			all[pj.Plugin] = append(all[pj.Plugin], w)
		}
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(all)) {
		p := m.plugins[name]
		if p == nil {
			p = &pluginJobs{name: name, jobs: map[string]*job{}, started: map[string]api.Job{}, stopped: map[string]time.Time{}}
			m.plugins[name] = p
		}
		next, dups := map[string]*job{}, map[string]string{}
		for _, w := range all[name] {
			if w.refused == "" {
				w.refused = refusal(name, w, next)
			}
			if w.refused == "" {
				if total++; total > limits.MaxJobs {
					w.refused = fmt.Sprintf("the daemon runs at most %d jobs (limits.MaxJobs)", limits.MaxJobs)
				}
			}
			if _, dup := next[w.spec.Name]; dup {
				if dups[w.spec.Name] == "" && p.dups[w.spec.Name] == "" {
					m.log.Error("data-path job refused", "plugin", name, "job", w.spec.Name, "port", w.port, "error", w.refused)
				}
				dups[w.spec.Name] = w.refused
				continue // the first of the name is reported; this one is logged once
			}
			cur := p.jobs[w.spec.Name]
			if cur == nil || cur.port != w.port || !sameJob(cur.spec, w.spec) || cur.refused != w.refused {
				cur = &job{spec: w.spec, port: w.port, refused: w.refused, state: model.JobWaiting}
				if w.refused != "" {
					cur.state, cur.err = model.JobError, w.refused
					m.log.Error("data-path job refused", "plugin", name, "job", w.spec.Name, "port", w.port, "error", w.refused)
				}
			}
			next[w.spec.Name] = cur
		}
		p.jobs, p.dups = next, dups
	}
	for name, p := range m.plugins {
		if _, ok := all[name]; !ok {
			p.jobs = map[string]*job{}
		}
	}
	return slices.Sorted(maps.Keys(m.plugins))
}

// refusal says why w cannot run on plugin (a bad spec, a name taken), or "".
func refusal(plugin string, w wanted, taken map[string]*job) string {
	if err := limits.CheckJob(w.spec.Name, w.spec.Type, w.spec.Config); err != nil {
		if w.port != "" {
			return fmt.Sprintf("plugin %q, port %q: %v", plugin, w.port, err)
		}
		return fmt.Sprintf("plugin %q: %v", plugin, err)
	}
	if prev, dup := taken[w.spec.Name]; dup {
		owner := "the configuration file"
		if prev.port != "" {
			owner = fmt.Sprintf("port %q", prev.port)
		}
		return fmt.Sprintf("plugin %q: job name %q is already the job of %s; job names are unique per plugin", plugin, w.spec.Name, owner)
	}
	return ""
}

func sameJob(a, b api.Job) bool {
	return a.Name == b.Name && a.Type == b.Type && string(a.Config) == string(b.Config)
}
