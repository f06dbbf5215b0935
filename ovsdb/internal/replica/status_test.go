package replica

import (
	"maps"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// TestInterfaceStatusMatchesTheRow checks that the status scan reads what the materialised
// rows hold, for interfaces with and without each status column, statistics included.
func TestInterfaceStatusMatchesTheRow(t *testing.T) {
	s := newTestStore(t, Options{Statistics: true})
	mustRead(t, s, base(), true)
	mustRead(t, s, sub(`{"Interface": {"I2": {"modify": {"admin_state": "down", "mtu": 1500,
		"statistics": ["map", [["rx_packets", 7], ["tx_packets", 9]]], "external_ids": ["map", [["owner", "x"]]]}}}}`), false)
	want := map[string]*vswitch.Interface{}
	s.Each(vswitch.InterfaceTable, func(m model.Model) bool {
		i := m.(*vswitch.Interface)
		want[i.Name] = i
		return true
	})
	got := map[string]InterfaceStatus{}
	s.EachInterfaceStatus(func(st InterfaceStatus) bool {
		got[st.Name] = st
		return true
	})
	if len(got) != len(want) || len(got) != 2 {
		t.Fatalf("status of %d interfaces, %d rows", len(got), len(want))
	}
	for name, i := range want {
		st := got[name]
		one, ok := s.InterfaceStatusOf(name)
		if !ok || one.Name != st.Name || one.Ofport != st.Ofport || one.Error != st.Error {
			t.Errorf("%s: InterfaceStatusOf %+v, the scan %+v", name, one, st)
		}
		ext := map[string]string{}
		for k, v := range st.ExternalIDs.All() {
			ext[k] = v
		}
		if len(ext) == 0 {
			ext = nil
		}
		if st.Type != i.Type || st.Error != deref(i.Error) || st.LinkState != deref(i.LinkState) ||
			st.AdminState != deref(i.AdminState) || st.MAC != deref(i.MACInUse) ||
			st.Ofport != deref(i.Ofport) || st.HasOfport != (i.Ofport != nil) || st.MTU != deref(i.MTU) ||
			st.HasMTU != (i.MTU != nil) || !maps.Equal(st.Statistics, i.Statistics) || !maps.Equal(ext, i.ExternalIDs) {
			t.Errorf("%s: status %+v, row %+v", name, st, i)
		}
	}
	if st := got["p2"]; st.AdminState != "down" || st.MTU != 1500 || st.Statistics["tx_packets"] != 9 || st.ExternalIDs.Get("owner") != "x" {
		t.Errorf("p2 after the modify: %+v", st)
	}
	if _, ok := s.InterfaceStatusOf("nope"); ok {
		t.Error("status of an absent interface")
	}
}
