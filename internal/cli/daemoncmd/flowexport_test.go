package daemoncmd_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

// apply -f carries a bridge's flow export settings (netflow, ipfix, sflow, collector_sets) to
// the daemon; a bad one is refused before anything is sent, naming the key.
func TestApplyCarriesFlowExport(t *testing.T) {
	fake, addr := serve(t)
	f := writeFile(t, `bridges:
  - name: br0
    netflow: {targets: ["127.0.0.1:2055"], active_timeout: -1, engine_type: 0, engine_id: 9, add_id_to_interface: true}
    ipfix: {targets: ["[::1]:4739"], sampling: 4294967295, cache_max_flows: 100, other_config: {enable-tunnel-sampling: "true"}}
    sflow: {targets: ["127.0.0.1:6343"], agent: lo, header: 128, polling: 0}
    collector_sets:
      - {id: 7, ipfix: {targets: ["127.0.0.1:4740"], cache_active_timeout: 3}}
`)
	if r := run(t, nil, false, "--daemon="+addr, "apply", "-f", f); r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := fake.Bridge("br0")
	if err != nil {
		t.Fatal(err)
	}
	n := func(v int) *int { return &v }
	want := model.Bridge{Name: "br0",
		NetFlow: &model.NetFlow{Targets: []string{"127.0.0.1:2055"}, ActiveTimeout: -1, EngineType: n(0), EngineID: n(9), AddIDToInterface: true},
		IPFIX: &model.IPFIX{Targets: []string{"[::1]:4739"}, Sampling: n(4294967295), CacheMaxFlows: n(100),
			OtherConfig: map[string]string{"enable-tunnel-sampling": "true"}},
		SFlow:         &model.SFlow{Targets: []string{"127.0.0.1:6343"}, Agent: "lo", Header: n(128), Polling: n(0)},
		CollectorSets: []model.CollectorSet{{ID: 7, IPFIX: model.IPFIX{Targets: []string{"127.0.0.1:4740"}, CacheActiveTimeout: n(3)}}},
	}
	got := b.Spec
	got.Ports = nil
	if !reflect.DeepEqual(got.Canonical(), want.Canonical()) {
		t.Errorf("bridge br0 = %+v\nwant %+v", got.Canonical(), want.Canonical())
	}

	bad := writeFile(t, "bridges:\n  - name: br1\n    sflow: {targets: [\"localhost:6343\"]}\n")
	r := run(t, nil, false, "--daemon="+addr, "apply", "-f", bad)
	if want := `bridges[0].sflow.targets[0]: "localhost:6343" is not IPv4:PORT or [IPv6]:PORT`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if _, err := fake.Bridge("br1"); err == nil {
		t.Error("an invalid file applied bridge br1")
	}
}
