package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// failingLimit is how many consecutive HealthFailing reports make the host restart a plugin.
const failingLimit = 3

// replayParallel bounds the Attach calls of a replay in flight at once.
const replayParallel = 8

var errStopping = errors.New("stopping")

// rejected is a configuration the plugin refused (InvalidArgument or FailedPrecondition from
// Configure): restarting would not help.
type rejected struct{ err error }

func (r *rejected) Error() string { return "configuration rejected: " + r.err.Error() }
func (r *rejected) Unwrap() error { return r.err }

// sup supervises one plugin: it starts it, watches it, restarts it with backoff, opens its
// circuit breaker, and holds the current instance the capability wrappers call.
type sup struct {
	h       *Host
	name    string
	log     *slog.Logger
	cookies api.CookieRange
	groups  api.GroupRange

	ctx    context.Context
	cancel context.CancelFunc
	first  chan struct{} // closed when the first start attempt has settled (a state other than starting)
	done   chan struct{} // closed when run returns
	kickCh chan struct{}

	firstOnce sync.Once
	mu        sync.Mutex
	entry     model.Plugin
	inst      *instance
	st        Status
	failures  []time.Time // within the breaker window
	failing   int         // consecutive HealthFailing reports
	contrib   *api.GlobalConfig
	facts     api.HostFacts // as handed to the last Configure
	// ownExtra is the daemon's own dpdk-extra (Host.ownExtra) when the plugin was last
	// configured; nil when unknown then (adopted by the next RefreshFacts).
	ownExtra *string
}

func newSup(h *Host, p model.Plugin, slot uint32) *sup {
	s := &sup{
		h: h, name: p.Name, entry: p,
		log:    pluginLogger(h.opts.Logger, p.Name),
		first:  make(chan struct{}),
		done:   make(chan struct{}),
		kickCh: make(chan struct{}, 1),
	}
	s.cookies, s.groups = ranges(slot)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	_, reattached := h.reattach[p.Name]
	s.st = Status{Name: p.Name, Path: p.Resolve(h.opts.PluginDir), State: StateStarting, Since: time.Now(),
		Cookies: s.cookies, Groups: s.groups, Reattached: reattached}
	return s
}

// run is the supervisor loop: start, watch, and after a failure back off and start again,
// until the breaker opens (then wait for a kick) or stop.
func (s *sup) run() {
	defer close(s.done)
	defer s.settleFirst()
	backoff := s.h.opts.BackoffInitial
	for s.ctx.Err() == nil {
		in, err := s.startOnce()
		if err != nil {
			if !s.afterFailure(err, &backoff) {
				return
			}
			continue
		}
		started := time.Now()
		reason := s.watch(in)
		if s.ctx.Err() != nil {
			s.detach(in, true)
			return
		}
		s.setState(StateRestarting, reason.Error())
		s.detach(in, false)
		if time.Since(started) >= s.h.opts.BreakerWindow {
			backoff = s.h.opts.BackoffInitial
		}
		s.log.Warn("plugin stopped", "error", reason)
		if !s.afterFailure(reason, &backoff) {
			return
		}
	}
}

func (s *sup) settleFirst() { s.firstOnce.Do(func() { close(s.first) }) }

// startOnce launches, configures and replays; on success the plugin is running.
func (s *sup) startOnce() (*instance, error) {
	s.mu.Lock()
	p := s.entry
	s.mu.Unlock()
	in, err := s.launch(s.ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.checkTypes(in.info); err != nil {
		in.kill(true)
		return nil, err
	}
	s.setInfo(in)
	if err := s.configure(s.ctx, in, p); err != nil {
		in.kill(false)
		return nil, err
	}
	s.replay(s.ctx, in)
	s.setRunning(in)
	return in, nil
}

// checkTypes refuses a plugin providing a type another plugin already provides.
func (s *sup) checkTypes(info api.Info) error {
	s.h.mu.Lock()
	others := s.h.ordered()
	s.h.mu.Unlock()
	for _, o := range others {
		if o == s {
			continue
		}
		theirs := o.status().Types
		for _, t := range info.Types {
			if slices.ContainsFunc(theirs, func(u api.ObjectType) bool { return u.Name == t.Name && u.Kind == t.Kind }) {
				return refuse(s.name, "it provides type %q, which plugin %q already provides; remove one of them from the config", t.Name, o.name)
			}
		}
	}
	return nil
}

// configure calls Configure with the entry's config, the facts and the plugin's ranges, then
// Contribute when the plugin contributes global config.
func (s *sup) configure(ctx context.Context, in *instance, p model.Plugin) error {
	ctx, cancel := context.WithTimeout(ctx, s.h.opts.CallTimeout)
	defer cancel()
	var facts api.HostFacts
	if s.h.opts.Facts != nil {
		f, err := s.h.opts.Facts(ctx)
		if err != nil {
			return fmt.Errorf("plugin %q: host facts: %w", s.name, err)
		}
		facts = f
	}
	facts, dropped := boundFacts(facts)
	if dropped > 0 {
		s.log.Warn("Open_vSwitch.other_config holds entries past the map limits; the plugin gets it without them",
			"left_out", dropped, "limits", "limits.MaxMapEntries, MaxMapBytes, MaxKeyBytes, MaxValueBytes")
	}
	facts.DataDir = filepath.Join(s.h.dataRoot, s.name)
	cfg, err := p.ConfigJSON()
	if err != nil {
		return &rejected{fmt.Errorf("plugin %q: config: %w", s.name, err)}
	}
	req := api.ConfigureRequest{Config: cfg, Facts: facts, APIVersion: in.version, Cookies: s.cookies, Groups: s.groups}
	s.h.mu.Lock()
	ownExtra := s.h.ownExtra
	s.h.mu.Unlock()
	s.mu.Lock()
	s.facts, s.ownExtra = facts, ownExtra
	s.mu.Unlock()
	if err := in.base.Configure(ctx, req); err != nil {
		err = s.callError(s.ctx, ctx, in, "Configure", err)
		if c := api.CodeOf(err); c == api.InvalidArgument || c == api.FailedPrecondition {
			return &rejected{err}
		}
		return err
	}
	if in.global != nil {
		g, err := in.global.Contribute(ctx)
		if err == nil {
			err = api.ValidateGlobalConfig(g)
		}
		if err != nil {
			return s.callError(s.ctx, ctx, in, "Contribute", err)
		}
		s.mu.Lock()
		s.contrib = &g
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.st.Configured++
	s.mu.Unlock()
	return nil
}

// replay Attaches every port the daemon says the plugin owns, once each, with Replay set, and
// hands the outcomes to Options.Replayed.
func (s *sup) replay(ctx context.Context, in *instance) {
	o := s.h.opts
	if o.Owned == nil || in.port == nil {
		return
	}
	octx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	reqs, err := o.Owned(octx, s.name)
	cancel()
	if err != nil {
		s.log.Error("replay: listing the plugin's ports failed; nothing replayed", "error", err)
		return
	}
	results := make([]api.ReplayResult, len(reqs))
	sem := make(chan struct{}, replayParallel)
	var wg sync.WaitGroup
	for i, r := range reqs {
		r.Replay = true // whatever Owned said: every request of a replay is one
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
			defer cancel()
			a, err := in.port.Attach(cctx, r)
			if err == nil {
				err = s.checkAttachment(r, a)
			}
			if err != nil {
				err = s.callError(ctx, cctx, in, "Attach port "+r.Bridge+"/"+r.Name+" (replay)", err)
			}
			results[i] = api.ReplayResult{Request: r, Attachment: a, Err: err}
		})
	}
	wg.Wait()
	s.log.Info("replayed owned ports", "ports", len(results))
	if o.Replayed != nil {
		o.Replayed(s.name, results)
	}
}

// watch blocks until the instance's process exits, a health check fails, or the supervisor
// stops; it returns why.
func (s *sup) watch(in *instance) error {
	exit := time.NewTicker(exitPoll)
	defer exit.Stop()
	health := time.NewTicker(s.h.opts.HealthInterval)
	defer health.Stop()
	var result chan error
	for {
		select {
		case <-s.ctx.Done():
			return errStopping
		case <-exit.C:
			if in.client.Exited() {
				return fmt.Errorf("plugin %q: process %d exited", s.name, in.pid)
			}
		case <-health.C:
			if result == nil {
				result = make(chan error, 1)
				go func() { result <- s.checkHealth(in) }()
			}
		case err := <-result:
			result = nil
			if err != nil {
				return err
			}
		}
	}
}

// checkHealth pings the plugin through go-plugin's gRPC health service, then asks its own
// Health. Both are bounded by CallTimeout.
func (s *sup) checkHealth(in *instance) error {
	ctx, cancel := context.WithTimeout(in.ctx, s.h.opts.CallTimeout)
	defer cancel()
	if in.conn != nil {
		_, err := healthpb.NewHealthClient(in.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName})
		if err != nil {
			return fmt.Errorf("plugin %q: health check: ping: %w", s.name, err)
		}
	}
	h, err := in.base.Health(ctx)
	if err != nil {
		return fmt.Errorf("plugin %q: health check: Health: %w", s.name, err)
	}
	s.mu.Lock()
	s.st.Health = h
	if h.State == api.HealthFailing {
		s.failing++
	} else {
		s.failing = 0
	}
	failing := s.failing
	s.mu.Unlock()
	if failing >= failingLimit {
		return fmt.Errorf("plugin %q: health check: it reported failing %d times in a row: %s", s.name, failing, h.Message)
	}
	return nil
}

// afterFailure records a failure and decides what comes next: refused, rejected and
// breaker-open plugins wait for a kick; others wait out the backoff. It returns false when
// the supervisor stops.
func (s *sup) afterFailure(err error, backoff *time.Duration) bool {
	o := s.h.opts
	now := time.Now()
	s.mu.Lock()
	s.st.LastError = err.Error()
	s.failures = append(s.failures, now)
	s.failures = slices.DeleteFunc(s.failures, func(t time.Time) bool { return now.Sub(t) > o.BreakerWindow })
	n := len(s.failures)
	reattached := s.st.Reattached
	s.mu.Unlock()
	var rej *rejected
	switch {
	case errors.Is(err, ErrRefused):
		s.setState(StateRefused, err.Error())
	case errors.As(err, &rej):
		s.setState(StateFailed, err.Error())
	case reattached:
		s.setState(StateFailed, fmt.Sprintf("the reattached plugin is gone (%v); start it again under the debugger and reload", err))
	case n >= o.BreakerFailures:
		s.setState(StateFailed, fmt.Sprintf("circuit breaker open: %d failures within %s, the last: %v; fix the plugin, then reset it or reload the config", n, o.BreakerWindow, err))
	default:
		s.mu.Lock()
		s.st.Restarts++
		s.mu.Unlock()
		s.setState(StateRestarting, err.Error())
		t := time.NewTimer(*backoff)
		defer t.Stop()
		*backoff = min(2**backoff, o.BackoffMax)
		select {
		case <-s.ctx.Done():
			return false
		case <-t.C:
		case <-s.kickCh:
		}
		return true
	}
	s.log.Error("plugin not restarted", "reason", s.status().Reason)
	select {
	case <-s.ctx.Done():
		return false
	case <-s.kickCh:
		s.mu.Lock()
		s.failures = nil
		s.mu.Unlock()
		*backoff = o.BackoffInitial
		return true
	}
}

// kick asks a waiting supervisor to try now (Reset).
func (s *sup) kick() {
	select {
	case s.kickCh <- struct{}{}:
	default:
	}
}

// stop ends the supervisor and the process; idempotent.
func (s *sup) stop() {
	s.cancel()
	<-s.done
	s.setState(StateStopped, "")
}

// setInfo records what the plugin said about itself; it stays after the plugin stops, so
// its types still resolve (to calls that fail with the reason) while it is down.
func (s *sup) setInfo(in *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Version = in.info.Version
	s.st.APIVersion = in.version
	s.st.Capabilities = slices.Clone(in.info.Capabilities)
	s.st.Types = slices.Clone(in.info.Types)
	s.st.Watch = in.info.Watch
}

func (s *sup) setRunning(in *instance) {
	s.mu.Lock()
	s.inst = in
	s.failing = 0
	s.st.PID = in.pid
	s.st.Health = api.Health{}
	s.mu.Unlock()
	s.setState(StateRunning, "")
	s.log.Info("plugin running", "version", in.info.Version, "pid", in.pid, "api", in.version)
}

// detach makes the instance unreachable for new calls, ends the calls in flight and kills
// the process (see instance.kill for graceful).
func (s *sup) detach(in *instance, graceful bool) {
	s.mu.Lock()
	if s.inst == in {
		s.inst = nil
		s.st.PID = 0
	}
	s.mu.Unlock()
	in.kill(graceful)
}

func (s *sup) setState(st State, reason string) {
	s.mu.Lock()
	changed := s.st.State != st || s.st.Reason != reason
	s.st.State, s.st.Reason = st, reason
	if changed {
		s.st.Since = time.Now()
	}
	snap := s.snapshot()
	s.mu.Unlock()
	if st != StateStarting {
		s.settleFirst()
	}
	if changed && s.h.opts.OnChange != nil {
		s.h.opts.OnChange(snap)
	}
}

func (s *sup) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

// snapshot copies the status; s.mu must be held.
func (s *sup) snapshot() Status {
	st := s.st
	st.Capabilities = slices.Clone(s.st.Capabilities)
	st.Types = slices.Clone(s.st.Types)
	return st
}

// keeps reports whether a Reload to p can keep this supervisor and its process: it is
// running and the binary, pin and environment are unchanged. s.entry becomes p.
func (s *sup) keeps(p model.Plugin) (configChanged, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.entry
	if s.st.State != StateRunning || s.st.Reattached || old.Path != p.Path ||
		!strings.EqualFold(old.SHA256, p.SHA256) || !slices.Equal(old.Env, p.Env) {
		return false, false
	}
	s.entry = p
	return !reflect.DeepEqual(old.Config, p.Config), true
}

// reconfigure hands a running plugin its new configuration (Configure, then Contribute).
func (s *sup) reconfigure(ctx context.Context, p model.Plugin) error {
	s.mu.Lock()
	in := s.inst
	s.mu.Unlock()
	if in == nil {
		return &api.Error{Code: api.Unavailable, Message: fmt.Sprintf("plugin %q: Configure: not running; the new configuration applies at its next start", s.name)}
	}
	err := s.configure(ctx, in, p)
	if err != nil {
		s.mu.Lock()
		s.st.LastError = err.Error()
		s.mu.Unlock()
		return err
	}
	if s.h.opts.OnConfigured != nil {
		s.h.opts.OnConfigured(s.status())
	}
	return nil
}

func (s *sup) entryNow() model.Plugin {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entry
}

// checkAttachment applies the contract's checks to an Attach answer, with the facts the
// plugin was configured with. A refused answer is an *api.RefusedAnswerError carrying the
// answer's State: the plugin did its host work, and the caller decides whether to Detach it
// (a fresh attachment) or keep it (a replay of a port OVSDB still holds).
func (s *sup) checkAttachment(req api.PortRequest, a api.Attachment) error {
	s.mu.Lock()
	facts := s.facts
	s.mu.Unlock()
	if err := api.ValidateAttachment(facts, req, a); err != nil {
		return &api.RefusedAnswerError{Plugin: s.name, State: a.State, Err: err}
	}
	return nil
}
