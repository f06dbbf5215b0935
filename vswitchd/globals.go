package vswitchd

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// dpdkExtraKey is the other_config key whose plugin fragments are appended to the
// configuration's value instead of conflicting with it (see plugins/host.DPDKExtraKey).
const dpdkExtraKey = "dpdk-extra"

// PluginGlobals is the plugins' answer to GlobalConfig (see Plugins).
type PluginGlobals struct {
	// OtherConfig is the merged contribution: keys and values to write on the plugins' behalf.
	OtherConfig map[string]string
	// Conflicts are the keys left out because contributions disagree.
	Conflicts []error
	// Unknown names the configured plugins that never started (refused by the trust checks,
	// failed before their handshake, still starting): what they contribute is not known.
	Unknown []string
}

// pluginGlobals is the plugins' contribution to Open_vSwitch.other_config: the merge the
// plugin host computed and the conflicts it left out. It owns them under its own lock; the
// Daemon adds the merge to the desired state (withConfig).
type pluginGlobals struct {
	mu        sync.Mutex
	oc        map[string]string
	conflicts []string
	read      bool // oc comes from the plugins, not from OVSDB at start
	// seeded are the keys found at start (see seed), kept while a configured plugin has not
	// started: they may be its contribution. Dropped for good by the first complete answer.
	seeded map[string]string
}

// seed keeps, until the plugins answer, the other_config keys ovsplane set (owned) that the
// configuration (cfgOC) does not: they may be plugins' contributions, and removing them for
// the moment the plugins start would make ovs-vswitchd flap. They are kept past the first
// answer for as long as a configured plugin never started (a refused binary, a plugin that
// fails its handshake): its keys are unknown, and pruning them would change ovs-vswitchd's
// setup because of a plugin that could not even run.
func (g *pluginGlobals) seed(owned, cfgOC map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, v := range owned {
		if _, inCfg := cfgOC[k]; !inCfg {
			if g.oc == nil {
				g.oc = map[string]string{}
			}
			if g.seeded == nil {
				g.seeded = map[string]string{}
			}
			g.oc[k], g.seeded[k] = v, v
		}
	}
}

// set records the plugins' answer and reports whether it changed anything (the first answer
// always does), and the seeded keys it keeps for plugins that never started (kept is nil
// once an answer was complete).
func (g *pluginGlobals) set(oc map[string]string, conflicts, unknown []string) (changed bool, kept []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(unknown) == 0 {
		g.seeded = nil
	}
	for k, v := range g.seeded {
		if _, ok := oc[k]; !ok {
			if kept == nil {
				oc = maps.Clone(oc)
				if oc == nil {
					oc = map[string]string{}
				}
			}
			oc[k] = v
			kept = append(kept, k)
		}
	}
	slices.Sort(kept)
	changed = !maps.Equal(oc, g.oc) || !slices.Equal(conflicts, g.conflicts) || !g.read
	g.oc, g.conflicts, g.read = oc, conflicts, true
	return changed, kept
}

// conflictList returns the conflicts of the last answer (Health.PluginConflicts).
func (g *pluginGlobals) conflictList() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.conflicts)
}

// withConfig returns the configuration's other_config with the plugins' contribution added
// (the configuration's own keys win; the plugins' dpdk-extra already starts with the
// configuration's own).
func (g *pluginGlobals) withConfig(cfgOC map[string]string) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.oc) == 0 {
		return cfgOC
	}
	out := merged(g.oc, cfgOC)
	if v, ok := g.oc[dpdkExtraKey]; ok {
		out[dpdkExtraKey] = v
	}
	return out
}

// RefreshPluginConfig asks the plugins for their other_config contributions again and makes
// the merge part of the desired state; the conflicts are logged and reported by Health. It is
// called after a plugin (re)starts and after a reload.
func (d *Daemon) RefreshPluginConfig(ctx context.Context) {
	if d.opts.Plugins == nil {
		return
	}
	own := maps.Clone(d.store.configDesired().OtherConfig)
	g := d.opts.Plugins.GlobalConfig(ctx, own)
	msgs := make([]string, 0, len(g.Conflicts))
	for _, c := range g.Conflicts {
		msgs = append(msgs, c.Error())
	}
	changed, kept := d.globals.set(g.OtherConfig, msgs, g.Unknown)
	if len(kept) > 0 {
		d.log.Warn("plugins have not started; the other_config keys ovsplane had set stay as found until they answer",
			"plugins", g.Unknown, "keys", kept)
	}
	if !changed {
		return
	}
	oc := g.OtherConfig
	for _, m := range msgs {
		d.log.Error("plugins disagree on a global setting; none of their values is applied", "conflict", m)
	}
	if len(oc) > 0 {
		d.log.Info("plugins' other_config contribution", "keys", slices.Sorted(maps.Keys(oc)))
	}
	d.rec.Update(d.desired())
}
