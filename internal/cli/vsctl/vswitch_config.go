package vsctl

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// refRows returns the rows of table referenced by column col of row (loading cols), in the
// column's (UUID) order, skipping references to rows that do not exist.
func refRows(c *Context, row *dbcmd.Row, col, table string, cols ...string) ([]*dbcmd.Row, error) {
	d, err := row.Get(c.Ctx, col)
	if err != nil {
		return nil, err
	}
	var out []*dbcmd.Row
	for _, k := range d.Keys {
		r, err := c.DB.Get(c.Ctx, table, k.Str, cols...)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// controllers returns bridge br's controllers, verifying the list and their targets.
func controllers(c *Context, br *dbcmd.Row) ([]*dbcmd.Row, error) {
	if err := br.Verify(c.Ctx, "controller"); err != nil {
		return nil, err
	}
	rows, err := refRows(c, br, "controller", "Controller", "target")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := r.Verify(c.Ctx, "target"); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func cmdGetController(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	rows, err := controllers(c, br.realBridge().row)
	if err != nil {
		return err
	}
	var targets []string
	for _, r := range rows {
		targets = append(targets, loadedStr(r, "target"))
	}
	c.Out.WriteString(sortedLines(targets))
	return nil
}

func cmdDelController(c *Context, v *vsView) error {
	br, err := v.mustRealBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	rows, err := controllers(c, br.row)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		r.Delete()
	}
	return br.row.Set("controller", datum.Datum{Keys: []datum.Atom{}})
}

// inactivityProbe returns the --inactivity-probe value as atoll reads it, if given.
func inactivityProbe(c *Context) (datum.Datum, bool) {
	s, ok := c.Cmd.Option("--inactivity-probe")
	if !ok {
		return datum.Datum{}, false
	}
	return intDatum(cAtoll(s)), true
}

// cAtoll converts s as C's atoll does (saturating on overflow).
func cAtoll(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if strings.HasPrefix(s, "-") {
				return -1 << 63
			}
			return 1<<63 - 1
		}
		return 0
	}
	return n
}

func cmdSetController(c *Context, v *vsView) error {
	br, err := v.mustRealBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	rows, err := controllers(c, br.row)
	if err != nil {
		return err
	}
	for _, r := range rows {
		r.Delete()
	}
	probe, hasProbe := inactivityProbe(c)
	ids := []string{}
	for _, t := range c.Cmd.Args[1:] {
		warnTarget(c, t)
		cols := map[string]datum.Datum{"target": strDatum(t)}
		if hasProbe {
			cols["inactivity_probe"] = probe
		}
		r, err := insertRow(c, "Controller", cols)
		if err != nil {
			return err
		}
		ids = append(ids, r.UUID())
	}
	return br.row.Set("controller", uuidDatum(ids...))
}

func cmdGetFailMode(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	row := br.realBridge().row
	if err := row.Verify(c.Ctx, "fail_mode"); err != nil {
		return err
	}
	if m := loadedStr(row, "fail_mode"); m != "" {
		c.Printf("%s\n", m)
	}
	return nil
}

func cmdDelFailMode(c *Context, v *vsView) error {
	br, err := v.mustRealBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	if _, err := br.row.Get(c.Ctx, "fail_mode"); err != nil {
		return err
	}
	return br.row.Set("fail_mode", datum.Datum{Keys: []datum.Atom{}})
}

func cmdSetFailMode(c *Context, v *vsView) error {
	br, err := v.mustRealBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	mode := c.Cmd.Args[1]
	if mode != "standalone" && mode != "secure" {
		return Fatalf("fail-mode must be \"standalone\" or \"secure\"")
	}
	if _, err := br.row.Get(c.Ctx, "fail_mode"); err != nil {
		return err
	}
	return br.row.Set("fail_mode", strDatum(mode))
}

// managers returns the Manager rows of Open_vSwitch.manager_options, verifying them.
func managers(c *Context) ([]*dbcmd.Row, error) {
	if err := c.OVS.Verify(c.Ctx, "manager_options"); err != nil {
		return nil, err
	}
	rows, err := refRows(c, c.OVS, "manager_options", "Manager", "target")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := r.Verify(c.Ctx, "target"); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func cmdGetManager(c *Context, _ *vsView) error {
	rows, err := managers(c)
	if err != nil {
		return err
	}
	var targets []string
	for _, r := range rows {
		targets = append(targets, loadedStr(r, "target"))
	}
	slices.Sort(targets)
	c.Out.WriteString(sortedLines(slices.Compact(targets)))
	return nil
}

func delManagers(c *Context) error {
	rows, err := managers(c)
	if err != nil {
		return err
	}
	for _, r := range rows {
		r.Delete()
	}
	return c.OVS.Set("manager_options", datum.Datum{Keys: []datum.Atom{}})
}

func cmdDelManager(c *Context, _ *vsView) error { return delManagers(c) }

func cmdSetManager(c *Context, _ *vsView) error {
	if err := delManagers(c); err != nil {
		return err
	}
	probe, hasProbe := inactivityProbe(c)
	ids := []string{}
	for _, t := range c.Cmd.Args {
		warnTarget(c, t)
		cols := map[string]datum.Datum{"target": strDatum(t)}
		if hasProbe {
			cols["inactivity_probe"] = probe
		}
		r, err := insertRow(c, "Manager", cols)
		if err != nil {
			return err
		}
		ids = append(ids, r.UUID())
	}
	return c.OVS.Set("manager_options", uuidDatum(ids...))
}

// warnTarget warns, as ovs-vsctl does, about a controller or manager target whose connection
// method is none of the active or passive stream methods (tcp, ssl, unix and their "p" forms).
func warnTarget(c *Context, target string) {
	method, _, ok := strings.Cut(target, ":")
	if ok {
		switch method {
		case "tcp", "ssl", "unix", "ptcp", "pssl", "punix":
			return
		}
	}
	c.Logf("vsctl", "WARN", "target type \"%s\" is possibly erroneous", target)
}

// sslRow returns the SSL row of Open_vSwitch.ssl, or nil.
func sslRow(c *Context, cols ...string) (*dbcmd.Row, error) {
	rows, err := refRows(c, c.OVS, "ssl", "SSL", cols...)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

func cmdGetSSL(c *Context, _ *vsView) error {
	cols := []string{"private_key", "certificate", "ca_cert", "bootstrap_ca_cert"}
	ssl, err := sslRow(c, cols...)
	if err != nil {
		return err
	}
	if err := c.OVS.Verify(c.Ctx, "ssl"); err != nil {
		return err
	}
	if ssl == nil {
		return nil
	}
	for _, col := range cols {
		if err := ssl.Verify(c.Ctx, col); err != nil {
			return err
		}
	}
	c.Printf("Private key: %s\n", loadedStr(ssl, "private_key"))
	c.Printf("Certificate: %s\n", loadedStr(ssl, "certificate"))
	c.Printf("CA Certificate: %s\n", loadedStr(ssl, "ca_cert"))
	c.Printf("Bootstrap: %t\n", loadedBool(ssl, "bootstrap_ca_cert"))
	return nil
}

func cmdDelSSL(c *Context, _ *vsView) error {
	ssl, err := sslRow(c)
	if err != nil || ssl == nil {
		return err
	}
	if err := c.OVS.Verify(c.Ctx, "ssl"); err != nil {
		return err
	}
	ssl.Delete()
	return c.OVS.Set("ssl", datum.Datum{Keys: []datum.Atom{}})
}

func cmdSetSSL(c *Context, _ *vsView) error {
	ssl, err := sslRow(c)
	if err != nil {
		return err
	}
	if err := c.OVS.Verify(c.Ctx, "ssl"); err != nil {
		return err
	}
	if ssl != nil {
		ssl.Delete()
	}
	a := c.Cmd.Args
	r, err := insertRow(c, "SSL", map[string]datum.Datum{
		"private_key": strDatum(a[0]), "certificate": strDatum(a[1]), "ca_cert": strDatum(a[2]),
		"bootstrap_ca_cert": boolDatum(c.Cmd.Has("--bootstrap")),
	})
	if err != nil {
		return err
	}
	return c.OVS.Set("ssl", uuidDatum(r.UUID()))
}

// parseISIDVlan reads the two numbers of the auto-attach mapping commands as strtoull does
// (wrapping to int64), failing only when no digits start the argument.
func parseISIDVlan(args []string) (int64, int64, error) {
	var out [2]int64
	for i, s := range args {
		t := strings.TrimLeft(s, " \t\n\v\f\r")
		neg := false
		if t != "" && (t[0] == '+' || t[0] == '-') {
			neg = t[0] == '-'
			t = t[1:]
		}
		end := 0
		for end < len(t) && t[end] >= '0' && t[end] <= '9' {
			end++
		}
		if end == 0 {
			return 0, 0, Fatalf("Invalid argument %s", s)
		}
		u, err := strconv.ParseUint(t[:end], 10, 64)
		if err != nil {
			u = 1<<64 - 1
		}
		if neg {
			u = -u
		}
		out[i] = int64(u)
	}
	return out[0], out[1], nil
}

// autoAttach returns the AutoAttach row of bridge br (mappings loaded), or nil.
func autoAttach(c *Context, br *dbcmd.Row) (*dbcmd.Row, error) {
	rows, err := refRows(c, br, "auto_attach", "AutoAttach", "mappings")
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

func cmdAddAAMapping(c *Context, v *vsView) error {
	isid, vlan, err := parseISIDVlan(c.Cmd.Args[1:3])
	if err != nil {
		return err
	}
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	row := br.realBridge().row
	aa, err := autoAttach(c, row)
	if err != nil {
		return err
	}
	if aa == nil {
		if aa, err = c.DB.Insert("AutoAttach", ""); err != nil {
			return err
		}
		if err := row.Set("auto_attach", uuidDatum(aa.UUID())); err != nil {
			return err
		}
	}
	m, err := aa.Get(c.Ctx, "mappings")
	if err != nil {
		return err
	}
	k := datum.Atom{Type: datum.TypeInteger, Int: isid}
	if i, ok := m.Find(k); ok {
		// The IDL keeps the first of two pairs with one key: the existing one.
		_ = i
		return aa.Set("mappings", m)
	}
	keys := append(slices.Clone(m.Keys), k)
	vals := append(slices.Clone(m.Values), datum.Atom{Type: datum.TypeInteger, Int: vlan})
	return aa.Set("mappings", datum.NewDatum(keys, vals))
}

func cmdDelAAMapping(c *Context, v *vsView) error {
	isid, vlan, err := parseISIDVlan(c.Cmd.Args[1:3])
	if err != nil {
		return err
	}
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	aa, err := autoAttach(c, br.realBridge().row)
	if err != nil || aa == nil {
		return err
	}
	m, _ := aa.Loaded("mappings")
	found := false
	for i, k := range m.Keys {
		if k.Int == isid && m.Values[i].Int == vlan {
			found = true
		}
	}
	if !found {
		return nil
	}
	// ovs-vsctl keeps only the pairs whose key and value both differ from the ones given.
	keys, vals := []datum.Atom{}, []datum.Atom{}
	for i, k := range m.Keys {
		if k.Int != isid && m.Values[i].Int != vlan {
			keys, vals = append(keys, k), append(vals, m.Values[i])
		}
	}
	return aa.Set("mappings", datum.Datum{Keys: keys, Values: vals})
}

func cmdGetAAMapping(c *Context, v *vsView) error {
	br, err := v.mustBridge(c.Cmd.Args[0])
	if err != nil {
		return err
	}
	row := br.realBridge().row
	if err := row.Verify(c.Ctx, "auto_attach"); err != nil {
		return err
	}
	aa, err := autoAttach(c, row)
	if err != nil || aa == nil {
		return err
	}
	if err := aa.Verify(c.Ctx, "mappings"); err != nil {
		return err
	}
	m, _ := aa.Loaded("mappings")
	for i, k := range m.Keys {
		c.Printf("%d %d\n", k.Int, m.Values[i].Int)
	}
	return nil
}

// datapath returns the Datapath row Open_vSwitch.datapaths maps name to, or nil.
func datapath(c *Context, name string, cols ...string) (*dbcmd.Row, error) {
	d, err := c.OVS.Get(c.Ctx, "datapaths")
	if err != nil {
		return nil, err
	}
	i, ok := d.Find(datum.Atom{Type: datum.TypeString, Str: name})
	if !ok {
		return nil, nil
	}
	return c.DB.Get(c.Ctx, "Datapath", d.Values[i].Str, cols...)
}

// zoneID reads "zone=N" as ovs_scan's %i does (0 when it does not match).
func zoneID(s string) int64 {
	rest, ok := strings.CutPrefix(s, "zone=")
	if !ok {
		return 0
	}
	rest = strings.TrimLeft(rest, " \t\n\v\f\r")
	neg := false
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	base, digits := 10, "0123456789"
	switch {
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		base, digits, rest = 16, "0123456789abcdefABCDEF", rest[2:]
	case strings.HasPrefix(rest, "0"):
		base, digits = 8, "01234567"
	}
	end := 0
	for end < len(rest) && strings.IndexByte(digits, rest[end]) >= 0 {
		end++
	}
	n, _ := strconv.ParseUint(rest[:end], base, 64)
	if neg {
		n = -n
	}
	return int64(n)
}

func cmdAddZoneTP(c *Context, _ *vsView) error {
	a := c.Cmd.Args
	zone := zoneID(a[1])
	dp, err := datapath(c, a[0], "ct_zones")
	if err != nil {
		return err
	}
	if dp == nil {
		return Fatalf("datapath %s does not exist", a[0])
	}
	zones, _ := dp.Loaded("ct_zones")
	zi, exists := zones.Find(datum.Atom{Type: datum.TypeInteger, Int: zone})
	if exists && !c.Cmd.Has("--may-exist") {
		return Fatalf("zone id %d already exists", uint64(zone))
	}
	tp, err := timeoutPolicy(c, a[2:])
	if err != nil {
		return err
	}
	if exists {
		z, err := c.DB.Get(c.Ctx, "CT_Zone", zones.Values[zi].Str)
		if err != nil {
			return err
		}
		if z != nil {
			return z.Set("timeout_policy", uuidDatum(tp))
		}
		return nil
	}
	z, err := insertRow(c, "CT_Zone", map[string]datum.Datum{"timeout_policy": uuidDatum(tp)})
	if err != nil {
		return err
	}
	return dp.Add("ct_zones", datum.NewDatum([]datum.Atom{{Type: datum.TypeInteger, Int: zone}}, []datum.Atom{uuidAtom(z.UUID())}))
}

// timeoutPolicy returns the UUID of a CT_Timeout_Policy whose timeouts are those given as
// KEY=VALUE words, inserting one if no existing policy has exactly those.
func timeoutPolicy(c *Context, words []string) (string, error) {
	var keys, vals []datum.Atom
	want := map[string]int64{}
	for _, w := range words {
		k, val, ok := strings.Cut(w, "=")
		if !ok {
			break
		}
		n := int64(int32(cAtoll(val)))
		want[k] = int64(uint32(n))
		keys = append(keys, datum.Atom{Type: datum.TypeString, Str: k})
		vals = append(vals, datum.Atom{Type: datum.TypeInteger, Int: n})
	}
	rows, err := c.DB.All(c.Ctx, "CT_Timeout_Policy", "timeouts")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		t, _ := r.Loaded("timeouts")
		have := map[string]int64{}
		for i, k := range t.Keys {
			have[k.Str] = int64(uint32(t.Values[i].Int))
		}
		if len(have) == len(want) {
			same := true
			for k, x := range want {
				if y, ok := have[k]; !ok || x != y {
					same = false
				}
			}
			if same {
				return r.UUID(), nil
			}
		}
	}
	r, err := insertRow(c, "CT_Timeout_Policy", map[string]datum.Datum{"timeouts": datum.NewDatum(keys, vals)})
	if err != nil {
		return "", err
	}
	return r.UUID(), nil
}

func cmdDelZoneTP(c *Context, _ *vsView) error {
	a := c.Cmd.Args
	zone := zoneID(a[1])
	dp, err := datapath(c, a[0], "ct_zones")
	if err != nil {
		return err
	}
	if dp == nil {
		return Fatalf("datapath %s does not exist", a[0])
	}
	zones, _ := dp.Loaded("ct_zones")
	_, exists := zones.Find(datum.Atom{Type: datum.TypeInteger, Int: zone})
	if !exists {
		if !c.Cmd.Has("--if-exists") {
			return Fatalf("zone id %d does not exist", uint64(zone))
		}
		return nil
	}
	return dp.Remove("ct_zones", datum.Datum{Keys: []datum.Atom{{Type: datum.TypeInteger, Int: zone}}})
}

func cmdListZoneTP(c *Context, _ *vsView) error {
	dp, err := datapath(c, c.Cmd.Args[0], "ct_zones")
	if err != nil {
		return err
	}
	if dp == nil {
		return Fatalf("datapath: %s record not found", c.Cmd.Args[0])
	}
	zones, _ := dp.Loaded("ct_zones")
	for i, k := range zones.Keys {
		var b strings.Builder
		b.WriteString("Zone:" + strconv.FormatUint(uint64(k.Int), 10) + ", Timeout Policies: ")
		z, err := c.DB.Get(c.Ctx, "CT_Zone", zones.Values[i].Str, "timeout_policy")
		if err != nil {
			return err
		}
		var tp *dbcmd.Row
		if z != nil {
			if t, _ := z.Loaded("timeout_policy"); len(t.Keys) == 1 {
				if tp, err = c.DB.Get(c.Ctx, "CT_Timeout_Policy", t.Keys[0].Str, "timeouts"); err != nil {
					return err
				}
			}
		}
		if tp != nil {
			t, _ := tp.Loaded("timeouts")
			for j, tk := range t.Keys {
				b.WriteString(tk.Str + "=" + strconv.FormatUint(uint64(t.Values[j].Int), 10) + " ")
			}
		} else {
			b.WriteString("system default")
		}
		c.Out.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
	return nil
}

func cmdListDPCap(c *Context, _ *vsView) error {
	dp, err := datapath(c, c.Cmd.Args[0], "capabilities")
	if err != nil {
		return err
	}
	if dp == nil {
		return Fatalf("datapath \"%s\" record not found", c.Cmd.Args[0])
	}
	caps, _ := dp.Loaded("capabilities")
	var b strings.Builder
	for _, i := range smapHashOrder(caps) {
		b.WriteString(caps.Keys[i].Str + "=" + caps.Values[i].Str + " ")
	}
	c.Out.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	return nil
}

func cmdEmerReset(c *Context, _ *vsView) error {
	ctx := c.Ctx
	if _, err := c.OVS.Get(ctx, "manager_options"); err != nil {
		return err
	}
	if err := c.OVS.Set("manager_options", datum.Datum{Keys: []datum.Atom{}}); err != nil {
		return err
	}
	if err := c.OVS.Set("ssl", datum.Datum{Keys: []datum.Atom{}}); err != nil {
		return err
	}
	bridges, err := c.DB.All(ctx, "Bridge", "controller", "fail_mode", "mirrors", "netflow", "sflow", "ipfix", "flood_vlans", "other_config")
	if err != nil {
		return err
	}
	empty := datum.Datum{Keys: []datum.Atom{}}
	emptyMap := datum.Datum{Keys: []datum.Atom{}, Values: []datum.Atom{}}
	for _, br := range bridges {
		for _, col := range []string{"controller", "fail_mode", "mirrors", "netflow", "sflow", "ipfix", "flood_vlans"} {
			if err := br.Set(col, empty); err != nil {
				return err
			}
		}
		oc, _ := br.Loaded("other_config")
		keep := emptyMap
		if i, ok := oc.Find(datum.Atom{Type: datum.TypeString, Str: "hwaddr"}); ok {
			keep = datum.NewDatum([]datum.Atom{oc.Keys[i]}, []datum.Atom{oc.Values[i]})
		}
		if err := br.Set("other_config", keep); err != nil {
			return err
		}
	}
	ports, err := c.DB.All(ctx, "Port", "other_config")
	if err != nil {
		return err
	}
	for _, p := range ports {
		if err := p.Set("other_config", emptyMap); err != nil {
			return err
		}
	}
	ifaces, err := c.DB.All(ctx, "Interface", "ingress_policing_rate", "ingress_policing_burst")
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		for _, col := range []string{"ingress_policing_rate", "ingress_policing_burst"} {
			if err := i.Set(col, intDatum(0)); err != nil {
				return err
			}
		}
	}
	for _, t := range []string{"Mirror", "Controller", "Manager", "NetFlow", "SSL", "sFlow", "IPFIX", "Flow_Sample_Collector_Set"} {
		rows, err := c.DB.All(ctx, t, "_uuid")
		if err != nil {
			return err
		}
		for _, r := range rows {
			r.Delete()
		}
	}
	return nil
}
