package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// BondToProto converts a port's bond settings (model/bond.go); nil stays nil.
func BondToProto(b *model.Bond) *v1.Bond {
	if b == nil {
		return nil
	}
	m := &v1.Bond{Updelay: int32Ptr(b.Updelay), Downdelay: int32Ptr(b.Downdelay), DetectMode: b.DetectMode,
		MiimonInterval: int32Ptr(b.MiimonInterval), RebalanceInterval: int32Ptr(b.RebalanceInterval), LacpTime: b.LACPTime,
		Primary: b.Primary}
	if b.LACPFallbackAB != nil {
		v := *b.LACPFallbackAB
		m.LacpFallbackAb = &v
	}
	return m
}

// BondFromProto converts a bond message; nil stays nil.
func BondFromProto(b *v1.Bond) *model.Bond {
	if b == nil {
		return nil
	}
	m := &model.Bond{Updelay: intPtr(b.Updelay), Downdelay: intPtr(b.Downdelay), DetectMode: b.GetDetectMode(),
		MiimonInterval: intPtr(b.MiimonInterval), RebalanceInterval: intPtr(b.RebalanceInterval), LACPTime: b.GetLacpTime(),
		Primary: b.GetPrimary()}
	if b.LacpFallbackAb != nil {
		v := *b.LacpFallbackAb
		m.LACPFallbackAB = &v
	}
	return m
}
