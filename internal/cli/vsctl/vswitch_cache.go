package vsctl

import (
	"errors"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// The vswitch commands see the database as ovs-vsctl's cache does: real bridges (the Bridge
// rows of Open_vSwitch.bridges), fake bridges (a Port with fake_bridge=true and a tag of 0 to
// 4095, named after the bridge, inside its parent's ports), ports (each belonging to the real
// bridge that lists it, or to the fake child bridge whose VLAN equals its tag) and interfaces.
//
// ovs-vsctl builds that cache by downloading every Bridge, Port and Interface row. vsctl
// answers the common questions (which bridge is called X, which port, which interface, which
// bridge does a port belong to, which ports does a bridge have) with targeted lookups whose
// cost does not grow with the number of ports on the switch, and builds the full model
// (vsModel) only for commands that need everything or when a lookup meets a database that
// is not in the shape ovs-vsctl's own commands leave it in (duplicate names across tables, a
// port listed by two bridges, two fake bridges for one VLAN, ...), where only the full
// model's tie-breaking rules give ovs-vsctl's answer.

// vsCache is the per-invocation state of the vswitch commands (State.vs).
type vsCache struct {
	// populated is set once a command built the full model: the Bridge, Port and Interface
	// tables are then listed in the DB view, so further lookups cost no round trip.
	populated bool
}

// errUnusual makes a lazy lookup give up in favour of the full model.
var errUnusual = errors.New("unusual database contents")

// vsBridge is a real or fake bridge.
type vsBridge struct {
	name string
	row  *dbcmd.Row // the Bridge row (nil for a fake bridge)
	port *dbcmd.Row // the fake bridge's Port row (nil for a real bridge)
	// parent is the real bridge of a fake bridge; vlan is its VLAN (0 for real bridges).
	parent *vsBridge
	vlan   int64
	// Filled in the full model only.
	ports    []*vsPort
	children map[int64]*vsBridge
}

// realBridge returns the bridge that holds the bridge's ports in the database.
func (b *vsBridge) realBridge() *vsBridge {
	if b.parent != nil {
		return b.parent
	}
	return b
}

// vsPort is a port and the (real or fake) bridge it belongs to.
type vsPort struct {
	row    *dbcmd.Row
	name   string
	bridge *vsBridge
	ifaces []*vsIface // full model only
}

// vsIface is an interface and its port.
type vsIface struct {
	row  *dbcmd.Row
	name string
	port *vsPort
}

// vsModel is ovs-vsctl's cache, built from every Bridge, Port and Interface row.
type vsModel struct {
	bridges map[string]*vsBridge
	order   []*vsBridge // in the order they were added
	ports   map[string]*vsPort
	ifaces  map[string]*vsIface
}

// portCols are the columns loaded with every Port row the vswitch commands look at.
func portCols() []string { return []string{"name", "tag", "fake_bridge", "interfaces"} }

// vsView answers the questions of one command. It keeps what it read only for the duration of
// the command: later commands of the invocation may have changed the database view.
type vsView struct {
	c     *Context
	db    *dbcmd.DB
	model *vsModel

	ovsBridges    *datum.Datum
	verifiedOVS   bool
	verifiedPorts bool
	real          []*dbcmd.Row
	realLoaded    bool
	fakes         []*dbcmd.Row
	fakesLoaded   bool
	parentOf      map[string]*dbcmd.Row
}

func newView(c *Context) *vsView {
	if c.State.vs == nil {
		c.State.vs = &vsCache{}
	}
	return &vsView{c: c, db: c.DB, parentOf: map[string]*dbcmd.Row{}}
}

func strDatum(s string) datum.Datum {
	return datum.Datum{Keys: []datum.Atom{{Type: datum.TypeString, Str: s}}}
}

func uuidAtom(u string) datum.Atom { return datum.Atom{Type: datum.TypeUUID, Str: u} }

func uuidDatum(u ...string) datum.Datum {
	d := datum.Datum{Keys: []datum.Atom{}}
	for _, x := range u {
		d.Keys = append(d.Keys, uuidAtom(x))
	}
	return datum.NewDatum(d.Keys, nil)
}

// loadedStr returns the string value of a loaded scalar column ("" if unset).
func loadedStr(r *dbcmd.Row, col string) string {
	d, _ := r.Loaded(col)
	if len(d.Keys) == 0 {
		return ""
	}
	return d.Keys[0].Str
}

// loadedTag returns a port's tag when it makes the port part of a VLAN (0 to 4095).
func loadedTag(r *dbcmd.Row) (int64, bool) {
	d, _ := r.Loaded("tag")
	if len(d.Keys) != 1 || d.Keys[0].Int < 0 || d.Keys[0].Int > 4095 {
		return 0, false
	}
	return d.Keys[0].Int, true
}

func loadedBool(r *dbcmd.Row, col string) bool {
	d, _ := r.Loaded(col)
	return len(d.Keys) == 1 && d.Keys[0].Bool
}

func loadedUUIDs(r *dbcmd.Row, col string) []string {
	d, _ := r.Loaded(col)
	out := make([]string, 0, len(d.Keys))
	for _, k := range d.Keys {
		out = append(out, k.Str)
	}
	return out
}

// isFakeBridgePort tells whether a Port row is a fake bridge's (ovs-vsctl's test).
func isFakeBridgePort(r *dbcmd.Row) bool {
	_, ok := loadedTag(r)
	return ok && loadedBool(r, "fake_bridge")
}

// bridgesOfOVS returns Open_vSwitch.bridges, verified as ovs-vsctl's find_bridge does.
func (v *vsView) bridgesOfOVS() (datum.Datum, error) {
	if v.ovsBridges == nil {
		d, err := v.c.OVS.Get(v.c.Ctx, "bridges")
		if err != nil {
			return datum.Datum{}, err
		}
		v.ovsBridges = &d
	}
	return *v.ovsBridges, nil
}

func (v *vsView) verifyOVS() error {
	if v.verifiedOVS {
		return nil
	}
	v.verifiedOVS = true
	return v.c.OVS.Verify(v.c.Ctx, "bridges")
}

func (v *vsView) inOVS(r *dbcmd.Row) (bool, error) {
	d, err := v.bridgesOfOVS()
	if err != nil {
		return false, err
	}
	_, ok := d.Find(uuidAtom(r.UUID()))
	return ok, nil
}

// realBridges returns the Bridge rows of Open_vSwitch.bridges (name loaded). Bridges are few:
// reading all their names costs one round trip, whatever the number of ports.
func (v *vsView) realBridges() ([]*dbcmd.Row, error) {
	if v.realLoaded {
		return v.real, nil
	}
	rows, err := v.db.All(v.c.Ctx, "Bridge", "name")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range rows {
		ok, err := v.inOVS(r)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		n := loadedStr(r, "name")
		if seen[n] {
			return nil, errUnusual
		}
		seen[n] = true
		v.real = append(v.real, r)
	}
	v.realLoaded = true
	return v.real, nil
}

// fakeBridgePorts returns the Port rows that look like fake bridges (few on any switch).
func (v *vsView) fakeBridgePorts() ([]*dbcmd.Row, error) {
	if v.fakesLoaded {
		return v.fakes, nil
	}
	rows, err := v.db.Lookup(v.c.Ctx, "Port", "fake_bridge", datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean, Bool: true}}}, portCols()...)
	if err != nil {
		return nil, err
	}
	real, err := v.realBridges()
	if err != nil {
		return nil, err
	}
	tags := map[int64]bool{}
	for _, r := range rows {
		tag, ok := loadedTag(r)
		if !ok {
			continue
		}
		// A fake bridge named like a real bridge, or two fake bridges on one VLAN (perhaps
		// of different parents): only the full model resolves these as ovs-vsctl does.
		if tags[tag] || slices.ContainsFunc(real, func(b *dbcmd.Row) bool { return loadedStr(b, "name") == loadedStr(r, "name") }) {
			return nil, errUnusual
		}
		tags[tag] = true
		v.fakes = append(v.fakes, r)
	}
	v.fakesLoaded = true
	return v.fakes, nil
}

// parentBridge returns the real bridge whose ports include the port row p, nil when none.
func (v *vsView) parentBridge(p *dbcmd.Row) (*dbcmd.Row, error) {
	if b, ok := v.parentOf[p.UUID()]; ok {
		return b, nil
	}
	rows, err := v.db.Containing(v.c.Ctx, "Bridge", "ports", uuidAtom(p.UUID()), "name")
	if err != nil {
		return nil, err
	}
	var found *dbcmd.Row
	for _, r := range rows {
		ok, err := v.inOVS(r)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if found != nil {
			return nil, errUnusual // a port in two bridges
		}
		found = r
	}
	if found != nil {
		real, err := v.realBridges()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(real, found) {
			return nil, errUnusual
		}
	}
	v.parentOf[p.UUID()] = found
	return found, nil
}

// lazyBridge finds the bridge called name without the full model.
func (v *vsView) lazyBridge(name string) (*vsBridge, error) {
	real, err := v.realBridges()
	if err != nil {
		return nil, err
	}
	fakes, err := v.fakeBridgePorts()
	if err != nil {
		return nil, err
	}
	for _, r := range real {
		if loadedStr(r, "name") == name {
			return &vsBridge{name: name, row: r}, nil
		}
	}
	for _, f := range fakes {
		if loadedStr(f, "name") != name {
			continue
		}
		parent, err := v.parentBridge(f)
		if err != nil || parent == nil {
			return nil, err
		}
		tag, _ := loadedTag(f)
		return &vsBridge{name: name, port: f, parent: &vsBridge{name: loadedStr(parent, "name"), row: parent}, vlan: tag}, nil
	}
	return nil, nil
}

// owner returns the bridge a port row of real bridge parent belongs to: the fake child
// bridge whose VLAN is the port's tag, if there is one, else parent.
func (v *vsView) owner(p, parent *dbcmd.Row) (*vsBridge, error) {
	pb := &vsBridge{name: loadedStr(parent, "name"), row: parent}
	tag, ok := loadedTag(p)
	if !ok {
		return pb, nil
	}
	fakes, err := v.fakeBridgePorts()
	if err != nil {
		return nil, err
	}
	for _, f := range fakes {
		if ft, _ := loadedTag(f); ft != tag {
			continue
		}
		fp, err := v.parentBridge(f)
		if err != nil {
			return nil, err
		}
		if fp == parent {
			return &vsBridge{name: loadedStr(f, "name"), port: f, parent: pb, vlan: tag}, nil
		}
	}
	return pb, nil
}

// lazyPortOfRow resolves the bridge of Port row p; nil when p is in no bridge.
func (v *vsView) lazyPortOfRow(p *dbcmd.Row) (*vsPort, error) {
	parent, err := v.parentBridge(p)
	if err != nil || parent == nil {
		return nil, err
	}
	br, err := v.owner(p, parent)
	if err != nil {
		return nil, err
	}
	return &vsPort{row: p, name: loadedStr(p, "name"), bridge: br}, nil
}

func (v *vsView) lazyPort(name string) (*vsPort, error) {
	rows, err := v.db.Lookup(v.c.Ctx, "Port", "name", strDatum(name), portCols()...)
	if err != nil {
		return nil, err
	}
	switch len(rows) {
	case 0:
		return nil, nil
	case 1:
		return v.lazyPortOfRow(rows[0])
	}
	return nil, errUnusual
}

func (v *vsView) lazyIface(name string) (*vsIface, error) {
	rows, err := v.db.Lookup(v.c.Ctx, "Interface", "name", strDatum(name))
	if err != nil {
		return nil, err
	}
	switch len(rows) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, errUnusual
	}
	ports, err := v.db.Containing(v.c.Ctx, "Port", "interfaces", uuidAtom(rows[0].UUID()), portCols()...)
	if err != nil {
		return nil, err
	}
	switch len(ports) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, errUnusual
	}
	p, err := v.lazyPortOfRow(ports[0])
	if err != nil || p == nil {
		return nil, err
	}
	return &vsIface{row: rows[0], name: name, port: p}, nil
}

// withModel runs lazy, and falls back to the full model when lazy finds the database unusual.
func withModel[T any](v *vsView, lazy func() (T, error), full func(m *vsModel) T) (T, error) {
	if v.model == nil {
		t, err := lazy()
		if !errors.Is(err, errUnusual) {
			return t, err
		}
		if err := v.populate(); err != nil {
			var zero T
			return zero, err
		}
	}
	return full(v.model), nil
}

// bridge returns the bridge called name, or nil. It verifies Open_vSwitch.bridges.
func (v *vsView) bridge(name string) (*vsBridge, error) {
	if err := v.verifyOVS(); err != nil {
		return nil, err
	}
	return withModel(v, func() (*vsBridge, error) { return v.lazyBridge(name) },
		func(m *vsModel) *vsBridge { return m.bridges[name] })
}

// mustBridge is bridge with ovs-vsctl's error when there is none.
func (v *vsView) mustBridge(name string) (*vsBridge, error) {
	b, err := v.bridge(name)
	if err == nil && b == nil {
		err = Fatalf("no bridge named %s", name)
	}
	return b, err
}

// mustRealBridge is mustBridge refusing fake bridges.
func (v *vsView) mustRealBridge(name string) (*vsBridge, error) {
	b, err := v.mustBridge(name)
	if err == nil && b.parent != nil {
		err = Fatalf("%s is a fake bridge", name)
	}
	return b, err
}

// anyPort returns the port called name, even one named after its own bridge (what
// check_conflicts looks at); port hides those, as ovs-vsctl's find_port does.
func (v *vsView) anyPort(name string) (*vsPort, error) {
	return withModel(v, func() (*vsPort, error) { return v.lazyPort(name) },
		func(m *vsModel) *vsPort { return m.ports[name] })
}

func (v *vsView) port(name string, mustExist bool) (*vsPort, error) {
	p, err := v.anyPort(name)
	if err != nil {
		return nil, err
	}
	if p != nil && p.name == p.bridge.name {
		p = nil
	}
	if p == nil && mustExist {
		return nil, Fatalf("no port named %s", name)
	}
	return p, v.verifyPort(p, "Port", name)
}

func (v *vsView) anyIface(name string) (*vsIface, error) {
	return withModel(v, func() (*vsIface, error) { return v.lazyIface(name) },
		func(m *vsModel) *vsIface { return m.ifaces[name] })
}

func (v *vsView) iface(name string, mustExist bool) (*vsIface, error) {
	i, err := v.anyIface(name)
	if err != nil {
		return nil, err
	}
	if i != nil && i.name == i.port.bridge.name {
		i = nil
	}
	if i == nil && mustExist {
		return nil, Fatalf("no interface named %s", name)
	}
	var p *vsPort
	if i != nil {
		p = i.port
		if err := i.row.Verify(v.c.Ctx, "name"); err != nil {
			return nil, err
		}
	}
	return i, v.verifyPort(p, "Interface", name)
}

// verifyPort records what a port (or interface) lookup depended on, so that a concurrent
// change makes the invocation run again: the bridge list, and the port row found (its name and
// interfaces), or the absence of the name that was not found. ovs-vsctl verifies every
// bridge's ports and every port's interfaces instead, which needs them all downloaded.
func (v *vsView) verifyPort(p *vsPort, table, name string) error {
	if err := v.verifyOVS(); err != nil {
		return err
	}
	if p == nil {
		if v.db.HasChanges() {
			return nil // see checkConflicts
		}
		return v.db.VerifyAbsent(table, "name", strDatum(name))
	}
	for _, col := range []string{"name", "interfaces"} {
		if err := p.row.Verify(v.c.Ctx, col); err != nil {
			return err
		}
	}
	return nil
}

// checkConflicts fails when name is taken by a bridge, a port or an interface (msg starts
// the message), and otherwise records that the name must still be free at commit.
func (v *vsView) checkConflicts(name, msg string) error {
	if err := v.verifyOVS(); err != nil {
		return err
	}
	b, err := v.bridge(name)
	if err != nil {
		return err
	}
	if b != nil {
		return Fatalf("%s because a bridge named %s already exists", msg, name)
	}
	p, err := v.anyPort(name)
	if err != nil {
		return err
	}
	if p != nil {
		return Fatalf("%s because a port named %s already exists on bridge %s", msg, name, p.bridge.name)
	}
	i, err := v.anyIface(name)
	if err != nil {
		return err
	}
	if i != nil {
		return Fatalf("%s because an interface named %s already exists on bridge %s", msg, name, i.port.bridge.name)
	}
	// The name must still be free when the transaction commits. That can only be checked on
	// the server's rows as they were before the transaction, so not once this invocation has
	// changed anything: a row it deleted (or that the server will collect) may hold the name.
	// The unique indexes on the names still catch a same-table clash then.
	if v.db.HasChanges() {
		return nil
	}
	for _, t := range []string{"Bridge", "Port", "Interface"} {
		if err := v.db.VerifyAbsent(t, "name", strDatum(name)); err != nil {
			return err
		}
	}
	return nil
}

// bridgePortNames returns the names of the ports of bridge b, and of their interfaces (when
// withIfaces), in no particular order. Only b's real bridge's ports are read.
func (v *vsView) bridgePortNames(b *vsBridge, withIfaces bool) (ports []string, ifaces []string, err error) {
	if v.model != nil {
		for _, p := range v.model.bridges[b.name].ports {
			ports = append(ports, p.name)
			for _, i := range p.ifaces {
				ifaces = append(ifaces, i.name)
			}
		}
		return ports, ifaces, nil
	}
	real := b.realBridge()
	pd, err := real.row.Get(v.c.Ctx, "ports")
	if err != nil {
		return nil, nil, err
	}
	fakes, err := v.fakeBridgePorts()
	if errors.Is(err, errUnusual) {
		if err := v.populate(); err != nil {
			return nil, nil, err
		}
		return v.bridgePortNames(b, withIfaces)
	}
	if err != nil {
		return nil, nil, err
	}
	// The fake children of the real bridge, by VLAN.
	children := map[int64]string{}
	for _, f := range fakes {
		if _, ok := pd.Find(uuidAtom(f.UUID())); ok {
			tag, _ := loadedTag(f)
			children[tag] = loadedStr(f, "name")
		}
	}
	uuids := make([]string, len(pd.Keys))
	for i, k := range pd.Keys {
		uuids[i] = k.Str
	}
	cols := []string{"name", "tag"}
	if withIfaces {
		cols = append(cols, "interfaces")
	}
	rows, err := v.readRows("Port", uuids, cols...)
	if err != nil {
		return nil, nil, err
	}
	var ifUUIDs []string
	for _, u := range uuids {
		r, ok := rows[u]
		if !ok {
			continue
		}
		owner := real.name
		if t := r["tag"]; len(t.Keys) == 1 && t.Keys[0].Int >= 0 && t.Keys[0].Int <= 4095 {
			if c, ok := children[t.Keys[0].Int]; ok {
				owner = c
			}
		}
		if owner != b.name {
			continue
		}
		ports = append(ports, datumString(r["name"]))
		for _, k := range r["interfaces"].Keys {
			ifUUIDs = append(ifUUIDs, k.Str)
		}
	}
	if withIfaces {
		irows, err := v.readRows("Interface", ifUUIDs, "name")
		if err != nil {
			return nil, nil, err
		}
		for _, u := range ifUUIDs {
			if r, ok := irows[u]; ok {
				ifaces = append(ifaces, datumString(r["name"]))
			}
		}
	}
	return ports, ifaces, nil
}

func datumString(d datum.Datum) string {
	if len(d.Keys) == 0 {
		return ""
	}
	return d.Keys[0].Str
}

// populate builds the full model from every Bridge, Port and Interface row, following
// ovs-vsctl's rules for the unusual cases: bridges in the order of Open_vSwitch.bridges
// (UUID order), the first of two same-named bridges wins, a port listed by two bridges stays
// with the first, a port whose tag is a fake child's VLAN belongs to that child.
func (v *vsView) populate() error {
	ctx := v.c.Ctx
	v.c.State.vs.populated = true
	ovsB, err := v.bridgesOfOVS()
	if err != nil {
		return err
	}
	if err := v.db.Prefetch(ctx,
		dbcmd.TableColumns{Table: "Bridge", Columns: []string{"name", "ports"}},
		dbcmd.TableColumns{Table: "Port", Columns: portCols()},
		dbcmd.TableColumns{Table: "Interface", Columns: []string{"name"}}); err != nil {
		return err
	}
	brs, err := v.db.All(ctx, "Bridge", "name", "ports")
	if err != nil {
		return err
	}
	ports, err := v.db.All(ctx, "Port", portCols()...)
	if err != nil {
		return err
	}
	ifs, err := v.db.All(ctx, "Interface", "name")
	if err != nil {
		return err
	}
	byUUID := func(rows []*dbcmd.Row) map[string]*dbcmd.Row {
		m := make(map[string]*dbcmd.Row, len(rows))
		for _, r := range rows {
			m[r.UUID()] = r
		}
		return m
	}
	brByID, portByID, ifByID := byUUID(brs), byUUID(ports), byUUID(ifs)
	rowsOf := func(m map[string]*dbcmd.Row, d datum.Datum) []*dbcmd.Row {
		var out []*dbcmd.Row
		for _, k := range d.Keys {
			if r := m[k.Str]; r != nil {
				out = append(out, r)
			}
		}
		return out
	}
	m := &vsModel{bridges: map[string]*vsBridge{}, ports: map[string]*vsPort{}, ifaces: map[string]*vsIface{}}
	add := func(b *vsBridge) {
		b.children = map[int64]*vsBridge{}
		if b.parent != nil {
			if _, dup := b.parent.children[b.vlan]; !dup {
				b.parent.children[b.vlan] = b
			}
		}
		m.bridges[b.name] = b
		m.order = append(m.order, b)
	}
	bridgeRows := rowsOf(brByID, ovsB)
	seenBr, seenPort := map[string]bool{}, map[string]bool{}
	for _, br := range bridgeRows {
		name := loadedStr(br, "name")
		if seenBr[name] {
			continue
		}
		seenBr[name] = true
		b := &vsBridge{name: name, row: br}
		add(b)
		pd, _ := br.Loaded("ports")
		for _, p := range rowsOf(portByID, pd) {
			pn := loadedStr(p, "name")
			if seenPort[pn] {
				continue
			}
			seenPort[pn] = true
			if isFakeBridgePort(p) && !seenBr[pn] {
				seenBr[pn] = true
				tag, _ := loadedTag(p)
				add(&vsBridge{name: pn, port: p, parent: b, vlan: tag})
			}
		}
	}
	seenBr = map[string]bool{}
	for _, br := range bridgeRows {
		name := loadedStr(br, "name")
		if seenBr[name] {
			continue
		}
		seenBr[name] = true
		b := m.bridges[name]
		pd, _ := br.Loaded("ports")
		for _, p := range rowsOf(portByID, pd) {
			pn := loadedStr(p, "name")
			if m.ports[pn] != nil {
				continue
			}
			if isFakeBridgePort(p) {
				if seenBr[pn] {
					continue
				}
				seenBr[pn] = true
			}
			owner := b
			if tag, ok := loadedTag(p); ok {
				if c := b.children[tag]; c != nil {
					owner = c
				}
			}
			vp := &vsPort{row: p, name: pn, bridge: owner}
			owner.ports = append(owner.ports, vp)
			m.ports[pn] = vp
			idd, _ := p.Loaded("interfaces")
			for _, i := range rowsOf(ifByID, idd) {
				in := loadedStr(i, "name")
				if m.ifaces[in] != nil {
					continue
				}
				vi := &vsIface{row: i, name: in, port: vp}
				vp.ifaces = append(vp.ifaces, vi)
				m.ifaces[in] = vi
			}
		}
	}
	v.model = m
	return nil
}

// verifyAllPorts is ovs-vsctl's verify_ports, for commands that read the full model.
func (v *vsView) verifyAllPorts() error {
	if v.verifiedPorts || v.model == nil {
		return nil
	}
	v.verifiedPorts = true
	if err := v.verifyOVS(); err != nil {
		return err
	}
	for _, b := range v.model.order {
		if b.row != nil {
			if err := b.row.Verify(v.c.Ctx, "ports"); err != nil {
				return err
			}
		}
	}
	for _, p := range v.model.ports {
		if err := p.row.Verify(v.c.Ctx, "interfaces"); err != nil {
			return err
		}
	}
	return nil
}

// sortedLines returns names sorted bytewise, one per line (ovs-vsctl's output_sorted).
func sortedLines(names []string) string {
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.String()
}
