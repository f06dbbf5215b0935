package config

import (
	"strings"
	"testing"
)

// TestQoSConfig: a port's qos (with queues) and an interface's ingress policing keys load into
// the model, and bad values are refused with their key path and what is accepted.
func TestQoSConfig(t *testing.T) {
	c := mustLoad(t, `
bridges:
  - name: br0
    ports:
      - name: p0
        qos:
          type: linux-htb
          max_rate: 100000000
          queues:
            - {id: 0, min_rate: 1000000, max_rate: 50000000, burst: 80000, priority: 2}
            - {id: 5, max_rate: 10000000, dscp: 46}
        interfaces:
          - {name: p0, ingress_policing_rate: 10000, ingress_policing_burst: 1000}
      - name: d0
        qos: {type: trtcm-policer, cir: 1250000, cbs: 2048, eir: 2500000, ebs: 4096, queues: [{id: 1, cir: 125000, cbs: 2048}]}
        interfaces:
          - {name: d0, type: dpdk, options: {dpdk-devargs: "net_af_packet1,iface=v1"}, ingress_policing_kpkts_rate: 100, ingress_policing_kpkts_burst: 10}
`, nil)
	p := c.Bridges[0].Ports[0]
	if q := p.QoS; q == nil || q.Type != "linux-htb" || *q.MaxRate != 100000000 || len(q.Queues) != 2 || *q.Queues[0].Priority != 2 || *q.Queues[1].DSCP != 46 {
		t.Errorf("qos %+v", q)
	}
	if in := p.Interfaces[0]; *in.IngressPolicingRate != 10000 || *in.IngressPolicingBurst != 1000 {
		t.Errorf("interface %+v", in)
	}
	if q := c.Bridges[0].Ports[1].QoS; q == nil || *q.EIR != 2500000 || *q.Queues[0].CIR != 125000 {
		t.Errorf("trtcm qos %+v", q)
	}

	_, err := load(t, `
bridges:
  - name: br0
    ports:
      - name: p0
        qos:
          type: linux-htb
          max_rate: 1000
          cir: 5
          queues:
            - {id: 0, min_rate: 5000, max_rate: 2000, priority: 9}
            - {id: 0, cir: 1}
        interfaces:
          - {name: p0, ingress_policing_burst: 10, ingress_policing_rate: -1}
      - name: p1
        qos: {type: egress-policer, cir: 0, eir: 5, queues: [{id: 1}]}
      - name: p2
        qos: {type: sfq}
      - name: p3
        qos: {type: trtcm-policer, cir: 1, cbs: 1, max_rate: 9, queues: [{id: -1, min_rate: 3}]}
`, nil)
	if err == nil {
		t.Fatal("bad QoS settings accepted")
	}
	for _, want := range []string{
		`bridges[0].ports[0].qos.cir: linux-htb does not take this setting (linux-htb takes max_rate, and rates per queue); remove it`,
		`bridges[0].ports[0].qos.queues[0].priority: 9 is out of range 0..7`,
		`bridges[0].ports[0].qos.queues[0].min_rate: 5000 is above max_rate 2000`,
		`bridges[0].ports[0].qos.queues[0].max_rate: 2000 is above the QoS's max_rate 1000`,
		`bridges[0].ports[0].qos.queues[1].id: duplicate queue id 0 (also queues[0])`,
		`bridges[0].ports[0].qos.queues[1].cir: not a linux-htb queue setting`,
		`bridges[0].ports[0].interfaces[0].ingress_policing_rate: -1 is out of range 0..4294967295`,
		`bridges[0].ports[0].interfaces[0].ingress_policing_burst: set without ingress_policing_rate`,
		`bridges[0].ports[1].qos.cir: 0 is out of range 1..125000000000`,
		`bridges[0].ports[1].qos.cbs: required: the committed burst in bytes`,
		`bridges[0].ports[1].qos.eir: egress-policer does not take this setting (only trtcm-policer has an excess rate)`,
		`bridges[0].ports[1].qos.queues: egress-policer does not take this setting (egress-policer has one policer for the port; use trtcm-policer for queues)`,
		`bridges[0].ports[2].qos.type: unknown QoS type "sfq" (one of: "linux-htb", "egress-policer", "trtcm-policer")`,
		`bridges[0].ports[3].qos.max_rate: trtcm-policer does not take this setting (a policer takes cir and cbs in bytes)`,
		`bridges[0].ports[3].qos.queues[0].id: -1 is out of range`,
		`bridges[0].ports[3].qos.queues[0].cir: required: the queue's committed rate in bytes/s`,
		`bridges[0].ports[3].qos.queues[0].min_rate: not a trtcm-policer queue setting`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors\n%v\nlack %q", err, want)
		}
	}
}

// TestMirrorConfig: a bridge's mirrors load, and bad ones are refused with their key path.
func TestMirrorConfig(t *testing.T) {
	c := mustLoad(t, `
bridges:
  - name: br0
    mirrors:
      - {name: span, select_src_port: [p1], select_vlan: [0, 4095], output_port: p2, snaplen: 14}
    ports:
      - {name: p1, interfaces: [{name: p1}]}
      - {name: p2, interfaces: [{name: p2}]}
`, nil)
	if m := c.Bridges[0].Mirrors; len(m) != 1 || m[0].OutputPort != "p2" || *m[0].Snaplen != 14 || len(m[0].SelectVLANs) != 2 {
		t.Errorf("mirrors %+v", m)
	}
	_, err := load(t, `
bridges:
  - name: br0
    mirrors:
      - {name: span, select_src_port: [p1, p9], output_port: p1, output_vlan: 3}
      - {name: span, select_all: true, select_vlan: [5000], snaplen: 13}
      - {name: "a/b", output_port: p1}
    ports:
      - {name: p1, interfaces: [{name: p1}]}
`, nil)
	if err == nil {
		t.Fatal("bad mirrors accepted")
	}
	for _, want := range []string{
		`bridges[0].mirrors[0].select_src_port[1]: no port "p9" on this bridge; name one of its ports`,
		`bridges[0].mirrors[0].output_vlan: set together with output_port; a mirror has one output: keep one`,
		`bridges[0].mirrors[1].name: duplicate mirror name "span" (also [0])`,
		`bridges[0].mirrors[1].select_vlan[0]: VLAN 5000 out of range (0..4095)`,
		`bridges[0].mirrors[1].output_port: required`,
		`bridges[0].mirrors[1].snaplen: 13 is out of range 14..65535`,
		`bridges[0].mirrors[2].name: must be 1..64 bytes without control characters or '/'`,
		`bridges[0].mirrors[2].select_all: the mirror selects nothing`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors\n%v\nlack %q", err, want)
		}
	}
	_, err = load(t, "bridges:\n  - name: br0\n    mirrors: {name: m}\n", nil)
	if err == nil || !strings.Contains(err.Error(), "bridges[0].mirrors: must be a list") {
		t.Errorf("mirrors as a mapping: %v", err)
	}
}

// TestBondConfig: a bond's settings load, and bad ones are refused with their key path.
func TestBondConfig(t *testing.T) {
	c := mustLoad(t, `
bridges:
  - name: br0
    ports:
      - name: bond0
        bond_mode: balance-tcp
        lacp: active
        bond: {updelay: 100, downdelay: 50, detect_mode: miimon, miimon_interval: 100, rebalance_interval: 10000, lacp_time: fast, lacp_fallback_ab: true, primary: e1}
        interfaces: [{name: e0}, {name: e1}]
`, nil)
	b := c.Bridges[0].Ports[0].Bond
	if b == nil || *b.Updelay != 100 || b.DetectMode != "miimon" || *b.RebalanceInterval != 10000 || !*b.LACPFallbackAB || b.Primary != "e1" {
		t.Errorf("bond %+v", b)
	}
	_, err := load(t, `
bridges:
  - name: br0
    ports:
      - name: bond0
        bond_mode: active-backup
        other_config: {bond-primary: e0}
        bond: {updelay: 70000, detect_mode: mii, miimon_interval: 10, rebalance_interval: 5, lacp_time: fast, primary: e9}
        interfaces: [{name: e0}, {name: e1}]
      - name: p1
        bond: {downdelay: 1}
        interfaces: [{name: p1}]
`, nil)
	if err == nil {
		t.Fatal("bad bond settings accepted")
	}
	for _, want := range []string{
		`bridges[0].ports[0].bond.updelay: 70000 is out of range 0..60000`,
		`bridges[0].ports[0].bond.detect_mode: unknown detect mode "mii" (one of: "", "carrier", "miimon")`,
		`bridges[0].ports[0].bond.miimon_interval: set without detect_mode: miimon`,
		`bridges[0].ports[0].bond.rebalance_interval: set on a "active-backup" bond; only balance-slb and balance-tcp rebalance`,
		`bridges[0].ports[0].bond.lacp_time: set without lacp active or passive`,
		`bridges[0].ports[0].bond.primary: "e9" is not an interface of this bond`,
		`bridges[0].ports[0].other_config.bond-primary: set by the bond settings; remove it from other_config and use bond`,
		`bridges[0].ports[1].bond: set on a port with 1 interface(s); bond settings need two or more (a bond)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors\n%v\nlack %q", err, want)
		}
	}
}
