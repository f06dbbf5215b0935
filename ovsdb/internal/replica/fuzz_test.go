package replica

import (
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// FuzzTableUpdates2 reads arbitrary bytes as a table-updates object on top of base, as a
// monitor reply or an update2. It must not panic; on an error the store must be unchanged
// and exactly one value consumed; when both the store and libovsdb's cache accept the input,
// their rows must be equal. Where libovsdb accepts what the store refuses, the store's error
// must be one of its deliberate strictnesses (ErrMalformed: a row update with other than one
// operation, a member twice, an integer written as a fraction or exponent, a bad uuid, an
// enum value outside the schema, a map not tagged "map"; a syntax error of jsontext, which
// refuses invalid UTF-8) or a bound (ErrTooLarge).
func FuzzTableUpdates2(f *testing.F) {
	fresh := reuse(f)
	f.Add([]byte(base()), true)
	f.Add([]byte(sub(`{"Port": {"P1": {"modify": {"tag": 4, "external_ids": ["map", [["owner", "x"]]]}}}}`)), false)
	f.Add([]byte(sub(`{"Port": {"P3": {"insert": {"name": "p2", "interfaces": ["uuid", "I2"]}}, "P2": {"delete": null}}}`)), false)
	f.Add(genReply(3), true)
	// A long digit run: libovsdb reads numbers as float64, so beyond 2^53 it rounds; no
	// comparison is possible there.
	bigNumber := regexp.MustCompile(`[0-9]{16}`)
	f.Fuzz(func(t *testing.T, raw []byte, initial bool) {
		s, o := fresh(t)
		before := snapshot(s)
		single := jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true))
		err := readCheck(s, string(raw), initial, single)
		if errors.Is(err, errNotConsumed) {
			t.Fatal(err)
		}
		if err != nil {
			if !reflect.DeepEqual(before, snapshot(s)) {
				t.Fatalf("store changed by a refused input: %v", err)
			}
		}
		oerr := o.apply(string(raw), initial)
		switch {
		case oerr != nil:
			// libovsdb refuses it (and may have applied part of it): nothing to compare.
		case err != nil:
			if !isStricter(err) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("libovsdb accepts what the store refuses: %v\ninput: %s", err, raw)
			}
		case bigNumber.Match(raw):
		default:
			compare(t, s, o, true)
		}
	})
}

// diffGen builds update2 messages for the rows of base from fuzz bytes.
type diffGen struct {
	b []byte
}

func (g *diffGen) n(k int) int {
	if len(g.b) == 0 {
		return 0
	}
	v := int(g.b[0]) % k
	g.b = g.b[1:]
	return v
}

func (g *diffGen) pick(vals ...string) string { return vals[g.n(len(vals))] }

func (g *diffGen) strMap() string {
	var pairs []string
	for range g.n(4) {
		pairs = append(pairs, fmt.Sprintf(`[%q, %q]`, g.pick("a", "b", "owner", "gen"), g.pick("1", "2", "ovsplane", strings.Repeat("v", 30))))
	}
	return `["map", [` + strings.Join(pairs, ",") + `]]`
}

func (g *diffGen) set(elems ...string) string {
	var out []string
	for range g.n(4) {
		out = append(out, g.pick(elems...))
	}
	if len(out) == 1 && g.n(2) == 0 {
		return out[0]
	}
	return `["set", [` + strings.Join(out, ",") + `]]`
}

func (g *diffGen) optional(vals ...string) string {
	if g.n(3) == 0 {
		return `["set", []]`
	}
	return g.pick(vals...)
}

func uuidRef(n int) string { return fmt.Sprintf(`["uuid", %q]`, uid(n)) }

// column returns a random column and diff value of table.
func (g *diffGen) column(table string) (string, string) {
	ifaces := []string{uuidRef(5), uuidRef(6), uuidRef(10)}
	switch table {
	case "Interface":
		switch g.n(12) {
		case 0:
			return "type", g.pick(`""`, `"internal"`, `"system"`)
		case 1:
			return "options", g.strMap()
		case 2:
			return "other_config", g.strMap()
		case 3:
			return "external_ids", g.strMap()
		case 4:
			return "ofport", g.optional("-1", "0", "7", "1099511627776")
		case 5:
			return "mtu_request", g.optional("1500", "9000")
		case 6:
			return "link_state", g.optional(`"up"`, `"down"`)
		case 7:
			return "admin_state", g.optional(`"up"`, `"down"`)
		case 8:
			return "mac_in_use", g.optional(`"aa:bb:cc:dd:ee:ff"`, `"AA:BB:CC:DD:EE:FF"`, `"x"`)
		case 9:
			return "error", g.optional(`"e"`, `"f"`)
		case 10:
			return g.pick("ingress_policing_rate", "ingress_policing_kpkts_burst"), g.pick("0", "10", "-3")
		default:
			var pairs []string
			for range g.n(3) {
				pairs = append(pairs, fmt.Sprintf(`[%q, %s]`, g.pick("rx_packets", "tx_packets"), g.pick("0", "5")))
			}
			return "statistics", `["map", [` + strings.Join(pairs, ",") + `]]`
		}
	case "Port":
		switch g.n(9) {
		case 0:
			return "interfaces", g.set(ifaces...)
		case 1:
			return "tag", g.optional("0", "10", "4095")
		case 2:
			return "trunks", g.set("1", "2", "3")
		case 3:
			return "vlan_mode", g.optional(`"access"`, `"trunk"`, `"dot1q-tunnel"`)
		case 4:
			return "lacp", g.optional(`"active"`, `"off"`)
		case 5:
			return "external_ids", g.strMap()
		case 6:
			return "qos", g.optional(uuidRef(7), uuidRef(8))
		case 7:
			return "bond_updelay", g.pick("0", "100")
		default:
			return "other_config", g.strMap()
		}
	case "Bridge":
		switch g.n(5) {
		case 0, 1:
			return "ports", g.set(uuidRef(3), uuidRef(4), uuidRef(9))
		case 2:
			return "external_ids", g.strMap()
		case 3:
			return "fail_mode", g.optional(`"secure"`, `"standalone"`)
		default:
			return "protocols", g.set(`"OpenFlow10"`, `"OpenFlow13"`, `"OpenFlow15"`)
		}
	case "QoS":
		return "other_config", g.strMap()
	default: // Open_vSwitch
		switch g.n(3) {
		case 0:
			return "cur_cfg", g.pick("1", "2")
		case 1:
			return "iface_types", g.set(`"internal"`, `"system"`, `"vxlan"`)
		default:
			return "external_ids", g.strMap()
		}
	}
}

// message returns one update2 message: a few row updates, mostly modifies of base's rows,
// sometimes an insert or delete of p3/i3 (which may be inconsistent).
func (g *diffGen) message() string {
	rows := map[string]map[int]string{}
	for range 1 + g.n(3) {
		var table string
		var id int
		switch g.n(6) {
		case 0:
			table, id = "Interface", 5+g.n(2)
		case 1:
			table, id = "Port", 3+g.n(2)
		case 2:
			table, id = "Bridge", 2
		case 3:
			table, id = "QoS", 7+g.n(2)
		case 4:
			table, id = "Open_vSwitch", 1
		default:
			switch g.n(4) {
			case 0:
				table, id = "Port", 9
			case 1:
				table, id = "Interface", 10
			case 2:
				table, id = "Port", 3+g.n(2)
			default:
				table, id = "Interface", 5+g.n(2)
			}
			if rows[table] == nil {
				rows[table] = map[int]string{}
			}
			switch g.n(2) {
			case 0:
				rows[table][id] = `{"delete": null}`
			default:
				name := map[int]string{9: "p3", 10: "p3", 3: "p1", 4: "p2", 5: "p1", 6: "p2"}[id]
				rows[table][id] = fmt.Sprintf(`{"insert": {"name": %q}}`, name)
			}
			continue
		}
		if rows[table] == nil {
			rows[table] = map[int]string{}
		}
		cols := map[string]string{}
		for range 1 + g.n(3) {
			c, v := g.column(table)
			cols[c] = v
		}
		var parts []string
		for c, v := range cols {
			parts = append(parts, fmt.Sprintf("%q: %s", c, v))
		}
		rows[table][id] = `{"modify": {` + strings.Join(parts, ", ") + `}}`
	}
	var tables []string
	for table, rs := range rows {
		var parts []string
		for id, u := range rs {
			parts = append(parts, fmt.Sprintf("%q: %s", uid(id), u))
		}
		tables = append(tables, fmt.Sprintf("%q: {%s}", table, strings.Join(parts, ", ")))
	}
	return "{" + strings.Join(tables, ", ") + "}"
}

// FuzzDiff applies a sequence of random update2 messages, built from the fuzz bytes over the
// rows of base, to the store and to libovsdb's cache: both must accept or both refuse each
// message, and after each accepted one every row must be equal. A refused message must leave
// the store unchanged.
func FuzzDiff(f *testing.F) {
	fresh := reuse(f)
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 0, 0, 2, 1, 5, 1, 2, 3, 200, 7, 1, 1, 5, 9})
	f.Add([]byte("modify the bridge ports and the port interfaces, then delete"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, o := fresh(t)
		g := &diffGen{b: b}
		for len(g.b) > 0 {
			msg := g.message()
			before := snapshot(s)
			err := read(s, msg, false)
			oerr := o.apply(msg, false)
			if (err == nil) != (oerr == nil) {
				t.Fatalf("store: %v, libovsdb: %v\nmessage: %s", err, oerr, msg)
			}
			if err != nil {
				if !reflect.DeepEqual(before, snapshot(s)) {
					t.Fatalf("store changed by a refused message: %v", err)
				}
				return // libovsdb may have applied part of it
			}
			compare(t, s, o, true)
			if t.Failed() {
				t.Fatalf("after message %s", msg)
			}
		}
	})
}

// reuse returns a function that gives a store and a cache holding base, the same two each
// time (a monitor reply replaces all of both), since building the schema's models costs more
// than a fuzz input.
func reuse(f *testing.F) func(t *testing.T) (*Store, *oracle) {
	s := newTestStore(f, Options{Statistics: true})
	o := newOracle(f)
	return func(t *testing.T) (*Store, *oracle) {
		t.Helper()
		mustRead(t, s, base(), true)
		if err := o.apply(base(), true); err != nil {
			t.Fatal(err)
		}
		return s, o
	}
}
