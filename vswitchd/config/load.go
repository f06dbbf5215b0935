package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// EnvPrefix starts every environment variable Load reads.
const EnvPrefix = "OVSPLANE_"

// EnvConfigFile is reserved for the daemon (the path of the config file); Load ignores it
// instead of reporting it as unknown.
const EnvConfigFile = EnvPrefix + "CONFIG"

// EnvPluginReattach is reserved for the plugin host's debug reattach mode (plugins/host
// ParseReattach); Load ignores it instead of reporting it as unknown.
const EnvPluginReattach = EnvPrefix + "PLUGIN_REATTACH"

// Options says where Load reads from. Precedence, highest first: Flags, Env, the file, defaults.
// The environment and flags set daemon settings only; the desired state (other_config, bridges)
// and the plugin list come from the file alone.
type Options struct {
	// File is the YAML file to read. Empty means no file.
	File string
	// Data, when not nil, is the file's content, used instead of reading File (File then only
	// names the source in errors). An API reload passes the posted document here.
	Data []byte
	// Env is the environment as "KEY=VALUE" strings, normally os.Environ(); nil reads none.
	// OVSPLANE_<KEY> sets <key> with dots as underscores (OVSPLANE_OVSDB_ENDPOINTS sets
	// ovsdb.endpoints; lists are comma-separated). Unknown OVSPLANE_ variables are errors,
	// except OVSPLANE_CONFIG and OVSPLANE_PLUGIN_REATTACH. Empty variables count as unset.
	Env []string
	// Flags, when not nil, is a flag set on which RegisterFlags was called; flags the user set
	// (pflag's Changed) override everything else.
	Flags *pflag.FlagSet
}

// setting is one leaf key of the daemon settings.
type setting struct {
	key   string // dotted, as in the file
	list  bool
	usage string
}

// settings lists every settings key, in the order flags and messages show them.
var settings = []setting{
	{"ovsdb.endpoints", true, "OVSDB endpoints (unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT)"},
	{"ovsdb.tls.private_key", false, "private key (PEM) for ssl: OVSDB endpoints"},
	{"ovsdb.tls.certificate", false, "certificate (PEM) for ssl: OVSDB endpoints"},
	{"ovsdb.tls.ca_cert", false, "CA certificate (PEM) for ssl: OVSDB endpoints"},
	{"ovsdb.reconnect_wait", false, "how long a write waits for a lost OVSDB connection before failing Unavailable, like 5s (default 5s, at most 10m; needs a restart)"},
	{"ovsdb.apply_timeout", false, "how long a write waits for ovs-vswitchd to apply it before failing, like 5m (default 2m, 1s to 1h; raise it where ovs-vswitchd takes minutes to reconfigure; needs a restart)"},
	{"ovsdb.vswitchd_unixctl", false, "ovs-vswitchd's unixctl socket when it was started with --unixctl=PATH (a ZStack host), like /var/run/openvswitch/ovs-vswitchd.zs.ctl; default: found in the run directory; needs a restart"},
	{"data_dir", false, "data directory (default " + model.DefaultDataDir + ")"},
	{"api.listen", true, "API listen addresses (unix:PATH, tcp:HOST:PORT; default unix:<data_dir>/" + model.SocketName + ")"},
	{"api.socket_mode", false, "octal mode of API unix sockets (default " + DefaultSocketMode + ")"},
	{"api.socket_group", false, "group (name or gid) of API unix sockets"},
	{"api.tls.private_key", false, "private key (PEM) for tcp: API listeners"},
	{"api.tls.certificate", false, "certificate (PEM) for tcp: API listeners"},
	{"api.tls.ca_cert", false, "CA certificate (PEM) that signs API clients' certificates (required by tcp: listeners)"},
	{"api.auth.admins.uids", true, "uids of unix-socket API callers allowed to read and write (0 and the daemon's own always are)"},
	{"api.auth.admins.gids", true, "gids (primary or supplementary) of unix-socket API callers allowed to read and write"},
	{"api.auth.admins.groups", true, "group names of unix-socket API callers allowed to read and write"},
	{"api.auth.admins.subjects", true, "client-certificate CN/SAN patterns of TCP API callers allowed to read and write"},
	{"api.auth.readers.uids", true, "uids of unix-socket API callers allowed to read"},
	{"api.auth.readers.gids", true, "gids (primary or supplementary) of unix-socket API callers allowed to read (api.socket_group's members always are)"},
	{"api.auth.readers.groups", true, "group names of unix-socket API callers allowed to read"},
	{"api.auth.readers.subjects", true, "client-certificate CN/SAN patterns of TCP API callers allowed to read"},
	{"log.level", false, "log level: debug, info, warn, error (default info)"},
	{"log.format", false, "log format: text, json (default text)"},
	{"metrics.address", false, "HOST:PORT for Prometheus /metrics (empty: off)"},
	{"metrics.pprof", false, "true: also serve Go's profiles (/debug/pprof) on metrics.address (default false)"},
	{"metrics.pprof_any_address", false, "true: allow metrics.pprof on a metrics.address that is not loopback (default false)"},
	{"overlay.fabric_remotes", true, "overlay fabric database cluster members (unix:PATH, tcp:HOST:PORT) the API's /overlay/ view reads; default none; needs a restart"},
	{"plugin_dir", false, "plugin directory (default <data_dir>/" + PluginDirName + ")"},
}

// desiredKeys are the top-level keys of the desired state and the plugin list, decoded without
// viper so that map keys keep their case and values their exact text (viper lower-cases keys;
// YAML would turn pmd-cpu-mask: 0x10 into 16). A plugin's free-form config is the exception:
// its scalars keep their YAML types (see pluginConfigScalar), since it is handed on as JSON.
var desiredKeys = []string{"bridges", "other_config", "plugins"}

// FlagName is the command-line flag for a settings key: "api.socket_mode" → "api-socket-mode".
func FlagName(key string) string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(key)
}

// EnvName is the environment variable for a settings key: "api.socket_mode" → OVSPLANE_API_SOCKET_MODE.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// RegisterFlags defines one flag per settings key on fs (see FlagName), with no defaults of its
// own, so that only flags the user sets override the file and the environment.
func RegisterFlags(fs *pflag.FlagSet) {
	for _, s := range settings {
		if s.list {
			fs.StringSlice(FlagName(s.key), nil, s.usage)
		} else {
			fs.String(FlagName(s.key), "", s.usage)
		}
	}
}

// Load reads the file, the environment and the flags named by opts, applies defaults and
// validates the result. It returns either a complete, valid Config or nil and an error listing
// every problem found (one per line, each naming its key path), never a partial Config, so a
// caller reloading keeps its running Config on error. Load does no network I/O; ctx is checked
// before the file is read, and a canceled ctx returns its error.
func Load(ctx context.Context, opts Options) (*Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	source := opts.File
	if source == "" {
		source = "config"
	}
	data := opts.Data
	if data == nil && opts.File != "" {
		var err error
		if data, err = os.ReadFile(opts.File); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	c, errs := loadData(data, opts)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %d problem(s):\n%w", source, len(errs), errors.Join(errs...))
	}
	return c, nil
}

func loadData(data []byte, opts Options) (*Config, []error) {
	tree, err := desired.Parse(data)
	if err != nil {
		return nil, []error{err}
	}
	file := map[string]any{}
	desiredTree := map[string]any{}
	var errs []error
	for k, v := range tree {
		if slices.Contains(desiredKeys, k) {
			desiredTree[k] = v
		} else {
			file[k] = v
		}
	}
	errs = append(errs, desired.ListShapes(desiredTree)...)
	file, fileErrs := normalizeSettings(file)
	errs = append(errs, fileErrs...)
	env, envErrs := envSettings(opts.Env)
	errs = append(errs, envErrs...)
	flags, flagErrs := flagSettings(opts.Flags)
	errs = append(errs, flagErrs...)
	if len(errs) > 0 {
		return nil, errs
	}

	v := viper.New()
	v.SetDefault("data_dir", model.DefaultDataDir)
	v.SetDefault("api.socket_mode", DefaultSocketMode)
	v.SetDefault("log.level", DefaultLogLevel)
	v.SetDefault("log.format", DefaultLogFormat)
	for _, layer := range []map[string]any{file, env, flags} {
		if err := v.MergeConfigMap(layer); err != nil {
			return nil, []error{fmt.Errorf("merging settings: %w", err)}
		}
	}
	c := new(Config)
	if err := v.UnmarshalExact(c, viper.DecodeHook(decodeHook)); err != nil {
		errs = append(errs, desired.DecodeErrors(err)...)
	} else if v.IsSet("ovsdb.reconnect_wait") && c.OVSDB.ReconnectWait == 0 {
		// 0 in a Config means unset (the default); written out, it is refused, not ignored.
		errs = append(errs, fmt.Errorf("ovsdb.reconnect_wait: %s", reconnectWaitProblem(0)))
	} else if v.IsSet("ovsdb.apply_timeout") && c.OVSDB.ApplyTimeout == 0 {
		errs = append(errs, fmt.Errorf("ovsdb.apply_timeout: %s", applyTimeoutProblem(0)))
	}
	errs = append(errs, desired.Decode(desiredTree, c)...)
	if len(errs) > 0 {
		return nil, errs
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return nil, desired.Flatten(err)
	}
	return c, nil
}

// normalizeSettings checks the settings part of the file against the known keys and returns it
// with every list leaf as []any and every scalar leaf as a string (viper merges layers only
// when their types agree). Null leaves are dropped (unset).
func normalizeSettings(m map[string]any) (map[string]any, []error) {
	var errs []error
	out := map[string]any{}
	var walk func(prefix string, m map[string]any, dst map[string]any)
	walk = func(prefix string, m map[string]any, dst map[string]any) {
		for _, k := range sortedKeys(m) {
			key := desired.JoinPath(prefix, k)
			val := m[k]
			s, leaf := lookupSetting(key)
			switch {
			case leaf:
				if val == nil {
					continue
				}
				switch x := val.(type) {
				case string:
					if s.list {
						dst[k] = []any{x}
					} else {
						dst[k] = x
					}
				case []any:
					if !s.list {
						errs = append(errs, fmt.Errorf("%s: must be a single value, not a list", key))
						continue
					}
					ok := true
					for i, e := range x {
						if _, isStr := e.(string); !isStr {
							errs = append(errs, fmt.Errorf("%s[%d]: must be a single value", key, i))
							ok = false
						}
					}
					if ok {
						dst[k] = x
					}
				default:
					errs = append(errs, fmt.Errorf("%s: must be a single value, not a mapping", key))
				}
			case isSection(key):
				if val == nil {
					continue
				}
				sub, isMap := val.(map[string]any)
				if !isMap {
					errs = append(errs, fmt.Errorf("%s: must be a mapping (keys: %s)", key, strings.Join(childKeys(key), ", ")))
					continue
				}
				d := map[string]any{}
				walk(key, sub, d)
				dst[k] = d
			default:
				errs = append(errs, fmt.Errorf("%s: unknown key (known keys: %s)", key, strings.Join(childKeys(prefix), ", ")))
			}
		}
	}
	walk("", m, out)
	return out, errs
}

func lookupSetting(key string) (setting, bool) {
	for _, s := range settings {
		if s.key == key {
			return s, true
		}
	}
	return setting{}, false
}

func isSection(key string) bool {
	for _, s := range settings {
		if strings.HasPrefix(s.key, key+".") {
			return true
		}
	}
	return false
}

// childKeys lists the keys allowed directly under the section prefix ("" for the top level).
func childKeys(prefix string) []string {
	var out []string
	for _, s := range settings {
		rest := s.key
		if prefix != "" {
			if !strings.HasPrefix(rest, prefix+".") {
				continue
			}
			rest = strings.TrimPrefix(rest, prefix+".")
		}
		child, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(out, child) {
			out = append(out, child)
		}
	}
	if prefix == "" {
		out = append(out, desiredKeys...)
	}
	sort.Strings(out)
	return out
}

// setNested stores val under the dotted key in m.
func setNested(m map[string]any, key string, val any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = val
}

func envSettings(env []string) (map[string]any, []error) {
	out := map[string]any{}
	var errs []error
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || name == EnvConfigFile || name == EnvPluginReattach || val == "" {
			continue
		}
		var found *setting
		for i := range settings {
			if EnvName(settings[i].key) == name {
				found = &settings[i]
				break
			}
		}
		if found == nil {
			known := make([]string, 0, len(settings))
			for _, s := range settings {
				known = append(known, EnvName(s.key))
			}
			errs = append(errs, fmt.Errorf("environment %s: unknown variable (known: %s)", name, strings.Join(known, ", ")))
			continue
		}
		if found.list {
			var items []any
			for _, f := range strings.Split(val, ",") {
				if f = strings.TrimSpace(f); f != "" {
					items = append(items, f)
				}
			}
			setNested(out, found.key, items)
		} else {
			setNested(out, found.key, val)
		}
	}
	return out, errs
}

func flagSettings(fs *pflag.FlagSet) (map[string]any, []error) {
	out := map[string]any{}
	if fs == nil {
		return out, nil
	}
	var errs []error
	for _, s := range settings {
		f := fs.Lookup(FlagName(s.key))
		if f == nil || !f.Changed {
			continue
		}
		if s.list {
			vals, err := fs.GetStringSlice(f.Name)
			if err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %w", f.Name, err))
				continue
			}
			items := make([]any, 0, len(vals))
			for _, v := range vals {
				items = append(items, v)
			}
			setNested(out, s.key, items)
		} else {
			setNested(out, s.key, f.Value.String())
		}
	}
	return out, errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
