package host

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// ReattachEnv is the environment variable the daemon reads the debug reattach line from
// (wire.ReattachEnv, which plugins/sdk prints in debug mode); config.Load leaves it alone.
const ReattachEnv = wire.ReattachEnv

// Defaults for the zero fields of Options.
const (
	DefaultCallTimeout     = 10 * time.Second
	DefaultHealthInterval  = 5 * time.Second
	DefaultStartTimeout    = 10 * time.Second
	DefaultBackoffInitial  = 100 * time.Millisecond
	DefaultBackoffMax      = 5 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerWindow   = 30 * time.Second
)

// exitPoll is how often a running plugin's process is checked for exit (go-plugin offers no
// exit notification, only Client.Exited).
const exitPoll = 25 * time.Millisecond

// Options configure a Host. PluginDir and DataDir are required; every other zero field takes
// its default.
type Options struct {
	// PluginDir is the absolute plugin directory (config.Config.PluginDir).
	PluginDir string
	// DataDir is the daemon's data dir. The host keeps the plugins' unix sockets in
	// <DataDir>/plugin-run (mode 0700, one fresh subdirectory per process, removed when the
	// process ends) and each plugin's private data dir in <DataDir>/plugin-data/<name>.
	DataDir string
	// Logger receives the host's records and every line the plugins log, with plugin=<name>.
	Logger *slog.Logger
	// Environ is the daemon's environment ("KEY=VALUE", normally os.Environ()). A plugin gets
	// PATH and the variables its config entry lists from it, nothing else.
	Environ []string

	// CallTimeout bounds every plugin call that has no shorter deadline (default 10 s).
	CallTimeout time.Duration
	// HealthInterval is the period of health checks: a gRPC ping and the plugin's Health
	// (default 5 s).
	HealthInterval time.Duration
	// StartTimeout bounds a plugin's start up to its handshake (default 10 s).
	StartTimeout time.Duration
	// BackoffInitial and BackoffMax bound the delay before a restart; it doubles from the
	// first to the second (defaults 100 ms and 5 s) and starts over after a plugin has run
	// for BreakerWindow.
	BackoffInitial, BackoffMax time.Duration
	// BreakerFailures failures (crashes, failed health checks, failed starts) within
	// BreakerWindow open a plugin's circuit breaker: it is marked failed and not restarted
	// until Reset or Reload (defaults 5 within 30 s).
	BreakerFailures int
	BreakerWindow   time.Duration

	// Owned returns the ports a plugin owns, as the daemon's OVSDB tags record them (with
	// their stored State). The host calls it after every start of the plugin and Attaches each
	// port again so the plugin rebuilds its state. Nil means none.
	Owned func(ctx context.Context, plugin string) ([]api.PortRequest, error)
	// Replayed receives the outcome of such a replay, one Replay per owned port, so the daemon
	// can compare the returned shapes with OVSDB. Called from the plugin's supervisor before
	// the plugin is marked running; it must not call back into the Host.
	Replayed func(plugin string, results []api.ReplayResult)
	// Facts returns the facts of the running Open vSwitch handed to Configure. Nil means
	// empty facts. The host fills DataDir itself.
	Facts func(ctx context.Context) (api.HostFacts, error)
	// OnChange is called after every change of a plugin's state (a plugin started, crashed,
	// failed, was refused, …), so the daemon can refresh statuses and reconcile. It must not
	// block or call back into the Host synchronously.
	OnChange func(Status)
	// OnConfigured is called after a running plugin accepted a Configure again (Reload with a
	// new configuration, RefreshFacts with new facts); its Status.Configured has grown. The
	// daemon resyncs the plugin's watch then, so statuses that depend on the configuration or
	// the facts are computed again. Like OnChange, it must not block or call back into the
	// Host synchronously.
	OnConfigured func(Status)

	// Reattach is the debug reattach line (the JSON of wire.Reattach), usually the value of
	// ReattachEnv; empty means none. The plugin it names is not started: the host attaches to
	// the running process, without the trust checks and without mTLS, never kills it and does
	// not restart it when it exits. For plugin authors only.
	Reattach string
}

func (o *Options) defaults() error {
	if o.PluginDir == "" || !filepath.IsAbs(o.PluginDir) {
		return fmt.Errorf("host: plugin dir %q must be an absolute path", o.PluginDir)
	}
	if o.DataDir == "" || !filepath.IsAbs(o.DataDir) {
		return fmt.Errorf("host: data dir %q must be an absolute path", o.DataDir)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&o.CallTimeout, DefaultCallTimeout)
	setDefault(&o.HealthInterval, DefaultHealthInterval)
	setDefault(&o.StartTimeout, DefaultStartTimeout)
	setDefault(&o.BackoffInitial, DefaultBackoffInitial)
	setDefault(&o.BackoffMax, DefaultBackoffMax)
	setDefault(&o.BreakerWindow, DefaultBreakerWindow)
	setDefault(&o.BreakerFailures, DefaultBreakerFailures)
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
