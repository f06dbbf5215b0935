package ovsdb

import (
	"fmt"
	"maps"
	"slices"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// ensurePort plans the creation of a port with all its interfaces, or the changes that bring an
// owned port to spec (columns, interfaces added, changed or removed, move to another bridge).
func (p *planner) ensurePort(spec PortOn) error {
	ref := objRef{vswitch.PortTable, spec.Port.Name}
	b, err := p.bridge(spec.Bridge)
	if err != nil {
		return err
	}
	if b == nil {
		return &OpError{Kind: ErrNotFound, Table: ref.table, Row: spec.Port.Name, Details: fmt.Sprintf(
			"bridge %q does not exist; create it first (in this transaction or an earlier one)", spec.Bridge)}
	}
	if !b.owned && !p.c.foreignBridges {
		br := &vswitch.Bridge{Name: spec.Bridge}
		_, _ = p.lookup(vswitch.BridgeTable, br)
		return &OpError{Kind: ErrNotOwned, Table: vswitch.BridgeTable, Row: spec.Bridge, Details: fmt.Sprintf(
			"cannot add port %q: the bridge was not created by %q (owner tag %q); create the bridge through ovsplane or allow attaching to foreign bridges",
			spec.Port.Name, p.owner, br.ExternalIDs[OwnerKey])}
	}
	if p.newPorts[spec.Port.Name] {
		return &OpError{Kind: ErrInvalid, Table: ref.table, Row: spec.Port.Name, Details: "port given twice in one transaction"}
	}
	cur := &vswitch.Port{Name: spec.Port.Name}
	found, err := p.lookup(vswitch.PortTable, cur)
	if err != nil {
		return err
	}
	p.newPorts[spec.Port.Name] = true
	if !found {
		return p.createPort(spec, b)
	}
	if !ownedBy(cur.ExternalIDs, p.owner) {
		return notOwned(ref.table, spec.Port.Name, p.owner, cur.ExternalIDs)
	}
	return p.updatePort(spec, b, cur)
}

// newInterface returns the model of an interface created in this transaction. A name used twice
// in this transaction is an error at once; a name that exists in the database is checked when
// planning ends (checkClaims), because a later intent of the same transaction may free it (an
// interface moving from one port to another).
func (p *planner) newInterface(port string, s model.Interface) (*vswitch.Interface, error) {
	if p.newIfaces[s.Name] {
		return nil, &OpError{Kind: ErrConstraintViolation, Table: vswitch.InterfaceTable, Row: s.Name, Column: "name",
			Details: fmt.Sprintf("two ports of this transaction want an interface with this name (the second is %q)", port)}
	}
	p.newIfaces[s.Name] = true
	p.claims = append(p.claims, claim{iface: s.Name, port: port})
	p.ifaces = append(p.ifaces, s.Name)
	return &vswitch.Interface{UUID: p.namedUUID("if"), Name: s.Name, Type: s.Type, Options: s.Options,
		OtherConfig: s.OtherConfig, ExternalIDs: tagged(s.ExternalIDs, p.owner, p.gen),
		MTURequest: s.MTURequest, OfportRequest: s.OFPortRequest,
		IngressPolicingRate: deref0(s.IngressPolicingRate), IngressPolicingBurst: deref0(s.IngressPolicingBurst),
		IngressPolicingKpktsRate: deref0(s.IngressPolicingKpktsRate), IngressPolicingKpktsBurst: deref0(s.IngressPolicingKpktsBurst)}, nil
}

// claim is a new interface name some port of the transaction wants.
type claim struct{ iface, port string }

// checkClaims fails if a new interface's name is still taken once every intent is planned.
func (p *planner) checkClaims() error {
	for _, c := range p.claims {
		other := &vswitch.Interface{Name: c.iface}
		exists, err := p.lookup(vswitch.InterfaceTable, other)
		if err != nil {
			return err
		}
		if exists {
			return &OpError{Kind: ErrConstraintViolation, Table: vswitch.InterfaceTable, Row: c.iface, Column: "name",
				Details: fmt.Sprintf("an interface with this name already exists; port %q cannot use it — pick another name or delete the other port", c.port)}
		}
	}
	return nil
}

func (p *planner) createPort(spec PortOn, b *bridgeState) error {
	port := p.portModel(spec)
	port.UUID = p.namedUUID("port")
	p.newPortNames[port.UUID] = spec.Port.Name
	var ifaces []*vswitch.Interface
	for _, is := range spec.interfaces() {
		ifc, err := p.newInterface(spec.Port.Name, is)
		if err != nil {
			return err
		}
		ifaces = append(ifaces, ifc)
		port.Interfaces = append(port.Interfaces, ifc.UUID)
	}
	for _, ifc := range ifaces {
		p.add(objRef{vswitch.InterfaceTable, ifc.Name}, interfaceInsert(ifc))
	}
	if q := spec.Port.QoS.Canonical(); q != nil {
		u := p.insertQoS(spec.Port.Name, q)
		port.QOS = &u
	}
	p.add(objRef{vswitch.PortTable, spec.Port.Name}, portInsert(port))
	b.add = append(b.add, port.UUID)
	return nil
}

func (p *planner) portModel(spec PortOn) *vswitch.Port {
	port := &vswitch.Port{Name: spec.Port.Name, Tag: spec.Port.Tag, Trunks: spec.Port.Trunks, OtherConfig: portOtherConfig(&spec.Port),
		ExternalIDs: tagged(spec.Port.ExternalIDs, p.owner, p.gen)}
	if b := spec.Port.Bond; b != nil {
		port.BondUpdelay, port.BondDowndelay = deref0(b.Updelay), deref0(b.Downdelay)
	}
	if spec.Port.VLANMode != "" {
		v := vswitch.PortVLANMode(spec.Port.VLANMode)
		port.VLANMode = &v
	}
	if spec.Port.BondMode != "" {
		v := vswitch.PortBondMode(spec.Port.BondMode)
		port.BondMode = &v
	}
	if spec.Port.LACP != "" {
		v := vswitch.PortLACP(spec.Port.LACP)
		port.LACP = &v
	}
	return port
}

func (p *planner) updatePort(spec PortOn, b *bridgeState, cur *vswitch.Port) error {
	ref := objRef{vswitch.PortTable, spec.Port.Name}
	moved := false
	if holder := p.bridgeOf(cur.UUID); holder != spec.Bridge {
		moved = true
		if old, _ := p.bridge(holder); old != nil {
			if err := p.mayDetach(old, holder, spec.Port.Name); err != nil {
				return err
			}
			old.del = append(old.del, cur.UUID)
		}
		b.add = append(b.add, cur.UUID)
	}
	want := p.portModel(spec)
	row := libovsdb.Row{}
	if !eqIntPtr(cur.Tag, want.Tag) {
		row["tag"] = optInt(want.Tag)
	}
	if derefStr(cur.VLANMode) != spec.Port.VLANMode {
		row["vlan_mode"] = optString(spec.Port.VLANMode)
	}
	if derefStr(cur.BondMode) != spec.Port.BondMode {
		row["bond_mode"] = optString(spec.Port.BondMode)
	}
	if derefStr(cur.LACP) != spec.Port.LACP {
		row["lacp"] = optString(spec.Port.LACP)
	}
	if cur.BondUpdelay != want.BondUpdelay {
		row["bond_updelay"] = want.BondUpdelay
	}
	if cur.BondDowndelay != want.BondDowndelay {
		row["bond_downdelay"] = want.BondDowndelay
	}
	var muts []libovsdb.Mutation
	muts = append(muts, setMutations("trunks", cur.Trunks, spec.Port.Trunks, intSet)...)
	muts = append(muts, mapMutations("other_config", cur.OtherConfig, want.OtherConfig)...)
	muts = append(muts, mergeMutations("external_ids", cur.ExternalIDs, want.ExternalIDs)...)
	qosUpdated := p.planPortQoS(spec.Port.Name, spec.Port.QoS.Canonical(), cur, row)

	ifMuts, err := p.reconcileInterfaces(spec, cur)
	if err != nil {
		return err
	}
	muts = append(muts, ifMuts...)
	muts = withGeneration(muts, len(row) > 0 || moved || qosUpdated, cur.ExternalIDs, want.ExternalIDs)
	if len(row) == 0 && len(muts) == 0 && !moved {
		return nil
	}
	// Everything above was decided from cur: assert it is still what the server has, before the
	// port row is written (a wait sees the effects of the operations placed before it).
	read := map[string]any{"tag": optInt(cur.Tag), "vlan_mode": optString(derefStr(cur.VLANMode)),
		"bond_mode": optString(derefStr(cur.BondMode)), "lacp": optString(derefStr(cur.LACP)),
		"trunks": intSet(cur.Trunks), "other_config": mustMap(cur.OtherConfig), "external_ids": mustMap(cur.ExternalIDs),
		"qos": optUUID(cur.QOS), "bond_updelay": cur.BondUpdelay, "bond_downdelay": cur.BondDowndelay}
	p.guard(ref, cur.UUID, true, guardColumns(libovsdb.Row{"name": cur.Name, "interfaces": uuidSet(cur.Interfaces)}, read, row, muts))
	if len(row) > 0 {
		p.add(ref, updateOp(ref.table, whereUUID(cur.UUID), row))
	}
	if len(muts) > 0 {
		p.add(ref, mutateOp(ref.table, whereUUID(cur.UUID), muts))
	}
	return nil
}

// reconcileInterfaces updates the port's existing interfaces in place and returns the mutations
// of Port.interfaces that add new ones and drop unwanted ones.
func (p *planner) reconcileInterfaces(spec PortOn, cur *vswitch.Port) ([]libovsdb.Mutation, error) {
	existing := map[string]*vswitch.Interface{}
	for _, iu := range cur.Interfaces {
		ifc := &vswitch.Interface{}
		if p.rowByUUID(vswitch.InterfaceTable, iu, ifc) {
			existing[ifc.Name] = ifc
		}
	}
	var add, del []string
	wanted := map[string]bool{}
	for _, is := range spec.interfaces() {
		wanted[is.Name] = true
		if ifc, ok := existing[is.Name]; ok {
			if !ownedBy(ifc.ExternalIDs, p.owner) {
				return nil, notOwned(vswitch.InterfaceTable, ifc.Name, p.owner, ifc.ExternalIDs)
			}
			p.updateInterface(is, ifc)
			continue
		}
		ifc, err := p.newInterface(spec.Port.Name, is)
		if err != nil {
			return nil, err
		}
		p.add(objRef{vswitch.InterfaceTable, ifc.Name}, interfaceInsert(ifc))
		add = append(add, ifc.UUID)
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		ifc := existing[name]
		if wanted[name] {
			continue
		}
		if !ownedBy(ifc.ExternalIDs, p.owner) {
			return nil, &OpError{Kind: ErrNotOwned, Table: vswitch.InterfaceTable, Row: name, Details: fmt.Sprintf(
				"port %q holds interface %q, which ovsplane did not create; it would be removed — add it to the desired state or remove it by hand", spec.Port.Name, name)}
		}
		ref := objRef{vswitch.InterfaceTable, name}
		p.guard(ref, ifc.UUID, true, existsRow(ifc.UUID))
		del = append(del, ifc.UUID)
		p.add(ref, deleteOp(vswitch.InterfaceTable, ifc.UUID))
		p.goneUUIDs[ifc.UUID] = true
	}
	return pairMutations("interfaces", del, add), nil
}

func (p *planner) updateInterface(s model.Interface, cur *vswitch.Interface) {
	ref := objRef{vswitch.InterfaceTable, s.Name}
	p.ifaces = append(p.ifaces, s.Name)
	row := libovsdb.Row{}
	if cur.Type != s.Type {
		row["type"] = s.Type
	}
	if !eqIntPtr(cur.MTURequest, s.MTURequest) {
		row["mtu_request"] = optInt(s.MTURequest)
	}
	if !eqIntPtr(cur.OfportRequest, s.OFPortRequest) {
		row["ofport_request"] = optInt(s.OFPortRequest)
	}
	for col, v := range map[string][2]int{
		"ingress_policing_rate":        {cur.IngressPolicingRate, deref0(s.IngressPolicingRate)},
		"ingress_policing_burst":       {cur.IngressPolicingBurst, deref0(s.IngressPolicingBurst)},
		"ingress_policing_kpkts_rate":  {cur.IngressPolicingKpktsRate, deref0(s.IngressPolicingKpktsRate)},
		"ingress_policing_kpkts_burst": {cur.IngressPolicingKpktsBurst, deref0(s.IngressPolicingKpktsBurst)},
	} {
		if v[0] != v[1] {
			row[col] = v[1]
		}
	}
	var muts []libovsdb.Mutation
	muts = append(muts, mapMutations("options", cur.Options, s.Options)...)
	muts = append(muts, mapMutations("other_config", cur.OtherConfig, keepTagged(cur, s.OtherConfig))...)
	wantExt := tagged(s.ExternalIDs, p.owner, p.gen)
	muts = append(muts, mergeMutations("external_ids", cur.ExternalIDs, wantExt)...)
	muts = withGeneration(muts, len(row) > 0, cur.ExternalIDs, wantExt)
	if len(row) == 0 && len(muts) == 0 {
		return
	}
	read := map[string]any{"type": cur.Type, "mtu_request": optInt(cur.MTURequest), "ofport_request": optInt(cur.OfportRequest),
		"options": mustMap(cur.Options), "other_config": mustMap(cur.OtherConfig), "external_ids": mustMap(cur.ExternalIDs),
		"ingress_policing_rate": cur.IngressPolicingRate, "ingress_policing_burst": cur.IngressPolicingBurst,
		"ingress_policing_kpkts_rate": cur.IngressPolicingKpktsRate, "ingress_policing_kpkts_burst": cur.IngressPolicingKpktsBurst}
	p.guard(ref, cur.UUID, true, guardColumns(libovsdb.Row{"name": cur.Name}, read, row, muts))
	if len(row) > 0 {
		p.add(ref, updateOp(ref.table, whereUUID(cur.UUID), row))
	}
	if len(muts) > 0 {
		p.add(ref, mutateOp(ref.table, whereUUID(cur.UUID), muts))
	}
}

// mayDetach refuses to change Bridge.ports of a bridge we do not own unless attaching to foreign
// bridges is allowed.
func (p *planner) mayDetach(b *bridgeState, bridge, port string) error {
	if b.owned || p.c.foreignBridges {
		return nil
	}
	return &OpError{Kind: ErrNotOwned, Table: vswitch.BridgeTable, Row: bridge, Details: fmt.Sprintf(
		"port %q sits on this bridge, which ovsplane did not create; detaching it would change the bridge — allow attaching to foreign bridges or move the port by hand", port)}
}

// deletePort plans the removal of an owned port and its interfaces. bridge may be "" (any).
func (p *planner) deletePort(bridge, name string) error {
	ref := objRef{vswitch.PortTable, name}
	cur := &vswitch.Port{Name: name}
	found, err := p.lookup(vswitch.PortTable, cur)
	if err != nil || !found {
		return err // absent: nothing to do
	}
	if !ownedBy(cur.ExternalIDs, p.owner) {
		return notOwned(ref.table, name, p.owner, cur.ExternalIDs)
	}
	holder := p.bridgeOf(cur.UUID)
	if bridge != "" && holder != bridge {
		return &OpError{Kind: ErrNotFound, Table: ref.table, Row: name,
			Details: fmt.Sprintf("port is on bridge %q, not %q", holder, bridge)}
	}
	p.guard(ref, cur.UUID, true, libovsdb.Row{"name": cur.Name, "interfaces": uuidSet(cur.Interfaces)})
	if err := p.dropPort(cur); err != nil {
		return err
	}
	if b, _ := p.bridge(holder); b != nil {
		if err := p.mayDetach(b, holder, name); err != nil {
			return err
		}
		b.del = append(b.del, cur.UUID)
	}
	return nil
}

func eqIntPtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// deref0 returns *v, or 0 for nil (the ingress policing columns' "off").
func deref0(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// portOtherConfig is the Port row's other_config for p: its own keys and its bond settings'
// (model.Bond.OtherConfig; validation keeps them apart).
func portOtherConfig(p *model.Port) map[string]string {
	if p.Bond == nil {
		return p.OtherConfig
	}
	m := maps.Clone(p.OtherConfig)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, p.Bond.OtherConfig())
	return m
}
