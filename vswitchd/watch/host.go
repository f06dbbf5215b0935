package watch

import (
	"fmt"

	"github.com/ovsplane/ovsplane/plugins/host"
)

// HostWatchers returns the watchers of h (host.Watchers: the plugins whose last start
// declared the capability) with each one's running state and process identity from its
// status: the Instance changes with every start of the plugin (its pid and the time it
// entered the running state), so a restarted plugin gets a fresh snapshot; Configured grows
// with every Configure the plugin accepts, so a reconfigured one gets one too.
func HostWatchers(h *host.Host) []Watcher {
	sts := map[string]host.Status{}
	for _, st := range h.Plugins() {
		sts[st.Name] = st
	}
	var out []Watcher
	for _, w := range h.Watchers() {
		st := sts[w.Plugin]
		running := st.State == host.StateRunning
		inst := ""
		if running {
			inst = fmt.Sprintf("pid %d since %d", st.PID, st.Since.UnixNano())
		}
		out = append(out, Watcher{Plugin: w.Plugin, Filter: w.Filter, Watcher: w.Watcher, Running: running, Instance: inst, Configured: st.Configured})
	}
	return out
}
