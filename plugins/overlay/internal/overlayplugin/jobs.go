package overlayplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/overlay/agent"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/ovsinstall"
	"github.com/ovsplane/ovsplane/overlay/probe"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Reconnect pacing of a job's first connection to the fabric.
const (
	connectTimeout = 10 * time.Second
	maxConnectWait = 5 * time.Second
)

// Restart pacing of a job's parts (agent, prober, controller) that stopped: the first wait,
// doubling up to the cap; a part that ran longer than healthyRun counts as healthy again (its
// stop is no longer reported, the wait starts over).
const (
	firstRestartWait = 100 * time.Millisecond
	maxRestartWait   = 30 * time.Second
	healthyRun       = time.Minute
)

// partState is what a supervised part of a job last did (guarded by job.mu).
type partState struct {
	lastErr   string    // why it stopped last ("" never stopped)
	restarts  int       // restarts so far
	startedAt time.Time // start of the current run
}

// supervise runs part until ctx ends, restarting it with backoff whenever it returns; each
// stop is recorded on the job (Health reports it until the next run has lasted healthyRun).
func (j *job) supervise(ctx context.Context, log *slog.Logger, part string, run func(context.Context) error) {
	wait := firstRestartWait
	for {
		j.mu.Lock()
		if j.parts == nil {
			j.parts = map[string]*partState{}
		}
		ps := j.parts[part]
		if ps == nil {
			ps = &partState{}
			j.parts[part] = ps
		}
		ps.startedAt = time.Now()
		j.mu.Unlock()
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("returned without an error")
		}
		j.mu.Lock()
		if time.Since(ps.startedAt) > healthyRun {
			wait = firstRestartWait
		}
		ps.lastErr = err.Error()
		ps.restarts++
		j.mu.Unlock()
		log.Error("overlay: job part stopped; restarting", "part", part, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, maxRestartWait)
	}
}

// partProblems lists the parts that stopped and have not run healthyRun since (j.mu held).
func (j *job) partProblems() []string {
	var out []string
	for _, part := range slices.Sorted(maps.Keys(j.parts)) {
		ps := j.parts[part]
		if ps.lastErr != "" && time.Since(ps.startedAt) <= healthyRun {
			out = append(out, fmt.Sprintf("job %s: %s stopped (%s); restarted %d times", j.name, part, ps.lastErr, ps.restarts))
		}
	}
	return out
}

// lazyDirectory is the installer's directory before the fabric client exists: every read
// fails until set is called.
type lazyDirectory struct {
	mu sync.Mutex
	c  *ovsinstall.Cache
}

func (d *lazyDirectory) set(c *ovsinstall.Cache) {
	d.mu.Lock()
	d.c = c
	d.mu.Unlock()
}

func (d *lazyDirectory) get() (*ovsinstall.Cache, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c == nil {
		return nil, errors.New("not connected to the fabric database yet")
	}
	return d.c, nil
}

// Nodes reads the nodes through the fabric client once connected.
func (d *lazyDirectory) Nodes(ctx context.Context) ([]fabric.NodeState, error) {
	c, err := d.get()
	if err != nil {
		return nil, err
	}
	return c.Nodes(ctx)
}

// Routes reads a version's tables through the cache once connected.
func (d *lazyDirectory) Routes(ctx context.Context, version int64) (fabric.Tables, error) {
	c, err := d.get()
	if err != nil {
		return nil, err
	}
	return c.Routes(ctx, version)
}

// job is one running job of either type.
type job struct {
	name, typ string
	config    []byte
	cancel    context.CancelFunc
	done      chan struct{}

	// agent jobs
	set   agentSettings
	inst  *ovsinstall.Installer
	dir   *lazyDirectory
	mu    sync.Mutex // guards agent, prober, conn, connErr, tunnel
	agent *agent.Agent
	prob  *probe.Prober
	// connErr is the last failure to connect to the fabric ("" once connected).
	connErr string
	// failed is why a part could not be created at all (the job does nothing): Health is
	// Failing.
	failed string
	// parts are the supervised parts' states, by name.
	parts map[string]*partState
	// tunnel is the last problem with the tunnel port seen by Flows ("" when fine).
	tunnel string

	// controller jobs
	ctl *controller.Controller
}

// openFabric connects to the fabric, retrying with backoff until ctx ends.
func openFabric(ctx context.Context, remotes []string, log *slog.Logger, failed func(error)) (*fabric.Client, error) {
	wait := 100 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		c, err := fabric.Open(cctx, fabric.Config{Endpoints: remotes, Logger: log})
		cancel()
		if err == nil {
			failed(nil)
			return c, nil
		}
		failed(err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Warn("overlay: cannot reach the fabric database; retrying", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, maxConnectWait)
	}
}

// startAgent starts an overlay-agent job: the installer at once (with the table stored in
// dataDir, so a restarted plugin forwards on it before the fabric answers), then in the
// background the fabric connection, the agent and the prober.
func startAgent(life context.Context, log *slog.Logger, name string, raw []byte, s agentSettings, dataDir string) (*job, error) {
	j := &job{name: name, typ: JobAgent, config: raw, set: s, dir: &lazyDirectory{}, done: make(chan struct{})}
	state := ""
	if dataDir != "" {
		state = filepath.Join(dataDir, "overlay-agent-"+name+".json")
	}
	log = log.With("job", name, "node", s.spec.Name)
	inst, err := ovsinstall.New(ovsinstall.Config{Self: s.spec.Name, Kind: s.spec.Kind, Directory: j.dir, Local: s.local, Via: s.via,
		Own: s.own, Prefixes: s.prefixes, VNI: s.cfg.VNI, StatePath: state, Logger: log})
	if err != nil {
		return nil, api.Errorf(api.InvalidArgument, "job %s: %v", name, err)
	}
	j.inst = inst
	ctx, cancel := context.WithCancel(life)
	j.cancel = cancel
	go func() {
		defer close(j.done)
		c, err := openFabric(ctx, s.cfg.FabricRemotes, log, func(err error) {
			j.mu.Lock()
			j.connErr = ""
			if err != nil {
				j.connErr = err.Error()
			}
			j.mu.Unlock()
		})
		if err != nil {
			return
		}
		defer c.Close()
		cache := ovsinstall.NewCache(c)
		j.dir.set(cache)
		// A step installs a version and waits for two of the daemon's Flows calls, which come
		// every flow_refresh_ms (plus the daemon's debounce): give it time for a few.
		step := max(agent.DefaultStepTimeout, 4*s.flowRefresh+2*time.Second)
		a, err := agent.New(agent.Config{Fabric: cache, Node: s.spec, Installer: inst, Period: s.period, StepTimeout: step, Logger: log})
		if err != nil {
			log.Error("overlay agent cannot start", "err", err)
			j.fail("agent", err)
			return
		}
		var wg sync.WaitGroup
		j.mu.Lock()
		j.agent = a
		j.mu.Unlock()
		wg.Go(func() { j.supervise(ctx, log, "agent", a.Run) })
		if !s.cfg.Probe.Disabled {
			pc := s.probe
			pc.Fabric, pc.Logger = c, log
			if p, err := probe.New(pc); err != nil {
				log.Error("overlay probes disabled", "err", err)
				j.fail("prober", err)
			} else {
				j.mu.Lock()
				j.prob = p
				j.mu.Unlock()
				// Run closes its socket when it returns: each run listens anew.
				wg.Go(func() {
					j.supervise(ctx, log, "prober", func(ctx context.Context) error {
						udp, err := p.Listen()
						if err != nil {
							return fmt.Errorf("listen: %w", err)
						}
						return p.Run(ctx, udp)
					})
				})
			}
		}
		wg.Wait()
	}()
	return j, nil
}

// startController starts an overlay-controller job: the fabric connection and the controller
// role in the background.
func startController(life context.Context, log *slog.Logger, name string, raw []byte) (*job, error) {
	cfg, ttl, period, err := parseController(raw)
	if err != nil {
		return nil, err
	}
	log = log.With("job", name, "holder", cfg.Holder)
	j := &job{name: name, typ: JobController, config: raw, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(life)
	j.cancel = cancel
	go func() {
		defer close(j.done)
		c, err := openFabric(ctx, cfg.FabricRemotes, log, func(err error) {
			j.mu.Lock()
			j.connErr = ""
			if err != nil {
				j.connErr = err.Error()
			}
			j.mu.Unlock()
		})
		if err != nil {
			return
		}
		defer c.Close()
		ctl, err := controller.New(controller.Config{Fabric: c, Holder: cfg.Holder, LeaseTTL: ttl, Period: period,
			CostHysteresis: cfg.CostHysteresisPct / 100, Logger: log})
		j.mu.Lock()
		j.ctl = ctl
		j.mu.Unlock()
		if err != nil {
			log.Error("overlay controller cannot start", "err", err)
			j.fail("controller", err)
			return
		}
		j.supervise(ctx, log, "controller", ctl.Run)
	}()
	return j, nil
}

// fail records that part could not be created (Health: Failing).
func (j *job) fail(part string, err error) {
	j.mu.Lock()
	j.failed = fmt.Sprintf("job %s: %s cannot start: %v", j.name, part, err)
	j.mu.Unlock()
}

// stop ends the job and waits for it (bounded by ctx).
func (j *job) stop(ctx context.Context) error {
	j.cancel()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %s: still stopping: %w", j.name, ctx.Err())
	}
}
