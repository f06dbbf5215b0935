package replica

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// base is a small switch: root, bridge br0 with ports p1 (interface i1) and p2 (i2), a QoS.
func base() string {
	return strings.NewReplacer("ROOT", uid(1), "BR", uid(2), "P1", uid(3), "P2", uid(4), "I1", uid(5), "I2", uid(6), "Q1", uid(7), "Q2", uid(8)).Replace(`{
 "Open_vSwitch": {"ROOT": {"initial": {"bridges": ["uuid", "BR"], "cur_cfg": 3, "ovs_version": "3.1.0",
   "iface_types": ["set", ["internal", "system"]]}}},
 "Bridge": {"BR": {"initial": {"name": "br0", "ports": ["set", [["uuid", "P1"], ["uuid", "P2"]]],
   "external_ids": ["map", [["owner", "ovsplane"]]], "fail_mode": "secure", "protocols": "OpenFlow13"}}},
 "Port": {
  "P1": {"initial": {"name": "p1", "interfaces": ["uuid", "I1"], "tag": 10, "vlan_mode": "access",
    "qos": ["uuid", "Q1"], "external_ids": ["map", [["owner", "ovsplane"], ["gen", "1"]]]}},
  "P2": {"initial": {"name": "p2", "interfaces": ["uuid", "I2"], "trunks": ["set", [1, 2, 3]]}}},
 "Interface": {
  "I1": {"initial": {"name": "p1", "type": "internal", "ofport": 1, "link_state": "up",
    "mac_in_use": "aa:bb:cc:dd:ee:01", "options": ["map", [["k", "v"]]]}},
  "I2": {"initial": {"name": "p2", "type": "", "ofport": -1, "error": "could not open"}}},
 "QoS": {"Q1": {"initial": {"type": "linux-htb", "other_config": ["map", [["max-rate", "1000"]]]}},
         "Q2": {"initial": {"type": "linux-hfsc"}}}
}`)
}

func sub(s string) string {
	return strings.NewReplacer("ROOT", uid(1), "BR", uid(2), "P1", uid(3), "P2", uid(4), "I1", uid(5), "I2", uid(6),
		"Q1", uid(7), "Q2", uid(8), "P3", uid(9), "I3", uid(10)).Replace(s)
}

func ptr[T any](v T) *T { return &v }

// TestColumnKinds applies one update per column kind and operation to base, checks the
// resulting column against the expected value and the whole store against libovsdb's cache.
func TestColumnKinds(t *testing.T) {
	cases := []struct {
		name, update string
		check        func(t *testing.T, s *Store)
	}{
		{"initial", `{}`, func(t *testing.T, s *Store) {
			p, _ := s.Port("p1")
			i, _ := s.Interface("p1")
			b, _ := s.Bridge("br0")
			want := &vswitch.Port{UUID: uid(3), Name: "p1", Interfaces: []string{uid(5)}, Tag: ptr(10), VLANMode: ptr("access"),
				QOS: ptr(uid(7)), ExternalIDs: map[string]string{"owner": "ovsplane", "gen": "1"}}
			if !reflect.DeepEqual(p, want) {
				t.Errorf("port p1 = %+v, want %+v", p, want)
			}
			if i.Type != "internal" || *i.Ofport != 1 || *i.LinkState != "up" || *i.MACInUse != "aa:bb:cc:dd:ee:01" || i.Options["k"] != "v" || i.AdminState != nil {
				t.Errorf("interface p1 = %+v", i)
			}
			if !reflect.DeepEqual(b.Ports, []string{uid(3), uid(4)}) || *b.FailMode != "secure" || !reflect.DeepEqual(b.Protocols, []string{"OpenFlow13"}) {
				t.Errorf("bridge = %+v", b)
			}
			if r := s.Root(); r == nil || r.CurCfg != 3 || *r.OVSVersion != "3.1.0" {
				t.Errorf("root = %+v", r)
			}
		}},
		{"string modify", `{"Interface": {"I2": {"modify": {"type": "internal"}}}}`, func(t *testing.T, s *Store) {
			if i, _ := s.Interface("p2"); i.Type != "internal" {
				t.Errorf("type = %q", i.Type)
			}
		}},
		{"optional int modify", `{"Interface": {"I1": {"modify": {"ofport": 7, "mtu": 1500}}}, "Port": {"P1": {"modify": {"tag": ["set", []]}}}}`, func(t *testing.T, s *Store) {
			i, _ := s.Interface("p1")
			p, _ := s.Port("p1")
			if *i.Ofport != 7 || *i.MTU != 1500 || p.Tag != nil {
				t.Errorf("ofport %v mtu %v tag %v", i.Ofport, i.MTU, p.Tag)
			}
		}},
		{"optional int outside int32", `{"Interface": {"I1": {"modify": {"mtu_request": 4294967296}}}}`, func(t *testing.T, s *Store) {
			if i, _ := s.Interface("p1"); *i.MTURequest != 4294967296 {
				t.Errorf("mtu_request %v", *i.MTURequest)
			}
		}},
		{"enum modify", `{"Interface": {"I1": {"modify": {"link_state": "down", "admin_state": "up"}}}, "Port": {"P1": {"modify": {"vlan_mode": ["set", []], "lacp": "active"}}}}`, func(t *testing.T, s *Store) {
			i, _ := s.Interface("p1")
			p, _ := s.Port("p1")
			if *i.LinkState != "down" || *i.AdminState != "up" || p.VLANMode != nil || *p.LACP != "active" {
				t.Errorf("link %v admin %v vlan %v lacp %v", i.LinkState, i.AdminState, p.VLANMode, p.LACP)
			}
		}},
		{"set of uuid modify", `{"Bridge": {"BR": {"modify": {"ports": ["set", [["uuid", "P2"], ["uuid", "P3"]]]}}},
			"Port": {"P3": {"insert": {"name": "p3", "interfaces": ["uuid", "I3"]}}}, "Interface": {"I3": {"insert": {"name": "p3"}}}}`, func(t *testing.T, s *Store) {
			b, _ := s.Bridge("br0")
			if !reflect.DeepEqual(b.Ports, []string{uid(3), uid(9)}) {
				t.Errorf("ports %v", b.Ports)
			}
		}},
		{"set of int modify", `{"Port": {"P2": {"modify": {"trunks": ["set", [3, 4]]}}}}`, func(t *testing.T, s *Store) {
			if p, _ := s.Port("p2"); !reflect.DeepEqual(p.Trunks, []int{1, 2, 4}) {
				t.Errorf("trunks %v", p.Trunks)
			}
		}},
		{"set emptied", `{"Port": {"P2": {"modify": {"trunks": ["set", [1, 2, 3]]}}}}`, func(t *testing.T, s *Store) {
			if p, _ := s.Port("p2"); p.Trunks != nil {
				t.Errorf("trunks %#v", p.Trunks)
			}
		}},
		{"map modify", `{"Port": {"P1": {"modify": {"external_ids": ["map", [["owner", "ovsplane"], ["gen", "2"], ["new", "x"]]]}}}}`, func(t *testing.T, s *Store) {
			p, _ := s.Port("p1")
			if !reflect.DeepEqual(p.ExternalIDs, map[string]string{"gen": "2", "new": "x"}) {
				t.Errorf("external_ids %v", p.ExternalIDs)
			}
			tags, _ := s.Tags(vswitch.PortTable, "p1")
			if tags.Get("gen") != "2" || tags.Len() != 2 {
				t.Errorf("tags %v", tags)
			}
		}},
		{"map emptied", `{"Interface": {"I1": {"modify": {"options": ["map", [["k", "v"]]]}}}}`, func(t *testing.T, s *Store) {
			if i, _ := s.Interface("p1"); i.Options != nil {
				t.Errorf("options %#v", i.Options)
			}
		}},
		{"optional uuid modify", `{"Port": {"P1": {"modify": {"qos": ["uuid", "Q2"]}}, "P2": {"modify": {"qos": ["uuid", "Q1"]}}}}`, func(t *testing.T, s *Store) {
			p1, _ := s.Port("p1")
			p2, _ := s.Port("p2")
			if *p1.QOS != uid(8) || *p2.QOS != uid(7) {
				t.Errorf("qos %v %v", *p1.QOS, *p2.QOS)
			}
		}},
		{"optional uuid cleared", `{"Port": {"P1": {"modify": {"qos": ["set", []]}}}}`, func(t *testing.T, s *Store) {
			if p, _ := s.Port("p1"); p.QOS != nil {
				t.Errorf("qos %v", p.QOS)
			}
		}},
		{"optional string", `{"Interface": {"I2": {"modify": {"error": ["set", []], "mac_in_use": "AA:BB:CC:DD:EE:02"}}}}`, func(t *testing.T, s *Store) {
			if i, _ := s.Interface("p2"); i.Error != nil || *i.MACInUse != "AA:BB:CC:DD:EE:02" {
				t.Errorf("error %v mac %v", i.Error, i.MACInUse)
			}
		}},
		{"small table modify", `{"Open_vSwitch": {"ROOT": {"modify": {"cur_cfg": 4, "iface_types": ["set", ["system", "vxlan"]]}}},
			"QoS": {"Q1": {"modify": {"other_config": ["map", [["max-rate", "2000"]]]}}}}`, func(t *testing.T, s *Store) {
			r := s.Root()
			if r.CurCfg != 4 || !reflect.DeepEqual(r.IfaceTypes, []string{"internal", "vxlan"}) {
				t.Errorf("root %+v", r)
			}
		}},
		{"delete", `{"Port": {"P2": {"delete": null}}, "Interface": {"I2": {"delete": null}}, "QoS": {"Q2": {"delete": null}},
			"Bridge": {"BR": {"modify": {"ports": ["uuid", "P2"]}}}}`, func(t *testing.T, s *Store) {
			if _, ok := s.Port("p2"); ok || s.Has(vswitch.InterfaceTable, uid(6)) || s.Count(vswitch.QoSTable) != 1 {
				t.Error("p2 still there")
			}
		}},
		{"replace a port by name in one message", `{"Port": {"P3": {"insert": {"name": "p2", "interfaces": ["uuid", "I2"]}}, "P2": {"delete": null}},
			"Bridge": {"BR": {"modify": {"ports": ["set", [["uuid", "P3"], ["uuid", "P2"]]]}}}}`, func(t *testing.T, s *Store) {
			if p, ok := s.Port("p2"); !ok || p.UUID != uid(9) {
				t.Errorf("p2 = %+v", p)
			}
		}},
		{"replace a port by name, delete last", `{"Port": {"P2": {"delete": null}, "P3": {"insert": {"name": "p2", "interfaces": ["uuid", "I2"]}}}}`, func(t *testing.T, s *Store) {
			if p, ok := s.Port("p2"); !ok || p.UUID != uid(9) {
				t.Errorf("p2 = %+v", p)
			}
		}},
		{"unknown table and column", `{"SSL": {"ROOT": {"insert": {"x": 1}}}, "Port": {"P1": {"modify": {"status": ["map", [["a", "b"]]], "mac": "x"}}}}`, func(t *testing.T, s *Store) {
			if p, _ := s.Port("p1"); p.Status != nil || p.MAC != nil {
				t.Errorf("port kept unknown columns: %+v", p)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t, Options{})
			o := newOracle(t)
			mustRead(t, s, base(), true)
			if err := o.apply(base(), true); err != nil {
				t.Fatal(err)
			}
			u := sub(c.update)
			mustRead(t, s, u, false)
			if err := o.apply(u, false); err != nil {
				t.Fatalf("libovsdb: %v", err)
			}
			c.check(t, s)
			compare(t, s, o, false)
		})
	}
}

// TestInconsistent checks the updates Commit refuses, and that they change nothing.
func TestInconsistent(t *testing.T) {
	for name, u := range map[string]string{
		"modify absent":  `{"Port": {"P3": {"modify": {"tag": 1}}}}`,
		"delete absent":  `{"Interface": {"I3": {"delete": null}}}`,
		"insert present": `{"QoS": {"Q1": {"insert": {}}}}`,
		"rename":         `{"Interface": {"I1": {"modify": {"name": "x"}}}}`,
		"rename bridge":  `{"Bridge": {"BR": {"modify": {"name": "x"}}}}`,
		"partly bad":     `{"Port": {"P1": {"modify": {"tag": 5}}, "P3": {"delete": null}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t, Options{})
			o := newOracle(t)
			mustRead(t, s, base(), true)
			_ = o.apply(base(), true)
			before := snapshot(s)
			err := read(s, sub(u), false)
			if !isInconsistent(err) {
				t.Fatalf("err = %v, want ErrInconsistent", err)
			}
			if oerr := o.apply(sub(u), false); oerr == nil {
				t.Errorf("libovsdb accepts %s", u)
			}
			if !reflect.DeepEqual(before, snapshot(s)) {
				t.Error("store changed")
			}
		})
	}
	s := newTestStore(t, Options{})
	if err := read(s, sub(`{"Port": {"P1": {"modify": {}}}}`), true); !isInconsistent(err) {
		t.Errorf("modify in a monitor reply: %v", err)
	}
}

func isInconsistent(err error) bool {
	return errorsIs(err, ErrInconsistent)
}
