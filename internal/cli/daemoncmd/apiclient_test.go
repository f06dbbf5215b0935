package daemoncmd_test

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/api/client"
	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/model"
)

func TestEnvAddrIsAPIClients(t *testing.T) {
	if daemoncmd.EnvAddr != client.EnvAddr {
		t.Errorf("daemoncmd's %q, api/client's %q", daemoncmd.EnvAddr, client.EnvAddr)
	}
}

// TestWireStructsAgainstAPIServer sends every field vsctl's wire structs carry to the real
// API server and reads them back: each must arrive as model values equal to those sent.
func TestWireStructsAgainstAPIServer(t *testing.T) {
	fake, addr := serve(t)
	ip := func(v int) *int { return &v }
	br := model.Bridge{Name: "brw", DatapathType: "netdev", FailMode: "secure", Protocols: []string{"OpenFlow13"},
		Controllers: []string{"tcp:127.0.0.1:6653"}, OtherConfig: map[string]string{"hwaddr": "aa:bb:cc:dd:ee:ff"},
		ExternalIDs: map[string]string{"owner": "test"}}
	port := model.Port{Name: "bond0", Tag: ip(7), Trunks: []int{10, 20}, BondMode: "balance-slb", VLANMode: "native-tagged", LACP: "active",
		OtherConfig: map[string]string{"lacp-time": "fast"}, ExternalIDs: map[string]string{"vm": "v1"},
		Interfaces: []model.Interface{
			{Name: "e1", Type: "internal", Options: map[string]string{"k": "v"}, MTURequest: ip(9000), OFPortRequest: ip(12),
				OtherConfig: map[string]string{"o": "1"}, ExternalIDs: map[string]string{"iface-id": "x"}},
			{Name: "e2"},
		}}
	got, err := daemoncmd.ApplyThenGet(t.Context(), addr, br, port)
	if err != nil {
		t.Fatal(err)
	}
	if got.Bridge != "brw" || !reflect.DeepEqual(got.Spec, port) {
		t.Errorf("read back on %q:\n%+v\nwant\n%+v", got.Bridge, got.Spec, port)
	}
	b, err := fake.Bridge("brw")
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.Name != br.Name || b.Spec.DatapathType != br.DatapathType || b.Spec.FailMode != br.FailMode ||
		!reflect.DeepEqual(b.Spec.Protocols, br.Protocols) || !reflect.DeepEqual(b.Spec.Controllers, br.Controllers) ||
		!reflect.DeepEqual(b.Spec.OtherConfig, br.OtherConfig) || !reflect.DeepEqual(b.Spec.ExternalIDs, br.ExternalIDs) {
		t.Errorf("the daemon holds bridge %+v, want %+v", b.Spec, br)
	}
}
