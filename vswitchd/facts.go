package vswitchd

import (
	"context"
	"log/slog"
	"time"
)

// Facts refreshes: factsSettle after ovs-vswitchd is seen running again (it registers most of
// its unixctl commands in its first main-loop pass after taking its OVSDB lock, DPDK's after
// EAL init), and every factsResync otherwise, which also catches a restart too quick for the
// liveness probe and commands registered later.
const (
	factsSettle = time.Second
	factsResync = 10 * time.Second
)

// FactsRefresher hands the plugins the facts of the running Open vSwitch again and returns the
// plugins it configured again (plugins/host.Host.RefreshFacts).
type FactsRefresher func(ctx context.Context) (reconfigured []string, err error)

// factsLoop keeps the plugins' Open vSwitch facts current. It owns the request for a refresh
// (kick) and the refresh loop; after a refresh that configured plugins again, their global
// config contribution and flows are refreshed too (they may depend on the facts).
type factsLoop struct {
	refresh FactsRefresher
	log     *slog.Logger
	down    func() string // why ovs-vswitchd is known not to run ("" when it runs or nobody knows)
	after   func(ctx context.Context)
	kick    chan struct{} // capacity 1
}

func newFactsLoop(refresh FactsRefresher, log *slog.Logger, down func() string, after func(ctx context.Context)) *factsLoop {
	return &factsLoop{refresh: refresh, log: log, down: down, after: after, kick: make(chan struct{}, 1)}
}

// Kick asks for a refresh factsSettle from now (ovs-vswitchd runs again). It never blocks.
func (f *factsLoop) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// run refreshes when kicked (after factsSettle) and every factsResync, until ctx ends. While
// ovs-vswitchd is known not to run, nothing is refreshed: its facts would be those of no
// switch, and the plugins keep the last ones until it is back.
func (f *factsLoop) run(ctx context.Context) {
	timer := time.NewTimer(factsResync)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-f.kick:
			select {
			case <-ctx.Done():
				return
			case <-time.After(factsSettle):
			}
		}
		if f.down() == "" {
			f.once(ctx)
		}
		timer.Reset(factsResync)
	}
}

// once refreshes the facts and, when plugins were configured again, what depends on them.
func (f *factsLoop) once(ctx context.Context) {
	got, err := f.refresh(ctx)
	if err != nil {
		f.log.Warn("refreshing the plugins' Open vSwitch facts", "error", err)
	}
	if len(got) > 0 {
		f.log.Info("plugins configured again with the new Open vSwitch facts", "plugins", got)
		f.after(ctx)
	}
}

// switchDown says why ovs-vswitchd is known not to run, "" when it runs or without a
// SwitchProbe.
func (d *Daemon) switchDown() string {
	if d.live == nil {
		return ""
	}
	return d.live.downReason()
}
