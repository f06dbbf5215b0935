package ovsdb

import (
	"fmt"
	"maps"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// ensureBridge plans the creation of spec's bridge, or the changes that bring an owned bridge to
// spec, and ensures its local port as local says. A bridge owned by someone else is an
// ErrNotOwned error.
func (p *planner) ensureBridge(spec model.Bridge, local *model.Interface) error {
	ref := objRef{vswitch.BridgeTable, spec.Name}
	b, err := p.bridge(spec.Name)
	if err != nil {
		return err
	}
	if b == nil {
		// New bridge: its insert is emitted by finish, with every port added in this txn.
		if _, err := p.rootRow(); err != nil {
			return err
		}
		nb := &bridgeState{uuid: p.namedUUID("br"), created: &spec, owned: true}
		// A bridge deleted earlier in this transaction is replaced: its deletion is already
		// planned and finish has nothing left to do for it.
		p.bridges[spec.Name] = nb
		p.rootAdd = append(p.rootAdd, nb.uuid)
		return p.ensurePort(localPort(spec.Name, local))
	}
	if b.created != nil {
		return &OpError{Kind: ErrInvalid, Table: ref.table, Row: spec.Name, Details: "bridge given twice in one transaction"}
	}
	cur := &vswitch.Bridge{Name: spec.Name}
	if _, err := p.lookup(vswitch.BridgeTable, cur); err != nil {
		return err
	}
	if !b.owned {
		return notOwned(ref.table, spec.Name, p.owner, cur.ExternalIDs)
	}
	row := libovsdb.Row{}
	var muts []libovsdb.Mutation
	if cur.DatapathType != spec.DatapathType {
		row["datapath_type"] = spec.DatapathType
	}
	if curFail := derefStr(cur.FailMode); curFail != spec.FailMode {
		row["fail_mode"] = optString(spec.FailMode)
	}
	have := make([]string, len(cur.Protocols))
	for i, pr := range cur.Protocols {
		have[i] = string(pr)
	}
	muts = append(muts, setMutations("protocols", have, spec.Protocols, stringSet)...)
	muts = append(muts, mapMutations("other_config", cur.OtherConfig, spec.OtherConfig)...)
	exportRead := map[string]any{}
	exportsChanged := p.planExports(spec.Name, &spec, cur, row, exportRead)
	if p.planCollectorSets(spec.Name, b.uuid, p.c.bridgeCollectorSets(b.uuid), spec.CollectorSets) {
		exportsChanged = true
	}
	if len(spec.Mirrors)+len(cur.Mirrors) > 0 {
		p.mirrorPlans = append(p.mirrorPlans, mirrorPlan{name: spec.Name, spec: &spec, cur: cur})
	}
	_, ctlMuts := p.planControllers(spec.Name, p.bridgeControllers(cur), spec.Controllers)
	muts = append(muts, ctlMuts...)
	wantExt := tagged(spec.ExternalIDs, p.owner, p.gen)
	muts = append(muts, mergeMutations("external_ids", cur.ExternalIDs, wantExt)...)
	muts = withGeneration(muts, len(row) > 0 || exportsChanged, cur.ExternalIDs, wantExt)
	if len(row) > 0 || len(muts) > 0 {
		read := map[string]any{"datapath_type": cur.DatapathType, "fail_mode": optString(derefStr(cur.FailMode)),
			"protocols": stringSet(have), "other_config": mustMap(cur.OtherConfig), "external_ids": mustMap(cur.ExternalIDs),
			"controller": uuidSet(cur.Controller)}
		maps.Copy(read, exportRead)
		p.guard(ref, b.uuid, true, guardColumns(libovsdb.Row{"name": spec.Name}, read, row, muts))
	}
	if len(row) > 0 {
		p.add(ref, updateOp(ref.table, whereUUID(b.uuid), row))
	}
	if len(muts) > 0 {
		p.add(ref, mutateOp(ref.table, whereUUID(b.uuid), muts))
	}
	// The local port follows its bridge (and its generation).
	return p.ensurePort(localPort(spec.Name, local))
}

// localPort is the intent of a bridge's own port: one internal interface named like the bridge,
// configured by local when given.
func localPort(bridge string, local *model.Interface) PortOn {
	ifc := model.Interface{}
	if local != nil {
		ifc = *local
	}
	ifc.Name, ifc.Type = bridge, "internal"
	return PortOn{Bridge: bridge, Port: model.Port{Name: bridge, Interfaces: []model.Interface{ifc}}}
}

// insertBridge emits the insert of a bridge created in this transaction, ports included.
func (p *planner) insertBridge(name string, b *bridgeState) error {
	s := b.created
	br := &vswitch.Bridge{UUID: b.uuid, Name: name, DatapathType: s.DatapathType,
		OtherConfig: s.OtherConfig, ExternalIDs: tagged(s.ExternalIDs, p.owner, p.gen), Ports: b.add}
	if s.FailMode != "" {
		fm := vswitch.BridgeFailMode(s.FailMode)
		br.FailMode = &fm
	}
	for _, pr := range s.Protocols {
		br.Protocols = append(br.Protocols, vswitch.BridgeProtocols(pr))
	}
	br.Controller, _ = p.planControllers(name, nil, s.Controllers)
	p.planExportsNew(name, s, br)
	br.Mirrors = p.planMirrorsNew(name, b)
	p.add(objRef{vswitch.BridgeTable, name}, bridgeInsert(br))
	p.planCollectorSets(name, b.uuid, nil, s.CollectorSets)
	return nil
}

// deleteBridge plans the removal of an owned bridge with its ports and interfaces. A bridge that
// holds a port someone else created is refused: deleting it would delete their port.
func (p *planner) deleteBridge(name string) error {
	ref := objRef{vswitch.BridgeTable, name}
	b, err := p.bridge(name)
	if err != nil || b == nil {
		return err // absent: nothing to do
	}
	if b.created != nil {
		return &OpError{Kind: ErrInvalid, Table: ref.table, Row: name, Details: "bridge created and deleted in one transaction"}
	}
	cur := &vswitch.Bridge{Name: name}
	if _, err := p.lookup(vswitch.BridgeTable, cur); err != nil {
		return err
	}
	if !b.owned {
		return notOwned(ref.table, name, p.owner, cur.ExternalIDs)
	}
	var ports []*vswitch.Port
	for _, pu := range cur.Ports {
		port := &vswitch.Port{}
		if !p.rowByUUID(vswitch.PortTable, pu, port) {
			continue
		}
		if !ownedBy(port.ExternalIDs, p.owner) {
			return &OpError{Kind: ErrNotOwned, Table: ref.table, Row: name, Details: fmt.Sprintf(
				"bridge holds port %q, which ovsplane did not create; remove that port first (ovs-vsctl del-port %s %s)", port.Name, name, port.Name)}
		}
		ports = append(ports, port)
	}
	if err := p.dropCollectorSets(name, b.uuid); err != nil {
		return err
	}
	// The bridge must still hold exactly the ports read, so a port added meanwhile is not lost.
	p.guard(ref, b.uuid, true, libovsdb.Row{"ports": uuidSet(cur.Ports)})
	for _, port := range ports {
		if err := p.dropPort(port); err != nil {
			return err
		}
	}
	p.add(ref, deleteOp(ref.table, b.uuid))
	p.goneUUIDs[b.uuid] = true
	b.deleted = true
	p.rootDel = append(p.rootDel, b.uuid)
	return nil
}

// dropPort emits the deletion of an owned port row and its interfaces (callers unlink it from its
// bridge). An interface someone else added to the port (ovs-vsctl add-bond-iface) is not ours to
// delete: that is an ErrNotOwned error and nothing is planned.
func (p *planner) dropPort(port *vswitch.Port) error {
	type iface struct{ uuid, name string }
	var ifaces []iface
	for _, iu := range port.Interfaces {
		ifc := &vswitch.Interface{}
		if !p.rowByUUID(vswitch.InterfaceTable, iu, ifc) {
			continue // not in the cache: the port guard fails if the server disagrees
		}
		if !ownedBy(ifc.ExternalIDs, p.owner) {
			return &OpError{Kind: ErrNotOwned, Table: vswitch.InterfaceTable, Row: ifc.Name, Details: fmt.Sprintf(
				"port %q holds interface %q, which ovsplane did not create; remove it first (ovs-vsctl del-bond-iface %s %s)",
				port.Name, ifc.Name, port.Name, ifc.Name)}
		}
		ifaces = append(ifaces, iface{iu, ifc.Name})
	}
	p.dropPortQoS(port)
	for _, i := range ifaces {
		ref := objRef{vswitch.InterfaceTable, i.name}
		p.guard(ref, i.uuid, true, existsRow(i.uuid))
		p.add(ref, deleteOp(vswitch.InterfaceTable, i.uuid))
		p.goneUUIDs[i.uuid] = true
	}
	p.add(objRef{vswitch.PortTable, port.Name}, deleteOp(vswitch.PortTable, port.UUID))
	p.goneUUIDs[port.UUID] = true
	return nil
}

func derefStr[T ~string](v *T) string {
	if v == nil {
		return ""
	}
	return string(*v)
}
