// Command ovsplaned is the ovsplane daemon. It loads its configuration (vswitchd/config: a YAML
// file, OVSPLANE_* variables, flags), connects to OVSDB — the configured endpoints, else the
// local Open vSwitch when its socket exists, else an embedded OVSDB persisted in the data
// directory with a simulated ovs-vswitchd (no packets flow in that mode) — and keeps OVSDB
// converged to the configured desired state (vswitchd/reconcile), reporting every object's
// status as it changes. SIGHUP reloads the configuration; an invalid one is rejected whole and
// the running state stays. SIGINT/SIGTERM stop it.
//
// It serves the API (vswitchd/apiserver, docs/api.md) on the configured listeners and, when
// metrics.address is set, Prometheus /metrics. With --sandbox it first starts a private Open
// vSwitch (vswitchd/sandbox) in <data_dir>/sandbox, restarts its ovsdb-server or ovs-vswitchd
// when one exits (serving its API meanwhile), and stops it on exit.
//
// With --once it converges once, prints the statuses and exits: 0 when every object is ready,
// 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/metrics"
	"github.com/ovsplane/ovsplane/vswitchd/openflow"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// localOVSSocket is where Debian's Open vSwitch serves its database.
const localOVSSocket = "/var/run/openvswitch/db.sock"

func main() {
	// libovsdb's RPC layer prints connection-teardown noise through the standard logger.
	stdlog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// No memory limit is set here: the daemon keeps little enough per port that Go's default
	// pacing stays within its budget (docs/benchmarks.md, "Scale"). Operators may still set
	// GOMEMLIMIT (and GOGC), which the Go runtime reads itself: see docs/architecture.md.
	err := run(ctx, os.Args[1:], filterEnv(os.Environ()), hup, os.Stdout, os.Stderr)
	stop()
	var done cliDone
	if errors.As(err, &done) {
		os.Exit(done.code)
	}
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
	sandbox  bool
	dpdk     string
	timeout  time.Duration
	version  bool
	depth    int
	maxBatch int
}

// cliDone is run's result when the command line was handled without starting the daemon
// (--help, --version, a usage error), already printed: main exits with code.
type cliDone struct{ code int }

func (d cliDone) Error() string { return fmt.Sprintf("command line handled (exit %d)", d.code) }

// usageHeader opens ovsplaned's usage, above its flags.
const usageHeader = `usage: ovsplaned [--config FILE] [OPTIONS]
       ovsplaned --once [--timeout DURATION] [OPTIONS]
       ovsplaned --help | --version
The ovsplane daemon: keeps Open vSwitch converged to its configuration (a YAML file, OVSPLANE_*
variables and these flags, which override both). SIGHUP reloads the configuration.
See ovsplaned(8) and examples/ovsplaned.yaml.

Options:
`

// errNotReady is --once's failure: some object is not ready.
var errNotReady = errors.New("not every object is ready")

// shutdownTimeout bounds the graceful stop: batches in flight, API calls, the sandbox.
const shutdownTimeout = 20 * time.Second

func run(ctx context.Context, args, env []string, hup <-chan os.Signal, stdout, stderr io.Writer) error {
	var df daemonFlags
	fs := pflag.NewFlagSet("ovsplaned", pflag.ContinueOnError)
	// cliconv prints help and errors: the flag set prints nothing itself.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.StringVar(&df.file, "config", "", "configuration file (YAML); default $OVSPLANE_CONFIG")
	fs.BoolVar(&df.once, "once", false, "converge once, print the statuses and exit (0 when all are ready)")
	fs.BoolVar(&df.embedded, "embedded", false, "use the embedded OVSDB with a simulated ovs-vswitchd, even when an Open vSwitch is running")
	fs.BoolVar(&df.sandbox, "sandbox", false, "start a private Open vSwitch (ovsdb-server + ovs-vswitchd) in <data_dir>/sandbox and stop it on exit")
	fs.StringVar(&df.dpdk, "sandbox-dpdk", "auto", "with --sandbox: auto (DPDK when ovs-vswitchd-dpdk and free hugepages are there), on or off")
	fs.DurationVar(&df.timeout, "timeout", 60*time.Second, "with --once: how long to wait for every object to be ready")
	fs.BoolVar(&df.version, "version", false, cliconv.VersionFlagUsage)
	fs.IntVar(&df.maxBatch, "batch-max-size", 0, fmt.Sprintf("most port requests in one OVSDB transaction (1 to %d; 0: %d)", limits.MaxRequestsPerBatch, vswitchd.DefaultBatchMaxSize))
	fs.IntVar(&df.depth, "batch-depth", 0, fmt.Sprintf("port batches in flight at once, one committed while others are applied by ovs-vswitchd (1 to %d; 0: %d)", writer.MaxBatchDepth, writer.DefaultBatchDepth))
	config.RegisterFlags(fs)
	usage := func(w io.Writer) { fmt.Fprint(w, usageHeader+fs.FlagUsages()) }
	if code, done := cliconv.Parsed("ovsplaned", fs.Parse(args), stdout, stderr, usage); done {
		return cliDone{code}
	}
	if df.version {
		cliconv.PrintVersion(stdout, "ovsplaned")
		return cliDone{0}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ovsplaned: unexpected argument %q: the daemon takes only options\n", fs.Arg(0))
		usage(stderr)
		return cliDone{cliconv.ExitUsage}
	}
	if df.embedded && df.sandbox {
		return errors.New("--embedded and --sandbox exclude each other: pick one")
	}
	if df.file == "" {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, config.EnvConfigFile+"="); ok {
				df.file = v
			}
		}
	}
	load := func(ctx context.Context) (*config.Config, error) {
		return config.Load(ctx, config.Options{File: df.file, Env: env, Flags: fs})
	}
	cfg, err := load(ctx)
	if err != nil {
		return err
	}
	log := slog.New(cfg.Log.NewHandler(stderr))
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data_dir %s: %w (set data_dir or --data-dir to a writable directory)", cfg.DataDir, err)
	}

	tgt, err := connectTarget(ctx, cfg, df, log, stdout)
	if err != nil {
		return err
	}
	defer tgt.close()

	mode := tgt.mode
	var met *metrics.Metrics
	var client *ovsdb.Client
	met = metrics.New(model.Version, string(mode), func() bool { return client != nil && client.Connected() })
	ocfg := ovsdb.Config{Endpoints: tgt.endpoints, Logger: log, Observer: met}
	if t := cfg.OVSDB.TLS; t.PrivateKey != "" {
		ocfg.TLS = &ovsdb.TLSFiles{PrivateKey: t.PrivateKey, Certificate: t.Certificate, CACert: t.CACert}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	client, err = ovsdb.Dial(dialCtx, ocfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", strings.Join(tgt.endpoints, ","), err)
	}
	defer client.Close()
	if err := client.Init(ctx); err != nil {
		return fmt.Errorf("initialising the Open_vSwitch row: %w", err)
	}

	var probe vswitchd.SwitchProbe
	if mode != model.ModeEmbedded { // the simulated ovs-vswitchd takes no lock
		var tls *dbcmd.TLSFiles
		if t := cfg.OVSDB.TLS; t.PrivateKey != "" {
			tls = &dbcmd.TLSFiles{PrivateKey: t.PrivateKey, Certificate: t.Certificate, CACert: t.CACert}
		}
		var closeProbe func()
		probe, closeProbe = vswitchd.OVSVswitchdLockProbe(tgt.endpoints, tls)
		defer closeProbe()
		if tgt.vswitchdDown != nil {
			probe = sandboxProbe(probe, tgt.vswitchdDown)
		}
	}
	plugins, err := newPluginHost(cfg, client, env, tgt.runDir, log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := plugins.h.Close(sctx); err != nil {
			log.Warn("shutdown: plugins did not stop in time", "error", err)
		}
	}()
	var of vswitchd.OpenFlow
	if mode != model.ModeEmbedded { // the simulated ovs-vswitchd speaks no OpenFlow
		of = &openflow.Programmer{RunDir: tgt.runDir}
	}
	// The memory a burst of work (the start-up sync, a build of thousands of ports, a pass
	// over every row) left behind goes back to the OS once the daemon is idle (burstRelease).
	var daemon atomic.Pointer[vswitchd.Daemon]
	rel := newBurstRelease(releaseQuiet, releaseEvery, func() bool {
		d := daemon.Load()
		return d != nil && d.Pipeline().Applying > 0
	}, func() {
		debug.FreeOSMemory()
		met.MemoryReleased()
	})
	defer rel.stop()
	conflicts := metrics.NewConflicts(met)
	d, err := vswitchd.New(ctx, client, cfg, vswitchd.Options{
		Plugins:      plugins,
		DataPaths:    plugins,
		OpenFlow:     of,
		Logger:       log,
		Mode:         mode,
		Commit:       commitOptions(cfg),
		BatchDepth:   df.depth,
		BatchMaxSize: df.maxBatch,
		Reload:       load,
		Observer:     burstObserver{Observer: met, rel: rel},
		SwitchProbe:  probe,
		Degraded:     tgt.degraded,
		Reconcile: reconcile.Options{OnChange: func(changed []model.Status) {
			logStatuses(log, changed)
		}, OnPass: func(time.Duration, error) {
			rel.active()
		}, OnConflict: func(c reconcile.Conflict) { conflicts.Observe(c.Key(), c.Column, c.Active) }},
		RefreshFacts:    plugins.h.RefreshFacts, // the plugins get a restarted ovs-vswitchd's facts
		WatchedStatuses: plugins.watchedStatuses,
	})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := d.Close(sctx); err != nil {
			log.Warn("shutdown: batches in flight did not finish", "error", err)
		}
	}()
	plugins.d.Store(d)
	daemon.Store(d)
	met.RegisterJobs(d.Jobs)
	met.RegisterPipeline(func() metrics.Pipeline {
		s := d.Pipeline()
		return metrics.Pipeline{Applying: s.Applying, Depth: s.Depth, InFlightLimit: s.InFlightLimit, SizeLimit: s.SizeLimit,
			ApplyFixed: s.ApplyFixed, ApplyPerRequest: s.ApplyPerRequest}
	})
	met.RegisterWatchers(plugins.watchQueues)
	if len(cfg.Plugins) > 0 {
		// Each plugin ends its first start attempt (running, refused, failed or retrying in
		// the background) before the API serves; its status tells the rest.
		if err := plugins.h.Start(ctx, cfg.Plugins); err != nil {
			return fmt.Errorf("plugins: %w", err)
		}
		for _, p := range plugins.Plugins() {
			log.Info("plugin", "plugin", p.Name, "state", p.State, "reason", p.Reason, "types", strings.Join(p.Types, ","))
		}
	}
	// The plugins' other_config contributions as they are now (none without plugins): keys a
	// previous run kept for plugins that are gone are released here.
	d.RefreshPluginConfig(ctx)
	if df.once {
		return once(ctx, d, df.timeout, stdout)
	}
	stopWatch := startWatch(ctx, client, d, plugins, log)
	defer stopWatch()
	fctx, stopFollow := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() { defer close(followed); followOtherConfig(fctx, client, d) }()
	defer func() { stopFollow(); <-followed }()

	ov := overlayView(cfg, log)
	defer ov.Close()
	api := apiserver.New(d, apiserver.Options{Logger: log, Audit: auditLogger(cfg.Log, stderr), Overlay: ov,
		Flowmon: flowmonView(cfg, log)})
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	srvCtx, stopServers := context.WithCancel(ctx)
	defer func() { stopServers(); wg.Wait() }()
	wg.Go(func() {
		if err := api.Serve(srvCtx, cfg.API); err != nil {
			errc <- fmt.Errorf("api: %w", err)
		}
	})
	if cfg.Metrics.Address != "" {
		wg.Go(func() {
			if err := serveMetrics(srvCtx, cfg.Metrics, met, log); err != nil {
				errc <- fmt.Errorf("metrics: %w", err)
			}
		})
	}
	wg.Go(func() {
		if err := d.Run(srvCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- err
		}
	})
	printWelcome(stdout, tgt, df.file, cfg)
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			return nil
		case err := <-errc:
			return err
		case <-hup:
			if err := d.Reload(ctx); err != nil {
				log.Error("reload rejected; the running configuration stays", "error", err)
			}
		}
	}
}

// commitOptions are the daemon's OVSDB commit options (vswitchd.Options.Commit) from cfg:
// ovsdb.reconnect_wait bounds how long a write waits for a lost OVSDB connection (unset, 0: the
// daemon uses vswitchd.DefaultReconnectWait), ovsdb.apply_timeout how long it waits for
// ovs-vswitchd to apply it (unset: ovsdb.DefaultApplyTimeout). Read once at start: a reload
// does not change them.
func commitOptions(cfg *config.Config) ovsdb.CommitOptions {
	return ovsdb.CommitOptions{ReconnectWait: time.Duration(cfg.OVSDB.ReconnectWait),
		ApplyTimeout: time.Duration(cfg.OVSDB.ApplyTimeout)}
}

// auditLogger is the API's audit log (see vswitchd/apiserver): stderr in log.format, every line
// tagged log=audit, always at info level, so that log.level: warn does not silence it.
func auditLogger(l config.Log, w io.Writer) *slog.Logger {
	return slog.New(config.Log{Level: "info", Format: l.Format}.NewHandler(w)).With("log", "audit")
}

// serveMetrics serves /metrics on m.Address until ctx ends, and Go's profiles (/debug/pprof)
// when m.PProf is set: on a loopback address, or on any with m.PProfAnyAddress (config
// validation says the same; this is the last line of defence).
func serveMetrics(ctx context.Context, m config.Metrics, met *metrics.Metrics, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", met.Handler())
	if m.PProf {
		if !config.IsLoopback(m.Address) && !m.PProfAnyAddress {
			return fmt.Errorf("metrics.pprof: %s is not a loopback address; set metrics.pprof_any_address to serve the profiles there", m.Address)
		}
		// Go's profiles, for performance reports (`go tool pprof http://ADDR/debug/pprof/heap`).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	}
	srv := &http.Server{
		Addr:              m.Address,
		Handler:           apiserver.LimitBody(mux, apiserver.DefaultBodyTimeout),
		ReadHeaderTimeout: apiserver.DefaultReadHeaderTimeout,
		IdleTimeout:       apiserver.DefaultIdleTimeout,
		MaxHeaderBytes:    apiserver.DefaultMaxHeaderBytes,
	}
	ln, err := net.Listen("tcp", m.Address)
	if err != nil {
		return fmt.Errorf("metrics.address %s: %w", m.Address, err)
	}
	log.Info("metrics listening", "address", ln.Addr().String(), "pprof", m.PProf)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
