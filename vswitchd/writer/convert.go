package writer

import (
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// PortSpec converts a desired port of bridge to the ovsdb package's spec. It is the one
// conversion of a port: the reconciler's passes and the port door both use it.
func PortSpec(bridge string, p model.Port) ovsdb.PortSpec {
	s := ovsdb.PortSpec{Bridge: bridge, Name: p.Name, Tag: p.Tag, Trunks: p.Trunks, BondMode: p.BondMode,
		OtherConfig: p.OtherConfig, ExternalIDs: p.ExternalIDs}
	for _, i := range p.Interfaces {
		s.Interfaces = append(s.Interfaces, ovsdb.InterfaceSpec{Name: i.Name, Type: i.Type, Options: i.Options,
			OtherConfig: i.OtherConfig, ExternalIDs: i.ExternalIDs, MTURequest: i.MTURequest,
			OfportRequest: i.OFPortRequest})
	}
	return s
}

// BridgeSpec converts a desired bridge to the ovsdb package's spec (its ports aside).
func BridgeSpec(b model.Bridge) ovsdb.BridgeSpec {
	return ovsdb.BridgeSpec{Name: b.Name, DatapathType: b.DatapathType, FailMode: b.FailMode,
		Protocols: b.Protocols, Controllers: b.Controllers, OtherConfig: b.OtherConfig, ExternalIDs: b.ExternalIDs}
}
