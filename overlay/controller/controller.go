package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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
}

// Bounds and defaults of Config.
const (
	// DefaultLeaseTTL is Config.LeaseTTL when zero.
	DefaultLeaseTTL = 5 * time.Second
	// MinPeriod bounds Config.Period from below.
	MinPeriod = 10 * time.Millisecond
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
	// Now is the clock used to check the lease before publishing; nil means time.Now. It must
	// agree with the fabric client's clock.
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
	// Fenced counts publishes refused because the lease had been taken over.
	Fenced int
	// LinksIgnored counts, in the last computed round, links left out of the graph (an end
	// not registered, two ordinary ends, metrics outside overlay/route's ranges or a dead link).
	LinksIgnored int
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
	epoch   int64 // epoch for which version/digest are known; 0: unknown
	version int64
	digest  [sha256.Size]byte
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
		c.update(func(s *Stats) { s.Holding, s.Epoch = true, lease.Epoch; s.Acquired++ })
		c.log.Info("controller lease acquired", "epoch", lease.Epoch)
	}
	tables, ignored, err := c.compute(ctx)
	if err != nil {
		return err
	}
	c.update(func(s *Stats) { s.LinksIgnored = ignored })
	d := digest(tables)
	if c.epoch != lease.Epoch {
		// New to the lease: learn the current version and its tables' digest.
		st, err := c.cfg.Fabric.Status(ctx)
		if err != nil {
			return fmt.Errorf("controller %s: read status: %w", c.cfg.Holder, err)
		}
		cur, err := c.cfg.Fabric.Routes(ctx, st.RouteVersion)
		if err != nil {
			return fmt.Errorf("controller %s: read routes of version %d: %w", c.cfg.Holder, st.RouteVersion, err)
		}
		c.epoch, c.version, c.digest = lease.Epoch, st.RouteVersion, digest(cur)
		c.update(func(s *Stats) { s.Version = st.RouteVersion })
	}
	if c.version > 0 && d == c.digest {
		c.update(func(s *Stats) { s.Skipped++ })
		return nil
	}
	if !lease.Expires.After(c.cfg.Now()) {
		c.lose("expired before publishing")
		return nil
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
	c.version, c.digest = pub.Version, d
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

// compute reads nodes and links and returns every node's table and the number of links left
// out.
func (c *Controller) compute(ctx context.Context) (fabric.Tables, int, error) {
	nodes, err := c.cfg.Fabric.Nodes(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("controller %s: read nodes: %w", c.cfg.Holder, err)
	}
	links, err := c.cfg.Fabric.Links(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("controller %s: read links: %w", c.cfg.Holder, err)
	}
	return Tables(nodes, links)
}

// Tables computes every node's route table from the fabric's nodes and links (the format is
// in the package doc). Links that cannot enter the graph are left out and counted: an end
// not among nodes, two ordinary ends, bandwidth 0 (dead) or metrics outside overlay/route's
// ranges. Errors come from overlay/route refusing the graph (e.g. too many nodes).
func Tables(nodes []fabric.NodeState, links []fabric.LinkReport) (fabric.Tables, int, error) {
	kind := make(map[string]route.Kind, len(nodes))
	rn := make([]route.Node, 0, len(nodes))
	for _, n := range nodes {
		k := route.Ordinary
		if n.Kind == fabric.KindSuper {
			k = route.Super
		}
		kind[n.Name] = k
		rn = append(rn, route.Node{ID: n.Name, Kind: k})
	}
	ignored := 0
	rl := make([]route.Link, 0, len(links))
	for _, l := range links {
		ka, okA := kind[l.A]
		kb, okB := kind[l.B]
		m := route.Metrics{Bandwidth: uint64(max(l.BandwidthKbps, 0)) * 1000, Latency: time.Duration(l.LatencyUs) * time.Microsecond}
		if !okA || !okB || (ka == route.Ordinary && kb == route.Ordinary) || m.Validate() != nil {
			ignored++
			continue
		}
		rl = append(rl, route.Link{A: l.A, B: l.B, Metrics: m})
	}
	r, err := route.New(rn, rl)
	if err != nil {
		return nil, ignored, fmt.Errorf("controller: route graph of %d nodes, %d links: %w", len(rn), len(rl), err)
	}
	out := make(fabric.Tables, len(nodes))
	for _, n := range rn {
		t, err := r.Table(n.ID)
		if err != nil {
			return nil, ignored, fmt.Errorf("controller: table of %s: %w", n.ID, err)
		}
		m := make(map[string]string, len(t.Supers)+len(t.Attached))
		for _, s := range t.Supers {
			m[s.Dest] = s.NextHop + " " + strconv.FormatInt(int64(s.Cost), 10)
		}
		for _, a := range t.Attached {
			if n.Kind == route.Super {
				m[a.Ordinary] = a.Ordinary + " " + strconv.FormatInt(int64(a.Cost), 10)
			} else {
				m["att."+a.Super] = a.Super + " " + strconv.FormatInt(int64(a.Cost), 10)
			}
		}
		out[n.ID] = m
	}
	return out, ignored, nil
}

// digest hashes tables canonically (nodes with no routes are left out, as the fabric treats
// them as equal to missing nodes).
func digest(t fabric.Tables) [sha256.Size]byte {
	h := sha256.New()
	nodes := make([]string, 0, len(t))
	for n, r := range t {
		if len(r) > 0 {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		dsts := make([]string, 0, len(t[n]))
		for d := range t[n] {
			dsts = append(dsts, d)
		}
		slices.Sort(dsts)
		fmt.Fprintf(h, "%d:%s\n", len(n), n)
		for _, d := range dsts {
			fmt.Fprintf(h, "%d:%s=%d:%s\n", len(d), d, len(t[n][d]), t[n][d])
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
