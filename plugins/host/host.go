package host

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// State is where a plugin is in its life.
type State string

// The states.
const (
	// StateStarting: the first start is under way.
	StateStarting State = "starting"
	// StateRunning: configured, owned objects replayed, serving calls.
	StateRunning State = "running"
	// StateRestarting: it exited or failed a health check; a restart is pending (backoff).
	StateRestarting State = "restarting"
	// StateFailed: its circuit breaker is open (or its configuration was rejected, or a
	// reattached process exited); not restarted until Reset or Reload.
	StateFailed State = "failed"
	// StateRefused: its binary failed the trust checks or speaks another protocol version; no
	// process runs; retried on Reset or Reload.
	StateRefused State = "refused"
	// StateStopped: removed by Reload or Close.
	StateStopped State = "stopped"
)

// Status is a snapshot of one plugin.
type Status struct {
	Name string
	Path string // the binary, absolute
	// Version, Capabilities, Types and Watch come from the plugin's Info at its last start.
	Version      string
	APIVersion   string // the negotiated API revision
	Capabilities []api.Capability
	Types        []api.ObjectType
	Watch        api.WatchFilter
	State        State
	// Reason says why the plugin is restarting, failed or refused.
	Reason string
	// Restarts counts the restarts since the plugin was (re)configured by Start or Reload.
	Restarts int
	// LastError is the last failure (a crash, a failed health check or start), kept after
	// the plugin recovers.
	LastError string
	// Health is the plugin's own last Health report.
	Health api.Health
	// Cookies and Groups are the OpenFlow cookie and group id ranges the host assigned: the
	// daemon prunes the plugin's flows and groups by them.
	Cookies api.CookieRange
	Groups  api.GroupRange
	PID     int
	// Reattached is true for a plugin attached in debug mode (see Options.Reattach).
	Reattached bool
	Since      time.Time // when State was entered
	// Configured counts the Configure calls the plugin accepted under this supervisor (each
	// start's and each later one): a new value means a new configuration or new facts.
	Configured uint64
}

// Info returns the summary of s the daemon reports (Health, the API's plugin list): the
// State as text and the names of the Types and Capabilities, in s's order.
func (s Status) Info() model.PluginInfo {
	info := model.PluginInfo{Name: s.Name, Version: s.Version, State: string(s.State), Reason: s.Reason,
		Restarts: s.Restarts, LastError: s.LastError, PID: s.PID}
	for _, t := range s.Types {
		info.Types = append(info.Types, t.Name)
	}
	for _, c := range s.Capabilities {
		info.Capabilities = append(info.Capabilities, c.String())
	}
	return info
}

// Host discovers, verifies, starts, supervises and stops the configured plugins, and hands the
// daemon supervised views of their capabilities. Its methods are safe for concurrent use.
type Host struct {
	opts      Options
	uid       int
	reattach  map[string]wire.Reattach
	runDir    string
	dataRoot  string
	closeOnce sync.Once

	mu      sync.Mutex
	plugins map[string]*sup // by name
	order   []string        // config order
	closed  bool
	// written is the plugins' merged other_config contribution GlobalConfig last returned:
	// what the daemon writes on their behalf. RefreshFacts does not take those keys coming
	// back with those values for new facts (see sameFacts). ownExtra is the daemon's own
	// dpdk-extra GlobalConfig last merged the plugins' fragments after (nil before the first):
	// a change of it is news even when the merged value is written.
	written  map[string]string
	ownExtra *string
}

// New returns a Host; it starts nothing. It fails on relative paths or a malformed Reattach.
func New(opts Options) (*Host, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	re := map[string]wire.Reattach{}
	if opts.Reattach != "" {
		r, err := wire.ParseReattach([]byte(opts.Reattach))
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		re[r.Plugin] = r
	}
	return &Host{
		opts:     opts,
		uid:      os.Getuid(),
		reattach: re,
		runDir:   filepath.Join(opts.DataDir, "plugin-run"),
		dataRoot: filepath.Join(opts.DataDir, "plugin-data"),
		plugins:  map[string]*sup{},
	}, nil
}

// Start starts the given plugins (the config's allow-list) and returns when each has
// finished its first start attempt: running, or refused, failed or restarting in the
// background (see Plugins). It fails only when the host itself cannot run plugins (its
// private socket dir) or was closed; a plugin that does not start is reported in its Status.
// Start on a started Host is Reload.
func (h *Host) Start(ctx context.Context, plugins []model.Plugin) error {
	return h.Reload(ctx, plugins)
}

// Reload makes the running plugins match the list: it stops plugins no longer listed,
// starts new ones, restarts those whose binary, pin or environment changed, calls Configure
// (and Contribute) again on a running plugin whose config alone changed, and retries failed
// and refused plugins (closing their breaker). The trust checks run again on every running
// plugin: one whose binary now fails them (replaced, writable by others, wrong owner) is
// stopped and refused. A plugin started anew in place of a previous process keeps, until it
// runs, what that one said about itself (its types, capabilities and last global-config
// contribution): calls to its types fail as Unavailable naming why, and its other_config keys
// stay, while it starts or if it is refused. It returns when every started plugin finished
// its first attempt, or ctx ends; its error lists the running plugins that rejected their new
// configuration (they keep the previous one, as the contract says).
func (h *Host) Reload(ctx context.Context, plugins []model.Plugin) error {
	if err := h.prepareDirs(); err != nil {
		return err
	}
	for name := range h.reattach {
		if !slices.ContainsFunc(plugins, func(p model.Plugin) bool { return p.Name == name }) {
			h.opts.Logger.Warn("plugin reattach configuration names a plugin that is not configured", "plugin", name)
		}
	}
	// The trust checks run again for every plugin that might keep its process: a binary
	// swapped, or made writable by others, since the plugin started is refused now, not at
	// its next crash. verify only reads; it runs outside h.mu.
	untrusted := h.recheckTrust(plugins)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errors.New("host: closed")
	}
	var stop, started, reconf []*sup
	next := map[string]*sup{}
	order := make([]string, 0, len(plugins))
	slots := slotAssigner{}
	names := make([]string, 0, len(plugins))
	for _, p := range plugins {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	for _, name := range names {
		slots.take(name)
	}
	for _, p := range plugins {
		order = append(order, p.Name)
		old := h.plugins[p.Name]
		if old != nil {
			if untrusted[p.Name] == nil {
				if changed, keep := old.keeps(p); keep {
					next[p.Name] = old
					if changed {
						reconf = append(reconf, old)
					}
					continue
				}
			}
			stop = append(stop, old)
		}
		s := newSup(h, p, slots.slot(p.Name))
		if old != nil {
			s.inherit(old)
		}
		next[p.Name] = s
		started = append(started, s)
	}
	for name, s := range h.plugins {
		if next[name] == nil {
			stop = append(stop, s)
		}
	}
	h.plugins, h.order = next, order
	h.mu.Unlock()

	for _, s := range stop {
		s.stop()
	}
	for _, s := range started {
		go s.run()
	}
	var errs []error
	for _, s := range reconf {
		if err := s.reconfigure(ctx, s.entryNow()); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range started {
		select {
		case <-s.first:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// Reset closes the named plugin's circuit breaker and retries a failed or refused plugin now
// (a running one is left alone). It fails for an unknown name.
func (h *Host) Reset(name string) error {
	s := h.get(name)
	if s == nil {
		return fmt.Errorf("host: no plugin %q", name)
	}
	s.kick()
	return nil
}

// Plugins returns the status of every configured plugin, in config order.
func (h *Host) Plugins() []Status {
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	out := make([]Status, 0, len(sups))
	for _, s := range sups {
		out = append(out, s.status())
	}
	return out
}

// Close stops every plugin (gracefully, then killed) and removes their sockets. It returns
// ctx's error when ctx ends first (the plugins are then still being stopped). Closing twice is
// harmless.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	sups := h.ordered()
	h.plugins = map[string]*sup{}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, s := range sups {
			wg.Go(s.stop)
		}
		wg.Wait()
		h.closeOnce.Do(func() { _ = os.RemoveAll(h.runDir) })
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Host) get(name string) *sup {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.plugins[name]
}

// ordered returns the supervisors in config order; h.mu must be held.
func (h *Host) ordered() []*sup {
	out := make([]*sup, 0, len(h.order))
	for _, name := range h.order {
		if s := h.plugins[name]; s != nil {
			out = append(out, s)
		}
	}
	return out
}

// prepareDirs creates the private socket dir and the plugin data root (0700) and checks that
// the socket dir is a real, private directory of the daemon.
func (h *Host) prepareDirs() error {
	for _, dir := range []string{h.runDir, h.dataRoot} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("host: %w", err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return fmt.Errorf("host: %w", err)
		}
		if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("host: %s must be a directory, not a symlink", dir)
		}
		if fi.Mode().Perm() != 0o700 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return fmt.Errorf("host: %w", err)
			}
		}
	}
	return nil
}

// slotAssigner gives each plugin a slot (0..maxSlot-1) derived from its name, stable across
// restarts and reorderings: the slot picks the plugin's cookie and group ranges. A collision
// goes to the next free slot, in name order.
type slotAssigner map[uint32]string

const maxSlot = 0xff00

func (a slotAssigner) take(name string) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	s := h.Sum32() % maxSlot
	for a[s] != "" && a[s] != name {
		s = (s + 1) % maxSlot
	}
	a[s] = name
}

func (a slotAssigner) slot(name string) uint32 {
	for s, n := range a {
		if n == name {
			return s
		}
	}
	return 0
}

// cookieMarker is the top byte of every plugin cookie: plugin flows are told apart from the
// daemon's own (and each other) by cookie alone.
const cookieMarker = 0xa5

// PluginCookies returns the cookie space of every plugin's flows (the top byte
// cookieMarker): the daemon prunes flows in it whose plugin is no longer configured.
func PluginCookies() api.CookieRange {
	return api.CookieRange{Value: cookieMarker << 56, Mask: 0xff00000000000000}
}

// ranges returns the cookie and group ranges of a slot: cookies 0xa5SSSS followed by 40 free
// bits, group ids (slot+1)<<16 .. +65535 (below OpenFlow's reserved 0xffffff00).
func ranges(slot uint32) (api.CookieRange, api.GroupRange) {
	return api.CookieRange{Value: cookieMarker<<56 | uint64(slot)<<40, Mask: 0xffffff0000000000},
		api.GroupRange{First: (slot + 1) << 16, Count: 1 << 16}
}
