package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"maps"
)

var (
	kinds = map[model.Kind]v1.Kind{
		model.KindBridge:       v1.Kind_KIND_BRIDGE,
		model.KindPort:         v1.Kind_KIND_PORT,
		model.KindInterface:    v1.Kind_KIND_INTERFACE,
		model.KindNetFlow:      v1.Kind_KIND_NETFLOW,
		model.KindIPFIX:        v1.Kind_KIND_IPFIX,
		model.KindSFlow:        v1.Kind_KIND_SFLOW,
		model.KindCollectorSet: v1.Kind_KIND_COLLECTOR_SET,
		model.KindQoS:          v1.Kind_KIND_QOS,
		model.KindMirror:       v1.Kind_KIND_MIRROR,
	}
	// The reconciler reports a removed object with an empty State.
	states = map[model.State]v1.State{
		model.StatePending: v1.State_STATE_PENDING,
		model.StateReady:   v1.State_STATE_READY,
		model.StateError:   v1.State_STATE_ERROR,
		"":                 v1.State_STATE_REMOVED,
	}
	origins = map[model.Origin]v1.Origin{
		model.OriginConfig: v1.Origin_ORIGIN_CONFIG,
		model.OriginAPI:    v1.Origin_ORIGIN_API,
	}
	modes = map[model.Mode]v1.Mode{
		model.ModeOVS:      v1.Mode_MODE_OVS,
		model.ModeSandbox:  v1.Mode_MODE_SANDBOX,
		model.ModeEmbedded: v1.Mode_MODE_EMBEDDED,
	}
)

// reverse inverts one of the maps above.
func reverse[K, V comparable](m map[K]V) map[V]K {
	r := make(map[V]K, len(m))
	for k, v := range m {
		r[v] = k
	}
	return r
}

var (
	kindsBack   = reverse(kinds)
	statesBack  = reverse(states)
	originsBack = reverse(origins)
	modesBack   = reverse(modes)
)

// StateName is the lower-case name of a state as people read it: "pending", "ready", "error",
// "removed"; "unknown" for values this version does not know.
func StateName(s v1.State) string {
	switch s {
	case v1.State_STATE_PENDING:
		return "pending"
	case v1.State_STATE_READY:
		return "ready"
	case v1.State_STATE_ERROR:
		return "error"
	case v1.State_STATE_REMOVED:
		return "removed"
	}
	return "unknown"
}

// StatusToProto converts one object's status; an empty State (a removed object in a change
// notification) becomes STATE_REMOVED.
func StatusToProto(s model.Status) *v1.Status {
	return &v1.Status{
		Kind:   kinds[s.Kind],
		Name:   s.Name,
		Bridge: s.Bridge,
		State:  states[s.State],
		Ofport: clampInt32(s.Ofport),
		Error:  s.Error,
		Key:    s.Key(),
	}
}

// StatusFromProto converts a status message; STATE_REMOVED becomes an empty State.
func StatusFromProto(s *v1.Status) model.Status {
	return model.Status{
		Kind:   kindsBack[s.GetKind()],
		Name:   s.GetName(),
		Bridge: s.GetBridge(),
		State:  statesBack[s.GetState()],
		Ofport: int(s.GetOfport()),
		Error:  s.GetError(),
	}
}

// StatusesToProto converts a list of statuses, keeping the order.
func StatusesToProto(ss []model.Status) []*v1.Status {
	out := make([]*v1.Status, 0, len(ss))
	for _, s := range ss {
		out = append(out, StatusToProto(s))
	}
	return out
}

// StatusesFromProto converts a list of status messages, keeping the order.
func StatusesFromProto(ss []*v1.Status) []model.Status {
	out := make([]model.Status, 0, len(ss))
	for _, s := range ss {
		out = append(out, StatusFromProto(s))
	}
	return out
}

// BridgeInfoToProto converts a managed bridge.
func BridgeInfoToProto(b model.BridgeInfo) *v1.BridgeInfo {
	return &v1.BridgeInfo{
		Spec:   BridgeToProto(b.Spec),
		Origin: origins[b.Origin],
		Status: StatusToProto(b.Status),
	}
}

// BridgeInfoFromProto converts a managed-bridge message.
func BridgeInfoFromProto(b *v1.BridgeInfo) model.BridgeInfo {
	return model.BridgeInfo{
		Spec:   BridgeFromProto(b.GetSpec()),
		Origin: originsBack[b.GetOrigin()],
		Status: StatusFromProto(b.GetStatus()),
	}
}

// PortInfoToProto converts a managed port.
func PortInfoToProto(p model.PortInfo) *v1.PortInfo {
	m := &v1.PortInfo{
		Bridge:       p.Bridge,
		Spec:         PortToProto(p.Spec),
		Origin:       origins[p.Origin],
		Status:       StatusToProto(p.Status),
		Interfaces:   StatusesToProto(p.Interfaces),
		Plugin:       p.Plugin,
		PluginStatus: p.PluginStatus,
		Endpoints:    p.Endpoints,
	}
	if p.Shape != nil {
		m.Shape = PortToProto(*p.Shape)
	}
	return m
}

// PortInfoFromProto converts a managed-port message.
func PortInfoFromProto(p *v1.PortInfo) model.PortInfo {
	info := model.PortInfo{
		Bridge: p.GetBridge(),
		Spec:   PortFromProto(p.GetSpec()),
		Origin: originsBack[p.GetOrigin()],
		Status: StatusFromProto(p.GetStatus()),
		Plugin: p.GetPlugin(), PluginStatus: p.GetPluginStatus(),
	}
	if len(p.GetInterfaces()) > 0 {
		info.Interfaces = StatusesFromProto(p.GetInterfaces())
	}
	if len(p.GetEndpoints()) > 0 {
		info.Endpoints = maps.Clone(p.GetEndpoints())
	}
	if p.GetShape() != nil {
		shape := PortFromProto(p.GetShape())
		info.Shape = &shape
	}
	return info
}

// HealthToProto converts the daemon's health; apiVersion names the API package served.
func HealthToProto(h model.Health, apiVersion string) *v1.HealthResponse {
	m := &v1.HealthResponse{
		Version:         h.Version,
		Mode:            modes[h.Mode],
		OvsdbEndpoint:   h.OVSDBEndpoint,
		OvsdbConnected:  h.OVSDBConnected,
		LastError:       h.LastError,
		ApiVersion:      apiVersion,
		PluginConflicts: h.PluginConflicts,
		Degraded:        h.Degraded,
	}
	if len(h.Objects) > 0 {
		m.Objects = make(map[string]int32, len(h.Objects))
		for s, n := range h.Objects {
			m.Objects[string(s)] = clampInt32(n)
		}
	}
	return m
}

// HealthFromProto converts a health message.
func HealthFromProto(m *v1.HealthResponse) model.Health {
	h := model.Health{
		Version:         m.GetVersion(),
		Mode:            modesBack[m.GetMode()],
		OVSDBEndpoint:   m.GetOvsdbEndpoint(),
		OVSDBConnected:  m.GetOvsdbConnected(),
		LastError:       m.GetLastError(),
		PluginConflicts: m.GetPluginConflicts(),
		Degraded:        m.GetDegraded(),
	}
	if len(m.GetObjects()) > 0 {
		h.Objects = make(map[model.State]int, len(m.GetObjects()))
		for s, n := range m.GetObjects() {
			h.Objects[model.State(s)] = int(n)
		}
	}
	return h
}

// WatchedStatusToProto converts a watcher plugin's status of an interface.
func WatchedStatusToProto(s model.WatchedStatus) *v1.WatchedStatus {
	return &v1.WatchedStatus{
		Plugin:    s.Plugin,
		Interface: s.Interface,
		Bridge:    s.Bridge,
		Port:      s.Port,
		Level:     s.Level,
		Summary:   s.Summary,
		Details:   maps.Clone(s.Details),
		Owner:     s.Owner,
	}
}

// WatchedStatusFromProto converts a watched-status message.
func WatchedStatusFromProto(s *v1.WatchedStatus) model.WatchedStatus {
	out := model.WatchedStatus{
		Plugin:    s.GetPlugin(),
		Interface: s.GetInterface(),
		Bridge:    s.GetBridge(),
		Port:      s.GetPort(),
		Level:     s.GetLevel(),
		Summary:   s.GetSummary(),
		Owner:     s.GetOwner(),
	}
	if len(s.GetDetails()) > 0 {
		out.Details = maps.Clone(s.GetDetails())
	}
	return out
}

// WatchedStatusesToProto converts a list of watched statuses, keeping the order.
func WatchedStatusesToProto(ss []model.WatchedStatus) []*v1.WatchedStatus {
	out := make([]*v1.WatchedStatus, 0, len(ss))
	for _, s := range ss {
		out = append(out, WatchedStatusToProto(s))
	}
	return out
}
