package daemoncmd_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

// apply -f carries a port's QoS with its queues and an interface's ingress policing to the
// daemon; a bad one is refused before anything is sent, naming the key.
func TestApplyCarriesQoS(t *testing.T) {
	fake, addr := serve(t)
	f := writeFile(t, `bridges:
  - name: br0
    ports:
      - name: p0
        qos: {type: linux-htb, max_rate: 10000000000, queues: [{id: 4294967295, min_rate: 1000, burst: 8000, priority: 7, dscp: 0}]}
        interfaces: [{name: p0, ingress_policing_rate: 4294967295, ingress_policing_burst: 100}]
      - name: d0
        qos: {type: trtcm-policer, cir: 100000, cbs: 2000, eir: 200000, ebs: 3000, queues: [{id: 1, cir: 10, cbs: 20, eir: 30, ebs: 40}]}
        interfaces: [{name: d0, ingress_policing_kpkts_rate: 5, ingress_policing_kpkts_burst: 1}]
`)
	if r := run(t, nil, false, "--daemon="+addr, "apply", "-f", f); r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	n := func(v int) *int { return &v }
	want := []model.Port{
		{Name: "d0", QoS: &model.QoS{Type: "trtcm-policer", CIR: n(100000), CBS: n(2000), EIR: n(200000), EBS: n(3000),
			Queues: []model.Queue{{ID: 1, CIR: n(10), CBS: n(20), EIR: n(30), EBS: n(40)}}},
			Interfaces: []model.Interface{{Name: "d0", IngressPolicingKpktsRate: n(5), IngressPolicingKpktsBurst: n(1)}}},
		{Name: "p0", QoS: &model.QoS{Type: "linux-htb", MaxRate: n(10000000000),
			Queues: []model.Queue{{ID: 4294967295, MinRate: n(1000), Burst: n(8000), Priority: n(7), DSCP: n(0)}}},
			Interfaces: []model.Interface{{Name: "p0", IngressPolicingRate: n(4294967295), IngressPolicingBurst: n(100)}}},
	}
	for _, w := range want {
		got, err := fake.Port(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Spec.Canonical(), w.Canonical()) {
			t.Errorf("port %s = %+v\nwant %+v", w.Name, got.Spec.Canonical(), w.Canonical())
		}
	}

	bad := writeFile(t, "bridges:\n  - name: br1\n    ports:\n      - {name: q0, qos: {type: egress-policer, cir: 10}}\n")
	r := run(t, nil, false, "--daemon="+addr, "apply", "-f", bad)
	if want := `bridges[0].ports[0].qos.cbs: required`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if _, err := fake.Bridge("br1"); err == nil {
		t.Error("an invalid file applied bridge br1")
	}
}

// apply -f carries a bridge's mirrors; a mirror naming a port the bridge lacks is refused
// before anything is sent, naming the key.
func TestApplyCarriesMirrors(t *testing.T) {
	fake, addr := serve(t)
	f := writeFile(t, `bridges:
  - name: br0
    mirrors:
      - {name: span, select_src_port: [p1], select_dst_port: [p1, p2], select_vlan: [10, 20], output_port: p3, snaplen: 128}
      - {name: all, select_all: true, output_vlan: 4000}
    ports:
      - {name: p1, interfaces: [{name: p1}]}
      - {name: p2, interfaces: [{name: p2}]}
      - {name: p3, interfaces: [{name: p3}]}
`)
	if r := run(t, nil, false, "--daemon="+addr, "apply", "-f", f); r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := fake.Bridge("br0")
	if err != nil {
		t.Fatal(err)
	}
	n := func(v int) *int { return &v }
	want := model.Bridge{Name: "br0", Mirrors: []model.Mirror{
		{Name: "span", SelectSrcPorts: []string{"p1"}, SelectDstPorts: []string{"p1", "p2"}, SelectVLANs: []int{10, 20}, OutputPort: "p3", Snaplen: n(128)},
		{Name: "all", SelectAll: true, OutputVLAN: n(4000)}}}
	got := b.Spec
	got.Ports = nil
	if !reflect.DeepEqual(got.Canonical(), want.Canonical()) {
		t.Errorf("bridge br0 = %+v\nwant %+v", got.Canonical(), want.Canonical())
	}

	bad := writeFile(t, "bridges:\n  - name: br1\n    mirrors: [{name: m, select_all: true, output_port: nope}]\n    ports: [{name: q1, interfaces: [{name: q1}]}]\n")
	r := run(t, nil, false, "--daemon="+addr, "apply", "-f", bad)
	if want := `bridges[0].mirrors[0].output_port: no port "nope" on this bridge`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}
