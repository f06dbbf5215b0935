package sandbox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// Restart backoff of a daemon that exits on its own: the first restart waits restartMin, each
// failed attempt doubles the wait up to restartMax, and a daemon that ran restartStable before
// exiting starts again from restartMin.
const (
	restartMin    = 100 * time.Millisecond
	restartMax    = 5 * time.Second
	restartStable = 30 * time.Second
)

// backoff is the restart delay of one daemon.
type backoff struct {
	next    time.Duration // the delay before the next attempt; 0: restartMin
	started time.Time     // when the daemon last started successfully
}

// exited notes that the daemon exited at now: after a stable run the delays start over.
func (b *backoff) exited(now time.Time) {
	if now.Sub(b.started) >= restartStable {
		b.next = 0
	}
}

// delay returns the wait before the next attempt and doubles the following one.
func (b *backoff) delay() time.Duration {
	d := max(b.next, restartMin)
	b.next = min(2*d, restartMax)
	return d
}

// Status is what the sandbox's daemons are doing at one moment.
type Status struct {
	// Down says, per daemon not running now ("ovsdb-server", "ovs-vswitchd"), why: how it
	// exited and, after failed restarts, the last failure. Empty when both run.
	Down map[string]string
	// Restarts counts, per daemon, the restarts after it exited on its own since Start.
	Restarts map[string]int
	// OVSDBPID and VswitchdPID are the pids of the current processes (the last ones while
	// down).
	OVSDBPID, VswitchdPID int
}

// Degraded returns one line per daemon that is down, sorted, for a health report; none when
// both run.
func (st Status) Degraded() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(st.Down)) {
		out = append(out, "sandbox "+name+" is not running: "+st.Down[name])
	}
	return out
}

// Status returns the state of the sandbox's daemons now. Safe for concurrent use.
func (s *Sandbox) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Down: maps.Clone(s.down), Restarts: maps.Clone(s.restarts),
		OVSDBPID: s.db.Current().PID(), VswitchdPID: s.sw.Current().PID()}
}

// supervise waits for either daemon to exit and starts it again (revive), until ctx ends
// (Close, or the end of Start's ctx). Events are handled one at a time, ovsdb-server first when
// both exited, so ovs-vswitchd always restarts against a running database.
func (s *Sandbox) supervise(ctx context.Context) {
	defer close(s.supervised)
	var dbBackoff, swBackoff backoff
	now := time.Now()
	dbBackoff.started, swBackoff.started = now, now
	for ctx.Err() == nil {
		db, sw := s.db.Current(), s.sw.Current()
		select {
		case <-ctx.Done():
			return
		case <-db.Done():
			s.revive(ctx, s.db, db, &dbBackoff)
		case <-sw.Done():
			if db.Exited() {
				s.revive(ctx, s.db, db, &dbBackoff)
				continue
			}
			s.revive(ctx, s.sw, sw, &swBackoff)
		}
	}
}

// revive restarts daemon d, whose process p exited, with backoff until a start succeeds or ctx
// ends. Meanwhile Status reports d down with why. An ovs-vswitchd waiting for its restart
// gives way when ovsdb-server exits too: revive returns, d stays down, and the supervisor
// restarts ovsdb-server first, then comes back to d.
func (s *Sandbox) revive(ctx context.Context, d *ovsproc.Daemon, p *ovsproc.Process, b *backoff) {
	if ctx.Err() != nil {
		return // Close stops the daemons: their exit is expected
	}
	name := d.Spec().Name
	why := fmt.Sprintf("pid %d exited (%v)", p.PID(), p.Err())
	if !s.isDown(name) { // not when coming back after giving way to ovsdb-server
		b.exited(time.Now())
		s.setDown(name, why)
		s.log.Error("sandbox: "+name+" exited; restarting it", "pid", p.PID(), "exit", p.Err(),
			"log", ovsproc.Tail(d.Spec().Log, 5))
	}
	for attempt := 1; ; attempt++ {
		if d == s.sw && s.db.Current().Exited() {
			return
		}
		wait := b.delay()
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if hook := s.opts.beforeRestart; hook != nil {
			hook(ctx, name)
		}
		err := s.restart(ctx, d)
		if err == nil {
			b.started = time.Now()
			s.mu.Lock()
			delete(s.down, name)
			s.restarts[name]++
			n := s.restarts[name]
			s.mu.Unlock()
			pid := d.Current().PID()
			s.log.Info("sandbox: "+name+" restarted", "pid", pid, "restarts", n, "attempts", attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.setDown(name, fmt.Sprintf("%s; restart attempt %d failed: %v", why, attempt, err))
		s.log.Warn("sandbox: restarting "+name+" failed; trying again", "attempt", attempt,
			"next_in", b.next, "error", err)
	}
}

// restart starts d once, bounded by Options.StartTimeout, and stops what it started when the
// start fails. ovs-vswitchd is preceded by the removal of stale sockets (its predecessor's
// vhost-user sockets) and waits for DPDK when dpdk-init=true is in the database by then.
func (s *Sandbox) restart(ctx context.Context, d *ovsproc.Daemon) error {
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.StartTimeout,
		fmt.Errorf("restart took longer than %v", s.opts.StartTimeout))
	defer cancel()
	var err error
	if d == s.db {
		err = s.startOVSDB(ctx)
	} else {
		err = s.restartVswitchd(ctx)
	}
	if err == nil {
		return nil
	}
	if p := d.Running(); p != nil {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), closeOnFailure)
		defer scancel()
		if serr := p.Stop(sctx, nil); serr != nil {
			err = fmt.Errorf("%w (and stopping it: %w)", err, serr)
		}
	}
	return err
}

// restartVswitchd starts ovs-vswitchd again after it exited.
func (s *Sandbox) restartVswitchd(ctx context.Context) error {
	rc, err := s.readRoot(ctx)
	if err != nil {
		return err
	}
	if err := s.sweepSockets(ctx, rc.otherConfig); err != nil {
		return err
	}
	_, _, err = s.startVswitchd(ctx, s.dpdk && rc.otherConfig["dpdk-init"] == "true")
	return err
}

// isDown reports whether d is recorded as not running.
func (s *Sandbox) isDown(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.down[name]
	return ok
}

// setDown records that d is not running and why.
func (s *Sandbox) setDown(name, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[name] = why
}
