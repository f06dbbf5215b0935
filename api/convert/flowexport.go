package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// Flow export settings of a bridge (model/flowexport.go) to and from their messages. Values
// out of the model's range stay out of range (validation then refuses them by key path).

// NetFlowToProto converts a NetFlow setting; nil stays nil.
func NetFlowToProto(n *model.NetFlow) *v1.NetFlow {
	if n == nil {
		return nil
	}
	return &v1.NetFlow{Targets: cloneSlice(n.Targets), ActiveTimeout: clampInt32(n.ActiveTimeout),
		EngineType: int32Ptr(n.EngineType), EngineId: int32Ptr(n.EngineID), AddIdToInterface: n.AddIDToInterface}
}

// NetFlowFromProto converts a NetFlow message; nil stays nil.
func NetFlowFromProto(n *v1.NetFlow) *model.NetFlow {
	if n == nil {
		return nil
	}
	return &model.NetFlow{Targets: cloneSlice(n.GetTargets()), ActiveTimeout: int(n.GetActiveTimeout()),
		EngineType: intPtr(n.EngineType), EngineID: intPtr(n.EngineId), AddIDToInterface: n.GetAddIdToInterface()}
}

// IPFIXToProto converts an IPFIX setting; nil stays nil.
func IPFIXToProto(x *model.IPFIX) *v1.IPFIX {
	if x == nil {
		return nil
	}
	return &v1.IPFIX{Targets: cloneSlice(x.Targets), Sampling: int64Ptr(x.Sampling), ObsDomainId: int64Ptr(x.ObsDomainID),
		ObsPointId: int64Ptr(x.ObsPointID), CacheActiveTimeout: int64Ptr(x.CacheActiveTimeout),
		CacheMaxFlows: int64Ptr(x.CacheMaxFlows), OtherConfig: cloneMap(x.OtherConfig)}
}

// IPFIXFromProto converts an IPFIX message; nil stays nil.
func IPFIXFromProto(x *v1.IPFIX) *model.IPFIX {
	if x == nil {
		return nil
	}
	return &model.IPFIX{Targets: cloneSlice(x.GetTargets()), Sampling: intPtr64(x.Sampling), ObsDomainID: intPtr64(x.ObsDomainId),
		ObsPointID: intPtr64(x.ObsPointId), CacheActiveTimeout: intPtr64(x.CacheActiveTimeout),
		CacheMaxFlows: intPtr64(x.CacheMaxFlows), OtherConfig: cloneMap(x.GetOtherConfig())}
}

// SFlowToProto converts an sFlow setting; nil stays nil.
func SFlowToProto(s *model.SFlow) *v1.SFlow {
	if s == nil {
		return nil
	}
	return &v1.SFlow{Targets: cloneSlice(s.Targets), Agent: s.Agent, Header: int32Ptr(s.Header),
		Polling: int32Ptr(s.Polling), Sampling: int64Ptr(s.Sampling)}
}

// SFlowFromProto converts an sFlow message; nil stays nil.
func SFlowFromProto(s *v1.SFlow) *model.SFlow {
	if s == nil {
		return nil
	}
	return &model.SFlow{Targets: cloneSlice(s.GetTargets()), Agent: s.GetAgent(), Header: intPtr(s.Header),
		Polling: intPtr(s.Polling), Sampling: intPtr64(s.Sampling)}
}

// CollectorSetsToProto converts a bridge's collector sets.
func CollectorSetsToProto(sets []model.CollectorSet) []*v1.CollectorSet {
	var out []*v1.CollectorSet
	for _, cs := range sets {
		out = append(out, &v1.CollectorSet{Id: int64(cs.ID), Ipfix: IPFIXToProto(&cs.IPFIX)})
	}
	return out
}

// CollectorSetsFromProto converts collector set messages; a set without ipfix gets empty
// settings (validation then asks for targets).
func CollectorSetsFromProto(sets []*v1.CollectorSet) []model.CollectorSet {
	var out []model.CollectorSet
	for _, cs := range sets {
		c := model.CollectorSet{ID: int(cs.GetId())}
		if x := IPFIXFromProto(cs.GetIpfix()); x != nil {
			c.IPFIX = *x
		}
		out = append(out, c)
	}
	return out
}

func int64Ptr(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func intPtr64(p *int64) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}
