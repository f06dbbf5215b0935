package collect

import (
	"net/netip"
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/flow"
)

func ptr[T any](v T) *T { return &v }

func TestOVSResolver(t *testing.T) {
	host := netip.MustParseAddr("192.0.2.10")
	r, err := NewOVSResolver([]HostFacts{
		{Exporter: host, Bridges: []BridgeFacts{
			{Name: "br0", NetFlow: &NetFlowFacts{EngineType: 2, EngineID: 1},
				Ports: map[string]uint32{"dpdk0": 1, "vhu1": 2, "br0": 65534}},
			{Name: "br1", NetFlow: &NetFlowFacts{EngineType: 2, EngineID: 3, AddIDToInterface: true}, IPFIX: ptr(uint32(77)),
				Ports: map[string]uint32{"p1": 1, "p9": 9}},
		}},
		{Bridges: []BridgeFacts{{Name: "any0", IPFIX: ptr(uint32(5)), Ports: map[string]uint32{"x": 4}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := []flow.Record{
		{Exporter: host, Protocol: flow.NetFlowV5, Domain: 2<<8 | 1, InIf: 1, OutIf: 65534},
		{Exporter: host, Protocol: flow.NetFlowV5, Domain: 2<<8 | 3, InIf: 3<<9 | 9, OutIf: 1}, // OutIf lacks the engine bits
		{Exporter: host, Protocol: flow.IPFIX, Domain: 77, InIf: 9, OutIf: 1, InPort: "dpdk9"}, // names from the record
		{Exporter: netip.MustParseAddr("198.51.100.1"), Protocol: flow.IPFIX, Domain: 5, InIf: 4, OutIf: 8},
		{Exporter: host, Protocol: flow.NetFlowV5, Domain: 9, InIf: 1},
	}
	r.Resolve(recs)
	want := [][3]string{{"br0", "dpdk0", "br0"}, {"br1", "p9", ""}, {"br1", "dpdk9", ""}, {"any0", "", ""}, {"", "", ""}}
	for i, w := range want {
		if got := [3]string{recs[i].Bridge, recs[i].InPort, recs[i].OutPort}; got != w {
			t.Errorf("record %d: %q, want %q", i, got, w)
		}
	}
}

func TestOVSResolverRefusesAmbiguousFacts(t *testing.T) {
	nf := &NetFlowFacts{EngineType: 0, EngineID: 0}
	_, err := NewOVSResolver([]HostFacts{{Bridges: []BridgeFacts{{Name: "a", NetFlow: nf}, {Name: "b", NetFlow: nf}}}})
	if err == nil {
		t.Fatal("two bridges with the same engine ids accepted")
	}
	if _, err := NewOVSResolver([]HostFacts{{Bridges: []BridgeFacts{{NetFlow: nf}}}}); err == nil {
		t.Fatal("a bridge without a name accepted")
	}
}
