//go:build linux

package stripeplugin

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestVethLanesHostWork attaches a stripe-lanes object of kind dpdk in a namespace: Attach makes
// one veth pair per lane (lane end and engine end "e", up) and returns DPDK af_packet ports on
// the lane ends; a replay adopts the pairs; a foreign device with a lane's name is refused with
// nothing left behind; Detach deletes the pairs, and a second Detach is fine.
func TestVethLanesHostWork(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	ns := lab.NewNetns(t)
	h := sdktest.NewFakeHost(t, New(Options{}))
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	req := api.PortRequest{Bridge: "br0", Name: "stl4", Type: LanesType, Options: map[string]string{"count": "2", "kind": "dpdk", "netns": ns.Name, "mtu": "1400"}}
	a, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"net_af_packet1004,iface=stl4", "net_af_packet1005,iface=stl5"}
	if len(a.Ports) != 2 {
		t.Fatalf("ports %+v, want 2", a.Ports)
	}
	for i, p := range a.Ports {
		in := p.Interfaces[0]
		if in.Type != "dpdk" || in.Options["dpdk-devargs"] != want[i] || p.ExternalIDs[LaneExternalID] != "stl4" {
			t.Errorf("lane %d: %+v, want type dpdk with devargs %s", i, p, want[i])
		}
	}
	for _, dev := range []string{"stl4", "stl4e", "stl5", "stl5e"} {
		out := ns.Run(t, "ip", "-o", "link", "show", "dev", dev)
		if !strings.Contains(out, "mtu 1400") || !strings.Contains(out, ",UP") {
			t.Errorf("%s: %s; want it up with mtu 1400", dev, out)
		}
	}
	if !strings.Contains(ns.Run(t, "ip", "-o", "link", "show", "dev", "stl4"), "stl4@stl4e") {
		t.Errorf("stl4 is not paired with stl4e")
	}
	req.Replay = true
	if b, err := h.Attach(req); err != nil || len(b.Ports) != 2 || b.Ports[1].Interfaces[0].Options["dpdk-devargs"] != want[1] {
		t.Errorf("replay: %+v, %v; want the same lanes adopted", b, err)
	}
	// stl7 is a veth paired with x7, not a lane's pair: Attach refuses and deletes the stl6 pair it made.
	ns.Run(t, "ip", "link", "add", "stl7", "type", "veth", "peer", "name", "x7")
	_, err = h.Attach(api.PortRequest{Bridge: "br0", Name: "stl6", Type: LanesType, Options: map[string]string{"count": "2", "kind": "system", "netns": ns.Name}})
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "stl7") {
		t.Errorf("stl6+stl7 over a foreign stl7: %v, want FailedPrecondition naming stl7", err)
	}
	if out, err := ns.Exec(t.Context(), "ip", "-o", "link", "show", "dev", "stl6"); err == nil {
		t.Errorf("stl6 left behind after a refused Attach: %s", out)
	}
	req.Replay = false
	for range 2 {
		if err := h.Detach(req.Bridge, req.Name); err != nil {
			t.Errorf("detach: %v", err)
		}
	}
	for _, dev := range []string{"stl4", "stl4e", "stl5", "stl5e"} {
		if out, err := ns.Exec(t.Context(), "ip", "-o", "link", "show", "dev", dev); err == nil {
			t.Errorf("%s left after Detach: %s", dev, out)
		}
	}
}
