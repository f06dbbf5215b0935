//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Stop timeouts: how long a daemon gets for its graceful exit request and then for SIGTERM,
// before it is killed.
const (
	gracefulTimeout = 10 * time.Second
	termTimeout     = 5 * time.Second
)

// errExited is the cancel cause of a start-up wait whose daemon exited.
var errExited = errors.New("daemon exited")

// daemon runs one long-lived OVS process as a child of the test binary. It can be stopped and
// started again with the same command line.
type daemon struct {
	name    string   // for messages: "ovsdb-server", "ovs-vswitchd"
	argv    []string // full command line, including an "ip netns exec" prefix
	env     []string // appended to the test's environment
	outPath string   // the process's stdout and stderr go here
	logPath string   // the daemon's own --log-file

	mu  sync.Mutex
	cur *proc // the latest process; nil before the first start
}

// proc is one run of a daemon. err is written before done is closed.
type proc struct {
	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	stopping atomic.Bool // set when the lab asked the process to exit
}

// stoppedOnPurpose reports whether the lab asked p to exit (as opposed to a crash).
func stoppedOnPurpose(p *proc) bool { return p.stopping.Load() }

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// start launches the daemon. It fails when a previous run is still alive.
func (d *daemon) start() (*proc, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil && !d.cur.exited() {
		return nil, fmt.Errorf("start %s: already running as pid %d", d.name, d.cur.cmd.Process.Pid)
	}
	out, err := os.OpenFile(d.outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", d.name, err)
	}
	defer out.Close()
	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: a test binary killed by -timeout must not leave daemons running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", d.name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	d.cur = p
	return p, nil
}

// current returns the latest process, or nil.
func (d *daemon) current() *proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// pid returns the process id of the running daemon, or 0 when it is not running.
func (d *daemon) pid() int {
	p := d.current()
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop ends the running daemon: first graceful (when not nil, e.g. "ovs-appctl exit"), then
// SIGTERM, then SIGKILL, each with a bounded wait. It returns nil when the daemon was not
// running, and an error describing any escalation beyond the first polite step.
func (d *daemon) stop(ctx context.Context, graceful func(ctx context.Context) error) error {
	p := d.current()
	if p == nil || p.exited() {
		return nil
	}
	p.stopping.Store(true)
	var errs []error
	if graceful != nil {
		gctx, cancel := context.WithTimeout(ctx, gracefulTimeout)
		err := graceful(gctx)
		if err == nil {
			err = waitDone(gctx, p, 0)
		}
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("graceful exit: %w", err))
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if waitDone(ctx, p, termTimeout) == nil {
		if len(errs) == 0 {
			return nil
		}
		return fmt.Errorf("stop %s: %w; SIGTERM worked", d.name, errs[0])
	}
	errs = append(errs, fmt.Errorf("still running %v after SIGTERM; sent SIGKILL", termTimeout))
	_ = p.cmd.Process.Kill()
	if err := waitDone(ctx, p, termTimeout); err != nil {
		errs = append(errs, fmt.Errorf("pid %d survived SIGKILL: %w", p.cmd.Process.Pid, err))
	}
	return fmt.Errorf("stop %s: %w", d.name, errors.Join(errs...))
}

// waitDone waits until p exits, ctx ends, or timeout (when not zero) passes.
func waitDone(ctx context.Context, p *proc, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch returns a context derived from ctx that is cancelled with errExited when p exits, so
// start-up waits end at once when the daemon dies.
func watch(ctx context.Context, p *proc) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-p.done:
			cancel(errExited)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// exitReport explains why a start-up wait failed: the daemon's exit status when it died, and
// the tails of its output and log.
func (d *daemon) exitReport(p *proc, err error) error {
	status := "still running"
	if p.exited() {
		status = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Errorf("%s (%s): %w\n--- %s (tail) ---\n%s\n--- %s (tail) ---\n%s",
		d.name, status, err, d.outPath, tail(d.outPath, 10), d.logPath, tail(d.logPath, 30))
}
