package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/watch"
)

// pluginHost adapts *host.Host to vswitchd.Plugins and feeds the host from the daemon: the
// ports to replay after a plugin (re)starts, the running Open vSwitch's facts, and status
// changes. The daemon is set once it exists; until then the host sees no owned ports.
type pluginHost struct {
	h     *host.Host
	d     atomic.Pointer[vswitchd.Daemon]
	watch atomic.Pointer[watch.Dispatcher] // the watchers' dispatcher, once it runs (watch.go)
}

// newPluginHost returns the plugin host of the daemon; it starts no plugin (see start).
func newPluginHost(cfg *config.Config, c *ovsdb.Client, env []string, runDir string, log *slog.Logger) (*pluginHost, error) {
	pluginDir, err := filepath.Abs(cfg.PluginDir)
	if err != nil {
		return nil, fmt.Errorf("plugin_dir %s: %w", cfg.PluginDir, err)
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
	}
	ph := &pluginHost{}
	cmds := &vswitchdCommands{runDir: runDir, ctl: cfg.OVSDB.VswitchdUnixctl, log: log}
	reattach := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, host.ReattachEnv+"="); ok {
			reattach = v
		}
	}
	h, err := host.New(host.Options{
		PluginDir: pluginDir,
		DataDir:   dataDir,
		Logger:    log,
		Environ:   env,
		Reattach:  reattach,
		Owned: func(ctx context.Context, plugin string) ([]api.PortRequest, error) {
			if d := ph.d.Load(); d != nil {
				return d.PluginPorts(ctx, plugin)
			}
			return nil, nil
		},
		Replayed: func(plugin string, results []api.ReplayResult) {
			if d := ph.d.Load(); d != nil {
				d.PluginReplayed(plugin, results)
			}
		},
		Facts: func(ctx context.Context) (api.HostFacts, error) {
			f := c.Facts()
			return api.HostFacts{OVSVersion: f.OVSVersion, DPDKVersion: f.DPDKVersion, DPDKInitialized: f.DPDKInitialized,
				IfaceTypes: f.IfaceTypes, DatapathTypes: f.DatapathTypes, AppctlCommands: cmds.commands(ctx),
				OVSRunDir: runDir, HostVersion: model.Version, OtherConfig: f.OtherConfig}, nil // the host bounds OtherConfig
		},
		OnChange: func(st host.Status) {
			if d := ph.d.Load(); d != nil {
				go d.PluginChanged(st.Name) // must not block the host's supervisor
			}
			go ph.watchChanged()
		},
		// A plugin configured again (new config or facts) gets a fresh snapshot of its watch,
		// so its interface statuses are computed again.
		OnConfigured: func(host.Status) { go ph.watchChanged() },
	})
	if err != nil {
		return nil, err
	}
	ph.h = h
	return ph, nil
}

// PortProvider implements vswitchd.Plugins.
func (p *pluginHost) PortProvider(portType string) (api.PortProvider, string, bool) {
	return p.h.PortProvider(portType)
}

// Reload implements vswitchd.Plugins.
func (p *pluginHost) Reload(ctx context.Context, plugins []model.Plugin) error {
	return p.h.Reload(ctx, plugins)
}

// Plugins implements vswitchd.Plugins.
func (p *pluginHost) Plugins() []model.PluginInfo {
	sts := p.h.Plugins()
	out := make([]model.PluginInfo, 0, len(sts))
	for _, st := range sts {
		out = append(out, st.Info())
	}
	return out
}

// GlobalConfig implements vswitchd.Plugins.
func (p *pluginHost) GlobalConfig(ctx context.Context, daemon map[string]string) vswitchd.PluginGlobals {
	g := p.h.GlobalConfig(ctx, daemon)
	conflicts := make([]error, 0, len(g.Conflicts))
	for _, c := range g.Conflicts {
		conflicts = append(conflicts, c)
	}
	return vswitchd.PluginGlobals{OtherConfig: g.OtherConfig, Conflicts: conflicts, Unknown: g.Unknown}
}

// Flows implements vswitchd.Plugins.
func (p *pluginHost) Flows(ctx context.Context, bridge api.BridgeFacts) []api.PluginFlows {
	return p.h.Flows(ctx, bridge)
}

// Cookies implements vswitchd.Plugins.
func (p *pluginHost) Cookies() api.CookieRange { return host.PluginCookies() }
