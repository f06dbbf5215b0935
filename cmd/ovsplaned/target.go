package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/sandbox"
)

// target is the OVSDB the daemon talks to and what runs it.
type target struct {
	mode      model.Mode
	runDir    string // Open vSwitch's run directory (its sockets), "" for the embedded OVSDB
	endpoints []string
	describe  string
	close     func()
	// vswitchdDown, for a target whose ovs-vswitchd the daemon runs (the sandbox), says why it
	// is not running now ("" while it runs); nil otherwise.
	vswitchdDown func() string
	// degraded, for a target the daemon runs (the sandbox), says what of it does not work now
	// (vswitchd.Options.Degraded); nil otherwise.
	degraded func() []string
}

// connectTarget picks the OVSDB: --embedded, --sandbox, the configured endpoints, the local Open
// vSwitch, else the embedded OVSDB in <data_dir>/ovsdb with a simulated ovs-vswitchd.
func connectTarget(ctx context.Context, cfg *config.Config, df daemonFlags, log *slog.Logger, stdout io.Writer) (*target, error) {
	switch {
	case df.sandbox:
		mode, err := sandbox.ParseDPDKMode(df.dpdk)
		if err != nil {
			return nil, fmt.Errorf("--sandbox-dpdk: %w", err)
		}
		// The desired other_config goes to the sandbox so that it does not write its own
		// dpdk-* defaults over keys the daemon owns.
		sb, err := sandbox.Start(ctx, sandbox.Options{Dir: filepath.Join(cfg.DataDir, "sandbox"), DPDK: mode,
			DesiredOtherConfig: cfg.OtherConfig, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		return &target{mode: model.ModeSandbox, endpoints: []string{sb.Endpoint()}, runDir: filepath.Join(cfg.DataDir, "sandbox"),
			describe: sb.Describe(),
			close: func() {
				sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
				defer cancel()
				if err := sb.Close(sctx); err != nil {
					log.Warn("sandbox: stop", "error", err)
				}
			},
			vswitchdDown: func() string { return sb.Status().Down["ovs-vswitchd"] },
			degraded:     func() []string { return sb.Status().Degraded() }}, nil
	case len(cfg.OVSDB.Endpoints) > 0 && !df.embedded:
		return &target{mode: model.ModeOVS, endpoints: cfg.OVSDB.Endpoints, runDir: ovsRunDir(cfg.OVSDB.Endpoints),
			describe: "Open vSwitch at " + strings.Join(cfg.OVSDB.Endpoints, ","), close: func() {}}, nil
	case !df.embedded:
		if _, err := os.Stat(localOVSSocket); err == nil {
			ep := "unix:" + localOVSSocket
			return &target{mode: model.ModeOVS, endpoints: []string{ep}, runDir: filepath.Dir(localOVSSocket),
				describe: "the local Open vSwitch at " + ep, close: func() {}}, nil
		}
	}
	dir := filepath.Join(cfg.DataDir, "ovsdb")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded OVSDB: %w", err)
	}
	db, err := embedded.Open(ctx, dir, embedded.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("embedded OVSDB in %s: %w", dir, err)
	}
	sim, err := simvswitchd.New(ctx, simvswitchd.Config{Endpoint: db.Endpoint(), Logger: log})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("simulated ovs-vswitchd: %w", err)
	}
	fmt.Fprintf(stdout, "ovsplaned: no Open vSwitch here: embedded OVSDB at %s (persisted in %s) with a SIMULATED ovs-vswitchd — no packets flow in this mode\n",
		db.Endpoint(), db.Path())
	return &target{mode: model.ModeEmbedded, endpoints: []string{db.Endpoint()},
		describe: "embedded OVSDB " + db.Endpoint() + " with a simulated ovs-vswitchd (no packets flow)",
		close:    func() { sim.Close(); db.Close() }}, nil
}

// sandboxProbe answers "not running" while the sandbox reports its ovs-vswitchd down (it
// exited and is being restarted), and asks probe otherwise: the restarted process holds the
// vswitchd lock only once it has connected to the database.
func sandboxProbe(probe vswitchd.SwitchProbe, down func() string) vswitchd.SwitchProbe {
	return func(ctx context.Context) (alive, ok bool) {
		if down() != "" {
			return false, true
		}
		return probe(ctx)
	}
}

// ovsRunDir is the run directory of the Open vSwitch behind the first unix endpoint, or
// Open vSwitch's default.
func ovsRunDir(endpoints []string) string {
	for _, ep := range endpoints {
		if path, ok := strings.CutPrefix(ep, "unix:"); ok {
			return filepath.Dir(path)
		}
	}
	return filepath.Dir(localOVSSocket)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
