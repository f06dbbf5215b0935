// Package vswitchdtest is test support for the daemon's tests: an embedded OVSDB with a
// simulated ovs-vswitchd and an ovsdb client on it, and a daemon running on that client until
// the test ends. Product code must not import it.
package vswitchdtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

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
