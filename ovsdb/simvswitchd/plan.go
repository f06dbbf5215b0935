package simvswitchd

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// plan is what one reconfiguration writes.
type plan struct {
	ovsUUID   string
	nextCfg   int
	ack       bool                 // cur_cfg is written
	ovs       *vswitch.OpenvSwitch // new values of ovsFields
	ovsFields []any
	ifaces    []ifaceUpdate
	errors    map[string]string // failed interface name → error
	allocated map[string]int    // last allocated ofport per bridge after this plan
}

// ifaceUpdate is a changed Interface row and the changed fields of it.
type ifaceUpdate struct {
	row    *vswitch.Interface
	fields []any
}

func (p *plan) empty() bool { return len(p.ifaces) == 0 && len(p.ovsFields) == 0 }

func (p *plan) changedNames() []string {
	names := make([]string, len(p.ifaces))
	for i, u := range p.ifaces {
		names[i] = u.row.Name
	}
	return names
}

// member is an interface reached from a bridge through one of its ports.
type member struct {
	br    *vswitch.Bridge
	iface *vswitch.Interface
}

// plan computes the reconfiguration for snap (which has an Open_vSwitch row).
func (v *Switch) plan(snap *snapshot, ack bool) *plan {
	ovs := snap.ovs
	p := &plan{ovsUUID: ovs.UUID, nextCfg: ovs.NextCfg, errors: map[string]string{}, allocated: maps.Clone(v.allocated)}
	dpdkInit := ovs.DpdkInitialized || dpdkInitRequested(ovs.OtherConfig)
	members := attachedMembers(snap)
	results := v.evaluateAll(snap, members, dpdkInit)

	ofports := map[string]int{}
	for _, br := range snap.bridges {
		var ok []ofportMember
		for _, m := range members {
			if m.br == br && results[m.iface.UUID].err == "" {
				ok = append(ok, ofportMember{uuid: m.iface.UUID, name: m.iface.Name, current: deref(m.iface.Ofport), request: deref(m.iface.OfportRequest)})
			}
		}
		got, last := assignOfports(br.Name, ok, p.allocated[br.Name])
		maps.Copy(ofports, got)
		p.allocated[br.Name] = last
	}

	attached := map[string]bool{}
	for _, m := range members {
		attached[m.iface.UUID] = true
		res := results[m.iface.UUID]
		if res.err == "" && ofports[m.iface.UUID] == 0 {
			res.err = "could not add network device " + m.iface.Name + " to ofproto (No space left on device)"
		}
		want := desiredInterface(m.iface, res, ofports[m.iface.UUID])
		if res.err != "" {
			p.errors[m.iface.Name] = res.err
		}
		p.addIface(m.iface, want)
	}
	for _, id := range slices.Sorted(maps.Keys(snap.ifaces)) {
		if iface := snap.ifaces[id]; !attached[id] && iface.Ofport != nil {
			want := *iface
			want.Ofport = nil
			p.addIface(iface, &want)
		}
	}
	v.planOpenvSwitch(p, ovs, ack, dpdkInit)
	return p
}

// planOpenvSwitch adds the Open_vSwitch columns ovs-vswitchd maintains.
func (v *Switch) planOpenvSwitch(p *plan, ovs *vswitch.OpenvSwitch, ack, dpdkInit bool) {
	p.ovs = &vswitch.OpenvSwitch{UUID: ovs.UUID, CurCfg: ovs.NextCfg, DpdkInitialized: dpdkInit, DpdkVersion: ptrTo(v.cfg.DPDKVersion)}
	if ack && ovs.CurCfg != ovs.NextCfg {
		p.ack = true
		p.ovsFields = append(p.ovsFields, &p.ovs.CurCfg)
	}
	if dpdkInit != ovs.DpdkInitialized {
		p.ovsFields = append(p.ovsFields, &p.ovs.DpdkInitialized)
	}
	if deref(ovs.DpdkVersion) != v.cfg.DPDKVersion {
		p.ovsFields = append(p.ovsFields, &p.ovs.DpdkVersion)
	}
	// ovs-vswitchd announces the types it supports; a database that never had a switch
	// (ovsplaned's embedded one) gets the defaults the first time.
	if len(ovs.IfaceTypes) == 0 {
		p.ovs.IfaceTypes = DefaultIfaceTypes()
		p.ovsFields = append(p.ovsFields, &p.ovs.IfaceTypes)
	}
	if len(ovs.DatapathTypes) == 0 {
		p.ovs.DatapathTypes = DefaultDatapathTypes()
		p.ovsFields = append(p.ovsFields, &p.ovs.DatapathTypes)
	}
}

// dpdkInitRequested reports whether other_config:dpdk-init asks for DPDK.
// Once initialised, DPDK stays initialised until ovs-vswitchd restarts.
func dpdkInitRequested(otherConfig map[string]string) bool {
	v := otherConfig["dpdk-init"]
	return v == "true" || v == "try"
}

// attachedMembers lists the interfaces of the bridges' ports, bridges in
// name order; an interface reachable twice counts only the first time.
func attachedMembers(snap *snapshot) []member {
	var out []member
	seen := map[string]bool{}
	for _, br := range snap.bridges {
		var ports []*vswitch.Port
		for _, id := range br.Ports {
			if p := snap.ports[id]; p != nil {
				ports = append(ports, p)
			}
		}
		slices.SortFunc(ports, func(a, b *vswitch.Port) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range ports {
			for _, id := range p.Interfaces {
				if iface := snap.ifaces[id]; iface != nil && !seen[id] {
					seen[id] = true
					out = append(out, member{br: br, iface: iface})
				}
			}
		}
	}
	return out
}

// evaluateAll evaluates every member. Interfaces that already work go first
// so that, as in a running ovs-vswitchd, a DPDK device stays with the
// interface holding it when another one asks for the same devargs.
func (v *Switch) evaluateAll(snap *snapshot, members []member, dpdkInit bool) map[string]netdevResult {
	ec := &evalContext{snap: snap, dpdkInit: dpdkInit, claims: map[string]string{}, byName: map[string]*vswitch.Interface{}}
	for _, iface := range snap.ifaces {
		ec.byName[iface.Name] = iface
	}
	order := slices.Clone(members)
	slices.SortStableFunc(order, func(a, b member) int {
		aw, bw := validOfport(deref(a.iface.Ofport)), validOfport(deref(b.iface.Ofport))
		if aw != bw {
			if aw {
				return -1
			}
			return 1
		}
		return strings.Compare(a.iface.Name, b.iface.Name)
	})
	results := make(map[string]netdevResult, len(order))
	for _, m := range order {
		results[m.iface.UUID] = v.evaluate(ec, m.br, m.iface)
	}
	return results
}

// desiredInterface returns iface with the columns ovs-vswitchd writes set as
// after a reconfiguration; failed interfaces are cleared like bridge.c's
// iface_clear_db_record does.
func desiredInterface(iface *vswitch.Interface, res netdevResult, ofport int) *vswitch.Interface {
	want := *iface
	if res.err != "" {
		want.Ofport, want.Error = ptrTo(-1), ptrTo(res.err)
		want.AdminState, want.LinkState, want.MTU, want.MACInUse = nil, nil, nil, nil
		want.Statistics, want.Status, want.Ifindex, want.Duplex, want.LinkSpeed = nil, nil, nil, nil, nil
		return &want
	}
	link := vswitch.InterfaceLinkStateDown
	if res.linkUp {
		link = vswitch.InterfaceLinkStateUp
	}
	want.Ofport, want.Error = ptrTo(ofport), nil
	want.AdminState, want.LinkState = ptrTo(vswitch.InterfaceAdminStateUp), ptrTo(link)
	want.MACInUse = ptrTo(macFor(iface, res.typ))
	want.MTU = nil
	if res.typ != typePatch {
		want.MTU = ptrTo(defaultMTU)
		if iface.MTURequest != nil {
			want.MTU = ptrTo(*iface.MTURequest)
		}
	}
	want.Statistics = map[string]int{}
	for _, k := range []string{"rx_packets", "tx_packets", "rx_bytes", "tx_bytes"} {
		want.Statistics[k] = iface.Statistics[k]
	}
	return &want
}

// statusFields returns pointers to the Interface columns the simulator owns.
func statusFields(i *vswitch.Interface) []any {
	return []any{&i.Ofport, &i.Error, &i.AdminState, &i.LinkState, &i.MTU, &i.MACInUse,
		&i.Statistics, &i.Status, &i.Ifindex, &i.Duplex, &i.LinkSpeed}
}

// addIface records the update from cur to want if any owned column differs.
func (p *plan) addIface(cur, want *vswitch.Interface) {
	var fields []any
	curFields, wantFields := statusFields(cur), statusFields(want)
	for i := range curFields {
		if !sameValue(curFields[i], wantFields[i]) {
			fields = append(fields, wantFields[i])
		}
	}
	if len(fields) > 0 {
		p.ifaces = append(p.ifaces, ifaceUpdate{row: want, fields: fields})
	}
}

// sameValue compares what two field pointers point to, treating empty and
// nil maps as equal (OVSDB does not distinguish them).
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	if va.Kind() == reflect.Map && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(va.Interface(), vb.Interface())
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptrTo[T any](v T) *T { return &v }
