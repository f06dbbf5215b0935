// Package vswitchdtest is test support for the daemon's tests: an in-memory OVSDB server with a
// simulated ovs-vswitchd (Env), an embedded OVSDB with one and an ovsdb client on it
// (EmbeddedSim), and a daemon running on such a client until the test ends (RunDaemon).
// Product code must not import it.
package vswitchdtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// Env is an in-memory OVSDB server with a simulated ovs-vswitchd that attaches only net_tap
// devargs (a DPDK port with other devargs fails as without the device), a raw libovsdb client
// on it, and a context for the test.
type Env struct {
	Ctx context.Context
	Srv *ovsdbtest.Server
	Raw client.Client
}

// NewEnv starts an Env whose Ctx ends after timeout or with the test.
func NewEnv(tb testing.TB, timeout time.Duration) *Env {
	tb.Helper()
	srv := ovsdbtest.Start(tb)
	ovsdbtest.StartOVSVswitchd(tb, srv, simvswitchd.WithDevargs(simvswitchd.DevargsPolicy{Prefixes: []string{"net_tap"}}))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	tb.Cleanup(cancel)
	return &Env{Ctx: ctx, Srv: srv, Raw: srv.Client(tb)}
}

// Client dials an ovsdb client on the server with cfg, its Endpoints set to the server's and
// its logs discarded; it is closed when the test ends.
func (e *Env) Client(tb testing.TB, cfg ovsdb.Config) *ovsdb.Client {
	tb.Helper()
	cfg.Endpoints, cfg.Logger = []string{e.Srv.Endpoint()}, slog.New(slog.DiscardHandler)
	c, err := ovsdb.Dial(e.Ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// EmbeddedSim opens an embedded OVSDB in a short temporary directory (its unix socket path
// must fit 107 bytes), connects a simulated ovs-vswitchd to it and returns it with an
// initialised client on it. All three are closed when the test ends; logger gets their logs.
func EmbeddedSim(tb testing.TB, ctx context.Context, logger *slog.Logger) (*embedded.DB, *ovsdb.Client) {
	tb.Helper()
	dir := testkit.ShortTempDir(tb, "ovsplane-fuzz")
	db, err := embedded.Open(ctx, dir, embedded.Options{Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	sim, err := simvswitchd.New(ctx, simvswitchd.Config{Endpoint: db.Endpoint(), Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(sim.Close)
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint()}, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	if err := c.Init(ctx); err != nil {
		tb.Fatal(err)
	}
	return db, c
}

// FastReconcile returns reconciler options with backoffs and delays of milliseconds, so that
// a test daemon converges quickly.
func FastReconcile() reconcile.Options {
	return reconcile.Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Debounce: 5 * time.Millisecond, DriftDelay: 50 * time.Millisecond}
}

// RunDaemon creates a daemon on c with cfg and opts, reconciles once and runs it until the
// test ends, then stops and closes it.
func RunDaemon(tb testing.TB, ctx context.Context, c *ovsdb.Client, cfg *config.Config, opts vswitchd.Options) *vswitchd.Daemon {
	tb.Helper()
	d, err := vswitchd.New(ctx, c, cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Reconcile(ctx); err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(runCtx); close(done) }()
	tb.Cleanup(func() {
		stop()
		<-done
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Close(cctx)
	})
	return d
}
