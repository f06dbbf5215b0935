package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// DPDKExtraKey is the other_config key the plugins' DPDKExtra fragments are merged into.
const DPDKExtraKey = "dpdk-extra"

// GlobalConfig is the plugins' merged contribution to Open_vSwitch.other_config.
type GlobalConfig struct {
	// OtherConfig are the keys to write on the plugins' behalf: each key one or more plugins
	// contribute with one value, which the daemon's own configuration does not set. Conflicted
	// keys are absent. DPDKExtraKey, when any plugin contributes DPDKExtra fragments, is the
	// whole value: the daemon's own dpdk-extra first, then the fragments in config order.
	OtherConfig map[string]string
	// Owners lists, per key of OtherConfig, the plugins that contribute it.
	Owners map[string][]string
	// Conflicts are the keys left out because contributions disagree, sorted by key.
	Conflicts []Conflict
	// Errors are the plugins whose contribution could not be read now (not running, call
	// failed) or was malformed; their last good contribution is used instead, if any.
	Errors []error
	// Unknown names the configured plugins that never started under this host (refused,
	// failed before their handshake, still starting): whether they contribute, and what, is
	// not known, so OtherConfig may lack keys they would contribute.
	Unknown []string
}

// Conflict is one other_config key with disagreeing contributions; none of them is applied.
type Conflict struct {
	Key string
	// Values maps each contributing plugin to its value.
	Values map[string]string
	// Daemon is the daemon's own value when its configuration sets the key (DaemonSet).
	Daemon    string
	DaemonSet bool
}

// Error names the key, every plugin with its value and the daemon's value, e.g.
//
//	other_config:pmd-cpu-mask: plugin "a" wants "0x6", plugin "b" wants "0x3"; neither is applied
func (c Conflict) Error() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(c.Values)) {
		parts = append(parts, fmt.Sprintf("plugin %q wants %q", p, c.Values[p]))
	}
	msg := "other_config:" + c.Key + ": " + strings.Join(parts, ", ")
	if c.DaemonSet {
		return msg + fmt.Sprintf(", the daemon's configuration has %q; the daemon's value stays, no plugin's is applied", c.Daemon)
	}
	return msg + "; neither is applied"
}

// GlobalConfig asks every plugin with the global-config capability for its contribution (in
// config order) and merges them with conflict detection against each other and against the
// daemon's own other_config (daemon). A plugin that cannot answer now contributes what it
// last answered, so a restarting plugin does not make other_config flap.
func (h *Host) GlobalConfig(ctx context.Context, daemon map[string]string) GlobalConfig {
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	out := GlobalConfig{OtherConfig: map[string]string{}, Owners: map[string][]string{}}
	values := map[string]map[string]string{} // key → plugin → value
	var extra []string
	for _, s := range sups {
		st := s.status()
		s.mu.Lock()
		answered := s.contrib != nil
		s.mu.Unlock()
		if st.APIVersion == "" && !answered {
			out.Unknown = append(out.Unknown, s.name)
			continue
		}
		if !slices.Contains(st.Capabilities, api.CapabilityGlobalConfig) {
			continue
		}
		g, err := call(ctx, s, "Contribute", func(ctx context.Context, in *instance) (api.GlobalConfig, error) {
			g, err := in.global.Contribute(ctx)
			if err == nil {
				err = api.ValidateGlobalConfig(g)
			}
			return g, err
		})
		s.mu.Lock()
		if err == nil {
			s.contrib = &g
		} else {
			out.Errors = append(out.Errors, err)
			if s.contrib != nil {
				g = *s.contrib
			}
		}
		s.mu.Unlock()
		for k, v := range g.OtherConfig {
			if values[k] == nil {
				values[k] = map[string]string{}
			}
			values[k][s.name] = v
		}
		extra = append(extra, g.DPDKExtra...)
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		byPlugin := values[k]
		own, daemonSet := daemon[k]
		distinct := map[string]bool{}
		for _, v := range byPlugin {
			distinct[v] = true
		}
		if len(distinct) > 1 || (daemonSet && !distinct[own]) {
			out.Conflicts = append(out.Conflicts, Conflict{Key: k, Values: byPlugin, Daemon: own, DaemonSet: daemonSet})
			continue
		}
		if daemonSet {
			continue // the same value: the daemon writes it as its own
		}
		for p, v := range byPlugin {
			out.OtherConfig[k] = v
			out.Owners[k] = append(out.Owners[k], p)
		}
		sort.Strings(out.Owners[k])
	}
	if len(extra) > 0 {
		if own := daemon[DPDKExtraKey]; own != "" {
			extra = append([]string{own}, extra...)
		}
		out.OtherConfig[DPDKExtraKey] = strings.Join(extra, " ")
	}
	own := daemon[DPDKExtraKey]
	h.mu.Lock()
	h.written, h.ownExtra = maps.Clone(out.OtherConfig), &own
	h.mu.Unlock()
	return out
}

// Flows asks every plugin with the flow-program capability for its flows on the bridge, in
// config order, and checks every cookie and group id against the plugin's ranges.
func (h *Host) Flows(ctx context.Context, bridge api.BridgeFacts) []api.PluginFlows {
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	var out []api.PluginFlows
	for _, s := range sups {
		if slices.Contains(s.status().Capabilities, api.CapabilityFlowProgram) {
			out = append(out, api.PluginFlows{Plugin: s.name, Cookies: s.cookies, Groups: s.groups})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		pf := &out[i]
		s := h.get(pf.Plugin)
		if s == nil {
			continue
		}
		wg.Go(func() {
			set, err := call(ctx, s, "Flows bridge "+bridge.Name, func(ctx context.Context, in *instance) (api.FlowSet, error) {
				return in.flows.Flows(ctx, bridge)
			})
			if err == nil {
				if err = api.ValidateFlowSet(pf.Cookies, pf.Groups, set); err != nil {
					err = fmt.Errorf("plugin %q: Flows bridge %s: %w", s.name, bridge.Name, err)
				}
			}
			for i := range set.Flows {
				if set.Flows[i].Cookie == 0 {
					set.Flows[i].Cookie = pf.Cookies.Value
				}
			}
			pf.Set, pf.Err = set, err
			if err != nil {
				pf.Set = api.FlowSet{}
			}
		})
	}
	wg.Wait()
	return out
}
