// Command ovsplaned is the ovsplane daemon. It loads its configuration (vswitchd/config: a YAML
// file, OVSPLANE_* variables, flags), connects to OVSDB — the configured endpoints, else the
// local Open vSwitch when its socket exists, else an embedded OVSDB persisted in the data
// directory with a simulated ovs-vswitchd (no packets flow in that mode) — and keeps OVSDB
// converged to the configured desired state (vswitchd/reconcile), reporting every object's
// status as it changes. SIGHUP reloads the configuration; an invalid one is rejected whole and
// the running state stays. SIGINT/SIGTERM stop it.
//
// With --once it converges once, prints the statuses and exits: 0 when every object is ready,
// 1 otherwise.
//
// The API, metrics and plugin host of issue 4 and later are not served yet.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// localOVSSocket is where Debian's Open vSwitch serves its database.
const localOVSSocket = "/var/run/openvswitch/db.sock"

func main() {
	// libovsdb's RPC layer prints connection-teardown noise through the standard logger.
	stdlog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	err := run(ctx, os.Args[1:], filterEnv(os.Environ()), hup, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ovsplaned: %v\n", err)
		os.Exit(1)
	}
}

// filterEnv drops the OVSPLANE_ variables that belong to the test lab, not to the daemon's
// configuration (which rejects unknown OVSPLANE_ variables as likely typos).
func filterEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "OVSPLANE_REQUIRE_LAB=") || strings.HasPrefix(kv, "OVSPLANE_HUGEPAGES=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

type daemonFlags struct {
	file     string
	once     bool
	embedded bool
	timeout  time.Duration
}

// errNotReady is --once's failure: some object is not ready.
var errNotReady = errors.New("not every object is ready")

func run(ctx context.Context, args, env []string, hup <-chan os.Signal, stdout, stderr io.Writer) error {
	var df daemonFlags
	fs := pflag.NewFlagSet("ovsplaned", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&df.file, "config", "", "configuration file (YAML); default $OVSPLANE_CONFIG")
	fs.BoolVar(&df.once, "once", false, "converge once, print the statuses and exit (0 when all are ready)")
	fs.BoolVar(&df.embedded, "embedded", false, "use the embedded OVSDB even when an Open vSwitch is running")
	fs.DurationVar(&df.timeout, "timeout", 60*time.Second, "with --once: how long to wait for every object to be ready")
	config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if df.file == "" {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, config.EnvConfigFile+"="); ok {
				df.file = v
			}
		}
	}
	load := func() (*config.Config, error) {
		return config.Load(ctx, config.Options{File: df.file, Env: env, Flags: fs})
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	log := slog.New(cfg.Log.NewHandler(stderr))

	endpoints, cleanup, err := connectTarget(ctx, cfg, df.embedded, log, stdout)
	if err != nil {
		return err
	}
	defer cleanup()

	ocfg := ovsdb.Config{Endpoints: endpoints, Logger: log}
	if t := cfg.OVSDB.TLS; t.PrivateKey != "" {
		ocfg.TLS = &ovsdb.TLSFiles{PrivateKey: t.PrivateKey, Certificate: t.Certificate, CACert: t.CACert}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	client, err := ovsdb.Dial(dialCtx, ocfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", strings.Join(endpoints, ","), err)
	}
	defer client.Close()
	if err := client.Init(ctx); err != nil {
		return fmt.Errorf("initialising the Open_vSwitch row: %w", err)
	}

	r := reconcile.New(client, cfg.Desired(), reconcile.Options{
		Logger: log,
		OnChange: func(changed []reconcile.Status) {
			for _, s := range changed {
				attrs := []any{"object", s.Key(), "state", string(s.State)}
				if s.Ofport != 0 {
					attrs = append(attrs, "ofport", s.Ofport)
				}
				if s.Error != "" {
					attrs = append(attrs, "error", s.Error)
				}
				log.Info("status", attrs...)
			}
		},
	})
	if df.once {
		return once(ctx, r, df.timeout, stdout)
	}

	fmt.Fprintf(stdout, "ovsplaned: keeping %s converged to %s; try: vsctl --db=%s show (Ctrl-C stops)\n",
		strings.Join(endpoints, ","), orDefault(df.file, "the default configuration"), endpoints[0])
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for {
		select {
		case err := <-done:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case <-hup:
			next, err := load()
			if err != nil {
				log.Error("reload rejected; the running configuration stays", "error", err)
				continue
			}
			log.Info("configuration reloaded")
			r.Update(next.Desired())
		}
	}
}

// once converges and prints the statuses, failing unless every object becomes ready in time.
func once(ctx context.Context, r *reconcile.Reconciler, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var st []reconcile.Status
	for {
		err := r.Reconcile(ctx)
		st = r.Status()
		if err == nil && allReady(st) {
			break
		}
		select {
		case <-ctx.Done():
			printStatus(stdout, st)
			if err != nil {
				return fmt.Errorf("%w: %w", errNotReady, err)
			}
			return errNotReady
		case <-r.Watch():
		case <-time.After(200 * time.Millisecond):
		}
	}
	printStatus(stdout, st)
	return nil
}

func allReady(st []reconcile.Status) bool {
	for _, s := range st {
		if s.State != reconcile.Ready {
			return false
		}
	}
	return true
}

func printStatus(w io.Writer, st []reconcile.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tSTATE\tOFPORT\tERROR")
	for _, s := range st {
		of := ""
		if s.Ofport != 0 {
			of = fmt.Sprint(s.Ofport)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Key(), s.State, of, s.Error)
	}
	tw.Flush()
}

// connectTarget returns the OVSDB endpoints to use: the configured ones, else the local Open
// vSwitch, else an embedded OVSDB in <data_dir>/ovsdb with a simulated ovs-vswitchd (cleanup
// stops them).
func connectTarget(ctx context.Context, cfg *config.Config, forceEmbedded bool, log *slog.Logger, stdout io.Writer) ([]string, func(), error) {
	if len(cfg.OVSDB.Endpoints) > 0 && !forceEmbedded {
		return cfg.OVSDB.Endpoints, func() {}, nil
	}
	if !forceEmbedded {
		if _, err := os.Stat(localOVSSocket); err == nil {
			return []string{"unix:" + localOVSSocket}, func() {}, nil
		}
	}
	dir := filepath.Join(cfg.DataDir, "ovsdb")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("embedded OVSDB: %w", err)
	}
	db, err := embedded.Open(ctx, dir, embedded.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("embedded OVSDB in %s: %w", dir, err)
	}
	sim, err := ovsdbtest.NewVswitchd(ctx, ovsdbtest.VswitchdConfig{Endpoint: db.Endpoint(), Logger: log})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("simulated ovs-vswitchd: %w", err)
	}
	fmt.Fprintf(stdout, "ovsplaned: no Open vSwitch here: embedded OVSDB at %s (persisted in %s) with a SIMULATED ovs-vswitchd — no packets flow in this mode\n",
		db.Endpoint(), db.Path())
	return []string{db.Endpoint()}, func() { sim.Close(); db.Close() }, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
