package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// pluginStates maps the plugin host's state names (model.PluginInfo.State) to the API's.
var (
	pluginStates = map[string]v1.PluginState{
		"starting":   v1.PluginState_PLUGIN_STATE_STARTING,
		"running":    v1.PluginState_PLUGIN_STATE_RUNNING,
		"restarting": v1.PluginState_PLUGIN_STATE_RESTARTING,
		"failed":     v1.PluginState_PLUGIN_STATE_FAILED,
		"refused":    v1.PluginState_PLUGIN_STATE_REFUSED,
		"stopped":    v1.PluginState_PLUGIN_STATE_STOPPED,
	}
	pluginStatesBack = reverse(pluginStates)
)

// PluginStateName is the lower-case name of a plugin state as people read it ("running",
// "failed"...), the same names model.PluginInfo.State uses; "unknown" for values this
// version does not know.
func PluginStateName(s v1.PluginState) string {
	if n, ok := pluginStatesBack[s]; ok {
		return n
	}
	return "unknown"
}

// PluginInfoToProto converts one plugin's state. A state this version does not know becomes
// PLUGIN_STATE_UNSPECIFIED.
func PluginInfoToProto(p model.PluginInfo) *v1.PluginInfo {
	return &v1.PluginInfo{
		Name:         p.Name,
		Version:      p.Version,
		State:        pluginStates[p.State],
		Reason:       p.Reason,
		Types:        cloneSlice(p.Types),
		Capabilities: cloneSlice(p.Capabilities),
		Restarts:     clampInt32(p.Restarts),
		LastError:    p.LastError,
		Pid:          clampInt32(p.PID),
	}
}

// PluginInfoFromProto converts a plugin message; PLUGIN_STATE_UNSPECIFIED (or a state this
// version does not know) becomes "unknown".
func PluginInfoFromProto(m *v1.PluginInfo) model.PluginInfo {
	return model.PluginInfo{
		Name:         m.GetName(),
		Version:      m.GetVersion(),
		State:        PluginStateName(m.GetState()),
		Reason:       m.GetReason(),
		Types:        cloneSlice(m.GetTypes()),
		Capabilities: cloneSlice(m.GetCapabilities()),
		Restarts:     int(m.GetRestarts()),
		LastError:    m.GetLastError(),
		PID:          int(m.GetPid()),
	}
}

// PluginsToProto converts a list of plugins, keeping the order.
func PluginsToProto(ps []model.PluginInfo) []*v1.PluginInfo {
	out := make([]*v1.PluginInfo, 0, len(ps))
	for _, p := range ps {
		out = append(out, PluginInfoToProto(p))
	}
	return out
}
