package config

import (
	"io"
	"log/slog"
	"path/filepath"

	"github.com/ovsplane/ovsplane/internal/desired"

	"github.com/ovsplane/ovsplane/model"
)

// Defaults applied by Load for keys that no source sets.
const (
	DefaultSocketMode = "0660"
	DefaultLogLevel   = "info"
	DefaultLogFormat  = "text"
	// PluginDirName is the default plugin directory inside the data dir.
	PluginDirName = "plugins"
)

// Config is the whole daemon configuration: the settings the daemon runs with and the desired
// state it owns. Load returns it filled, defaulted and validated; a Config built by hand should be
// checked with Validate. A Config is a plain value: the daemon replaces it whole on reload and
// never mutates one in place.
type Config struct {
	OVSDB     OVSDB   `mapstructure:"ovsdb" yaml:"ovsdb,omitempty"`
	DataDir   string  `mapstructure:"data_dir" yaml:"data_dir,omitempty"`
	API       API     `mapstructure:"api" yaml:"api,omitempty"`
	Log       Log     `mapstructure:"log" yaml:"log,omitempty"`
	Metrics   Metrics `mapstructure:"metrics" yaml:"metrics,omitempty"`
	PluginDir string  `mapstructure:"plugin_dir" yaml:"plugin_dir,omitempty"`
	Overlay   Overlay `mapstructure:"overlay" yaml:"overlay,omitempty"`

	// OtherConfig is the desired subset of Open_vSwitch.other_config (dpdk-init,
	// dpdk-socket-mem, pmd-cpu-mask, ...). Keys not listed are left alone.
	OtherConfig map[string]string `mapstructure:"other_config" yaml:"other_config,omitempty"`
	// Bridges are the bridges the daemon owns, in file order (see Desired for a canonical order).
	Bridges []model.Bridge `mapstructure:"bridges" yaml:"bridges,omitempty"`
	// Plugins are the plugins the daemon may run, in file order: an allow-list of binaries in
	// PluginDir, each pinned by its SHA-256. A plugin not listed is never started.
	Plugins []model.Plugin `mapstructure:"plugins" yaml:"plugins,omitempty"`
}

// OVSDB says where the OVSDB server is. No endpoint means: the local OVS socket
// (/var/run/openvswitch/db.sock) if it exists, otherwise the daemon's embedded OVSDB.
type OVSDB struct {
	// Endpoints are OVSDB remotes, "unix:PATH", "tcp:HOST:PORT" or "ssl:HOST:PORT"; several
	// endpoints name the members of a clustered database.
	Endpoints []string `mapstructure:"endpoints" yaml:"endpoints,omitempty"`
	// TLS is required (all three files) when an endpoint is ssl:.
	TLS model.TLS `mapstructure:"tls" yaml:"tls,omitempty"`
	// ReconnectWait bounds how long a write request (ApplyPort, DeletePort, ApplyBridge,
	// DeleteBridge, and the batches and reconcile passes carrying them) waits for a lost OVSDB
	// connection to come back, counted from when it was lost, before it fails Unavailable with
	// a retry hint: the daemon's Options.Commit.ReconnectWait. 0 means unset, the daemon's
	// default (vswitchd.DefaultReconnectWait, 5 s); Validate accepts 0 and 0 < d ≤
	// MaxReconnectWait, and Load refuses an explicit 0. Read at start: a change needs a restart.
	ReconnectWait Duration `mapstructure:"reconnect_wait" yaml:"reconnect_wait,omitempty"`
	// ApplyTimeout bounds how long a write waits for ovs-vswitchd to apply its transaction
	// (cur_cfg reaching the transaction's next_cfg) before it fails: the daemon's
	// Options.Commit.ApplyTimeout. It also sizes port batches: the batches in flight are kept
	// within half of it. 0 means unset, the default (ovsdb.DefaultApplyTimeout, 2 minutes);
	// Validate accepts 0 and MinApplyTimeout ≤ d ≤ MaxApplyTimeout, and Load refuses an
	// explicit 0. Raise it where ovs-vswitchd takes minutes to reconfigure (tens of thousands
	// of ports on one switch). Read at start: a change needs a restart.
	ApplyTimeout Duration `mapstructure:"apply_timeout" yaml:"apply_timeout,omitempty"`
	// VswitchdUnixctl is ovs-vswitchd's unixctl socket when it was started with
	// --unixctl=PATH (a ZStack host: /var/run/openvswitch/ovs-vswitchd.zs.ctl), which the
	// daemon then reads the plugins' facts (the appctl command set) from instead of the
	// ovs-vswitchd.<pid>.ctl it finds in Open vSwitch's run directory. An absolute path of at
	// most MaxUnixctlPath bytes; empty: found in the run directory. Read at start.
	VswitchdUnixctl string `mapstructure:"vswitchd_unixctl" yaml:"vswitchd_unixctl,omitempty"`
}

// MaxUnixctlPath is the longest ovsdb.vswitchd_unixctl Validate accepts: what fits in a unix
// socket address (sun_path, 108 bytes with its terminating NUL).
const MaxUnixctlPath = 107

// API configures the daemon's API listeners.
type API struct {
	// Listen holds "unix:PATH" and "tcp:HOST:PORT" addresses. Default: unix:<data_dir>/ovsplaned.sock.
	// A tcp: listener requires TLS (certificate and private key).
	Listen []string `mapstructure:"listen" yaml:"listen,omitempty"`
	// SocketMode is the octal permission of unix sockets, such as "0660" (the default).
	SocketMode string `mapstructure:"socket_mode" yaml:"socket_mode,omitempty"`
	// SocketGroup is the group name or numeric gid that owns unix sockets; empty keeps the
	// daemon's group. The daemon resolves it (Validate cannot know the host's groups).
	SocketGroup string `mapstructure:"socket_group" yaml:"socket_group,omitempty"`
	// TLS is required by a tcp: listener, all three files: the daemon presents Certificate
	// and accepts only clients whose certificate CACert signed (mutual TLS).
	TLS model.TLS `mapstructure:"tls" yaml:"tls,omitempty"`
	// Auth maps callers to roles (see Auth).
	Auth Auth `mapstructure:"auth" yaml:"auth,omitempty"`
}

// Overlay configures the daemon's read-only view of the overlay fabric (issue 17).
type Overlay struct {
	// FabricRemotes are the fabric database's cluster members (Overlay_Fabric, see
	// overlay/fabric), "unix:PATH" or "tcp:HOST:PORT", 1 to MaxFabricRemotes of them. Empty:
	// no overlay view; the API's /overlay/ endpoints answer that none is configured. Read at
	// start: a change needs a restart.
	FabricRemotes []string `mapstructure:"fabric_remotes" yaml:"fabric_remotes,omitempty"`
}

// MaxFabricRemotes bounds overlay.fabric_remotes (overlay/fabric.MaxEndpoints).
const MaxFabricRemotes = 7

// Log configures log/slog output.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `mapstructure:"level" yaml:"level,omitempty"`
	// Format is text (default) or json.
	Format string `mapstructure:"format" yaml:"format,omitempty"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Address is HOST:PORT for /metrics; empty disables metrics.
	Address string `mapstructure:"address" yaml:"address,omitempty"`
	// PProf serves Go's profiles (/debug/pprof) on Address too. Default off.
	PProf bool `mapstructure:"pprof" yaml:"pprof,omitempty"`
	// PProfAnyAddress allows PProf on an Address that is not loopback; without it such a
	// configuration is invalid.
	PProfAnyAddress bool `mapstructure:"pprof_any_address" yaml:"pprof_any_address,omitempty"`
}

// SlogLevel maps the configured level to slog. It returns slog.LevelInfo for an empty level and
// ok=false for an unknown one (Validate reports those).
func (l Log) SlogLevel() (level slog.Level, ok bool) {
	switch l.Level {
	case "debug":
		return slog.LevelDebug, true
	case "", "info":
		return slog.LevelInfo, true
	case "warn":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return slog.LevelInfo, false
}

// NewHandler returns the slog handler the configuration asks for, writing to w: JSON for
// format "json", text otherwise, at the configured level.
func (l Log) NewHandler(w io.Writer) slog.Handler {
	level, _ := l.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// applyDefaults fills the defaults that depend on other keys (the ones that do not are viper
// defaults in Load).
func (c *Config) applyDefaults() {
	c.normalizeEmpty()
	if c.DataDir == "" {
		c.DataDir = model.DefaultDataDir
	}
	if len(c.API.Listen) == 0 {
		c.API.Listen = []string{model.APIAddr(c.DataDir)}
	}
	if c.API.SocketMode == "" {
		c.API.SocketMode = DefaultSocketMode
	}
	if c.PluginDir == "" {
		c.PluginDir = filepath.Join(c.DataDir, PluginDirName)
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
	if c.Log.Format == "" {
		c.Log.Format = DefaultLogFormat
	}
}

// normalizeEmpty turns empty lists and maps into nil, so that `protocols: []` and no protocols
// load as the same Config.
func (c *Config) normalizeEmpty() {
	nilIfEmpty(&c.OVSDB.Endpoints)
	nilIfEmpty(&c.API.Listen)
	c.API.Auth.normalize()
	nilIfEmptyMap(&c.OtherConfig)
	c.Bridges = desired.NormalizeBridges(c.Bridges)
	nilIfEmpty(&c.Plugins)
	for pi := range c.Plugins {
		nilIfEmptyMap(&c.Plugins[pi].Config)
		nilIfEmpty(&c.Plugins[pi].Env)
		nilIfEmpty(&c.Plugins[pi].Jobs)
		for ji := range c.Plugins[pi].Jobs {
			nilIfEmptyMap(&c.Plugins[pi].Jobs[ji].Config)
		}
	}
}

func nilIfEmpty[T any](s *[]T) {
	if len(*s) == 0 {
		*s = nil
	}
}

func nilIfEmptyMap[V any](m *map[string]V) {
	if len(*m) == 0 {
		*m = nil
	}
}
