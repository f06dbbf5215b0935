package wire

import (
	"math"

	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// Conversions between the Go types and the messages. Both shims use them, so a round trip is
// lossless; values that do not fit the Go types (a plugin built from a newer or foreign .proto)
// are refused by the checked conversions on the host side.

func infoToProto(i api.Info) *pb.PluginInfo {
	m := &pb.PluginInfo{
		Name:        i.Name,
		Version:     i.Version,
		ApiVersions: i.APIVersions,
		Description: i.Description,
		Watch: &pb.WatchFilter{
			InterfaceTypes: i.Watch.InterfaceTypes,
			Bridges:        i.Watch.Bridges,
			ExternalIdKeys: i.Watch.ExternalIDKeys,
		},
	}
	for _, c := range i.Capabilities {
		m.Capabilities = append(m.Capabilities, pb.Capability(c))
	}
	for _, o := range i.Watch.Owners {
		m.Watch.Owners = append(m.Watch.Owners, pb.PortOwner(o))
	}
	for _, t := range i.Types {
		m.Types = append(m.Types, &pb.ObjectType{Name: t.Name, Kind: pb.ObjectKind(t.Kind), OptionsSchema: t.OptionsSchema, Doc: t.Doc})
	}
	return m
}

func infoFromProto(m *pb.PluginInfo) api.Info {
	i := api.Info{
		Name:        m.GetName(),
		Version:     m.GetVersion(),
		APIVersions: m.GetApiVersions(),
		Description: m.GetDescription(),
		Watch: api.WatchFilter{
			InterfaceTypes: m.GetWatch().GetInterfaceTypes(),
			Bridges:        m.GetWatch().GetBridges(),
			ExternalIDKeys: m.GetWatch().GetExternalIdKeys(),
		},
	}
	for _, c := range m.GetCapabilities() {
		i.Capabilities = append(i.Capabilities, api.Capability(c))
	}
	for _, o := range m.GetWatch().GetOwners() {
		i.Watch.Owners = append(i.Watch.Owners, api.PortOwner(o))
	}
	for _, t := range m.GetTypes() {
		i.Types = append(i.Types, api.ObjectType{Name: t.GetName(), Kind: api.ObjectKind(t.GetKind()), OptionsSchema: t.GetOptionsSchema(), Doc: t.GetDoc()})
	}
	return i
}

func configureToProto(r api.ConfigureRequest) *pb.ConfigureRequest {
	f := r.Facts
	return &pb.ConfigureRequest{
		Config:     r.Config,
		ApiVersion: r.APIVersion,
		Cookies:    &pb.CookieRange{Value: r.Cookies.Value, Mask: r.Cookies.Mask},
		Groups:     &pb.GroupRange{First: r.Groups.First, Count: r.Groups.Count},
		Facts: &pb.HostFacts{
			OvsVersion:      f.OVSVersion,
			DpdkVersion:     f.DPDKVersion,
			DpdkInitialized: f.DPDKInitialized,
			IfaceTypes:      f.IfaceTypes,
			DatapathTypes:   f.DatapathTypes,
			AppctlCommands:  f.AppctlCommands,
			DataDir:         f.DataDir,
			OvsRunDir:       f.OVSRunDir,
			HostVersion:     f.HostVersion,
			OtherConfig:     f.OtherConfig,
		},
	}
}

func configureFromProto(m *pb.ConfigureRequest) api.ConfigureRequest {
	f := m.GetFacts()
	return api.ConfigureRequest{
		Config:     m.GetConfig(),
		APIVersion: m.GetApiVersion(),
		Cookies:    api.CookieRange{Value: m.GetCookies().GetValue(), Mask: m.GetCookies().GetMask()},
		Groups:     api.GroupRange{First: m.GetGroups().GetFirst(), Count: m.GetGroups().GetCount()},
		Facts: api.HostFacts{
			OVSVersion:      f.GetOvsVersion(),
			DPDKVersion:     f.GetDpdkVersion(),
			DPDKInitialized: f.GetDpdkInitialized(),
			IfaceTypes:      f.GetIfaceTypes(),
			DatapathTypes:   f.GetDatapathTypes(),
			AppctlCommands:  f.GetAppctlCommands(),
			DataDir:         f.GetDataDir(),
			OVSRunDir:       f.GetOvsRunDir(),
			HostVersion:     f.GetHostVersion(),
			OtherConfig:     f.GetOtherConfig(),
		},
	}
}

func problemsToProto(ps []api.Problem) []*pb.Problem {
	var out []*pb.Problem
	for _, p := range ps {
		out = append(out, &pb.Problem{Field: p.Field, Message: p.Message})
	}
	return out
}

func problemsFromProto(ps []*pb.Problem) []api.Problem {
	var out []api.Problem
	for _, p := range ps {
		out = append(out, api.Problem{Field: p.GetField(), Message: p.GetMessage()})
	}
	return out
}

func portRequestToProto(r api.PortRequest) *pb.PortRequest {
	return &pb.PortRequest{Bridge: r.Bridge, Name: r.Name, Type: r.Type, Options: r.Options, ExternalIds: r.ExternalIDs, State: r.State, Replay: r.Replay}
}

func portRequestFromProto(m *pb.PortRequest) api.PortRequest {
	return api.PortRequest{
		Bridge: m.GetBridge(), Name: m.GetName(), Type: m.GetType(),
		Options: m.GetOptions(), ExternalIDs: m.GetExternalIds(), State: m.GetState(), Replay: m.GetReplay(),
	}
}

func attachmentToProto(a api.Attachment) *pb.AttachResponse {
	m := &pb.AttachResponse{State: a.State, Status: a.Status, Endpoints: a.Endpoints}
	for _, p := range a.Ports {
		mp := &pb.OvsPort{
			Bridge: p.Bridge, Name: p.Name, Tag: int32Ptr(p.Tag),
			VlanMode: p.VLANMode, BondMode: p.BondMode, Lacp: p.LACP,
			OtherConfig: p.OtherConfig, ExternalIds: p.ExternalIDs,
		}
		for _, t := range p.Trunks {
			mp.Trunks = append(mp.Trunks, int32(t))
		}
		for _, i := range p.Interfaces {
			mp.Interfaces = append(mp.Interfaces, &pb.OvsInterface{
				Name: i.Name, Type: i.Type, Options: i.Options, OtherConfig: i.OtherConfig,
				ExternalIds: i.ExternalIDs, MtuRequest: int32Ptr(i.MTURequest), OfportRequest: int32Ptr(i.OfportRequest),
			})
		}
		m.Ports = append(m.Ports, mp)
	}
	for _, b := range a.Bridges {
		m.Bridges = append(m.Bridges, &pb.OvsBridge{Name: b.Name, DatapathType: b.DatapathType, Protocols: b.Protocols,
			OtherConfig: b.OtherConfig, ExternalIds: b.ExternalIDs})
	}
	for _, j := range a.Jobs {
		m.Jobs = append(m.Jobs, &pb.StartJobRequest{Name: j.Name, Type: j.Type, Config: j.Config})
	}
	return m
}

func attachmentFromProto(m *pb.AttachResponse) api.Attachment {
	a := api.Attachment{State: m.GetState(), Status: m.GetStatus(), Endpoints: m.GetEndpoints()}
	for _, mp := range m.GetPorts() {
		p := api.OVSPort{
			Bridge: mp.GetBridge(), Name: mp.GetName(), Tag: intPtr(mp.Tag),
			VLANMode: mp.GetVlanMode(), BondMode: mp.GetBondMode(), LACP: mp.GetLacp(),
			OtherConfig: mp.GetOtherConfig(), ExternalIDs: mp.GetExternalIds(),
		}
		for _, t := range mp.GetTrunks() {
			p.Trunks = append(p.Trunks, int(t))
		}
		for _, i := range mp.GetInterfaces() {
			p.Interfaces = append(p.Interfaces, api.OVSInterface{
				Name: i.GetName(), Type: i.GetType(), Options: i.GetOptions(), OtherConfig: i.GetOtherConfig(),
				ExternalIDs: i.GetExternalIds(), MTURequest: intPtr(i.MtuRequest), OfportRequest: intPtr(i.OfportRequest),
			})
		}
		a.Ports = append(a.Ports, p)
	}
	for _, b := range m.GetBridges() {
		a.Bridges = append(a.Bridges, api.OVSBridge{Name: b.GetName(), DatapathType: b.GetDatapathType(), Protocols: b.GetProtocols(),
			OtherConfig: b.GetOtherConfig(), ExternalIDs: b.GetExternalIds()})
	}
	for _, j := range m.GetJobs() {
		a.Jobs = append(a.Jobs, api.Job{Name: j.GetName(), Type: j.GetType(), Config: j.GetConfig()})
	}
	return a
}

// int32Ptr converts an optional int; values outside int32 are clamped (the host's validation
// rejects them anyway: every OVS column they fill is far smaller).
func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := max(min(*v, math.MaxInt32), math.MinInt32)
	x := int32(n)
	return &x
}

func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	x := int(*v)
	return &x
}

func ownedToProto(ps []api.OwnedPort) *pb.ListResponse {
	m := &pb.ListResponse{}
	for _, p := range ps {
		m.Ports = append(m.Ports, &pb.OwnedPort{Bridge: p.Bridge, Name: p.Name, Type: p.Type, State: p.State, Status: p.Status})
	}
	return m
}

func ownedFromProto(m *pb.ListResponse) []api.OwnedPort {
	var ps []api.OwnedPort
	for _, p := range m.GetPorts() {
		ps = append(ps, api.OwnedPort{Bridge: p.GetBridge(), Name: p.GetName(), Type: p.GetType(), State: p.GetState(), Status: p.GetStatus()})
	}
	return ps
}

func eventsToProto(b api.PortEventBatch) *pb.PortEventsRequest {
	m := &pb.PortEventsRequest{Resync: b.Resync, ResyncDone: b.ResyncDone}
	for _, e := range b.Events {
		m.Events = append(m.Events, &pb.PortEvent{
			Kind: pb.PortEventKind(e.Kind), Owner: pb.PortOwner(e.Owner), Plugin: e.Plugin,
			Bridge: e.Bridge, Port: e.Port, Interface: e.Interface, Type: e.Type,
			Options: e.Options, OtherConfig: e.OtherConfig, ExternalIds: e.ExternalIDs,
			Ofport: e.Ofport, Error: e.Error,
		})
	}
	return m
}

func eventsFromProto(m *pb.PortEventsRequest) api.PortEventBatch {
	b := api.PortEventBatch{Resync: m.GetResync(), ResyncDone: m.GetResyncDone()}
	for _, e := range m.GetEvents() {
		b.Events = append(b.Events, api.PortEvent{
			Kind: api.PortEventKind(e.GetKind()), Owner: api.PortOwner(e.GetOwner()), Plugin: e.GetPlugin(),
			Bridge: e.GetBridge(), Port: e.GetPort(), Interface: e.GetInterface(), Type: e.GetType(),
			Options: e.GetOptions(), OtherConfig: e.GetOtherConfig(), ExternalIDs: e.GetExternalIds(),
			Ofport: e.GetOfport(), Error: e.GetError(),
		})
	}
	return b
}

func changesToProto(cs []api.InterfaceChange) *pb.PortEventsResponse {
	m := &pb.PortEventsResponse{}
	for _, c := range cs {
		pc := &pb.InterfaceChange{Interface: c.Interface, SetOtherConfig: c.Set, RemoveOtherConfig: c.Remove}
		if c.Status != nil {
			pc.Status = &pb.InterfaceStatus{Level: string(c.Status.Level), Summary: c.Status.Summary, Details: c.Status.Details}
		}
		m.Changes = append(m.Changes, pc)
	}
	return m
}

func changesFromProto(m *pb.PortEventsResponse) []api.InterfaceChange {
	var cs []api.InterfaceChange
	for _, c := range m.GetChanges() {
		ac := api.InterfaceChange{Interface: c.GetInterface(), Set: c.GetSetOtherConfig(), Remove: c.GetRemoveOtherConfig()}
		if st := c.GetStatus(); st != nil {
			ac.Status = &api.InterfaceStatus{Level: api.StatusLevel(st.GetLevel()), Summary: st.GetSummary(), Details: st.GetDetails()}
		}
		cs = append(cs, ac)
	}
	return cs
}

func bridgeToProto(b api.BridgeFacts) *pb.BridgeFacts {
	m := &pb.BridgeFacts{Name: b.Name, DatapathType: b.DatapathType, Protocols: b.Protocols}
	for _, p := range b.Ports {
		m.Ports = append(m.Ports, &pb.BridgePort{
			Port: p.Port, Interface: p.Interface, Type: p.Type, Ofport: p.Ofport,
			Owner: pb.PortOwner(p.Owner), Plugin: p.Plugin, ExternalIds: p.ExternalIDs,
		})
	}
	return m
}

func bridgeFromProto(m *pb.BridgeFacts) api.BridgeFacts {
	b := api.BridgeFacts{Name: m.GetName(), DatapathType: m.GetDatapathType(), Protocols: m.GetProtocols()}
	for _, p := range m.GetPorts() {
		b.Ports = append(b.Ports, api.BridgePort{
			Port: p.GetPort(), Interface: p.GetInterface(), Type: p.GetType(), Ofport: p.GetOfport(),
			Owner: api.PortOwner(p.GetOwner()), Plugin: p.GetPlugin(), ExternalIDs: p.GetExternalIds(),
		})
	}
	return b
}

func flowSetToProto(s api.FlowSet) *pb.FlowsResponse {
	m := &pb.FlowsResponse{RefreshMs: s.RefreshMillis}
	for _, f := range s.Flows {
		m.Flows = append(m.Flows, &pb.Flow{
			Cookie: f.Cookie, Table: uint32(f.Table), Priority: uint32(f.Priority), Match: f.Match, Actions: f.Actions,
			IdleTimeout: uint32(f.IdleTimeout), HardTimeout: uint32(f.HardTimeout),
		})
	}
	for _, g := range s.Groups {
		mg := &pb.Group{GroupId: g.ID, Type: g.Type, SelectionMethod: g.SelectionMethod}
		for _, b := range g.Buckets {
			mg.Buckets = append(mg.Buckets, &pb.Bucket{Actions: b.Actions, Weight: uint32(b.Weight), WatchPort: b.WatchPort})
		}
		m.Groups = append(m.Groups, mg)
	}
	return m
}

// flowSetFromProto is checked: a table, priority, timeout or weight out of its OpenFlow range
// is an error rather than a silently truncated flow.
func flowSetFromProto(m *pb.FlowsResponse) (api.FlowSet, error) {
	s := api.FlowSet{RefreshMillis: m.GetRefreshMs()}
	for i, f := range m.GetFlows() {
		if f.GetTable() > math.MaxUint8 || f.GetPriority() > math.MaxUint16 ||
			f.GetIdleTimeout() > math.MaxUint16 || f.GetHardTimeout() > math.MaxUint16 {
			return api.FlowSet{}, api.Errorf(api.Internal, "flow %d (table %d, priority %d, timeouts %d/%d): out of OpenFlow range",
				i, f.GetTable(), f.GetPriority(), f.GetIdleTimeout(), f.GetHardTimeout())
		}
		s.Flows = append(s.Flows, api.Flow{
			Cookie: f.GetCookie(), Table: uint8(f.GetTable()), Priority: uint16(f.GetPriority()),
			Match: f.GetMatch(), Actions: f.GetActions(),
			IdleTimeout: uint16(f.GetIdleTimeout()), HardTimeout: uint16(f.GetHardTimeout()),
		})
	}
	for _, mg := range m.GetGroups() {
		g := api.Group{ID: mg.GetGroupId(), Type: mg.GetType(), SelectionMethod: mg.GetSelectionMethod()}
		for _, b := range mg.GetBuckets() {
			if b.GetWeight() > math.MaxUint16 {
				return api.FlowSet{}, api.Errorf(api.Internal, "group %d: bucket weight %d out of OpenFlow range", g.ID, b.GetWeight())
			}
			g.Buckets = append(g.Buckets, api.Bucket{Actions: b.GetActions(), Weight: uint16(b.GetWeight()), WatchPort: b.GetWatchPort()})
		}
		s.Groups = append(s.Groups, g)
	}
	return s, nil
}

func sampleToProto(s api.StatsSample) *pb.StatsSample {
	m := &pb.StatsSample{Job: s.Job, TimeUnixNano: s.TimeUnixNano}
	for _, x := range s.Metrics {
		m.Metrics = append(m.Metrics, &pb.Metric{Name: x.Name, Kind: pb.MetricKind(x.Kind), Value: x.Value, Labels: x.Labels})
	}
	return m
}

func sampleFromProto(m *pb.StatsSample) api.StatsSample {
	s := api.StatsSample{Job: m.GetJob(), TimeUnixNano: m.GetTimeUnixNano()}
	for _, x := range m.GetMetrics() {
		s.Metrics = append(s.Metrics, api.Metric{Name: x.GetName(), Kind: api.MetricKind(x.GetKind()), Value: x.GetValue(), Labels: x.GetLabels()})
	}
	return s
}

// healthFromProto and friends are trivial; kept next to the others for symmetry.
func healthToProto(h api.Health) *pb.HealthResponse {
	return &pb.HealthResponse{State: pb.HealthState(h.State), Message: h.Message}
}

func healthFromProto(m *pb.HealthResponse) api.Health {
	return api.Health{State: api.HealthState(m.GetState()), Message: m.GetMessage()}
}
