package host

import "github.com/ovsplane/ovsplane/model"

// What Reload does beyond starting and stopping: the trust checks of running plugins, and
// what a plugin started anew takes over from its previous supervisor.

// recheckTrust runs the trust checks (verify) on the binaries of the listed plugins that have
// a process now (not those attached in debug mode) and returns the failures by name. Such a
// plugin is not kept by Reload: it is stopped and started anew, and its start is refused with
// the same reason.
func (h *Host) recheckTrust(plugins []model.Plugin) map[string]error {
	h.mu.Lock()
	var check []model.Plugin
	for _, p := range plugins {
		if _, debug := h.reattach[p.Name]; !debug && h.plugins[p.Name] != nil && h.plugins[p.Name].status().State == StateRunning {
			check = append(check, p)
		}
	}
	h.mu.Unlock()
	out := map[string]error{}
	for _, p := range check {
		if _, err := verify(h.opts.PluginDir, h.uid, p); err != nil {
			h.opts.Logger.Error("plugin binary fails the trust checks on reload; stopping the plugin", "plugin", p.Name, "error", err)
			out[p.Name] = err
		}
	}
	return out
}

// inherit takes over what old, the supervisor this one replaces on Reload, knew of the plugin:
// its Info (version, capabilities, types, watch filter) and its last global-config
// contribution. So the plugin's types keep resolving (to calls that fail with Unavailable and
// the reason) and its other_config keys stay while the new process starts, and for as long as
// it is refused or failed; a successful start replaces both.
func (s *sup) inherit(old *sup) {
	old.mu.Lock()
	st, contrib := old.snapshot(), old.contrib
	old.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Version, s.st.APIVersion, s.st.Watch = st.Version, st.APIVersion, st.Watch
	s.st.Capabilities, s.st.Types = st.Capabilities, st.Types
	s.contrib = contrib
}
