package stripeplugin

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

const ovsConfig = `{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "netns": "ovs",
	"links": [{"interface": "dpdk0", "lane": "stl0", "capacity_mbit": 100}, {"interface": "dpdk1", "lane": "stl1", "capacity_mbit": 400, "pace_mbit": 380}],
	"peers": [{"node": 2}], "policy": "weighted"}`

func TestParseConfigOVSMode(t *testing.T) {
	c, err := ParseConfig([]byte(ovsConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !c.ovsMode() || c.device(0) != "stl0" || c.device(1) != "stl1" {
		t.Errorf("mode %q, devices %s %s: want the lanes opened", c.Mode, c.device(0), c.device(1))
	}
	if c.paceBytes(0) != 100e6/8 || c.paceBytes(1) != 380e6/8 {
		t.Errorf("pace %v %v bytes/s: want capacity_mbit by default, pace_mbit when given", c.paceBytes(0), c.paceBytes(1))
	}
	d := c.Describe()
	for _, want := range []string{"mode ovs-dpdk on bridge br0", "lane 0: stl0 ↔ NIC dpdk0, paced at 100 Mbit/s", "lane 1: stl1 ↔ NIC dpdk1, paced at 380 Mbit/s"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
	v, err := ParseConfig([]byte(strings.Replace(ovsConfig, `"netns": "ovs",`, `"netns": "ovs", "lane_kind": "veth",`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if v.device(0) != "stl0e" || v.device(1) != "stl1e" || !strings.Contains(v.Describe(), "mode ovs-dpdk on bridge br0, veth lanes") {
		t.Errorf("veth lanes: devices %s %s, want the engine ends stl0e stl1e:\n%s", v.device(0), v.device(1), v.Describe())
	}
	k, err := ParseConfig([]byte(`{"node": 1, "links": [{"interface": "eth1", "pace_mbit": 50}, {"interface": "eth2"}], "peers": [{"node": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if k.ovsMode() || k.device(0) != "eth1" || k.paceBytes(0) != 50e6/8 || k.paceBytes(1) != 0 {
		t.Errorf("kernel mode: device %s, pace %v %v", k.device(0), k.paceBytes(0), k.paceBytes(1))
	}
	if d := k.Describe(); !strings.Contains(d, "mode kernel, paced: eth1 at 50 Mbit/s") {
		t.Errorf("Describe:\n%s", d)
	}
}

func TestParseConfigOVSModeRefuses(t *testing.T) {
	for _, c := range []struct{ cfg, field string }{
		{`{"node": 1, "mode": "dpdk", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.mode"},
		{`{"node": 1, "mode": "ovs-dpdk", "links": [{"interface": "a", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.bridge"},
		{`{"node": 1, "bridge": "br0", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.bridge"},
		{`{"node": 1, "links": [{"interface": "a", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.links[0].lane"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.links[0].lane"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "links": [{"interface": "a", "lane": "l0"}, {"interface": "b", "lane": "a"}], "peers": [{"node": 2}]}`, "config.links[1].lane"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "links": [{"interface": "a", "lane": "l0"}, {"interface": "b", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.links[1].lane"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "pace": true, "links": [{"interface": "a", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.pace"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "rx_ring": true, "links": [{"interface": "a", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.rx_ring"},
		{`{"node": 1, "links": [{"interface": "a", "pace_mbit": -1}], "peers": [{"node": 2}]}`, "config.links[0].pace_mbit"},
		{`{"node": 1, "links": [{"interface": "a", "pace_mbit": 2e6}], "peers": [{"node": 2}]}`, "config.links[0].pace_mbit"},
		{`{"node": 1, "links": [{"interface": "a", "nic": "x"}], "peers": [{"node": 2}]}`, "config.links[0].nic"},
		{`{"node": 1, "lane_kind": "veth", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.lane_kind"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "lane_kind": "tap", "links": [{"interface": "a", "lane": "l0"}], "peers": [{"node": 2}]}`, "config.lane_kind"},
		{`{"node": 1, "mode": "ovs-dpdk", "bridge": "br0", "lane_kind": "veth", "links": [{"interface": "a", "lane": "abcdefghijklm99"}], "peers": [{"node": 2}]}`, "config.links[0].lane"},
	} {
		_, err := ParseConfig([]byte(c.cfg))
		if api.CodeOf(err) != api.InvalidArgument || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want InvalidArgument naming %s", c.cfg, err, c.field)
		}
	}
}

func TestLanesPort(t *testing.T) {
	h := sdktest.NewFakeHost(t, New(Options{}))
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "stl8", Type: LanesType, Options: map[string]string{"count": "3", "mtu": "1500"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range a.Ports {
		i := p.Interfaces[0]
		if i.Type != "internal" || *i.MTURequest != 1500 || p.ExternalIDs[LaneExternalID] != "stl8" || p.Bridge != "" {
			t.Errorf("lane %+v", p)
		}
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "stl8,stl9,stl10" {
		t.Errorf("lanes %v, want stl8,stl9,stl10", names)
	}
	for _, c := range []struct {
		name  string
		opts  map[string]string
		field string
	}{
		{"stl0", map[string]string{}, "options.count"},
		{"stl0", map[string]string{"count": "17"}, "options.count"},
		{"stl0", map[string]string{"count": "2", "mtu": "9"}, "options.mtu"},
		{"stl0", map[string]string{"count": "2", "speed": "9"}, "options.speed"},
		{"lanes", map[string]string{"count": "2"}, "name"},
		{"stl01", map[string]string{"count": "2"}, "name"},
		{"abcdefghijklm99", map[string]string{"count": "2"}, "name"},
		{"abcdefghijkl99", map[string]string{"count": "2", "kind": "system"}, "name"},
		{"stl0", map[string]string{"count": "2", "kind": "tap"}, "options.kind"},
		{"stl0", map[string]string{"count": "2", "netns": "ovs"}, "options.netns"},
		{"stl0", map[string]string{"count": "2", "kind": "dpdk", "netns": "../x"}, "options.netns"},
		{"stl0", map[string]string{"count": "2", "kind": "system", "vdev": "5"}, "options.vdev"},
		{"stl0", map[string]string{"count": "2", "kind": "dpdk", "vdev": "70000"}, "options.vdev"},
	} {
		probs, err := h.Validate(api.PortRequest{Bridge: "br0", Name: c.name, Type: LanesType, Options: c.opts})
		if err != nil || len(probs) != 1 || probs[0].Field != c.field {
			t.Errorf("%s %v: problems %+v, %v; want one naming %s", c.name, c.opts, probs, err, c.field)
		}
	}
}

// bridgeFacts is br0 with NICs dpdk0, dpdk1 (dpdk2 of another plugin) and lanes stl0, stl1.
func bridgeFacts() api.BridgeFacts {
	return api.BridgeFacts{Name: "br0", DatapathType: "netdev", Ports: []api.BridgePort{
		{Port: "dpdk0", Interface: "dpdk0", Type: "dpdk", Ofport: 1, Owner: api.OwnerOvsplane},
		{Port: "dpdk1", Interface: "dpdk1", Type: "dpdk", Ofport: 2, Owner: api.OwnerOvsplane},
		{Port: "dpdk2", Interface: "dpdk2", Type: "dpdk", Ofport: 3, Owner: api.OwnerPlugin, Plugin: "vdpa"},
		{Port: "stl0", Interface: "stl0", Type: "internal", Ofport: 5, Owner: api.OwnerPlugin, Plugin: Name},
		{Port: "stl0", Interface: "stl1", Type: "internal", Ofport: 6, Owner: api.OwnerPlugin, Plugin: Name},
	}}
}

// TestFlowsAndOwnership runs the flow side of the mode without devices: jobs are put in the
// plugin's table as Start leaves them (no engines).
func TestFlowsAndOwnership(t *testing.T) {
	p := New(Options{})
	h := sdktest.NewFakeHost(t, p)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	fs, err := h.Flows(bridgeFacts())
	if err != nil || len(fs.Flows) != 0 || fs.RefreshMillis != 5000 {
		t.Fatalf("no job yet: %+v, %v; want no flows and a 5 s refresh (the bridge holds lanes)", fs, err)
	}
	good, err := ParseConfig([]byte(ovsConfig))
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.jobs["s0"] = &job{name: "s0", cfg: good}
	p.mu.Unlock()
	fs, err = h.Flows(bridgeFacts())
	if err != nil || len(fs.Flows) != 6 || fs.RefreshMillis != 5000 {
		t.Fatalf("job s0: %+v, %v; want 6 flows", fs, err)
	}
	if fs.Flows[0].Match != "in_port=5,dl_type=0x88b5" || fs.Flows[0].Actions != "output:1" || fs.Flows[5].Actions != "output:6" {
		t.Errorf("flows %+v", fs.Flows)
	}
	if hl, _ := p.Health(t.Context()); hl.State != api.HealthOK {
		t.Errorf("health %+v", hl)
	}
	// Another job naming s0's NIC or lane is refused before anything opens.
	for _, cfg := range []string{
		strings.Replace(ovsConfig, `"lane": "stl1"`, `"lane": "stl7"`, 1),
		strings.Replace(strings.Replace(ovsConfig, `"dpdk0"`, `"dpdk5"`, 1), `"dpdk1"`, `"dpdk6"`, 1),
	} {
		_, err := h.StartJob(api.Job{Name: "s1", Type: JobType, Config: []byte(cfg)})
		if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "already owned by stripe job s0") {
			t.Errorf("second job: %v, want FailedPrecondition naming job s0", err)
		}
	}
	// With the bridge's facts known, a NIC the bridge lacks or another plugin owns is refused.
	for _, c := range []struct{ from, to, want string }{
		{`"dpdk0"`, `"dpdk9"`, "NIC dpdk9 is not on bridge br0"},
		{`"dpdk0"`, `"dpdk2"`, `already owned by plugin "vdpa"`},
	} {
		cfg := strings.Replace(strings.Replace(strings.Replace(ovsConfig, c.from, c.to, 1), `"stl0"`, `"stl2"`, 1), `"stl1"`, `"stl3"`, 1)
		cfg = strings.Replace(cfg, `"dpdk1"`, `"dpdk3"`, 1)
		_, err := h.StartJob(api.Job{Name: "s2", Type: JobType, Config: []byte(cfg)})
		if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want FailedPrecondition with %q", c.from, c.to, err, c.want)
		}
	}
	// A job whose NIC leaves the bridge loses all its rules, and Health says why.
	br := bridgeFacts()
	br.Ports = br.Ports[1:]
	fs, err = h.Flows(br)
	if err != nil || len(fs.Flows) != 0 || fs.RefreshMillis != 1000 {
		t.Fatalf("NIC gone: %+v, %v; want no flows and a 1 s refresh", fs, err)
	}
	hl, _ := p.Health(t.Context())
	if hl.State != api.HealthDegraded || !strings.Contains(hl.Message, "job s0: no rules on bridge br0") || !strings.Contains(hl.Message, "NIC dpdk0 is not on bridge br0") {
		t.Errorf("health %+v", hl)
	}
	// Other bridges get nothing; a bridge without lanes or jobs is not refreshed.
	fs, err = h.Flows(api.BridgeFacts{Name: "br-int"})
	if err != nil || len(fs.Flows) != 0 || fs.RefreshMillis != 0 {
		t.Errorf("br-int: %+v, %v", fs, err)
	}
}
