package convert_test

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/api/convert"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

func ptr(v int) *int { return &v }

func TestRoundTrip(t *testing.T) {
	bridge := model.Bridge{
		Name: "br0", DatapathType: "netdev", FailMode: "secure",
		Protocols: []string{"OpenFlow13"}, Controllers: []string{"tcp:127.0.0.1:6653"},
		OtherConfig: map[string]string{"hwaddr": "02:00:00:00:00:01"}, ExternalIDs: map[string]string{"a": "b"},
		Mirrors: []model.Mirror{{Name: "span", SelectSrcPorts: []string{"p1"}, SelectDstPorts: []string{"p2"}, SelectVLANs: []int{0, 4095},
			OutputPort: "p3", Snaplen: ptr(14)}, {Name: "all", SelectAll: true, OutputVLAN: ptr(4095)}},
	}
	port := model.Port{
		Name: "bond0", Tag: ptr(0), Trunks: []int{10, 4095}, VLANMode: "native-untagged", BondMode: "balance-slb", LACP: "active",
		OtherConfig: map[string]string{"x": "y"}, ExternalIDs: map[string]string{"iface-id": "1"},
		Interfaces: []model.Interface{
			{Name: "dpdk0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:01:00.0"},
				MTURequest: ptr(9000), OFPortRequest: ptr(1), OtherConfig: map[string]string{"k": "v"},
				ExternalIDs: map[string]string{"e": "f"}},
			{Name: "dpdk1", IngressPolicingRate: ptr(1<<32 - 1), IngressPolicingBurst: ptr(0), IngressPolicingKpktsRate: ptr(3), IngressPolicingKpktsBurst: ptr(4)},
		},
		Bond: &model.Bond{Updelay: ptr(1), Downdelay: ptr(0), DetectMode: "miimon", MiimonInterval: ptr(100), RebalanceInterval: ptr(1<<31 - 1),
			LACPTime: "fast", LACPFallbackAB: new(false), Primary: "dpdk1"},
		QoS: &model.QoS{Type: "trtcm-policer", CIR: ptr(1), CBS: ptr(2), EIR: ptr(3), EBS: ptr(4), Queues: []model.Queue{
			{ID: 1<<32 - 1, CIR: ptr(5), CBS: ptr(6), EIR: ptr(7), EBS: ptr(8)},
			{ID: 0, MinRate: ptr(1e12), MaxRate: ptr(2), Burst: ptr(3), Priority: ptr(7), DSCP: ptr(63)}}},
	}
	t.Run("bridge", func(t *testing.T) {
		if got := convert.BridgeFromProto(convert.BridgeToProto(bridge)); !reflect.DeepEqual(got, bridge) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, bridge)
		}
	})
	t.Run("bridge ports are not carried", func(t *testing.T) {
		b := bridge
		b.Ports = []model.Port{port}
		if got := convert.BridgeFromProto(convert.BridgeToProto(b)); got.Ports != nil {
			t.Errorf("ports carried: %+v", got.Ports)
		}
	})
	t.Run("port", func(t *testing.T) {
		if got := convert.PortFromProto(convert.PortToProto(port)); !reflect.DeepEqual(got, port) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, port)
		}
	})
	t.Run("vlan_mode and lacp on the wire", func(t *testing.T) {
		m := convert.PortToProto(port)
		if m.GetVlanMode() != "native-untagged" || m.GetLacp() != "active" {
			t.Errorf("vlan_mode %q, lacp %q; want native-untagged, active", m.GetVlanMode(), m.GetLacp())
		}
		got := convert.PortFromProto(&v1.Port{Name: "p", VlanMode: "trunk", Lacp: "passive"})
		if got.VLANMode != "trunk" || got.LACP != "passive" {
			t.Errorf("from the wire: VLANMode %q, LACP %q; want trunk, passive", got.VLANMode, got.LACP)
		}
	})
	t.Run("tag 0 is not no tag", func(t *testing.T) {
		m := convert.PortToProto(port)
		if m.Tag == nil || *m.Tag != 0 {
			t.Errorf("tag = %v, want 0", m.Tag)
		}
		if convert.PortToProto(model.Port{Name: "p"}).Tag != nil {
			t.Error("nil tag became a value")
		}
	})
	t.Run("out of range stays out of range", func(t *testing.T) {
		m := convert.PortToProto(model.Port{Tag: ptr(1 << 40)})
		if *m.Tag != 1<<31-1 {
			t.Errorf("tag = %d, want clamped to max int32", *m.Tag)
		}
	})
	t.Run("nil messages", func(t *testing.T) {
		if got := convert.PortFromProto(nil); !reflect.DeepEqual(got, model.Port{}) {
			t.Errorf("PortFromProto(nil) = %+v", got)
		}
		if got := convert.BridgeFromProto(nil); !reflect.DeepEqual(got, model.Bridge{}) {
			t.Errorf("BridgeFromProto(nil) = %+v", got)
		}
		if got := convert.PortInfoFromProto(nil); !reflect.DeepEqual(got, model.PortInfo{}) {
			t.Errorf("PortInfoFromProto(nil) = %+v", got)
		}
	})
	t.Run("infos and statuses", func(t *testing.T) {
		pi := model.PortInfo{
			Bridge: "br0", Spec: port, Origin: model.OriginAPI,
			Status: model.Status{Kind: model.KindPort, Name: "bond0", Bridge: "br0", State: model.StateReady},
			Interfaces: []model.Status{
				{Kind: model.KindInterface, Name: "dpdk0", Bridge: "br0", State: model.StateReady, Ofport: 1},
				{Kind: model.KindInterface, Name: "dpdk1", Bridge: "br0", State: model.StateError, Error: "could not open"},
			},
		}
		if got := convert.PortInfoFromProto(convert.PortInfoToProto(pi)); !reflect.DeepEqual(got, pi) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, pi)
		}
		bi := model.BridgeInfo{Spec: bridge, Origin: model.OriginConfig,
			Status: model.Status{Kind: model.KindBridge, Name: "br0", State: model.StatePending}}
		if got := convert.BridgeInfoFromProto(convert.BridgeInfoToProto(bi)); !reflect.DeepEqual(got, bi) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, bi)
		}
		if k := convert.StatusToProto(pi.Interfaces[0]).Key; k != "interface/dpdk0" {
			t.Errorf("key = %q", k)
		}
	})
	t.Run("watched", func(t *testing.T) {
		for _, ws := range []model.WatchedStatus{
			{Plugin: "dsa", Interface: "vhu1", Bridge: "br-int", Port: "vhu1", Owner: model.WatchedOwnerForeign,
				Level: "warning", Summary: "CPU copy: no DMA queue on NUMA 1", Details: map[string]string{"numa": "1"}},
			{Plugin: "dsa", Interface: "vhu2", Level: "info", Summary: "accelerated"},
		} {
			m := convert.WatchedStatusesToProto([]model.WatchedStatus{ws})
			if len(m) != 1 || m[0].GetSummary() != ws.Summary || m[0].GetOwner() != ws.Owner {
				t.Fatalf("to proto: %v", m)
			}
			if got := convert.WatchedStatusFromProto(m[0]); !reflect.DeepEqual(got, ws) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, ws)
			}
		}
	})
	t.Run("removed", func(t *testing.T) {
		m := convert.StatusToProto(model.Status{Kind: model.KindPort, Name: "p"})
		if m.State != v1.State_STATE_REMOVED || convert.StateName(m.State) != "removed" {
			t.Errorf("state = %v", m.State)
		}
		if s := convert.StatusFromProto(m); s.State != "" {
			t.Errorf("back: state = %q, want empty", s.State)
		}
	})
	t.Run("health", func(t *testing.T) {
		h := model.Health{Version: model.Version, Mode: model.ModeEmbedded, OVSDBEndpoint: "unix:/x",
			OVSDBConnected: true, Objects: map[model.State]int{model.StateReady: 3, model.StateError: 1}, LastError: "boom",
			Degraded: []string{"sandbox ovs-vswitchd is not running: pid 7 exited (signal: killed)"}}
		m := convert.HealthToProto(h, "ovsplane.v1")
		if m.ApiVersion != "ovsplane.v1" || m.Objects["ready"] != 3 || len(m.Degraded) != 1 {
			t.Errorf("proto = %v", m)
		}
		if got := convert.HealthFromProto(m); !reflect.DeepEqual(got, h) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, h)
		}
	})
}
