package sdk

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// ProcessOptions configure a Process; only Name and Command are required.
type ProcessOptions struct {
	// Name names the process in logs and stats (a job's name): 1 to MaxProcessNameBytes
	// printable bytes.
	Name string
	// Command is the program to run.
	Command Command
	// Logger receives the process's life (start, exit, restart, stop) and every line of its
	// standard output and error; slog.Default() when nil.
	Logger *slog.Logger
	// MinBackoff is the wait before the first restart (default 200ms); each further restart
	// waits twice as long, up to MaxBackoff (default 30s). A run that lasted ResetAfter
	// (default 10s) resets the wait to MinBackoff.
	MinBackoff, MaxBackoff, ResetAfter time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL (default 5s).
	StopGrace time.Duration
	// MaxLineBytes bounds a logged output line (default 4096); the rest of a longer line is
	// dropped and the record says truncated=true.
	MaxLineBytes int
	// MaxLinesPerSecond bounds the output lines logged per second and stream (default 200);
	// the others are counted (ProcessStats.LinesDropped) and their number logged.
	MaxLinesPerSecond int
}

func (o *ProcessOptions) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.MinBackoff, 200*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	def(&o.ResetAfter, 10*time.Second)
	def(&o.StopGrace, 5*time.Second)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = 4096
	}
	o.MaxLineBytes = max(o.MaxLineBytes, 16)
	if o.MaxLinesPerSecond <= 0 {
		o.MaxLinesPerSecond = 200
	}
}

// ProcessStats is a snapshot of a Process.
type ProcessStats struct {
	Running bool
	PID     int       // the running process's id; 0 when none runs
	Started time.Time // when the running process started
	// Starts counts successful starts; Restarts those after the first; StartFailures the
	// restarts that failed to exec (the program vanished, …), retried with the same backoff.
	Starts, Restarts, StartFailures uint64
	// LastExit says how the last run ended ("exit status 1", "signal: killed"); "" before any.
	LastExit string
	// LastExitCode is the last run's exit code, or minus the signal that killed it.
	LastExitCode int
	LastExitTime time.Time
	// LinesDropped counts output lines not logged (over MaxLinesPerSecond).
	LinesDropped uint64
}

// Process supervises one program: it runs it, restarts it whenever it exits (capped exponential
// backoff) and stops it on Stop or when the context given to StartProcess ends. The program runs
// in its own process group, which Stop signals (SIGTERM, then SIGKILL after StopGrace) and which
// is killed whenever the program exits, so that no helper it started outlives it. On Linux it
// gets SIGKILL should the plugin die first (a parent-death signal; its own children are its
// business), so it never outlives the plugin. Its standard output and error are logged line by
// line; its standard input is /dev/null. Methods are safe for concurrent use.
type Process struct {
	opts   ProcessOptions
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	st ProcessStats
}

// StartProcess validates opts, starts the program and returns once it runs, or with the error
// of that first start (an *api.Error: InvalidArgument for a bad command, FailedPrecondition for
// a program that cannot be run). The process is then supervised until Stop is called or ctx
// ends, whichever comes first; ctx is the supervision's lifetime, not a deadline for starting.
func StartProcess(ctx context.Context, opts ProcessOptions) (*Process, error) {
	if err := checkName(opts.Name); err != nil {
		return nil, err
	}
	if err := opts.Command.Validate(); err != nil {
		return nil, err
	}
	if err := CheckProgram(opts.Command.Path); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.defaults()
	ctx, cancel := context.WithCancel(ctx)
	p := &Process{opts: opts, log: opts.Logger.With("process", opts.Name), cancel: cancel, done: make(chan struct{})}
	first := make(chan error, 1)
	go p.supervise(ctx, first)
	if err := <-first; err != nil {
		cancel()
		<-p.done
		return nil, api.Errorf(api.FailedPrecondition, "process %s: start %s: %w", opts.Name, opts.Command.Path, err)
	}
	return p, nil
}

// Name returns the process's name.
func (p *Process) Name() string { return p.opts.Name }

// Command returns the program the process runs.
func (p *Process) Command() Command { return p.opts.Command }

// Stop stops the supervision and the program (SIGTERM to its group, SIGKILL after StopGrace)
// and waits until it has exited and been reaped, or ctx ends (the program is then still
// stopped, in the background). Idempotent.
func (p *Process) Stop(ctx context.Context) error {
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once the supervision has ended and the program is gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stats returns a snapshot of the process.
func (p *Process) Stats() ProcessStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
}

// Metrics returns the process's stats as metrics for a DataPath stats sample: process_up (1 while
// running), process_pid, process_uptime_seconds, process_starts_total,
// process_restarts_total, process_start_failures_total, process_output_lines_dropped_total and,
// once it exited, process_last_exit_code (minus the signal for a kill) labelled with
// status="exit status 1" or the like.
func (p *Process) Metrics() []api.Metric {
	st := p.Stats()
	up, uptime := 0.0, 0.0
	if st.Running {
		up, uptime = 1, time.Since(st.Started).Seconds()
	}
	g := func(n string, v float64) api.Metric { return api.Metric{Name: n, Kind: api.MetricGauge, Value: v} }
	c := func(n string, v uint64) api.Metric {
		return api.Metric{Name: n, Kind: api.MetricCounter, Value: float64(v)}
	}
	ms := []api.Metric{g("process_up", up), g("process_pid", float64(st.PID)), g("process_uptime_seconds", uptime),
		c("process_starts_total", st.Starts), c("process_restarts_total", st.Restarts),
		c("process_start_failures_total", st.StartFailures), c("process_output_lines_dropped_total", st.LinesDropped)}
	if st.LastExit != "" {
		m := g("process_last_exit_code", float64(st.LastExitCode))
		m.Labels = map[string]string{"status": st.LastExit}
		ms = append(ms, m)
	}
	return ms
}

// supervise runs the program until ctx ends, restarting it. It keeps its goroutine on one OS
// thread for its whole life: the parent-death signal fires when the thread that started the
// child ends (go.dev/issue/27505), so every start happens on this thread, which ends only after
// the last child is reaped. first receives the first start's result.
func (p *Process) supervise(ctx context.Context, first chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, its children reaped
	defer close(p.done)
	backoff := p.opts.MinBackoff
	for n := 0; ; n++ {
		r, err := p.spawn()
		if n == 0 {
			first <- err
			if err != nil {
				return
			}
		}
		if err != nil {
			p.mu.Lock()
			p.st.StartFailures++
			p.mu.Unlock()
			p.log.Error("process: restart failed", "program", p.opts.Command.Path, "err", err, "retry_in", backoff)
		} else {
			select {
			case res := <-r.exited:
				ran := p.exited(r, res)
				if ran >= p.opts.ResetAfter {
					backoff = p.opts.MinBackoff
				}
				p.log.Warn("process exited; restarting", "pid", r.pid, "status", p.Stats().LastExit, "ran", ran.Round(time.Millisecond), "restart_in", backoff)
			case <-ctx.Done():
				p.terminate(r)
				return
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.log.Info("process stopped", "program", p.opts.Command.Path)
			return
		}
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
}

// run is one run of the program.
type run struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	exited  chan error     // the result of Wait, once
	output  sync.WaitGroup // the output readers
	pipes   [2]*os.File    // the read ends of standard output and error

	mu     sync.Mutex
	reaped bool // set before the process is reaped: its id may then be reused
}

// spawn starts the program once, with its output piped to the log.
func (p *Process) spawn() (*run, error) {
	c := p.opts.Command
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{Path: c.Path, Args: c.Argv(), Env: c.Env, Dir: c.Dir, Stdout: outW, Stderr: errW,
		SysProcAttr: processAttr()}
	if cmd.Env == nil {
		cmd.Env = []string{DefaultProcessEnv}
	}
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	r := &run{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), exited: make(chan error, 1), pipes: [2]*os.File{outR, errR}}
	p.mu.Lock()
	p.st.Running, p.st.PID, p.st.Started = true, r.pid, r.started
	p.st.Starts++
	if p.st.Starts > 1 {
		p.st.Restarts++
	}
	p.mu.Unlock()
	p.log.Info("process started", "pid", r.pid, "argv", c.String())
	r.output.Add(2)
	go p.capture(outR, "stdout", r)
	go p.capture(errR, "stderr", r)
	go p.wait(r)
	return r, nil
}

// outputDrain bounds the wait for the last output of an exited program: a descendant that left
// its process group may hold the pipes open.
const outputDrain = time.Second

// wait waits for the program to exit, kills what remains of its process group while the
// unreaped program still holds the group's id, reaps it, and lets the output readers finish
// (closing the pipes after outputDrain).
func (p *Process) wait(r *run) {
	if waitExited(r.pid) {
		r.mu.Lock()
		r.reaped = true
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		r.mu.Unlock()
	}
	err := r.cmd.Wait()
	r.mu.Lock()
	r.reaped = true
	r.mu.Unlock()
	drained := make(chan struct{})
	go func() { r.output.Wait(); close(drained) }()
	t := time.NewTimer(outputDrain)
	select {
	case <-drained:
	case <-t.C:
		for _, f := range r.pipes {
			_ = f.Close()
		}
		<-drained
	}
	t.Stop()
	r.exited <- err
}

// signal sends sig to the program's process group unless the program is being reaped.
func (r *run) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.reaped {
		_ = syscall.Kill(-r.pid, sig)
	}
}

// terminate stops a running program: SIGTERM, then SIGKILL after StopGrace.
func (p *Process) terminate(r *run) {
	r.signal(syscall.SIGTERM)
	t := time.NewTimer(p.opts.StopGrace)
	defer t.Stop()
	var res error
	select {
	case res = <-r.exited:
	case <-t.C:
		p.log.Warn("process ignored SIGTERM; killing it", "pid", r.pid, "grace", p.opts.StopGrace)
		r.signal(syscall.SIGKILL)
		res = <-r.exited
	}
	p.exited(r, res)
	p.log.Info("process stopped", "pid", r.pid, "status", p.Stats().LastExit)
}

// exited records the end of a run and returns how long it ran.
func (p *Process) exited(r *run, err error) time.Duration {
	status, code := "exit status 0", 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status, code = ee.String(), ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -int(ws.Signal())
		}
	case err != nil:
		status, code = err.Error(), -1
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.Running, p.st.PID = false, 0
	p.st.LastExit, p.st.LastExitCode, p.st.LastExitTime = status, code, now
	return now.Sub(r.started)
}
