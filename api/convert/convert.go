package convert

import (
	"maps"
	"slices"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// BridgeToProto converts a bridge spec. Its ports are not part of the message.
func BridgeToProto(b model.Bridge) *v1.Bridge {
	return &v1.Bridge{
		Name:          b.Name,
		DatapathType:  b.DatapathType,
		FailMode:      b.FailMode,
		Protocols:     cloneSlice(b.Protocols),
		Controller:    cloneSlice(b.Controllers),
		OtherConfig:   cloneMap(b.OtherConfig),
		ExternalIds:   cloneMap(b.ExternalIDs),
		Netflow:       NetFlowToProto(b.NetFlow),
		Ipfix:         IPFIXToProto(b.IPFIX),
		Sflow:         SFlowToProto(b.SFlow),
		CollectorSets: CollectorSetsToProto(b.CollectorSets),
		Mirrors:       MirrorsToProto(b.Mirrors),
	}
}

// BridgeFromProto converts a bridge message; the result has no ports.
func BridgeFromProto(b *v1.Bridge) model.Bridge {
	return model.Bridge{
		Name:          b.GetName(),
		DatapathType:  b.GetDatapathType(),
		FailMode:      b.GetFailMode(),
		Protocols:     cloneSlice(b.GetProtocols()),
		Controllers:   cloneSlice(b.GetController()),
		OtherConfig:   cloneMap(b.GetOtherConfig()),
		ExternalIDs:   cloneMap(b.GetExternalIds()),
		NetFlow:       NetFlowFromProto(b.GetNetflow()),
		IPFIX:         IPFIXFromProto(b.GetIpfix()),
		SFlow:         SFlowFromProto(b.GetSflow()),
		CollectorSets: CollectorSetsFromProto(b.GetCollectorSets()),
		Mirrors:       MirrorsFromProto(b.GetMirrors()),
	}
}

// PortToProto converts a port spec with its interfaces.
func PortToProto(p model.Port) *v1.Port {
	m := &v1.Port{
		Name:        p.Name,
		Tag:         int32Ptr(p.Tag),
		VlanMode:    p.VLANMode,
		BondMode:    p.BondMode,
		Lacp:        p.LACP,
		OtherConfig: cloneMap(p.OtherConfig),
		ExternalIds: cloneMap(p.ExternalIDs),
		Qos:         QoSToProto(p.QoS),
		Bond:        BondToProto(p.Bond),
	}
	for _, t := range p.Trunks {
		m.Trunks = append(m.Trunks, clampInt32(t))
	}
	for _, in := range p.Interfaces {
		m.Interfaces = append(m.Interfaces, InterfaceToProto(in))
	}
	return m
}

// PortFromProto converts a port message with its interfaces.
func PortFromProto(p *v1.Port) model.Port {
	if p == nil {
		return model.Port{}
	}
	c := model.Port{
		Name:        p.GetName(),
		Tag:         intPtr(p.Tag),
		VLANMode:    p.GetVlanMode(),
		BondMode:    p.GetBondMode(),
		LACP:        p.GetLacp(),
		OtherConfig: cloneMap(p.GetOtherConfig()),
		ExternalIDs: cloneMap(p.GetExternalIds()),
		QoS:         QoSFromProto(p.GetQos()),
		Bond:        BondFromProto(p.GetBond()),
	}
	for _, t := range p.GetTrunks() {
		c.Trunks = append(c.Trunks, int(t))
	}
	for _, in := range p.GetInterfaces() {
		c.Interfaces = append(c.Interfaces, InterfaceFromProto(in))
	}
	return c
}

// InterfaceToProto converts an interface spec.
func InterfaceToProto(in model.Interface) *v1.Interface {
	return &v1.Interface{
		Name:          in.Name,
		Type:          in.Type,
		Options:       cloneMap(in.Options),
		MtuRequest:    int32Ptr(in.MTURequest),
		OfportRequest: int32Ptr(in.OFPortRequest),
		OtherConfig:   cloneMap(in.OtherConfig),
		ExternalIds:   cloneMap(in.ExternalIDs),

		IngressPolicingRate:       int64Ptr(in.IngressPolicingRate),
		IngressPolicingBurst:      int64Ptr(in.IngressPolicingBurst),
		IngressPolicingKpktsRate:  int64Ptr(in.IngressPolicingKpktsRate),
		IngressPolicingKpktsBurst: int64Ptr(in.IngressPolicingKpktsBurst),
	}
}

// InterfaceFromProto converts an interface message.
func InterfaceFromProto(in *v1.Interface) model.Interface {
	if in == nil {
		return model.Interface{}
	}
	return model.Interface{
		Name:          in.GetName(),
		Type:          in.GetType(),
		Options:       cloneMap(in.GetOptions()),
		MTURequest:    intPtr(in.MtuRequest),
		OFPortRequest: intPtr(in.OfportRequest),
		OtherConfig:   cloneMap(in.GetOtherConfig()),
		ExternalIDs:   cloneMap(in.GetExternalIds()),

		IngressPolicingRate:       intPtr64(in.IngressPolicingRate),
		IngressPolicingBurst:      intPtr64(in.IngressPolicingBurst),
		IngressPolicingKpktsRate:  intPtr64(in.IngressPolicingKpktsRate),
		IngressPolicingKpktsBurst: intPtr64(in.IngressPolicingKpktsBurst),
	}
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func cloneSlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := clampInt32(*p)
	return &v
}

func intPtr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

// clampInt32 keeps an out-of-range value out of range (validation then rejects it) instead of
// wrapping it into a valid one.
func clampInt32(v int) int32 {
	switch {
	case v > 1<<31-1:
		return 1<<31 - 1
	case v < -1<<31:
		return -1 << 31
	}
	return int32(v)
}
