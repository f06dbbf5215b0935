package config

import (
	"strings"
	"testing"
)

// TestFlowExportConfig: a bridge's netflow, ipfix, sflow and collector_sets keys load into the
// model with their values, and bad values are refused with their key path and what is accepted.
func TestFlowExportConfig(t *testing.T) {
	c := mustLoad(t, `
bridges:
  - name: br0
    netflow:
      targets: ["127.0.0.1:2055", "[2001:db8::1]:2055"]
      active_timeout: -1
      engine_type: 3
      engine_id: 7
      add_id_to_interface: true
    ipfix:
      targets: ["192.0.2.1:4739"]
      sampling: 64
      cache_active_timeout: 60
      other_config: {enable-tunnel-sampling: "true"}
    sflow:
      targets: ["192.0.2.1:6343"]
      agent: br0
      polling: 10
    collector_sets:
      - id: 4294967295
        ipfix: {targets: ["192.0.2.1:4740"], cache_max_flows: 9, other_config: {enable-tunnel-sampling: "false", virtual_obs_id: vn-1}}
`, nil)
	b := c.Bridges[0]
	if n := b.NetFlow; n == nil || n.ActiveTimeout != -1 || *n.EngineType != 3 || *n.EngineID != 7 || !n.AddIDToInterface || len(n.Targets) != 2 {
		t.Errorf("netflow %+v", n)
	}
	if x := b.IPFIX; x == nil || *x.Sampling != 64 || *x.CacheActiveTimeout != 60 || x.OtherConfig["enable-tunnel-sampling"] != "true" {
		t.Errorf("ipfix %+v", x)
	}
	if s := b.SFlow; s == nil || s.Agent != "br0" || *s.Polling != 10 || s.Sampling != nil {
		t.Errorf("sflow %+v", s)
	}
	if cs := b.CollectorSets; len(cs) != 1 || cs[0].ID != 4294967295 || *cs[0].IPFIX.CacheMaxFlows != 9 || cs[0].IPFIX.OtherConfig["virtual_obs_id"] != "vn-1" {
		t.Errorf("collector_sets %+v", cs)
	}

	_, err := load(t, `
bridges:
  - name: br0
    netflow:
      targets: ["collector.example:2055", "127.0.0.1:2055", "127.0.0.1:2055", "127.0.0.1", "[fe80::1%eth0]:2055"]
      active_timeout: -5
      engine_id: 256
    ipfix:
      targets: []
      cache_active_timeout: 5000
      other_config: {enable-tunnel-sampling: "yes", flavour: x}
    sflow:
      targets: ["127.0.0.1:0"]
      header: 0
    collector_sets:
      - id: 1
        ipfix: {targets: ["127.0.0.1:4739"], sampling: 10, obs_domain_id: 1, other_config: {enable-input-sampling: "true"}}
      - id: 1
        ipfix: {targets: ["127.0.0.1:4739"]}
`, nil)
	if err == nil {
		t.Fatal("bad flow export settings accepted")
	}
	for _, want := range []string{
		`bridges[0].netflow.targets[0]: "collector.example:2055" is not IPv4:PORT or [IPv6]:PORT`,
		`bridges[0].netflow.targets[2]: duplicate target "127.0.0.1:2055" (also targets[1])`,
		`bridges[0].netflow.targets[3]: "127.0.0.1" is not IPv4:PORT`,
		`bridges[0].netflow.targets[4]: "[fe80::1%eth0]:2055" is not`,
		`bridges[0].netflow.active_timeout: -5 is out of range: use -1 (no active expiry), 0 (OVS's default, 600)`,
		`bridges[0].netflow.engine_id: 256 is out of range 0..255`,
		`bridges[0].ipfix.targets: required`,
		`bridges[0].ipfix.cache_active_timeout: 5000 is out of range 0..4200`,
		`bridges[0].ipfix.other_config.enable-tunnel-sampling: "yes" is not "true" or "false"`,
		`bridges[0].ipfix.other_config.flavour: unknown key`,
		`bridges[0].sflow.targets[0]: "127.0.0.1:0" has port 0`,
		`bridges[0].sflow.header: 0 is out of range 1..9216`,
		`bridges[0].collector_sets[0].ipfix.sampling: a collector set takes this from the OpenFlow sample action (OVS uses it for per-bridge sampling only); remove it`,
		`bridges[0].collector_sets[0].ipfix.obs_domain_id: a collector set takes this from the OpenFlow sample action`,
		`bridges[0].collector_sets[0].ipfix.other_config.enable-input-sampling: a collector set takes this from the OpenFlow sample action`,
		`bridges[0].collector_sets[1].id: duplicate collector set id 1 (also [0])`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors\n%v\nlack %q", err, want)
		}
	}

	_, err = load(t, "bridges:\n  - name: br0\n    collector_sets: {id: 1}\n", nil)
	if err == nil || !strings.Contains(err.Error(), "bridges[0].collector_sets: must be a list") {
		t.Errorf("collector_sets as a mapping: %v", err)
	}
}
