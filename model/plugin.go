package model

import (
	"encoding/json"
	"path/filepath"
)

// Plugin is one entry of the plugin allow-list: a binary in the plugin dir the daemon may run,
// pinned by its SHA-256, with the configuration handed to it. The daemon's plugin host checks the
// binary (no symlinks, ownership, permissions, the pin) before every start. vswitchd/config
// loads and validates the list; the struct tags are the configuration file's keys.
type Plugin struct {
	// Name identifies the plugin in logs, status and ownership tags: a lower-case letter, then
	// lower-case letters, digits and '-', at most 40 characters, unique (the rule of the
	// plugin's own Info.Name, which should be the same).
	Name string `mapstructure:"name" yaml:"name"`
	// Path is the binary, relative to plugin_dir or absolute inside it.
	Path string `mapstructure:"path" yaml:"path"`
	// SHA256 is the hex SHA-256 of the binary (sha256sum's first column); required.
	SHA256 string `mapstructure:"sha256" yaml:"sha256"`
	// Config is handed to the plugin's Configure as a JSON object. Its scalars keep their YAML
	// types (10 is a number, "10" and 0x10 written quoted are strings).
	Config map[string]any `mapstructure:"config" yaml:"config,omitempty"`
	// Env names the daemon's environment variables passed on to the plugin. Nothing else of
	// the daemon's environment is, except PATH.
	Env []string `mapstructure:"env" yaml:"env,omitempty"`
	// Jobs are the plugin's data-path jobs of the configuration file (see PluginJob): at most
	// limits.MaxJobsPerPlugin, names unique.
	Jobs []PluginJob `mapstructure:"jobs" yaml:"jobs,omitempty"`
}

// Resolve returns the absolute, cleaned path of the plugin's binary inside pluginDir (which
// validation has checked the entry's Path stays in).
func (p Plugin) Resolve(pluginDir string) string {
	if filepath.IsAbs(p.Path) {
		return filepath.Clean(p.Path)
	}
	return filepath.Join(pluginDir, p.Path)
}

// ConfigJSON returns Config as the JSON object Configure receives ("{}" when empty), or the
// error of a Config JSON cannot carry.
func (p Plugin) ConfigJSON() ([]byte, error) {
	if len(p.Config) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(p.Config)
}

// PluginInfo is one configured plugin as the daemon's plugin host sees it: what the daemon
// reports in Health and the API.
type PluginInfo struct {
	Name, Version string
	// State is starting, running, restarting, failed (circuit breaker open), refused (trust
	// or version check) or stopped; Reason says why when it is not running.
	State, Reason string
	// Types are the port/object types it provides; Capabilities its capability classes.
	Types, Capabilities []string
	Restarts            int
	LastError           string
	PID                 int
}
