package ovsproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Stop escalation: how long a daemon gets after the graceful request, after SIGTERM and after
// SIGKILL (each also bounded by the caller's context, except the last: a killed child is
// always reaped).
const (
	GracefulTimeout = 10 * time.Second
	TermTimeout     = 5 * time.Second
	KillTimeout     = 5 * time.Second
)

// ErrExited is the cancel cause of a context returned by Process.Watch: the daemon exited.
var ErrExited = errors.New("daemon exited")

// Spec is the fixed description of one OVS daemon. Layout.OVSDBServer and Layout.Vswitchd
// build the usual ones; a caller may change Argv (say, prefix "ip netns exec NAME") and Env
// before the first start. A Spec must not change while a process of it runs.
type Spec struct {
	Name    string   // "ovsdb-server" or "ovs-vswitchd", for messages
	Argv    []string // the full command line
	Env     []string // added to the caller's environment
	Pidfile string   // the --pidfile the daemon writes (also how stale ones are recognised)
	Ctl     string   // its unixctl socket, for ovs-appctl -t
	Log     string   // its --log-file
	Out     string   // its stdout and stderr are appended here
	// OwnGroup puts the process in a process group of its own, so terminal signals reach
	// only the caller, which stops its daemons in order.
	OwnGroup bool
	// PrivateNet runs the process in a new, anonymous network namespace (needs root).
	PrivateNet bool
}

// Process is one run of a daemon, a child of this process. Its methods are safe for concurrent
// use.
type Process struct {
	spec     Spec
	pid      int
	done     chan struct{}
	err      error // set before done is closed
	stopping atomic.Bool
}

// Start launches spec's command line with spec.Env added to the environment, its output
// appended to spec.Out, and SIGKILL as its parent-death signal. The child is forked and waited
// for by a goroutine locked to its OS thread: the kernel sends the parent-death signal when the
// forking thread exits, and a Go thread exits only with a goroutine that ends locked to it,
// which this one never does while the child lives. Start returns once the process runs; it
// fails when the command cannot be started (and on systems other than Linux).
func Start(spec Spec) (*Process, error) {
	attr, err := sysProcAttr(spec.OwnGroup, spec.PrivateNet)
	if err != nil {
		return nil, err
	}
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("start %s: empty command line", spec.Name)
	}
	out, err := os.OpenFile(spec.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	defer out.Close()
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = attr
	p := &Process{spec: spec, done: make(chan struct{})}
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
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	return p, nil
}

// PID returns the process id; it stays valid after the exit. A nil Process has pid 0.
func (p *Process) PID() int {
	if p == nil {
		return 0
	}
	return p.pid
}

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns how the process exited (the error of exec.Cmd.Wait; nil for status 0). Valid
// once Done is closed; nil before.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StoppedOnPurpose reports whether Stop was called, so that an exit can be told from a crash.
func (p *Process) StoppedOnPurpose() bool { return p.stopping.Load() }

// Stop ends the process: graceful (when not nil, e.g. `ovs-appctl exit`) bounded by
// GracefulTimeout, then SIGTERM bounded by TermTimeout, then SIGKILL. ctx bounds the first two
// steps and skips the graceful one when it has already ended; the process is always waited for
// after SIGKILL, for at most KillTimeout. It returns nil when the process exited at the first
// step it was given (or had exited already), else an error saying how far it had to go.
func (p *Process) Stop(ctx context.Context, graceful func(ctx context.Context) error) error {
	if p.Exited() {
		return nil
	}
	p.stopping.Store(true)
	var steps []error
	if graceful != nil && ctx.Err() == nil {
		gctx, cancel := context.WithTimeout(ctx, GracefulTimeout)
		err := graceful(gctx)
		if err == nil {
			err = p.Wait(gctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		steps = append(steps, fmt.Errorf("graceful exit: %w", err))
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	tctx, cancel := context.WithTimeout(ctx, TermTimeout)
	err := p.Wait(tctx)
	cancel()
	if err == nil {
		if len(steps) == 0 {
			return nil
		}
		return fmt.Errorf("stop %s (pid %d): %w; SIGTERM worked", p.spec.Name, p.pid, steps[0])
	}
	steps = append(steps, fmt.Errorf("still running after SIGTERM (%w); sent SIGKILL", err))
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), KillTimeout)
	defer cancel()
	if err := p.Wait(kctx); err != nil {
		steps = append(steps, fmt.Errorf("survived SIGKILL: %w", err))
	}
	return fmt.Errorf("stop %s (pid %d): %w", p.spec.Name, p.pid, errors.Join(steps...))
}

// Wait waits until the process exits (nil) or ctx ends (ctx's error).
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Watch returns a context derived from ctx that is cancelled with cause ErrExited when the
// process exits, so that a start-up wait ends at once when its daemon dies. Call the returned
// function to release it.
func (p *Process) Watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-p.done:
			cancel(ErrExited)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Report wraps err, the failure of a start-up wait, with the daemon's name, pid and exit status
// (or "still running") and the tails of its output and log files.
func (p *Process) Report(err error) error {
	status := "still running"
	if p.Exited() {
		status = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Errorf("%s (pid %d, %s): %w\n--- %s (tail) ---\n%s\n--- %s (tail) ---\n%s",
		p.spec.Name, p.pid, status, err, p.spec.Out, Tail(p.spec.Out, 10), p.spec.Log, Tail(p.spec.Log, 30))
}

// Daemon is a daemon that can be started again with the same Spec; it remembers its latest
// process. Its methods are safe for concurrent use.
type Daemon struct {
	spec Spec

	mu  sync.Mutex
	cur *Process // the latest process; nil before the first start
}

// NewDaemon returns a daemon of spec that has not started yet.
func NewDaemon(spec Spec) *Daemon { return &Daemon{spec: spec} }

// Spec returns the daemon's description.
func (d *Daemon) Spec() Spec { return d.spec }

// Start starts a new process of the daemon (see Start) and makes it the current one. It fails
// when the current process is still running.
func (d *Daemon) Start() (*Process, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil && !d.cur.Exited() {
		return nil, fmt.Errorf("start %s: already running as pid %d", d.spec.Name, d.cur.pid)
	}
	p, err := Start(d.spec)
	if err != nil {
		return nil, err
	}
	d.cur = p
	return p, nil
}

// Current returns the latest process, running or not; nil before the first start.
func (d *Daemon) Current() *Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// Running returns the current process when it is running, else nil.
func (d *Daemon) Running() *Process {
	if p := d.Current(); p != nil && !p.Exited() {
		return p
	}
	return nil
}

// Stop stops the current process as Process.Stop does; nil when none is running.
func (d *Daemon) Stop(ctx context.Context, graceful func(ctx context.Context) error) error {
	p := d.Running()
	if p == nil {
		return nil
	}
	return p.Stop(ctx, graceful)
}

// Tail returns the last n lines of the file at path, "(empty)" for an empty file, or a note
// saying why it cannot be read.
func Tail(path string, n int) string {
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
