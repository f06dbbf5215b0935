package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Stats intervals of Supervisor.Stats.
const (
	DefaultStatsInterval = time.Second
	MinStatsInterval     = 100 * time.Millisecond
)

// SupervisorOptions configure a Supervisor; every field is optional.
type SupervisorOptions struct {
	// Logger is the default ProcessOptions.Logger; slog.Default() when nil.
	Logger *slog.Logger
	// MaxProcesses bounds the processes supervised at once (default 256).
	MaxProcesses int
}

// Supervisor runs named external programs for a plugin, one Process each: the ready-made body of
// an api.DataPath whose jobs are programs. Start, Stop and Stats have the contract's semantics
// (idempotent start and stop, a stats stream until the context ends); Close stops everything
// and belongs in the plugin's shutdown, after Serve returns. Methods are safe for concurrent use.
//
//	func (p *Plugin) Start(ctx context.Context, job api.Job) (string, error) {
//		return p.sup.Start(ctx, sdk.ProcessOptions{Name: job.Name, Command: sdk.Command{Path: p.bin, Args: args}})
//	}
type Supervisor struct {
	log  *slog.Logger
	max  int
	ctx  context.Context // the processes' lifetime, ended by Close
	stop context.CancelFunc

	ops   sync.Mutex // serialises Start, Stop and Close
	mu    sync.Mutex // guards procs and closed
	procs map[string]*Process
	done  bool
}

// NewSupervisor returns an empty Supervisor.
func NewSupervisor(opts SupervisorOptions) *Supervisor {
	s := &Supervisor{log: opts.Logger, max: opts.MaxProcesses, procs: map[string]*Process{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.max <= 0 {
		s.max = 256
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	return s
}

// Start starts the process opts.Name unless it already runs the same Command, which it leaves
// alone; one running another command is stopped first and started again with opts. It returns a
// status for humans ("started pid 42: /usr/bin/x --y") or StartProcess's error; more than
// MaxProcesses is FailedPrecondition, a closed Supervisor Unavailable. ctx bounds the stop of
// the previous process only; the new one runs until Stop or Close.
func (s *Supervisor) Start(ctx context.Context, opts ProcessOptions) (string, error) {
	s.ops.Lock()
	defer s.ops.Unlock()
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	s.mu.Lock()
	old, closed, n := s.procs[opts.Name], s.done, len(s.procs)
	s.mu.Unlock()
	switch {
	case closed:
		return "", api.Errorf(api.Unavailable, "process %s: the supervisor is closed (the plugin is stopping)", opts.Name)
	case old != nil && old.Command().Equal(opts.Command):
		if st := old.Stats(); st.Running {
			return fmt.Sprintf("running pid %d since %s (%d restarts): %s", st.PID, st.Started.Format(time.RFC3339), st.Restarts, old.Command()), nil
		}
		return fmt.Sprintf("restarting (%d restarts, last %s): %s", old.Stats().Restarts, old.Stats().LastExit, old.Command()), nil
	case old == nil && n >= s.max:
		return "", api.Errorf(api.FailedPrecondition, "process %s: %d processes already supervised, the most this plugin runs; stop one first", opts.Name, n)
	}
	if old != nil {
		opts.Logger.Info("process: command changed, restarting", "process", opts.Name, "old", old.Command().String(), "new", opts.Command.String())
		if err := old.Stop(ctx); err != nil {
			return "", fmt.Errorf("process %s: stop the previous command: %w", opts.Name, err)
		}
		s.mu.Lock()
		delete(s.procs, opts.Name)
		s.mu.Unlock()
	}
	p, err := StartProcess(s.ctx, opts)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.procs[opts.Name] = p
	s.mu.Unlock()
	return fmt.Sprintf("started pid %d: %s", p.Stats().PID, p.Command()), nil
}

// Stop stops the process name and waits until it is gone or ctx ends (it is then still stopped,
// in the background). An unknown name is already stopped: nil.
func (s *Supervisor) Stop(ctx context.Context, name string) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	p := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop(ctx)
}

// Get returns the process name, if supervised.
func (s *Supervisor) Get(name string) (*Process, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[name]
	return p, ok
}

// Names returns the names of the supervised processes, sorted.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.procs))
}

// Close stops every process and refuses further starts; it waits until all are gone or ctx
// ends. Idempotent.
func (s *Supervisor) Close(ctx context.Context) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	s.done = true
	procs := slices.Collect(maps.Values(s.procs))
	clear(s.procs)
	s.mu.Unlock()
	s.stop()
	var errs []error
	for _, p := range procs {
		if err := p.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("process %s: %w", p.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Stats is api.DataPath.Stats over the supervised processes: every interval (req.IntervalMillis,
// default DefaultStatsInterval, at least MinStatsInterval) one sample per selected process
// (req.Jobs, all when empty; names not supervised are skipped) with Process.Metrics, in name
// order, the first at once. It returns ctx's error when ctx ends, or send's error.
func (s *Supervisor) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := DefaultStatsInterval
	if req.IntervalMillis > 0 {
		every = max(time.Duration(req.IntervalMillis)*time.Millisecond, MinStatsInterval)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, name := range s.Names() {
			if len(req.Jobs) > 0 && !slices.Contains(req.Jobs, name) {
				continue
			}
			p, ok := s.Get(name)
			if !ok {
				continue
			}
			if err := send(api.StatsSample{Job: name, TimeUnixNano: time.Now().UnixNano(), Metrics: p.Metrics()}); err != nil {
				return err
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
