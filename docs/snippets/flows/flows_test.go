package flows

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestSpread(t *testing.T) {
	h := sdktest.NewFakeHost(t, &Spread{})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	fs, err := h.Flows(api.BridgeFacts{Name: "br0", Ports: []api.BridgePort{
		{Port: "uplink", Interface: "uplink", Type: "dpdk", Ofport: 1},
		{Port: "vhu1", Interface: "vhu1", Type: "dpdkvhostuserclient", Ofport: 2},
		{Port: "vhu2", Interface: "vhu2", Type: "dpdkvhostuserclient", Ofport: 3},
	}})
	if err != nil { // the fake host applies the daemon's checks (cookies, group ids, syntax)
		t.Fatal(err)
	}
	if len(fs.Groups) != 1 || len(fs.Groups[0].Buckets) != 2 || fs.Flows[0].Actions != "group:43776" {
		t.Fatalf("flow set %+v", fs)
	}
}
