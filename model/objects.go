package model

import (
	"maps"
	"slices"
	"strings"
)

// Bridge is one desired OVS bridge. Its name is also the name of its local (internal) port.
// The struct tags are the configuration file's keys (vswitchd/config decodes the file into
// these types); the API has its own wire form (api/convert). The JSON form (what the daemon
// keeps of an API object in its rows' external_ids) omits every empty field: it is read back
// by field name, so rows written before (with every field, nulls included) read the same.
type Bridge struct {
	Name string `mapstructure:"name" yaml:"name"`
	// DatapathType is "" or "system" (kernel) or "netdev" (userspace, DPDK).
	DatapathType string `mapstructure:"datapath_type" yaml:"datapath_type,omitempty" json:",omitempty"`
	// FailMode is "", "standalone" or "secure".
	FailMode string `mapstructure:"fail_mode" yaml:"fail_mode,omitempty" json:",omitempty"`
	// Protocols are OpenFlow10 ... OpenFlow15.
	Protocols []string `mapstructure:"protocols" yaml:"protocols,omitempty" json:",omitempty"`
	// Controllers are OpenFlow controller targets (tcp:, ssl:, unix:, ptcp:, pssl:, punix:).
	Controllers []string          `mapstructure:"controller" yaml:"controller,omitempty" json:",omitempty"`
	OtherConfig map[string]string `mapstructure:"other_config" yaml:"other_config,omitempty" json:",omitempty"`
	ExternalIDs map[string]string `mapstructure:"external_ids" yaml:"external_ids,omitempty" json:",omitempty"`
	// NetFlow, IPFIX and SFlow are the bridge's flow export (nil: none); CollectorSets its
	// IPFIX collector sets for flow-based sampling. See flowexport.go. Their JSON keys are
	// omitted when empty, so the spec an API bridge keeps in external_ids (vswitchd's store)
	// reads the same as before they existed.
	NetFlow       *NetFlow       `mapstructure:"netflow" yaml:"netflow,omitempty" json:",omitempty"`
	IPFIX         *IPFIX         `mapstructure:"ipfix" yaml:"ipfix,omitempty" json:",omitempty"`
	SFlow         *SFlow         `mapstructure:"sflow" yaml:"sflow,omitempty" json:",omitempty"`
	CollectorSets []CollectorSet `mapstructure:"collector_sets" yaml:"collector_sets,omitempty" json:",omitempty"`
	// Mirrors are the bridge's port mirrors (mirror.go), unique by name.
	Mirrors []Mirror `mapstructure:"mirrors" yaml:"mirrors,omitempty" json:",omitempty"`
	Ports   []Port   `mapstructure:"ports" yaml:"ports,omitempty" json:",omitempty"`
}

// Port is one port of a bridge. A port with two or more interfaces is a bond.
type Port struct {
	Name string `mapstructure:"name" yaml:"name"`
	// Tag is the access VLAN (0..4095); nil means none.
	Tag *int `mapstructure:"tag" yaml:"tag,omitempty" json:",omitempty"`
	// Trunks are the VLANs (0..4095) a trunk port carries; empty means all.
	Trunks []int `mapstructure:"trunks" yaml:"trunks,omitempty" json:",omitempty"`
	// VLANMode is OVS's Port.vlan_mode: "" (OVS picks access when Tag is set, trunk
	// otherwise), access (Tag only, Trunks empty), trunk (Trunks, Tag empty), native-tagged or
	// native-untagged (Tag is the native VLAN, Trunks the others).
	VLANMode string `mapstructure:"vlan_mode" yaml:"vlan_mode,omitempty" json:",omitempty"`
	// BondMode is "", active-backup, balance-slb or balance-tcp; only for bonds.
	BondMode string `mapstructure:"bond_mode" yaml:"bond_mode,omitempty" json:",omitempty"`
	// LACP is OVS's Port.lacp: "" (OVS's default, off), active, passive or off. It matters to
	// bonds; OVS also accepts it on a port with one interface, for the switch at the other end.
	LACP        string            `mapstructure:"lacp" yaml:"lacp,omitempty" json:",omitempty"`
	OtherConfig map[string]string `mapstructure:"other_config" yaml:"other_config,omitempty" json:",omitempty"`
	ExternalIDs map[string]string `mapstructure:"external_ids" yaml:"external_ids,omitempty" json:",omitempty"`
	// QoS is the port's egress QoS with its queues (nil: none). See qos.go. Omitted from JSON
	// when nil, so specs stored before it existed read the same.
	QoS *QoS `mapstructure:"qos" yaml:"qos,omitempty" json:",omitempty"`
	// Bond is a bond's link detection, LACP timing and rebalancing (nil: OVS's defaults). See
	// bond.go.
	Bond       *Bond       `mapstructure:"bond" yaml:"bond,omitempty" json:",omitempty"`
	Interfaces []Interface `mapstructure:"interfaces" yaml:"interfaces"`
}

// Interface is one interface of a port.
type Interface struct {
	Name string `mapstructure:"name" yaml:"name"`
	// Type is one of InterfaceTypes; "" means system.
	Type    string            `mapstructure:"type" yaml:"type,omitempty" json:",omitempty"`
	Options map[string]string `mapstructure:"options" yaml:"options,omitempty" json:",omitempty"`
	// MTURequest is the requested MTU (68..65535); nil leaves OVS's default.
	MTURequest *int `mapstructure:"mtu_request" yaml:"mtu_request,omitempty" json:",omitempty"`
	// OFPortRequest is the requested OpenFlow port number (1..65279); nil lets OVS choose.
	OFPortRequest *int              `mapstructure:"ofport_request" yaml:"ofport_request,omitempty" json:",omitempty"`
	OtherConfig   map[string]string `mapstructure:"other_config" yaml:"other_config,omitempty" json:",omitempty"`
	ExternalIDs   map[string]string `mapstructure:"external_ids" yaml:"external_ids,omitempty" json:",omitempty"`
	// IngressPolicingRate (kbit/s) and IngressPolicingBurst (kbit) police what the interface
	// receives; IngressPolicingKpktsRate (kpkt/s) and IngressPolicingKpktsBurst (kpkt) do it
	// by packets. Each 0..MaxPolicing; nil or 0 is off. A burst needs its rate. See qos.go.
	IngressPolicingRate       *int `mapstructure:"ingress_policing_rate" yaml:"ingress_policing_rate,omitempty" json:",omitempty"`
	IngressPolicingBurst      *int `mapstructure:"ingress_policing_burst" yaml:"ingress_policing_burst,omitempty" json:",omitempty"`
	IngressPolicingKpktsRate  *int `mapstructure:"ingress_policing_kpkts_rate" yaml:"ingress_policing_kpkts_rate,omitempty" json:",omitempty"`
	IngressPolicingKpktsBurst *int `mapstructure:"ingress_policing_kpkts_burst" yaml:"ingress_policing_kpkts_burst,omitempty" json:",omitempty"`
}

// InterfaceTypes lists the interface types the configuration accepts, in the order error
// messages show them. "" is the same as "system". Callers must not modify it.
var InterfaceTypes = []string{"", "system", "internal", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient",
	"patch", "vxlan", "geneve", "gre", "tap"}

// VLANModes lists the values of Port.VLANMode, in the order error messages show them. Callers
// must not modify it.
var VLANModes = []string{"", "access", "trunk", "native-tagged", "native-untagged"}

// LACPModes lists the values of Port.LACP, in the order error messages show them. Callers must
// not modify it.
var LACPModes = []string{"", "active", "passive", "off"}

// Canonical returns a deep copy of b in canonical form: ports sorted by name, each in
// canonical form (see Port.Canonical); protocols, controllers and export targets sorted,
// collector sets by id, mirrors by name; empty maps and lists
// nil. Two bridges ask for the same OVSDB contents exactly when their canonical forms are
// equal (reflect.DeepEqual). b is not modified.
func (b Bridge) Canonical() Bridge {
	nb := b
	nb.Protocols = sortedCopy(b.Protocols)
	nb.Controllers = sortedCopy(b.Controllers)
	nb.OtherConfig = cloneMap(b.OtherConfig)
	nb.ExternalIDs = cloneMap(b.ExternalIDs)
	nb.NetFlow, nb.IPFIX, nb.SFlow = b.NetFlow.Canonical(), b.IPFIX.Canonical(), b.SFlow.Canonical()
	nb.CollectorSets = canonicalCollectorSets(b.CollectorSets)
	nb.Mirrors = canonicalMirrors(b.Mirrors)
	nb.Ports = canonicalByName(b.Ports, Port.Canonical, func(p Port) string { return p.Name })
	return nb
}

// Canonical returns a deep copy of p in canonical form: interfaces sorted by name, each in
// canonical form (see Interface.Canonical); trunks sorted, QoS queues by id; empty maps and lists nil. p is not
// modified.
func (p Port) Canonical() Port {
	np := p
	np.Tag = cloneInt(p.Tag)
	np.Trunks = sortedCopy(p.Trunks)
	np.OtherConfig = cloneMap(p.OtherConfig)
	np.ExternalIDs = cloneMap(p.ExternalIDs)
	np.QoS = p.QoS.Canonical()
	np.Bond = p.Bond.Canonical()
	np.Interfaces = canonicalByName(p.Interfaces, Interface.Canonical, func(in Interface) string { return in.Name })
	return np
}

// canonicalByName returns the canonical forms of items sorted by name, nil when there are none.
func canonicalByName[T any](items []T, canonical func(T) T, name func(T) string) []T {
	var out []T
	for _, x := range items {
		out = append(out, canonical(x))
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	return out
}

// Canonical returns a deep copy of in in canonical form: type "system" written as "" (they
// are the same type), empty maps nil, ingress policing 0 written as nil (both are off). in is not modified.
func (in Interface) Canonical() Interface {
	ni := in
	if ni.Type == "system" {
		ni.Type = ""
	}
	ni.Options = cloneMap(in.Options)
	ni.OtherConfig = cloneMap(in.OtherConfig)
	ni.ExternalIDs = cloneMap(in.ExternalIDs)
	ni.MTURequest = cloneInt(in.MTURequest)
	ni.OFPortRequest = cloneInt(in.OFPortRequest)
	ni.IngressPolicingRate, ni.IngressPolicingBurst = zeroNil(in.IngressPolicingRate), zeroNil(in.IngressPolicingBurst)
	ni.IngressPolicingKpktsRate, ni.IngressPolicingKpktsBurst = zeroNil(in.IngressPolicingKpktsRate), zeroNil(in.IngressPolicingKpktsBurst)
	return ni
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func sortedCopy[T interface{ ~int | ~string }](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
