package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// closeOnFailure bounds the clean-up of a failed Start.
const closeOnFailure = 30 * time.Second

// Sandbox is a running private Open vSwitch: ovsdb-server and ovs-vswitchd, children of this
// process, confined to Dir. Its methods are safe for concurrent use.
type Sandbox struct {
	opts   Options
	log    *slog.Logger
	layout ovsproc.Layout
	env    []string      // OVS_*DIR settings for every OVS process and tool
	tools  ovsproc.Tools // ovs-vsctl and ovs-appctl with env, against the sandbox's database
	lock   *os.File

	db          *ovsproc.Daemon
	sw          *ovsproc.Daemon // nil until chooseDPDK has picked the build
	dpdk        bool
	waitDPDK    bool   // dpdk-init=true was in the database when ovs-vswitchd first started
	why         string // the DPDK decision, as a phrase
	version     string // "ovs-vswitchd (Open vSwitch) 3.1.0"
	dpdkVersion string // "DPDK 22.11.11", or ""

	mu       sync.Mutex
	down     map[string]string // guarded by mu: daemon name → why it is not running now
	restarts map[string]int    // guarded by mu: daemon name → restarts since Start

	stopSupervision context.CancelFunc // ends the supervisor; set before it starts
	supervised      chan struct{}      // closed when the supervisor has returned
	done            chan struct{}      // closed by Close
	closeOnce       sync.Once
	closeErr        error
}

// Start starts the sandbox described by opts and returns once ovs-vswitchd has applied the
// database (see the package documentation for what it creates, decides and waits for). It
// fails with ErrInUse when another process runs a sandbox in opts.Dir, and with ctx's error, or
// after opts.StartTimeout, when start-up takes too long. On any failure it stops what it
// started and releases the directory; the database file is kept.
//
// After a successful Start the sandbox supervises its daemons until Close or until ctx ends:
// one that exits on its own is started again with backoff (see Status and the package
// documentation).
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", opts.Dir, err)
	}
	if !opts.HostNetwork && os.Geteuid() != 0 {
		return nil, fmt.Errorf("sandbox %s: a private network namespace for ovs-vswitchd needs root "+
			"(running as uid %d); run as root or set Options.HostNetwork", opts.Dir, os.Geteuid())
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, opts.StartTimeout,
		fmt.Errorf("start-up took longer than %v", opts.StartTimeout))
	defer cancel()
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := newSandbox(opts, lock)
	if err := s.start(ctx); err != nil {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), closeOnFailure)
		defer ccancel()
		if cerr := s.Close(cctx); cerr != nil {
			err = fmt.Errorf("%w\n(and stopping what had started: %w)", err, cerr)
		}
		return nil, fmt.Errorf("sandbox %s: %w", opts.Dir, err)
	}
	sctx, stop := context.WithCancel(parent)
	s.stopSupervision = stop
	go s.supervise(sctx)
	s.log.Info("sandbox: Open vSwitch running", "description", s.Describe())
	return s, nil
}

// newSandbox lays out the paths of a sandbox in opts.Dir.
func newSandbox(opts Options, lock *os.File) *Sandbox {
	layout := ovsproc.Layout{Dir: opts.Dir}
	env := append(layout.Env(), "OVS_SYSCONFDIR="+opts.Dir)
	s := &Sandbox{
		opts:       opts,
		log:        opts.Logger,
		layout:     layout,
		env:        env,
		tools:      ovsproc.Tools{Env: env, Endpoint: layout.Endpoint()},
		lock:       lock,
		down:       map[string]string{},
		restarts:   map[string]int{},
		supervised: make(chan struct{}),
		done:       make(chan struct{}),
	}
	s.db = ovsproc.NewDaemon(s.spec(layout.OVSDBServer(), false))
	return s
}

// spec completes the Spec of a sandbox daemon: the sandbox's environment, a process group of
// its own and, when privateNet, a new network namespace.
func (s *Sandbox) spec(spec ovsproc.Spec, privateNet bool) ovsproc.Spec {
	spec.Env, spec.OwnGroup, spec.PrivateNet = s.env, true, privateNet
	return spec
}

// start does Start's work after the directory is locked.
func (s *Sandbox) start(ctx context.Context) error {
	for _, d := range []ovsproc.Spec{s.layout.Vswitchd(""), s.layout.OVSDBServer()} {
		pid, err := ovsproc.KillStale(ctx, d)
		if pid != 0 {
			s.log.Warn("sandbox: killed a leftover daemon of a previous run", "daemon", d.Name, "pid", pid, "pidfile", d.Pidfile)
		}
		if err != nil {
			return err
		}
		if err := ovsproc.WaitReleased(ctx, d); err != nil {
			return err
		}
	}
	if err := s.ensureDB(ctx); err != nil {
		return err
	}
	if err := s.startOVSDB(ctx); err != nil {
		return err
	}
	if _, err := s.vsctl(ctx, "--no-wait", "init"); err != nil {
		return err
	}
	rc, err := s.readRoot(ctx)
	if err != nil {
		return err
	}
	if err := s.chooseDPDK(rc.otherConfig); err != nil {
		return err
	}
	plan := planOtherConfig(rc, s.opts.DesiredOtherConfig, s.defaults())
	if plan.changes(rc.written) {
		if err := s.apply(ctx, plan); err != nil {
			return err
		}
	}
	// DPDK initialises at start-up only when dpdk-init=true is in the database by then; a
	// dpdk-init the caller writes later initialises it at that point.
	s.waitDPDK = s.dpdk && plan.result(rc)["dpdk-init"] == "true"
	if err := s.sweepSockets(ctx, plan.result(rc)); err != nil {
		return err
	}
	version, dpdkVersion, err := s.startVswitchd(ctx, s.waitDPDK)
	if err != nil {
		return err
	}
	s.version, s.dpdkVersion = version, dpdkVersion
	return nil
}

// startOVSDB starts ovsdb-server and waits until it accepts connections.
func (s *Sandbox) startOVSDB(ctx context.Context) error {
	p, err := s.db.Start()
	if err != nil {
		return err
	}
	wctx, stop := p.Watch(ctx)
	defer stop()
	if err := ovsproc.WaitSocket(wctx, s.layout.Sock()); err != nil {
		return p.Report(fmt.Errorf("waiting for %s: %w", s.layout.Sock(), err))
	}
	return nil
}

// chooseDPDK decides between the two vswitchd builds and completes the vswitchd's command
// line. dpdk-init and dpdk-socket-mem come from the desired other_config, else from the
// database's (db), else from the sandbox's defaults.
func (s *Sandbox) chooseDPDK(db map[string]string) error {
	socketMem := int64(s.opts.SocketMemMB)
	if v, where, ok := s.effective(db, "dpdk-socket-mem"); ok {
		mb, err := ovsproc.SocketMemMB(v)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		socketMem = mb
	}
	f := dpdkFacts{mode: s.opts.DPDK,
		host: ovsproc.ProbeDPDK(s.opts.Paths.VswitchdDPDK, s.opts.Paths.Meminfo, socketMem)}
	if v, where, ok := s.effective(db, "dpdk-init"); ok && v == "false" {
		f.initOff = where
	}
	use, why, err := decideDPDK(f)
	if err != nil {
		return err
	}
	s.dpdk, s.why = use, why
	s.log.Info("sandbox: "+why, "mode", string(s.opts.DPDK))
	bin := s.opts.Paths.Vswitchd
	if use {
		bin = s.opts.Paths.VswitchdDPDK
	}
	s.sw = ovsproc.NewDaemon(s.spec(s.layout.Vswitchd(bin), !s.opts.HostNetwork))
	return nil
}

// effective returns the value of other_config key as ovs-vswitchd will see it, and where it
// comes from: the desired other_config, else the database.
func (s *Sandbox) effective(db map[string]string, key string) (value, where string, ok bool) {
	if v, ok := s.opts.DesiredOtherConfig[key]; ok {
		return v, "the desired other_config:" + key, true
	}
	if v, ok := db[key]; ok {
		return v, "the database's other_config:" + key, true
	}
	return "", "", false
}

// startVswitchd starts ovs-vswitchd and waits until it has applied the database, DPDK is
// initialised (when waitDPDK) and ovs-appctl answers. It returns the version lines of
// ovs-vswitchd and of DPDK ("" without waitDPDK). The process is the current one even when a
// wait fails (the caller stops it).
func (s *Sandbox) startVswitchd(ctx context.Context, waitDPDK bool) (version, dpdkVersion string, err error) {
	p, err := s.sw.Start()
	if err != nil {
		return "", "", err
	}
	wctx, stop := p.Watch(ctx)
	defer stop()
	up, err := s.tools.WaitVswitchd(wctx, s.sw.Spec().Ctl, waitDPDK)
	if err != nil {
		return "", "", p.Report(err)
	}
	return up.Version, up.DPDKVersion, nil
}

// sweepSockets removes the stale sockets of the sandbox's vhost-user socket directories
// (removeStaleSockets) before an ovs-vswitchd starts; otherConfig is the other_config it will
// read (for vhost-sock-dir).
func (s *Sandbox) sweepSockets(ctx context.Context, otherConfig map[string]string) error {
	removed, err := ovsproc.RemoveStaleSockets(ctx, vhostSockDirs(s.opts.Dir, otherConfig), s.log)
	if len(removed) > 0 {
		s.log.Info("sandbox: removed sockets nobody listens on (left by a killed ovs-vswitchd)", "sockets", removed)
	}
	return err
}

// Close ends the supervision, stops ovs-vswitchd (`ovs-appctl exit --cleanup`: its datapath
// and devices go, the database stays) and then ovsdb-server (`ovs-appctl exit`), each
// escalating to SIGTERM and SIGKILL when it does not exit in time, and releases the directory.
// The database file is kept for the next Start. ctx bounds the graceful steps; killed processes
// are always waited for. Idempotent: later calls return the first call's result. The error says
// which daemon needed more than a graceful exit.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if s.stopSupervision != nil { // nil when Start failed: no supervisor ran
			s.stopSupervision()
			<-s.supervised
		}
		var errs []error
		if s.sw != nil {
			errs = append(errs, s.sw.Stop(ctx, func(ctx context.Context) error {
				_, err := s.appctl(ctx, s.sw, "exit", "--cleanup")
				return err
			}))
		}
		errs = append(errs, s.db.Stop(ctx, func(ctx context.Context) error {
			_, err := s.appctl(ctx, s.db, "exit")
			return err
		}))
		close(s.done)
		if err := s.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", lockName, err))
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sandbox %s: close: %w", s.opts.Dir, err)
		}
	})
	return s.closeErr
}

// Done is closed when Close has stopped the sandbox. The sandbox does not stop on its own: a
// daemon that exits is started again (see Status).
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Endpoint returns the OVSDB endpoint of the sandbox, "unix:<Dir>/db.sock".
func (s *Sandbox) Endpoint() string { return s.layout.Endpoint() }

// Dir returns the sandbox directory (absolute).
func (s *Sandbox) Dir() string { return s.opts.Dir }

// DPDK reports whether ovs-vswitchd runs the DPDK build with DPDK initialised.
func (s *Sandbox) DPDK() bool { return s.dpdk }

// VswitchdPID returns the process id of ovs-vswitchd. Without HostNetwork its network
// namespace is /proc/<pid>/ns/net: move a device in with `ip link set DEV netns <pid>`.
// After a restart it is the new process's.
func (s *Sandbox) VswitchdPID() int { return s.sw.Current().PID() }

// Describe returns one human line saying what runs where and how to reach it, for the daemon's
// start-up message.
func (s *Sandbox) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "private Open vSwitch in %s: %s", s.opts.Dir, orDefault(s.version, "ovs-vswitchd"))
	switch {
	case s.waitDPDK:
		fmt.Fprintf(&b, " with %s", orDefault(s.dpdkVersion, "DPDK"))
	case s.dpdk:
		b.WriteString(" with DPDK once the desired dpdk-init is written")
	}
	fmt.Fprintf(&b, " (%s, %s), OVSDB %s; ", filepath.Base(s.sw.Spec().Argv[0]), s.why, s.Endpoint())
	pid := s.VswitchdPID()
	if s.opts.HostNetwork {
		fmt.Fprintf(&b, "ovs-vswitchd pid %d in the host's network namespace", pid)
	} else {
		fmt.Fprintf(&b, "ovs-vswitchd pid %d in a private network namespace (look inside: nsenter -t %d -n ip link)", pid, pid)
	}
	fmt.Fprintf(&b, "; try: ovs-vsctl --db=%s show, ovs-appctl -t %s dpif/show", s.Endpoint(), s.sw.Spec().Ctl)
	return b.String()
}
