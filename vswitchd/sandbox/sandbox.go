package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// closeOnFailure bounds the clean-up of a failed Start.
const closeOnFailure = 30 * time.Second

// Sandbox is a running private Open vSwitch: ovsdb-server and ovs-vswitchd, children of this
// process, confined to Dir. Its methods are safe for concurrent use.
type Sandbox struct {
	opts     Options
	log      *slog.Logger
	env      []string // OVS_*DIR settings for every OVS process and tool
	sock     string
	endpoint string
	dbPath   string
	lock     *os.File

	db, sw      *daemon
	dbProc      *proc
	swProc      *proc
	dpdk        bool
	waitDPDK    bool   // dpdk-init=true was in the database when ovs-vswitchd started
	why         string // the DPDK decision, as a phrase
	version     string // "ovs-vswitchd (Open vSwitch) 3.1.0"
	dpdkVersion string // "DPDK 22.11.11", or ""

	closing   atomic.Bool
	done      chan struct{}
	finishOne sync.Once
	err       error // why it stopped on its own; written before done is closed
	closeOnce sync.Once
	closeErr  error
}

// Start starts the sandbox described by opts and returns once ovs-vswitchd has applied the
// database (see the package documentation for what it creates, decides and waits for). It
// fails with ErrInUse when another process runs a sandbox in opts.Dir, and with ctx's error, or
// after opts.StartTimeout, when start-up takes too long. On any failure it stops what it
// started and releases the directory; the database file is kept.
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
	return s, nil
}

// newSandbox lays out the paths of a sandbox in opts.Dir.
func newSandbox(opts Options, lock *os.File) *Sandbox {
	dir := opts.Dir
	s := &Sandbox{
		opts:   opts,
		log:    opts.Logger,
		env:    []string{"OVS_RUNDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_SYSCONFDIR=" + dir},
		sock:   filepath.Join(dir, "db.sock"),
		dbPath: filepath.Join(dir, "conf.db"),
		lock:   lock,
		done:   make(chan struct{}),
	}
	s.endpoint = "unix:" + s.sock
	s.db = s.newDaemon("ovsdb-server", false)
	s.db.argv = []string{"ovsdb-server", s.dbPath,
		"--remote=punix:" + s.sock,
		"--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
		"--pidfile=" + s.db.pidfile, "--unixctl=" + s.db.ctl, "--log-file=" + s.db.log,
		"-vconsole:warn"}
	s.sw = s.newDaemon("ovs-vswitchd", !opts.HostNetwork) // argv once DPDK is decided
	return s
}

// newDaemon returns a daemon whose files are named after it in the sandbox directory.
func (s *Sandbox) newDaemon(name string, privateNet bool) *daemon {
	base := filepath.Join(s.opts.Dir, name)
	return &daemon{name: name, env: s.env, pidfile: base + ".pid", ctl: base + ".ctl",
		log: base + ".log", out: base + ".out", privateNet: privateNet}
}

// start does Start's work after the directory is locked.
func (s *Sandbox) start(ctx context.Context) error {
	for _, d := range []*daemon{s.sw, s.db} {
		if _, err := killStale(ctx, d, s.log); err != nil {
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
	if err := s.startVswitchd(ctx); err != nil {
		return err
	}
	go s.supervise()
	s.log.Info("sandbox: Open vSwitch running", "description", s.Describe())
	return nil
}

// startOVSDB starts ovsdb-server and waits until it accepts connections.
func (s *Sandbox) startOVSDB(ctx context.Context) error {
	p, err := s.db.start()
	if err != nil {
		return err
	}
	s.dbProc = p
	wctx, stop := p.watch(ctx)
	defer stop()
	if err := s.waitSocket(wctx); err != nil {
		return p.report(fmt.Errorf("waiting for %s: %w", s.sock, err))
	}
	return nil
}

// chooseDPDK decides between the two vswitchd builds and completes the vswitchd's command
// line. dpdk-init and dpdk-socket-mem come from the desired other_config, else from the
// database's (db), else from the sandbox's defaults.
func (s *Sandbox) chooseDPDK(db map[string]string) error {
	f := dpdkFacts{mode: s.opts.DPDK, binary: s.opts.Paths.VswitchdDPDK, root: os.Geteuid() == 0,
		socketMemMB: int64(s.opts.SocketMemMB)}
	if v, where, ok := s.effective(db, "dpdk-socket-mem"); ok {
		mb, err := socketMemMB(v)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		f.socketMemMB = mb
	}
	if v, where, ok := s.effective(db, "dpdk-init"); ok && v == "false" {
		f.initOff = where
	}
	if st, err := os.Stat(f.binary); err == nil && !st.IsDir() {
		f.binaryOK = true
	}
	if mi, err := os.Open(s.opts.Paths.Meminfo); err != nil {
		f.hugeErr = err
	} else {
		f.hugepages, f.hugeErr = parseMeminfo(mi)
		mi.Close()
	}
	use, why, err := decideDPDK(f)
	if err != nil {
		return err
	}
	s.dpdk, s.why = use, why
	s.log.Info("sandbox: "+why, "mode", string(s.opts.DPDK))
	bin := s.opts.Paths.Vswitchd
	if use {
		bin = f.binary
	}
	s.sw.argv = []string{bin, s.endpoint,
		"--pidfile=" + s.sw.pidfile, "--unixctl=" + s.sw.ctl, "--log-file=" + s.sw.log,
		"-vconsole:warn"}
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
// initialised (with DPDK) and ovs-appctl answers.
func (s *Sandbox) startVswitchd(ctx context.Context) error {
	p, err := s.sw.start()
	if err != nil {
		return err
	}
	s.swProc = p
	wctx, stop := p.watch(ctx)
	defer stop()
	if err := s.waitApplied(wctx); err != nil {
		return p.report(fmt.Errorf("waiting for cur_cfg: %w", err))
	}
	if s.waitDPDK {
		if _, err := s.vsctl(wctx, "wait-until", "Open_vSwitch", ".", "dpdk_initialized=true"); err != nil {
			return p.report(fmt.Errorf("waiting for dpdk_initialized=true: %w", err))
		}
		v, err := s.vsctl(wctx, "get", "Open_vSwitch", ".", "dpdk_version")
		if err != nil {
			return p.report(err)
		}
		s.dpdkVersion = unquote(v)
	}
	out, err := s.appctl(wctx, s.sw, "version")
	if err != nil {
		return p.report(fmt.Errorf("waiting for ovs-appctl: %w", err))
	}
	s.version, _, _ = strings.Cut(out, "\n")
	return nil
}

// supervise records the first unexpected exit of either daemon and closes done.
func (s *Sandbox) supervise() {
	var p *proc
	select {
	case <-s.dbProc.done:
		p = s.dbProc
	case <-s.swProc.done:
		p = s.swProc
	}
	if s.closing.Load() || p.stopping.Load() {
		s.finish(nil)
		return
	}
	err := p.report(errors.New("exited while the sandbox was running"))
	s.log.Error("sandbox: "+p.d.name+" died", "error", err)
	s.finish(err)
}

// finish records err (nil for a stop through Close) and closes done, once.
func (s *Sandbox) finish(err error) {
	s.finishOne.Do(func() {
		s.err = err
		close(s.done)
	})
}

// Close stops ovs-vswitchd (`ovs-appctl exit --cleanup`: its datapath and devices go, the
// database stays) and then ovsdb-server (`ovs-appctl exit`), each escalating to SIGTERM and
// SIGKILL when it does not exit in time, and releases the directory. The database file is
// kept for the next Start. ctx bounds the graceful steps; killed processes are always waited
// for. Idempotent: later calls return the first call's result. The error says which daemon
// needed more than a graceful exit.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		var errs []error
		if p := s.swProc; p != nil {
			errs = append(errs, p.stop(ctx, func(ctx context.Context) error {
				_, err := s.appctl(ctx, s.sw, "exit", "--cleanup")
				return err
			}))
		}
		if p := s.dbProc; p != nil {
			errs = append(errs, p.stop(ctx, func(ctx context.Context) error {
				_, err := s.appctl(ctx, s.db, "exit")
				return err
			}))
		}
		s.finish(nil)
		if err := s.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", lockName, err))
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sandbox %s: close: %w", s.opts.Dir, err)
		}
	})
	return s.closeErr
}

// Done is closed when the sandbox stops: after Close, or when ovsdb-server or ovs-vswitchd
// exits on its own (then Err says which and why). A daemon should treat the latter as fatal.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Err returns why the sandbox stopped on its own (the daemon, its exit status and the tail of
// its log), or nil while it runs and after Close.
func (s *Sandbox) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Endpoint returns the OVSDB endpoint of the sandbox, "unix:<Dir>/db.sock".
func (s *Sandbox) Endpoint() string { return s.endpoint }

// Dir returns the sandbox directory (absolute).
func (s *Sandbox) Dir() string { return s.opts.Dir }

// DPDK reports whether ovs-vswitchd runs the DPDK build with DPDK initialised.
func (s *Sandbox) DPDK() bool { return s.dpdk }

// VswitchdPID returns the process id of ovs-vswitchd. Without HostNetwork its network
// namespace is /proc/<pid>/ns/net: move a device in with `ip link set DEV netns <pid>`.
func (s *Sandbox) VswitchdPID() int { return s.swProc.pid }

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
	fmt.Fprintf(&b, " (%s, %s), OVSDB %s; ", filepath.Base(s.sw.argv[0]), s.why, s.endpoint)
	pid := s.VswitchdPID()
	if s.opts.HostNetwork {
		fmt.Fprintf(&b, "ovs-vswitchd pid %d in the host's network namespace", pid)
	} else {
		fmt.Fprintf(&b, "ovs-vswitchd pid %d in a private network namespace (look inside: nsenter -t %d -n ip link)", pid, pid)
	}
	fmt.Fprintf(&b, "; try: ovs-vsctl --db=%s show, ovs-appctl -t %s dpif/show", s.endpoint, s.sw.ctl)
	return b.String()
}

// unquote removes the double quotes ovs-vsctl puts around some strings; "[]" (no value) is "".
func unquote(s string) string {
	if s == "[]" {
		return ""
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}
