package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/route"
)

// Fabric is what the controller needs from the fabric database; *fabric.Client implements it.
type Fabric interface {
	AcquireLease(ctx context.Context, holder string, ttl time.Duration) (fabric.Lease, error)
	Nodes(ctx context.Context) ([]fabric.NodeState, error)
	Links(ctx context.Context) ([]fabric.LinkReport, error)
	Status(ctx context.Context) (fabric.Global, error)
	Routes(ctx context.Context, version int64) (fabric.Tables, error)
	PublishRoutes(ctx context.Context, fence *fabric.Lease, version int64, tables fabric.Tables) (fabric.Published, error)
	MarkStale(ctx context.Context, fence *fabric.Lease, node string, lastSeen time.Time) (bool, error)
	RecordMinApplied(ctx context.Context, fence *fabric.Lease) (int64, error)
}

// Bounds and defaults of Config.
const (
	// DefaultLeaseTTL is Config.LeaseTTL when zero.
	DefaultLeaseTTL = 5 * time.Second
	// MinPeriod bounds Config.Period from below.
	MinPeriod = 10 * time.Millisecond
	// DefaultStaleAfter is Config.StaleAfter when zero: six agent heartbeats at
	// agent.DefaultHeartbeat.
	DefaultStaleAfter = 30 * time.Second
)

// Config configures a controller.
type Config struct {
	// Fabric is the fabric database client. Required.
	Fabric Fabric
	// Holder names this controller in the lease (the fabric's name rules). Required.
	Holder string
	// LeaseTTL is the lease time, within fabric.MinLeaseTTL–MaxLeaseTTL; 0 means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Period is the time between rounds (lease renewal and route computation); at least
	// MinPeriod and at most LeaseTTL/3 so that a healthy controller renews in time; 0 means
	// LeaseTTL/5.
	Period time.Duration
	// StaleAfter is the stale bound: a node whose last-seen time (set by its registration,
	// acknowledgements and heartbeats) has not changed for this long, by this controller's
	// clock, is marked fabric.HealthStale. It must exceed the agents' heartbeat interval
	// (a few times over); at least 2×Period; 0 means max(DefaultStaleAfter, 2×Period). A
	// controller that just took the lease starts counting then, so a node is never marked
	// stale sooner than StaleAfter after a takeover.
	StaleAfter time.Duration
	// CostHysteresis is the relative cost change that makes a new version on its own: a round
	// whose tables differ from the published version's only by costs that each moved by at
	// most CostHysteresis × their published value publishes nothing (counted in
	// Stats.Suppressed); a next hop or destination change always publishes. Within
	// MinCostHysteresis–MaxCostHysteresis; 0 means DefaultCostHysteresis.
	CostHysteresis float64
	// Now is the clock used to check the lease before publishing and to time silences; nil
	// means time.Now. It must agree with the fabric client's clock.
	Now func() time.Time
	// Logger receives round errors and lease changes; nil means slog.Default().
	Logger *slog.Logger
}

// Stats counts what a controller did; read with Controller.Stats.
type Stats struct {
	// Holding is true while this controller holds the lease.
	Holding bool
	// Epoch is the lease epoch last held (0: never).
	Epoch int64
	// Acquired counts times the lease was taken (each new epoch); Lost counts times it was lost.
	Acquired, Lost int
	// Rounds counts rounds run; Errors counts rounds that failed (fabric or route errors).
	Rounds, Errors int
	// Published counts versions this controller wrote; Skipped counts rounds, while holding,
	// whose tables equalled the current version's (no publish attempted).
	Published, Skipped int
	// Version is the route version current as last seen or written by this controller.
	Version int64
	// Suppressed counts rounds, while holding, whose tables differed from the published
	// version's only by cost changes within Config.CostHysteresis (nothing published).
	Suppressed int
	// Fenced counts publishes refused because the lease had been taken over.
	Fenced int
	// LinksIgnored counts, in the last computed round, links left out of the graph (an end
	// not registered, two ordinary ends, metrics outside overlay/route's ranges or a dead link).
	LinksIgnored int
	// LinksAvoided counts, in the last computed round, links left out because an end is a
	// super node marked stale.
	LinksAvoided int
	// Full, Incremental and Unchanged count rounds, while holding, by how the routes were
	// obtained (see Recompute); LastRecompute is the last round's.
	Full, Incremental, Unchanged int
	LastRecompute                Recompute
	// MarkedStale counts nodes this controller marked stale.
	MarkedStale int
	// MinApplied is the slowest running node's applied version as last recorded in
	// Fabric_Global.min_applied_version by this controller (OVN's hv_cfg).
	MinApplied int64
	// LastError is the last round's error text ("" when it succeeded).
	LastError string
}

// Controller runs the controller role; create it with New and run it with Run.
type Controller struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	stats Stats

	// Owned by Run's goroutine: what the database holds at the version we know, for the
	// epoch we hold.
	epoch     int64 // epoch for which version/published are known; 0: unknown
	version   int64
	published fabric.Tables // the tables of version
	plan      planner
	// settled is true when plan's current tables were already compared with published (and
	// published or found insignificant), so an unchanged round need not compare again.
	settled bool
	// seen maps each node to its last-seen value and when (our clock) it was first seen so;
	// reset when the lease is taken.
	seen map[string]sighting
	// recorded is the min applied version we last recorded (-1: unknown).
	recorded int64
}

// sighting is a node's last-seen value and when this controller first observed it.
type sighting struct {
	lastSeen time.Time
	since    time.Time
}

// New checks cfg and returns a controller. Errors name the field and the fix.
func New(cfg Config) (*Controller, error) {
	if cfg.Fabric == nil {
		return nil, errors.New("controller: Config.Fabric is nil: give a fabric client")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < fabric.MinLeaseTTL || cfg.LeaseTTL > fabric.MaxLeaseTTL {
		return nil, fmt.Errorf("controller: LeaseTTL %v: give %v to %v", cfg.LeaseTTL, fabric.MinLeaseTTL, fabric.MaxLeaseTTL)
	}
	if cfg.Period == 0 {
		cfg.Period = max(cfg.LeaseTTL/5, MinPeriod)
	}
	if cfg.Period < MinPeriod || cfg.Period > cfg.LeaseTTL/3 {
		return nil, fmt.Errorf("controller: Period %v: give %v to LeaseTTL/3 (%v)", cfg.Period, MinPeriod, cfg.LeaseTTL/3)
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = max(DefaultStaleAfter, 2*cfg.Period)
	}
	if cfg.StaleAfter < 2*cfg.Period {
		return nil, fmt.Errorf("controller: StaleAfter %v: give at least 2×Period (%v), and more than the agents' heartbeat", cfg.StaleAfter, 2*cfg.Period)
	}
	if cfg.CostHysteresis == 0 {
		cfg.CostHysteresis = DefaultCostHysteresis
	}
	if !(cfg.CostHysteresis >= MinCostHysteresis && cfg.CostHysteresis <= MaxCostHysteresis) {
		return nil, fmt.Errorf("controller: CostHysteresis %v: give %v to %v (a fraction of the published cost), or 0 for %v",
			cfg.CostHysteresis, MinCostHysteresis, MaxCostHysteresis, DefaultCostHysteresis)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("component", "overlay-controller", "holder", cfg.Holder)}
	// The holder name is checked by the fabric on each acquire; check it here to fail early.
	if err := (fabric.NodeSpec{Name: cfg.Holder, Kind: fabric.KindSuper}).Validate(); err != nil {
		return nil, fmt.Errorf("controller: Holder: %w", err)
	}
	return c, nil
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Run runs rounds every Period until ctx ends, then returns ctx's error. It does not release
// the lease on return (a crash cannot either): another controller takes over after expiry.
// Each round is bounded by the lease time.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Period)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseTTL)
		err := c.Round(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("controller round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			c.update(func(s *Stats) { s.Holding = false })
			return ctx.Err()
		case <-t.C:
		}
	}
}

// update applies f to the stats under the lock.
func (c *Controller) update(f func(*Stats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.stats)
}

// Round runs one round: acquire or renew the lease and, while held, publish the routes when
// they changed. Run calls it every Period; tests may call it directly (not concurrently with
// Run).
func (c *Controller) Round(ctx context.Context) error {
	err := c.round(ctx)
	c.update(func(s *Stats) {
		s.Rounds++
		s.LastError = ""
		if err != nil {
			s.Errors++
			s.LastError = err.Error()
		}
	})
	return err
}

func (c *Controller) round(ctx context.Context) error {
	lease, err := c.cfg.Fabric.AcquireLease(ctx, c.cfg.Holder, c.cfg.LeaseTTL)
	if err != nil || !lease.Held {
		c.lose("renewal failed or another holder")
		if err != nil {
			return fmt.Errorf("controller %s: lease: %w", c.cfg.Holder, err)
		}
		return nil
	}
	if c.epoch != lease.Epoch {
		c.epoch = 0
		c.seen, c.recorded = map[string]sighting{}, -1
		c.update(func(s *Stats) { s.Holding, s.Epoch = true, lease.Epoch; s.Acquired++ })
		c.log.Info("controller lease acquired", "epoch", lease.Epoch)
	}
	nodes, links, err := c.read(ctx)
	if err != nil {
		return err
	}
	for _, step := range []func(context.Context, *fabric.Lease, []fabric.NodeState) error{c.markStale, c.recordMin} {
		if err := step(ctx, &lease, nodes); errors.Is(err, errLost) {
			return nil
		} else if err != nil {
			return err
		}
	}
	rn, rl, ignored, avoided := graphOf(nodes, links)
	tables, how, err := c.plan.plan(rn, rl)
	c.update(func(s *Stats) {
		s.LinksIgnored, s.LinksAvoided, s.LastRecompute = ignored, avoided, how
		switch how {
		case Full:
			s.Full++
		case Incremental:
			s.Incremental++
		default:
			s.Unchanged++
		}
	})
	if err != nil {
		c.settled = false
		return err
	}
	if how != Unchanged {
		c.settled = false
	}
	if c.epoch != lease.Epoch {
		// New to the lease: learn the current version and its tables.
		st, err := c.cfg.Fabric.Status(ctx)
		if err != nil {
			return fmt.Errorf("controller %s: read status: %w", c.cfg.Holder, err)
		}
		cur, err := c.cfg.Fabric.Routes(ctx, st.RouteVersion)
		if err != nil {
			return fmt.Errorf("controller %s: read routes of version %d: %w", c.cfg.Holder, st.RouteVersion, err)
		}
		c.epoch, c.version, c.published, c.settled = lease.Epoch, st.RouteVersion, cur, false
		c.update(func(s *Stats) { s.Version = st.RouteVersion })
	}
	if c.version > 0 && (c.settled || !significant(c.published, tables, c.cfg.CostHysteresis)) {
		equal := c.settled || !significant(c.published, tables, 0)
		c.settled = true
		c.update(func(s *Stats) {
			if equal {
				s.Skipped++
			} else {
				s.Suppressed++
			}
		})
		return nil
	}
	if !lease.Expires.After(c.cfg.Now()) {
		c.lose("expired before publishing")
		return nil
	}
	// Tables that moved less than the hysteresis keep their published form, so the version
	// rewrites only the tables that really changed.
	if c.version > 0 {
		if tables, _, err = Settle(c.published, tables, c.cfg.CostHysteresis); err != nil {
			return err
		}
	}
	next := c.version + 1
	pub, err := c.cfg.Fabric.PublishRoutes(ctx, &lease, next, tables)
	switch {
	case errors.Is(err, fabric.ErrFenced):
		c.update(func(s *Stats) { s.Fenced++ })
		c.lose("publish fenced")
		return nil
	case errors.Is(err, fabric.ErrConflict):
		c.epoch = 0 // the database moved: learn it again next round
		return fmt.Errorf("controller %s: publish version %d: %w", c.cfg.Holder, next, err)
	case err != nil:
		return fmt.Errorf("controller %s: publish version %d: %w", c.cfg.Holder, next, err)
	}
	c.version, c.published, c.settled = pub.Version, tables, true
	c.update(func(s *Stats) {
		s.Version = pub.Version
		if pub.Wrote {
			s.Published++
		} else {
			s.Skipped++
		}
	})
	if pub.Wrote {
		c.log.Info("route version published", "version", pub.Version, "nodes", len(tables))
	}
	return nil
}

// lose records that the lease is not held (counting a loss when it was).
func (c *Controller) lose(why string) {
	c.epoch = 0
	c.update(func(s *Stats) {
		if s.Holding {
			s.Lost++
			c.log.Info("controller lease lost", "why", why)
		}
		s.Holding = false
	})
}

// errLost tells round that a step found the lease taken over (already recorded by lose).
var errLost = errors.New("controller: lease lost")

// read reads nodes and links.
func (c *Controller) read(ctx context.Context) ([]fabric.NodeState, []fabric.LinkReport, error) {
	nodes, err := c.cfg.Fabric.Nodes(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("controller %s: read nodes: %w", c.cfg.Holder, err)
	}
	links, err := c.cfg.Fabric.Links(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("controller %s: read links: %w", c.cfg.Holder, err)
	}
	return nodes, links, nil
}

// markStale marks stale every node whose last-seen time has not moved for StaleAfter by our
// clock, updating nodes in place for the marked ones.
func (c *Controller) markStale(ctx context.Context, lease *fabric.Lease, nodes []fabric.NodeState) error {
	now := c.cfg.Now()
	present := make(map[string]bool, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		present[n.Name] = true
		st, ok := c.seen[n.Name]
		if !ok || !st.lastSeen.Equal(n.LastSeen) {
			c.seen[n.Name] = sighting{lastSeen: n.LastSeen, since: now}
			continue
		}
		if n.Health == fabric.HealthStale || n.Health == fabric.HealthDown || now.Sub(st.since) < c.cfg.StaleAfter {
			continue
		}
		marked, err := c.cfg.Fabric.MarkStale(ctx, lease, n.Name, n.LastSeen)
		if errors.Is(err, fabric.ErrFenced) {
			c.update(func(s *Stats) { s.Fenced++ })
			c.lose("mark stale fenced")
			return errLost
		}
		if err != nil {
			return fmt.Errorf("controller %s: mark node %s stale: %w", c.cfg.Holder, n.Name, err)
		}
		if marked {
			n.Health = fabric.HealthStale
			c.update(func(s *Stats) { s.MarkedStale++ })
			c.log.Warn("node marked stale", "node", n.Name, "silent_for", now.Sub(st.since).Round(time.Millisecond))
		}
	}
	for n := range c.seen {
		if !present[n] {
			delete(c.seen, n)
		}
	}
	return nil
}

// recordMin stores the slowest running node's applied version when it moved since we last
// recorded it.
func (c *Controller) recordMin(ctx context.Context, lease *fabric.Lease, nodes []fabric.NodeState) error {
	minV, found := int64(0), false
	for _, n := range nodes {
		if n.Health != fabric.HealthDown && n.Health != fabric.HealthStale && (!found || n.AppliedVersion < minV) {
			minV, found = n.AppliedVersion, true
		}
	}
	if found && minV == c.recorded {
		return nil
	}
	got, err := c.cfg.Fabric.RecordMinApplied(ctx, lease)
	if errors.Is(err, fabric.ErrFenced) {
		c.update(func(s *Stats) { s.Fenced++ })
		c.lose("record min applied fenced")
		return errLost
	}
	if err != nil {
		return fmt.Errorf("controller %s: record min applied: %w", c.cfg.Holder, err)
	}
	c.recorded = got
	c.update(func(s *Stats) { s.MinApplied = got })
	return nil
}

// Tables computes every node's route table from the fabric's nodes and links with a full
// computation (the format is in the package doc). Links that cannot enter the graph are left
// out and counted: an end not among nodes, two ordinary ends, bandwidth 0 (dead) or metrics
// outside overlay/route's ranges. Links of super nodes marked stale are left out too, not
// counted. Errors come from overlay/route refusing the graph (e.g. too many nodes).
func Tables(nodes []fabric.NodeState, links []fabric.LinkReport) (fabric.Tables, int, error) {
	rn, rl, ignored, _ := graphOf(nodes, links)
	r, err := route.New(rn, rl)
	if err != nil {
		return nil, ignored, fmt.Errorf("controller: route graph of %d nodes, %d links: %w", len(rn), len(rl), err)
	}
	t, err := tablesOf(r, rn)
	return t, ignored, err
}
