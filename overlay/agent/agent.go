// Package agent is the overlay's node agent (issue 17), route side: it registers its node in
// the fabric database, follows the newest route version, hands its node's table to an
// Installer and acknowledges the version once the install succeeded (or, when its table did
// not change since the version it installed, acknowledges first and reinstalls the same
// table under the new version: what runs is that version's table either way). While the fabric is
// unreachable it keeps the last installed table (it never installs anything it did not read)
// and retries with exponential backoff; after a restart it resumes from the applied version
// stored in the fabric (it reinstalls that version without acknowledging it again) and
// catches up to the newest. It reads only its own node's table (fabric.Client.RoutesFor), and
// not even that when the fabric says its table did not change since the version it installed
// (fabric.Client.AckUnchanged: acknowledged without a read, the same table reinstalled under
// the new version); and when it has had nothing to acknowledge for Config.Heartbeat it sends a heartbeat, so the
// controller can tell a silent node (marked stale after its bound) from a quiet fabric. Link
// probing and the OVS installer come later.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

// Installer applies one node's route table (destination → next hop, the controller's format).
// Install must be idempotent and replace whatever an earlier call installed; an error leaves
// the version unacknowledged and it is retried.
type Installer interface {
	Install(ctx context.Context, version int64, routes map[string]string) error
}

// Fabric is what the agent needs from the fabric database; *fabric.Client implements it.
type Fabric interface {
	RegisterNode(ctx context.Context, spec fabric.NodeSpec) error
	Nodes(ctx context.Context) ([]fabric.NodeState, error)
	Status(ctx context.Context) (fabric.Global, error)
	RoutesFor(ctx context.Context, version int64, nodes ...string) (fabric.Tables, error)
	AckVersion(ctx context.Context, node string, version int64) (bool, error)
	AckUnchanged(ctx context.Context, version int64, installed map[string]int64) ([]string, error)
	Heartbeat(ctx context.Context, node string) error
}

// Bounds of Config.
const (
	// MinPeriod bounds Config.Period from below.
	MinPeriod = 10 * time.Millisecond
	// DefaultPeriod is Config.Period when zero.
	DefaultPeriod = time.Second
	// DefaultStepTimeout is Config.StepTimeout when zero.
	DefaultStepTimeout = 10 * time.Second
	// DefaultHeartbeat is Config.Heartbeat when zero (or Period, when that is longer).
	DefaultHeartbeat = 5 * time.Second
)

// Config configures an agent.
type Config struct {
	// Fabric is the fabric database client. Required.
	Fabric Fabric
	// Node is what the agent registers; its Name names the table it installs. Required.
	Node fabric.NodeSpec
	// Installer applies the tables. Required.
	Installer Installer
	// Period is the polling interval, at least MinPeriod; 0 means DefaultPeriod.
	Period time.Duration
	// MaxBackoff caps the wait between failed steps (doubling from Period); 0 means 16×Period.
	MaxBackoff time.Duration
	// StepTimeout bounds one step; 0 means DefaultStepTimeout.
	StepTimeout time.Duration
	// Heartbeat is the longest time the agent stays silent: a step that finds nothing was
	// reported (registration, acknowledgement, heartbeat) for that long sends a heartbeat. At
	// least Period; 0 means max(DefaultHeartbeat, Period). The controller's stale bound must be
	// a few heartbeats long.
	Heartbeat time.Duration
	// Logger receives step errors; nil means slog.Default().
	Logger *slog.Logger
}

// Stats counts what an agent did; read with Agent.Stats.
type Stats struct {
	// Registered is true once the node registered and its stored applied version was read.
	Registered bool
	// Resumed is the applied version stored in the fabric when the agent registered.
	Resumed int64
	// Installed is the version whose table is installed (0: none yet); Routes is that table.
	Installed int64
	Routes    map[string]string
	// Applied is the version last acknowledged (or Resumed).
	Applied int64
	// Installs counts successful installs; Acks counts acknowledgements that advanced;
	// Heartbeats counts heartbeats sent.
	Installs, Acks, Heartbeats int
	// Unchanged counts versions acknowledged without reading a table, because the node's
	// table had not changed since the installed version (fabric.Client.AckUnchanged).
	Unchanged int
	// Errors counts failed steps; Reachable is false after a failed step until one succeeds.
	Errors    int
	Reachable bool
	// LastError is the last failed step's error text.
	LastError string
}

// Agent follows route versions for one node; create with New, run with Run.
type Agent struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	stats Stats

	// lastReport is when the agent last wrote to its node's row; owned by Step's caller.
	lastReport time.Time
}

// New checks cfg and returns an agent. Errors name the field and the fix.
func New(cfg Config) (*Agent, error) {
	if cfg.Fabric == nil || cfg.Installer == nil {
		return nil, errors.New("agent: Config.Fabric and Config.Installer are required")
	}
	if err := cfg.Node.Validate(); err != nil {
		return nil, fmt.Errorf("agent: Config.Node: %w", err)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 16 * cfg.Period
	}
	if cfg.StepTimeout == 0 {
		cfg.StepTimeout = DefaultStepTimeout
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = max(DefaultHeartbeat, cfg.Period)
	}
	if cfg.Period < MinPeriod || cfg.MaxBackoff < cfg.Period || cfg.StepTimeout < MinPeriod || cfg.Heartbeat < cfg.Period {
		return nil, fmt.Errorf("agent %s: Period %v, MaxBackoff %v, StepTimeout %v, Heartbeat %v: give Period ≥ %v, MaxBackoff ≥ Period, StepTimeout ≥ %v, Heartbeat ≥ Period",
			cfg.Node.Name, cfg.Period, cfg.MaxBackoff, cfg.StepTimeout, cfg.Heartbeat, MinPeriod, MinPeriod)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Agent{cfg: cfg, log: cfg.Logger.With("component", "overlay-agent", "node", cfg.Node.Name)}, nil
}

// Stats returns a snapshot of the counters (Routes is a copy). Safe for concurrent use.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.Routes = maps.Clone(s.Routes)
	return s
}

// Run steps every Period until ctx ends, backing off after failures, and returns ctx's error.
func (a *Agent) Run(ctx context.Context) error {
	wait := a.cfg.Period
	for {
		sctx, cancel := context.WithTimeout(ctx, a.cfg.StepTimeout)
		err := a.Step(sctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Warn("agent step failed; keeping the installed table", "err", err, "retry_in", wait)
			wait = min(wait*2, a.cfg.MaxBackoff)
		} else {
			wait = a.cfg.Period
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Step runs once: register if not yet, then install and acknowledge the newest version when it
// is newer than the installed one. Run calls it; do not call it concurrently with Run.
func (a *Agent) Step(ctx context.Context) error {
	err := a.step(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.Reachable = err == nil
	if err != nil {
		a.stats.Errors++
		a.stats.LastError = err.Error()
	}
	return err
}

func (a *Agent) step(ctx context.Context) error {
	name := a.cfg.Node.Name
	s := a.Stats()
	if !s.Registered {
		if err := a.cfg.Fabric.RegisterNode(ctx, a.cfg.Node); err != nil {
			return fmt.Errorf("agent %s: register: %w", name, err)
		}
		nodes, err := a.cfg.Fabric.Nodes(ctx)
		if err != nil {
			return fmt.Errorf("agent %s: read stored applied version: %w", name, err)
		}
		var stored int64
		for _, n := range nodes {
			if n.Name == name {
				stored = n.AppliedVersion
			}
		}
		a.mu.Lock()
		a.stats.Registered, a.stats.Resumed, a.stats.Applied = true, stored, stored
		a.mu.Unlock()
		s.Applied = stored
		a.lastReport = time.Now()
	}
	st, err := a.cfg.Fabric.Status(ctx)
	if err != nil {
		return fmt.Errorf("agent %s: read route version: %w", name, err)
	}
	if v := st.RouteVersion; v > s.Installed && s.Installed > 0 {
		// Most versions leave most tables as they were: acknowledge without a read when the
		// fabric says ours did not change since the installed version, then hand the same
		// table to the installer under the new version (Install is idempotent).
		rest, err := a.cfg.Fabric.AckUnchanged(ctx, v, map[string]int64{name: s.Installed})
		if err != nil {
			return fmt.Errorf("agent %s: ack route version %d if unchanged: %w", name, v, err)
		}
		if len(rest) == 0 {
			a.mu.Lock()
			a.stats.Applied = v
			a.stats.Acks++
			a.stats.Unchanged++
			a.mu.Unlock()
			s.Applied = v
			a.lastReport = time.Now()
			if err := a.cfg.Installer.Install(ctx, v, maps.Clone(s.Routes)); err != nil {
				return fmt.Errorf("agent %s: install route version %d (unchanged): %w", name, v, err)
			}
			a.mu.Lock()
			a.stats.Installed = v
			a.stats.Installs++
			a.mu.Unlock()
			s.Installed = v
		}
	}
	if v := st.RouteVersion; v > s.Installed {
		tables, err := a.cfg.Fabric.RoutesFor(ctx, v, name)
		if err != nil {
			return fmt.Errorf("agent %s: read routes of version %d: %w", name, v, err)
		}
		routes := maps.Clone(tables[name])
		if routes == nil {
			routes = map[string]string{}
		}
		if err := a.cfg.Installer.Install(ctx, v, maps.Clone(routes)); err != nil {
			return fmt.Errorf("agent %s: install route version %d: %w", name, v, err)
		}
		a.mu.Lock()
		a.stats.Installed, a.stats.Routes = v, routes
		a.stats.Installs++
		a.mu.Unlock()
		s.Installed = v
	}
	if s.Installed > s.Applied {
		advanced, err := a.cfg.Fabric.AckVersion(ctx, name, s.Installed)
		if err != nil {
			return fmt.Errorf("agent %s: ack route version %d: %w", name, s.Installed, err)
		}
		a.mu.Lock()
		a.stats.Applied = s.Installed
		if advanced {
			a.stats.Acks++
		}
		a.mu.Unlock()
		a.lastReport = time.Now()
	}
	if time.Since(a.lastReport) >= a.cfg.Heartbeat {
		if err := a.cfg.Fabric.Heartbeat(ctx, name); err != nil {
			return fmt.Errorf("agent %s: heartbeat: %w", name, err)
		}
		a.lastReport = time.Now()
		a.mu.Lock()
		a.stats.Heartbeats++
		a.mu.Unlock()
	}
	return nil
}
