package vdpa_test

import (
	"encoding/json"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// stockOVS is upstream Open vSwitch with DPDK (Debian's openvswitch-switch-dpdk), hw-offload off.
var stockOVS = vdpa.OVSState{Running: true, DPDKInitialized: true, OVSVersion: "3.1.0", DPDKVersion: "DPDK 22.11.4",
	IfaceTypes: []string{"afxdp", "afxdp-nonpmd", "bareudp", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient",
		"erspan", "geneve", "gre", "gtpu", "internal", "ip6erspan", "ip6gre", "lisp", "patch", "srv6", "stt",
		"system", "tap", "vxlan"},
	OtherConfig: map[string]string{"dpdk-init": "true"}}

// forkOVS is NVIDIA's OVS (MLNX_OFED/DOCA) with the dpdkvdpa type and hw-offload already on.
var forkOVS = func() vdpa.OVSState {
	o := stockOVS
	o.OVSVersion = "2.17.8-doca"
	o.IfaceTypes = append(append([]string{}, o.IfaceTypes...), "dpdkvdpa")
	o.OtherConfig = map[string]string{"dpdk-init": "true", "hw-offload": "true"}
	return o
}()

func offloaded(o vdpa.OVSState) vdpa.OVSState {
	o.OtherConfig = map[string]string{"dpdk-init": "true", "hw-offload": "true"}
	return o
}

type planCase struct {
	name    string
	fixture string
	req     vdpa.Request
	ovs     vdpa.OVSState
}

var planCases = []planCase{
	{"kernel-legacy", "cx6dx-legacy", vdpa.Request{Name: "vm1", PF: "0000:65:00.0", VF: 1,
		MAC: "02:11:22:33:44:55", MTU: 9000, MaxVQP: 4}, stockOVS},
	{"kernel-switchdev", "cx6dx-switchdev", vdpa.Request{Name: "vm1", PF: "enp101s0f0np0", VF: 1,
		MAC: "02:11:22:33:44:55", MaxVQP: 8}, offloaded(stockOVS)},
	{"kernel-grow", "cx6dx-switchdev", vdpa.Request{Name: "vm4", PF: "65:00.0", VF: 3, MAC: "02:00:00:00:00:04"}, offloaded(stockOVS)},
	{"kernel-virtio", "cx6dx-switchdev", vdpa.Request{Name: "ctr1", PF: "0000:65:00.0", VF: 0, BusDriver: "virtio_vdpa",
		MAC: "02:00:00:00:01:00"}, offloaded(stockOVS)},
	{"dpdk-pmd", "cx6dx-switchdev", vdpa.Request{Name: "vm2", PF: "0000:65:00.0", VF: 0, Mode: vdpa.ModeDPDKPMD,
		MAC: "02:11:22:33:44:66"}, stockOVS},
	{"ovs-fork", "cx6dx-switchdev", vdpa.Request{Name: "vm3", PF: "0000:65:00.0", VF: 1, Mode: vdpa.ModeOVSFork}, forkOVS},
}

// TestPlanGolden pins the dry-run plan of each mode (text and JSON).
func TestPlanGolden(t *testing.T) {
	for _, c := range planCases {
		t.Run(c.name, func(t *testing.T) {
			_, h := bootNamed(t, c.fixture)
			p, err := h.Plan(ctx, c.req, c.ovs, nil)
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "plan-"+c.name, []byte(p.Text()+"--- json\n"+string(js)+"\n"))
		})
	}
}

// TestPlanIsPure: BuildPlan over the same snapshot gives the same plan, and Plan never changes
// the host.
func TestPlanIsPure(t *testing.T) {
	k, h := bootNamed(t, "cx6dx-legacy")
	before := dump(t, k)
	req := planCases[0].req
	snap, err := h.Snapshot(ctx, req.PF)
	if err != nil {
		t.Fatal(err)
	}
	a, err := vdpa.BuildPlan(req, snap, stockOVS, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Plan(ctx, req, stockOVS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text() != b.Text() {
		t.Errorf("BuildPlan and Plan differ:\n%s\n%s", a.Text(), b.Text())
	}
	if k.Mutations() != 0 || dump(t, k) != before {
		t.Error("Plan changed the host")
	}
}
