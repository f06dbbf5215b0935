package vsctl

import (
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// registerVSwitchCommands adds the Open vSwitch commands (everything but the generic database
// commands) to m.
func registerVSwitchCommands(m map[string]Handler) {
	run := func(f func(*Context, *vsView) error) Handler {
		return Handler{Run: func(c *Context) error { return f(c, newView(c)) }}
	}
	m["init"] = Handler{Run: func(*Context) error { return nil }}
	m["show"] = run(cmdShow)
	m["emer-reset"] = run(cmdEmerReset)

	m["add-br"] = run(cmdAddBr)
	m["del-br"] = run(cmdDelBr)
	m["list-br"] = run(cmdListBr)
	m["br-exists"] = run(cmdBrExists)
	m["br-to-vlan"] = run(cmdBrToVlan)
	m["br-to-parent"] = run(cmdBrToParent)
	m["br-set-external-id"] = run(cmdBrSetExternalID)
	m["br-get-external-id"] = run(cmdBrGetExternalID)

	m["list-ports"] = run(cmdListPorts)
	m["add-port"] = run(cmdAddPort)
	m["del-port"] = run(cmdDelPort)
	m["port-to-br"] = run(cmdPortToBr)
	m["add-bond"] = run(cmdAddBond)
	m["add-bond-iface"] = run(cmdAddBondIface)
	m["del-bond-iface"] = run(cmdDelBondIface)
	m["list-ifaces"] = run(cmdListIfaces)
	m["iface-to-br"] = run(cmdIfaceToBr)

	m["get-controller"] = run(cmdGetController)
	m["del-controller"] = run(cmdDelController)
	m["set-controller"] = run(cmdSetController)
	m["get-fail-mode"] = run(cmdGetFailMode)
	m["del-fail-mode"] = run(cmdDelFailMode)
	m["set-fail-mode"] = run(cmdSetFailMode)
	m["get-manager"] = run(cmdGetManager)
	m["del-manager"] = run(cmdDelManager)
	m["set-manager"] = run(cmdSetManager)
	m["get-ssl"] = run(cmdGetSSL)
	m["del-ssl"] = run(cmdDelSSL)
	m["set-ssl"] = run(cmdSetSSL)

	m["add-aa-mapping"] = run(cmdAddAAMapping)
	m["del-aa-mapping"] = run(cmdDelAAMapping)
	m["get-aa-mapping"] = run(cmdGetAAMapping)

	m["add-zone-tp"] = run(cmdAddZoneTP)
	m["del-zone-tp"] = run(cmdDelZoneTP)
	m["list-zone-tp"] = run(cmdListZoneTP)
	m["list-dp-cap"] = run(cmdListDPCap)
}

// cAtoi converts s as C's atoi does: leading blanks, an optional sign, decimal digits up to
// the first non-digit, 0 when there are none; out-of-range values wrap as glibc's do when the
// long result is truncated to int.
func cAtoi(s string) int64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	overflow := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if v > (1<<63-d)/10 {
			overflow = true
		}
		v = v*10 + d
	}
	var l int64
	switch {
	case overflow && neg:
		l = -1 << 63
	case overflow:
		l = 1<<63 - 1
	case neg:
		l = -int64(v)
	default:
		l = int64(v)
	}
	return int64(int32(l))
}

// commandString renders the command as ovs-vsctl quotes it in "--may-exist" messages: its
// option names, its name and its arguments, words with blanks, quotes or backslashes quoted.
func commandString(c *Context) string {
	var words []string
	for _, o := range c.Cmd.Options {
		words = append(words, o.Name)
	}
	words = append(words, c.Cmd.Name)
	words = append(words, c.Cmd.Args...)
	for i, w := range words {
		if strings.ContainsAny(w, " \t\r\n\v\\'\"") {
			words[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
		}
	}
	return strings.Join(words, " ")
}

// insertRow inserts a row into table and sets the given columns.
func insertRow(c *Context, table string, cols map[string]datum.Datum) (*dbcmd.Row, error) {
	r, err := c.DB.Insert(table, "")
	if err != nil {
		return nil, err
	}
	for col, d := range cols {
		if err := r.Set(col, d); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func intDatum(i int64) datum.Datum {
	return datum.Datum{Keys: []datum.Atom{{Type: datum.TypeInteger, Int: i}}}
}

func boolDatum(b bool) datum.Datum {
	return datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean, Bool: b}}}
}

func cmdAddBr(c *Context, v *vsView) error {
	args := c.Cmd.Args
	name := args[0]
	if name == "" {
		return Fatalf("bridge name must not be empty string")
	}
	var parentName string
	var vlan int64
	switch len(args) {
	case 1:
	case 3:
		parentName = args[1]
		vlan = cAtoi(args[2])
		if vlan < 0 || vlan > 4095 {
			return Fatalf("%s: vlan must be between 0 and 4095", c.Cmd.Name)
		}
	default:
		return Fatalf("'%s' command takes exactly 1 or 3 arguments", c.Cmd.Name)
	}
	if c.Cmd.Has("--may-exist") {
		br, err := v.bridge(name)
		if err != nil {
			return err
		}
		if br != nil {
			switch {
			case len(args) == 1 && br.parent != nil:
				return Fatalf("\"--may-exist add-br %s\" but %s is a VLAN bridge for VLAN %d", name, name, br.vlan)
			case len(args) == 1:
			case br.parent == nil:
				return Fatalf("\"--may-exist add-br %s %s %d\" but %s is not a VLAN bridge", name, parentName, vlan, name)
			case br.parent.name != parentName:
				return Fatalf("\"--may-exist add-br %s %s %d\" but %s has the wrong parent %s", name, parentName, vlan, name, br.parent.name)
			case br.vlan != vlan:
				return Fatalf("\"--may-exist add-br %s %s %d\" but %s is a VLAN bridge for the wrong VLAN %d", name, parentName, vlan, name, br.vlan)
			}
			return nil
		}
	}
	if err := v.checkConflicts(name, "cannot create a bridge named "+name); err != nil {
		return err
	}
	var target *dbcmd.Row
	if len(args) == 3 {
		parent, err := v.bridge(parentName)
		if err != nil {
			return err
		}
		if parent != nil && parent.parent != nil {
			return Fatalf("cannot create bridge with fake bridge as parent")
		}
		if parent == nil {
			return Fatalf("parent bridge %s does not exist", parentName)
		}
		conflict, err := v.vlanChild(parent, vlan)
		if err != nil {
			return err
		}
		if conflict != "" {
			return Fatalf("bridge %s already has a child VLAN bridge %s on VLAN %d", parentName, conflict, vlan)
		}
		target = parent.row
	}
	iface, err := insertRow(c, "Interface", map[string]datum.Datum{"name": strDatum(name), "type": strDatum("internal")})
	if err != nil {
		return err
	}
	portCols := map[string]datum.Datum{"name": strDatum(name), "interfaces": uuidDatum(iface.UUID())}
	if target != nil {
		portCols["fake_bridge"] = boolDatum(true)
		portCols["tag"] = intDatum(vlan)
	}
	port, err := insertRow(c, "Port", portCols)
	if err != nil {
		return err
	}
	if target != nil {
		err = target.Add("ports", uuidDatum(port.UUID()))
	} else {
		var br *dbcmd.Row
		br, err = insertRow(c, "Bridge", map[string]datum.Datum{"name": strDatum(name), "ports": uuidDatum(port.UUID())})
		if err == nil {
			err = c.OVS.Add("bridges", uuidDatum(br.UUID()))
		}
	}
	if err != nil {
		return err
	}
	c.State.ExpectIfaces = append(c.State.ExpectIfaces, iface.UUID())
	return nil
}

// vlanChild returns the name of the fake child bridge of real bridge parent for vlan, or "".
func (v *vsView) vlanChild(parent *vsBridge, vlan int64) (string, error) {
	if v.model != nil {
		if ch := v.model.bridges[parent.name].children[vlan]; ch != nil {
			return ch.name, nil
		}
		return "", nil
	}
	fakes, err := v.fakeBridgePorts()
	if err != nil {
		if err == errUnusual {
			if err := v.populate(); err != nil {
				return "", err
			}
			return v.vlanChild(parent, vlan)
		}
		return "", err
	}
	for _, f := range fakes {
		if t, _ := loadedTag(f); t != vlan {
			continue
		}
		p, err := v.parentBridge(f)
		if err != nil {
			return "", err
		}
		if p == parent.row {
			return loadedStr(f, "name"), nil
		}
	}
	return "", nil
}

// fakeChildren reports whether real bridge b has fake child bridges.
func (v *vsView) hasFakeChildren(b *vsBridge) (bool, error) {
	fakes, err := v.fakeBridgePorts()
	if err != nil {
		return false, err
	}
	for _, f := range fakes {
		p, err := v.parentBridge(f)
		if err != nil {
			return false, err
		}
		if p == b.row {
			return true, nil
		}
	}
	return false, nil
}

func cmdDelBr(c *Context, v *vsView) error {
	name := c.Cmd.Args[0]
	br, err := v.bridge(name)
	if err != nil {
		return err
	}
	if br == nil {
		if c.Cmd.Has("--if-exists") {
			return nil
		}
		return Fatalf("no bridge named %s", name)
	}
	if v.model == nil {
		if br.parent == nil {
			children, err := v.hasFakeChildren(br)
			if err != nil && err != errUnusual {
				return err
			}
			if err == nil && !children {
				return v.delRealBridgeLazily(br)
			}
		}
		if err := v.populate(); err != nil {
			return err
		}
	}
	return v.delBridge(v.model.bridges[name])
}

// delRealBridgeLazily deletes a real bridge without fake children. Its ports and interfaces are
// not read: once the bridge is gone nothing refers to them and the server collects them.
func (v *vsView) delRealBridgeLazily(br *vsBridge) error {
	if br.row.Inserted() {
		// Created by this invocation: its ports and interfaces are local rows, which must be
		// dropped rather than sent as inserts for the server to collect.
		for _, u := range loadedUUIDs(br.row, "ports") {
			p, err := v.db.Get(v.c.Ctx, "Port", u)
			if err != nil {
				return err
			}
			if p != nil && p.Inserted() {
				if err := v.delIfaces(p); err != nil {
					return err
				}
				p.Delete()
			}
		}
	}
	if err := v.delCollectorSets(br.row); err != nil {
		return err
	}
	br.row.Delete()
	return v.c.OVS.Remove("bridges", uuidDatum(br.row.UUID()))
}

func (v *vsView) delCollectorSets(br *dbcmd.Row) error {
	rows, err := v.db.Lookup(v.c.Ctx, "Flow_Sample_Collector_Set", "bridge", uuidDatum(br.UUID()))
	if err != nil {
		return err
	}
	for _, r := range rows {
		r.Delete()
	}
	return nil
}

// delBridge deletes a bridge of the full model with its fake children, ports and interfaces.
func (v *vsView) delBridge(br *vsBridge) error {
	for _, vlan := range sortedKeys(br.children) {
		if err := v.delBridge(br.children[vlan]); err != nil {
			return err
		}
	}
	for _, p := range slices.Clone(br.ports) {
		if err := v.delModelPort(p); err != nil {
			return err
		}
	}
	if br.row != nil {
		if err := v.delCollectorSets(br.row); err != nil {
			return err
		}
		br.row.Delete()
		if err := v.c.OVS.Remove("bridges", uuidDatum(br.row.UUID())); err != nil {
			return err
		}
	}
	if br.parent != nil {
		delete(br.parent.children, br.vlan)
	}
	delete(v.model.bridges, br.name)
	return nil
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (v *vsView) delModelPort(p *vsPort) error {
	if err := p.bridge.realBridge().row.Remove("ports", uuidDatum(p.row.UUID())); err != nil {
		return err
	}
	for _, i := range p.ifaces {
		i.row.Delete()
		delete(v.model.ifaces, i.name)
	}
	p.row.Delete()
	p.bridge.ports = slices.DeleteFunc(p.bridge.ports, func(q *vsPort) bool { return q == p })
	delete(v.model.ports, p.name)
	return nil
}

// delPort deletes port p (found by a lookup) and its interfaces.
func (v *vsView) delPort(p *vsPort) error {
	if v.model != nil {
		if mp := v.model.ports[p.name]; mp != nil && mp.row == p.row {
			return v.delModelPort(mp)
		}
	}
	real := p.bridge.realBridge().row
	if p.row.Inserted() {
		// A port added by this invocation: with the bridge's ports loaded, its removal
		// cancels the pending addition instead of also sending a removal.
		if _, err := real.Get(v.c.Ctx, "ports"); err != nil {
			return err
		}
	}
	if err := real.Remove("ports", uuidDatum(p.row.UUID())); err != nil {
		return err
	}
	if err := v.delIfaces(p.row); err != nil {
		return err
	}
	p.row.Delete()
	return nil
}

// delIfaces deletes the interfaces of Port row p.
func (v *vsView) delIfaces(p *dbcmd.Row) error {
	for _, u := range loadedUUIDs(p, "interfaces") {
		r, err := v.db.Get(v.c.Ctx, "Interface", u)
		if err != nil {
			return err
		}
		if r != nil {
			r.Delete()
		}
	}
	return nil
}

func cmdListBr(c *Context, v *vsView) error {
	real, fake := c.Cmd.Has("--real"), c.Cmd.Has("--fake")
	if !real && !fake {
		real, fake = true, true
	}
	names, err := withModel(v, func() ([]string, error) {
		var names []string
		rb, err := v.realBridges()
		if err != nil {
			return nil, err
		}
		fakes, err := v.fakeBridgePorts()
		if err != nil {
			return nil, err
		}
		if real {
			for _, r := range rb {
				names = append(names, loadedStr(r, "name"))
			}
		}
		if fake {
			for _, f := range fakes {
				p, err := v.parentBridge(f)
				if err != nil {
					return nil, err
				}
				if p != nil {
					names = append(names, loadedStr(f, "name"))
				}
			}
		}
		return names, nil
	}, func(m *vsModel) []string {
		var names []string
		for _, b := range m.order {
			if (b.parent != nil && fake) || (b.parent == nil && real) {
				names = append(names, b.name)
			}
		}
		return names
	})
	if err != nil {
		return err
	}
	c.Out.WriteString(sortedLines(names))
	return nil
}

func cmdBrExists(c *Context, v *vsView) error {
	br, err := v.bridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	if br == nil {
		return &ExitError{Code: 2}
	}
	return nil
}

func cmdBrToVlan(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	c.Printf("%d\n", br.vlan)
	return nil
}

func cmdBrToParent(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	c.Printf("%s\n", br.realBridge().name)
	return nil
}

// externalIDs returns the row and key prefix that hold bridge br's external IDs: the Bridge
// row, or the fake bridge's Port row with keys prefixed "fake-bridge-".
func externalIDs(br *vsBridge) (*dbcmd.Row, string) {
	if br.row != nil {
		return br.row, ""
	}
	return br.port, "fake-bridge-"
}

func cmdBrSetExternalID(c *Context, v *vsView) error {
	args := c.Cmd.Args
	br, err := v.mustBridge(args[0])
	if err != nil {
		return err
	}
	row, prefix := externalIDs(br)
	ids, err := row.Get(c.Ctx, "external_ids")
	if err != nil {
		return err
	}
	if err := row.Verify(c.Ctx, "external_ids"); err != nil {
		return err
	}
	key := datum.Atom{Type: datum.TypeString, Str: prefix + args[1]}
	keys, vals := []datum.Atom{}, []datum.Atom{}
	for i, k := range ids.Keys {
		if k.Str != key.Str {
			keys, vals = append(keys, k), append(vals, ids.Values[i])
		}
	}
	if len(args) >= 3 {
		keys, vals = append(keys, key), append(vals, datum.Atom{Type: datum.TypeString, Str: args[2]})
	}
	return row.Set("external_ids", datum.NewDatum(keys, vals))
}

func cmdBrGetExternalID(c *Context, v *vsView) error {
	args := c.Cmd.Args
	br, err := v.mustBridge(args[0])
	if err != nil {
		return err
	}
	row, prefix := externalIDs(br)
	if err := row.Verify(c.Ctx, "external_ids"); err != nil {
		return err
	}
	ids, err := row.Get(c.Ctx, "external_ids")
	if err != nil {
		return err
	}
	if len(args) >= 2 {
		if i, ok := ids.Find(datum.Atom{Type: datum.TypeString, Str: prefix + args[1]}); ok {
			c.Printf("%s\n", ids.Values[i].Str)
		}
		return nil
	}
	for i, k := range ids.Keys {
		if strings.HasPrefix(k.Str, prefix) {
			c.Printf("%s=%s\n", k.Str[len(prefix):], ids.Values[i].Str)
		}
	}
	return nil
}

func cmdListPorts(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	ports, _, err := v.bridgePortNames(br, false)
	if err != nil {
		return err
	}
	if err := br.realBridge().row.Verify(c.Ctx, "ports"); err != nil {
		return err
	}
	ports = slices.DeleteFunc(ports, func(n string) bool { return n == br.name })
	c.Out.WriteString(sortedLines(ports))
	return nil
}

func cmdListIfaces(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	_, ifaces, err := v.bridgePortNames(br, true)
	if err != nil {
		return err
	}
	if v.model != nil {
		err = v.verifyAllPorts()
	} else {
		err = br.realBridge().row.Verify(c.Ctx, "ports")
	}
	if err != nil {
		return err
	}
	ifaces = slices.DeleteFunc(ifaces, func(n string) bool { return n == br.name })
	c.Out.WriteString(sortedLines(ifaces))
	return nil
}

func cmdAddPort(c *Context, v *vsView) error {
	args := c.Cmd.Args
	return v.addPort(args[0], args[1], false, args[1:2], args[2:])
}

func cmdAddBond(c *Context, v *vsView) error {
	args := c.Cmd.Args
	n := len(args) - 2
	for i := 2; i < len(args); i++ {
		if strings.Contains(args[i], "=") {
			n = i - 2
			break
		}
	}
	if n < 2 {
		return Fatalf("add-bond requires at least 2 interfaces, but only %d were specified", n)
	}
	return v.addPort(args[0], args[1], c.Cmd.Has("--fake-iface"), args[2:2+n], args[2+n:])
}

// ifaceNames returns the names of the interfaces of port p, sorted.
func (v *vsView) ifaceNames(p *vsPort) ([]string, error) {
	var names []string
	if v.model != nil && v.model.ports[p.name] != nil {
		for _, i := range v.model.ports[p.name].ifaces {
			names = append(names, i.name)
		}
	} else {
		uuids := loadedUUIDs(p.row, "interfaces")
		rows, err := v.readRows("Interface", uuids, "name")
		if err != nil {
			return nil, err
		}
		for _, u := range uuids {
			if r, ok := rows[u]; ok {
				names = append(names, datumString(r["name"]))
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

func (v *vsView) addPort(brName, portName string, fakeIface bool, ifaceNames, settings []string) error {
	c := v.c
	if portName == "" {
		return Fatalf("port name must not be empty string")
	}
	if slices.Contains(ifaceNames, "") {
		return Fatalf("interface name must not be empty string")
	}
	if c.Cmd.Has("--may-exist") {
		p, err := v.port(portName, false)
		if err != nil {
			return err
		}
		if p != nil {
			want := slices.Clone(ifaceNames)
			slices.Sort(want)
			have, err := v.ifaceNames(p)
			if err != nil {
				return err
			}
			if p.bridge.name != brName {
				return Fatalf("\"%s\" but %s is actually attached to bridge %s", commandString(c), portName, p.bridge.name)
			}
			if !slices.Equal(want, have) {
				return Fatalf("\"%s\" but %s actually has interface(s) %s", commandString(c), portName, strings.Join(have, ", "))
			}
			return nil
		}
	}
	if err := v.checkConflicts(portName, "cannot create a port named "+portName); err != nil {
		return err
	}
	for _, n := range ifaceNames {
		if err := v.checkConflicts(n, "cannot create an interface named "+n); err != nil {
			return err
		}
	}
	br, err := v.mustBridge(brName)
	if err != nil {
		return err
	}
	var ifaceIDs []string
	for _, n := range ifaceNames {
		r, err := insertRow(c, "Interface", map[string]datum.Datum{"name": strDatum(n)})
		if err != nil {
			return err
		}
		ifaceIDs = append(ifaceIDs, r.UUID())
	}
	c.State.ExpectIfaces = append(c.State.ExpectIfaces, ifaceIDs...)
	cols := map[string]datum.Datum{"name": strDatum(portName), "interfaces": uuidDatum(ifaceIDs...)}
	if fakeIface {
		cols["bond_fake_iface"] = boolDatum(true)
	}
	if br.parent != nil {
		cols["tag"] = intDatum(br.vlan)
	}
	port, err := insertRow(c, "Port", cols)
	if err != nil {
		return err
	}
	for _, s := range settings {
		if err := setColumnArg(c, port.Table(), port, s, false); err != nil {
			return err
		}
	}
	return br.realBridge().row.Add("ports", uuidDatum(port.UUID()))
}

func cmdAddBondIface(c *Context, v *vsView) error {
	args := c.Cmd.Args
	port, err := v.port(args[0], true)
	if err != nil {
		return err
	}
	name := args[1]
	if c.Cmd.Has("--may-exist") {
		i, err := v.iface(name, false)
		if err != nil {
			return err
		}
		if i != nil {
			if i.port.row == port.row {
				return nil
			}
			return Fatalf("\"%s\" but %s is actually attached to port %s", commandString(c), name, i.port.name)
		}
	}
	if err := v.checkConflicts(name, "cannot create an interface named "+name); err != nil {
		return err
	}
	r, err := insertRow(c, "Interface", map[string]datum.Datum{"name": strDatum(name)})
	if err != nil {
		return err
	}
	c.State.ExpectIfaces = append(c.State.ExpectIfaces, r.UUID())
	return port.row.Add("interfaces", uuidDatum(r.UUID()))
}

func cmdDelBondIface(c *Context, v *vsView) error {
	args := c.Cmd.Args
	name := args[len(args)-1]
	i, err := v.iface(name, !c.Cmd.Has("--if-exists"))
	if err != nil || i == nil {
		return err
	}
	if len(args) > 1 {
		p, err := v.port(args[0], true)
		if err != nil {
			return err
		}
		if p.row != i.port.row {
			return Fatalf("port %s does not have an interface %s", args[0], name)
		}
	}
	n := len(loadedUUIDs(i.port.row, "interfaces"))
	if v.model != nil {
		if mp := v.model.ports[i.port.name]; mp != nil {
			n = len(mp.ifaces)
		}
	}
	if n <= 1 {
		return Fatalf("cannot delete last interface from port %s", i.port.name)
	}
	if err := i.port.row.Remove("interfaces", uuidDatum(i.row.UUID())); err != nil {
		return err
	}
	i.row.Delete()
	return nil
}

func cmdDelPort(c *Context, v *vsView) error {
	args := c.Cmd.Args
	target := args[len(args)-1]
	must := !c.Cmd.Has("--if-exists")
	br, err := v.bridge(target)
	if err != nil {
		return err
	}
	var port *vsPort
	switch {
	case br != nil:
		if must {
			return Fatalf("cannot delete port %s because it is the local port for bridge %s (deleting this port requires deleting the entire bridge)", target, target)
		}
	case !c.Cmd.Has("--with-iface"):
		if port, err = v.port(target, must); err != nil {
			return err
		}
	default:
		if port, err = v.port(target, false); err != nil {
			return err
		}
		if port == nil {
			i, err := v.iface(target, false)
			if err != nil {
				return err
			}
			if i != nil {
				port = i.port
			}
		}
		if must && port == nil {
			return Fatalf("no port or interface named %s", target)
		}
	}
	if port == nil {
		return nil
	}
	if len(args) == 2 {
		b, err := v.mustBridge(args[0])
		if err != nil {
			return err
		}
		if port.bridge.name != b.name {
			if port.bridge.parent != nil && port.bridge.parent.name == b.name {
				return Fatalf("bridge %s does not have a port %s (although its child bridge %s does)", args[0], args[1], port.bridge.name)
			}
			return Fatalf("bridge %s does not have a port %s", args[0], args[1])
		}
	}
	return v.delPort(port)
}

func cmdPortToBr(c *Context, v *vsView) error {
	p, err := v.port(c.Cmd.Args[0], true)
	if err != nil {
		return err
	}
	c.Printf("%s\n", p.bridge.name)
	return nil
}

func cmdIfaceToBr(c *Context, v *vsView) error {
	i, err := v.iface(c.Cmd.Args[0], true)
	if err != nil {
		return err
	}
	c.Printf("%s\n", i.port.bridge.name)
	return nil
}
