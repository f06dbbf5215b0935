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

// pluginGlobals is the plugins' contribution to Open_vSwitch.other_config: the merge the
// plugin host computed and the conflicts it left out. It owns them under its own lock; the
// Daemon adds the merge to the desired state (withConfig).
type pluginGlobals struct {
	mu        sync.Mutex
	oc        map[string]string
	conflicts []string
	read      bool // oc comes from the plugins, not from OVSDB at start
}

// seed keeps, until the plugins answer, the other_config keys ovsplane set (owned) that the
// configuration (cfgOC) does not: they may be plugins' contributions, and removing them for
// the moment the plugins start would make ovs-vswitchd flap.
func (g *pluginGlobals) seed(owned, cfgOC map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, v := range owned {
		if _, inCfg := cfgOC[k]; !inCfg {
			if g.oc == nil {
				g.oc = map[string]string{}
			}
			g.oc[k] = v
		}
	}
}

// set records the plugins' answer and reports whether it changed anything (the first answer
// always does).
func (g *pluginGlobals) set(oc map[string]string, conflicts []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	changed := !maps.Equal(oc, g.oc) || !slices.Equal(conflicts, g.conflicts) || !g.read
	g.oc, g.conflicts, g.read = oc, conflicts, true
	return changed
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
	oc, conflicts := d.opts.Plugins.GlobalConfig(ctx, own)
	msgs := make([]string, 0, len(conflicts))
	for _, c := range conflicts {
		msgs = append(msgs, c.Error())
	}
	if !d.globals.set(oc, msgs) {
		return
	}
	for _, m := range msgs {
		d.log.Error("plugins disagree on a global setting; none of their values is applied", "conflict", m)
	}
	if len(oc) > 0 {
		d.log.Info("plugins' other_config contribution", "keys", slices.Sorted(maps.Keys(oc)))
	}
	d.rec.Update(d.desired())
}
