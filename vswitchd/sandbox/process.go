package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Stop escalation: how long a daemon gets after the graceful request, after SIGTERM and after
// SIGKILL (each also bounded by the caller's context, except the last: a killed child is
// always reaped).
const (
	gracefulTimeout = 10 * time.Second
	termTimeout     = 5 * time.Second
	killTimeout     = 5 * time.Second
)

// errExited is the cancel cause of a start-up wait whose daemon exited.
var errExited = errors.New("daemon exited")

// daemon is the fixed description of one sandbox process.
type daemon struct {
	name       string   // "ovsdb-server" or "ovs-vswitchd", for messages
	argv       []string // full command line
	env        []string // added to the caller's environment
	pidfile    string   // the --pidfile the daemon writes (also how stale ones are recognised)
	ctl        string   // its unixctl socket
	log        string   // its --log-file
	out        string   // its stdout and stderr
	privateNet bool     // run in a new network namespace
}

// proc is one running daemon, a child of this process. err is set before done is closed.
type proc struct {
	d    *daemon
	pid  int
	done chan struct{}
	err  error
}

// start launches d. The child is forked and waited for by a goroutine locked to its OS thread:
// the parent-death signal fires when the forking thread exits, and a Go thread exits only with
// a goroutine that ends locked to it, which this one never does while the child lives.
func (d *daemon) start() (*proc, error) {
	attr, err := sysProcAttr(d.privateNet)
	if err != nil {
		return nil, err
	}
	out, err := os.OpenFile(d.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", d.name, err)
	}
	defer out.Close()
	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = attr
	p := &proc{d: d, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", d.name, err)
	}
	return p, nil
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: graceful (when not nil) bounded by gracefulTimeout, then SIGTERM, then
// SIGKILL. It returns nil when the process exited at the first step it was given (or had
// exited already), else an error saying how far it had to go.
func (p *proc) stop(ctx context.Context, graceful func(ctx context.Context) error) error {
	if p.exited() {
		return nil
	}
	var steps []error
	if graceful != nil && ctx.Err() == nil {
		gctx, cancel := context.WithTimeout(ctx, gracefulTimeout)
		err := graceful(gctx)
		if err == nil {
			err = p.wait(gctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		steps = append(steps, fmt.Errorf("graceful exit: %w", err))
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	tctx, cancel := context.WithTimeout(ctx, termTimeout)
	err := p.wait(tctx)
	cancel()
	if err == nil {
		if len(steps) == 0 {
			return nil
		}
		return fmt.Errorf("stop %s (pid %d): %w; SIGTERM worked", p.d.name, p.pid, steps[0])
	}
	steps = append(steps, fmt.Errorf("still running after SIGTERM (%w); sent SIGKILL", err))
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if err := p.wait(kctx); err != nil {
		steps = append(steps, fmt.Errorf("survived SIGKILL: %w", err))
	}
	return fmt.Errorf("stop %s (pid %d): %w", p.d.name, p.pid, errors.Join(steps...))
}

// wait waits until the process exits or ctx ends.
func (p *proc) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch returns a context derived from ctx that is cancelled with errExited when p exits, so a
// start-up wait ends at once when its daemon dies.
func (p *proc) watch(ctx context.Context) (context.Context, context.CancelFunc) {
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

// report explains a failed start-up wait: the daemon's exit status when it died, and the tails
// of its output and log.
func (p *proc) report(err error) error {
	status := "still running"
	if p.exited() {
		status = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Errorf("%s (pid %d, %s): %w\n--- %s (tail) ---\n%s\n--- %s (tail) ---\n%s",
		p.d.name, p.pid, status, err, p.d.out, tail(p.d.out, 10), p.d.log, tail(p.d.log, 30))
}

// tail returns the last n lines of the file at path, or a note saying why it cannot.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	text := strings.TrimRight(string(data), "\n")
	if text == "" {
		return "(empty)"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
