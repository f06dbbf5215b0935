package overlayplugin

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/ovsinstall"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// agentJSON is a valid overlay-agent configuration whose fabric cannot be reached.
func agentJSON(t *testing.T, mutate func(m map[string]any)) []byte {
	t.Helper()
	m := map[string]any{
		"node":           map[string]any{"name": "a", "kind": "ordinary", "carriers": []string{"c1"}, "underlay": []string{"10.10.0.2"}},
		"fabric_remotes": []string{"unix:" + filepath.Join(t.TempDir(), "none.sock")},
		"bridge":         "br-int",
		"tunnel_port":    "ovl0",
		"vni":            7,
		"prefixes":       map[string][]string{"a": {"192.168.1.0/24"}, "b": {"192.168.2.0/24"}, "s1": {"192.168.10.0/24"}},
		"probe":          map[string]any{"disabled": true},
	}
	if mutate != nil {
		mutate(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newHost(t *testing.T) (*sdktest.FakeHost, *Plugin) {
	t.Helper()
	p := New(Options{})
	// t.Context() is already cancelled when cleanups run: Close would return at once and leave
	// the plugin process stopping (and logging through t) after the test.
	t.Cleanup(func() { _ = p.Close(context.WithoutCancel(t.Context())) })
	h := sdktest.NewFakeHost(t, p)
	h.Facts.DataDir = t.TempDir()
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	return h, p
}

func TestTunnelPortShape(t *testing.T) {
	h, _ := newHost(t)
	a, err := h.Attach(api.PortRequest{Bridge: "br-int", Name: "ovl0", Type: PortTunnel})
	if err != nil {
		t.Fatal(err)
	}
	ifc := a.Ports[0].Interfaces[0]
	if len(a.Ports) != 1 || ifc.Name != "ovl0" || ifc.Type != "vxlan" || ifc.Options["remote_ip"] != "flow" || ifc.Options["key"] != "flow" || len(ifc.Options) != 2 {
		t.Errorf("default shape %+v", a.Ports)
	}
	a, err = h.Attach(api.PortRequest{Bridge: "br-int", Name: "ovl1", Type: PortTunnel, Options: map[string]string{"tunnel": "geneve", "dst_port": "6082"}})
	if err != nil || a.Ports[0].Interfaces[0].Type != "geneve" || a.Ports[0].Interfaces[0].Options["dst_port"] != "6082" {
		t.Errorf("geneve: %+v %v", a, err)
	}
	for _, opts := range []map[string]string{{"tunnel": "patch"}, {"tunnel": "gre", "dst_port": "9"}, {"dst_port": "x"}, {"colour": "red"}} {
		probs, err := h.Validate(api.PortRequest{Bridge: "br-int", Name: "ovl2", Type: PortTunnel, Options: opts})
		if err != nil || len(probs) == 0 || !strings.HasPrefix(probs[0].Field, "options.") {
			t.Errorf("options %v: problems %v, %v", opts, probs, err)
		}
	}
	h.Facts.IfaceTypes = []string{"system", "internal", "vxlan"}
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Attach(api.PortRequest{Bridge: "br-int", Name: "ovl3", Type: PortTunnel, Options: map[string]string{"tunnel": "geneve"}}); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("geneve on an OVS without geneve: %v", err)
	}
}

func TestAgentConfigRefusals(t *testing.T) {
	h, _ := newHost(t)
	for _, c := range []struct {
		name   string
		mutate func(m map[string]any)
		field  string
	}{
		{"unknown field", func(m map[string]any) { m["colour"] = 1 }, "config"},
		{"bad kind", func(m map[string]any) { m["node"].(map[string]any)["kind"] = "hub" }, "config.node"},
		{"no underlay", func(m map[string]any) { m["node"].(map[string]any)["underlay"] = []string{} }, "config.node.underlay"},
		{"bad remote", func(m map[string]any) { m["fabric_remotes"] = []string{"http://x"} }, "config.fabric_remotes[0]"},
		{"too many remotes", func(m map[string]any) { m["fabric_remotes"] = slices.Repeat([]string{"tcp:1.2.3.4:1"}, 8) }, "config.fabric_remotes"},
		{"bad bridge", func(m map[string]any) { m["bridge"] = "br int" }, "config.bridge"},
		{"vni", func(m map[string]any) { m["vni"] = 1 << 24 }, "config.vni"},
		{"host bits", func(m map[string]any) { m["prefixes"] = map[string][]string{"b": {"192.168.2.1/24"}} }, "config.prefixes.b"},
		{"prefix twice", func(m map[string]any) {
			m["prefixes"] = map[string][]string{"b": {"192.168.2.0/24"}, "c": {"192.168.2.0/24"}}
		}, "config.prefixes.c"},
		{"bad node name", func(m map[string]any) { m["prefixes"] = map[string][]string{"b;rm": {"192.168.2.0/24"}} }, "config.prefixes"},
		{"both prefix sources", func(m map[string]any) { m["prefixes_file"] = "/x" }, "config.prefixes_file"},
		{"via", func(m map[string]any) { m["underlay_via"] = map[string]string{"s1": "0.0.0.0"} }, "config.underlay_via.s1"},
		{"refresh", func(m map[string]any) { m["flow_refresh_ms"] = 5 }, "config.flow_refresh_ms"},
		{"probe window", func(m map[string]any) { m["probe"] = map[string]any{"window": 1} }, "config.probe"},
		// Huge values whose product wraps into range (2^58+500 ms × 10^6 ≡ 500 ms, 2^61+1 Mbit ×
		// 1000 ≡ 1000 kbit/s): the raw integer is refused.
		{"refresh wraps", func(m map[string]any) { m["flow_refresh_ms"] = 1<<58 + 500 }, "config.flow_refresh_ms"},
		{"refresh negative", func(m map[string]any) { m["flow_refresh_ms"] = -1 }, "config.flow_refresh_ms"},
		{"interval wraps", func(m map[string]any) { m["probe"] = map[string]any{"interval_ms": 1<<58 + 1000} }, "config.probe.interval_ms"},
		{"bandwidth wraps", func(m map[string]any) { m["probe"] = map[string]any{"max_bandwidth_mbit": 1<<61 + 1} }, "config.probe.max_bandwidth_mbit"},
		{"bandwidth max int", func(m map[string]any) { m["probe"] = map[string]any{"max_bandwidth_mbit": math.MaxInt64} }, "config.probe.max_bandwidth_mbit"},
	} {
		_, err := h.StartJob(api.Job{Name: "agent", Type: JobAgent, Config: agentJSON(t, c.mutate)})
		var ae *api.Error
		if api.CodeOf(err) != api.InvalidArgument || !asError(err, &ae) || len(ae.Problems) == 0 || ae.Problems[0].Field != c.field {
			t.Errorf("%s: %v (want a problem on %s)", c.name, err, c.field)
		}
	}
	for _, bad := range []string{`{}`, `{"holder":"x"}`, `{"holder":"x","fabric_remotes":["tcp:1.2.3.4:1"],"lease_ttl_ms":1}`,
		`{"holder":"x","fabric_remotes":["tcp:1.2.3.4:1"],"cost_hysteresis_pct":0.01}`, `{"holder":"x","fabric_remotes":["tcp:1.2.3.4:1"],"cost_hysteresis_pct":150}`,
		// 2^58+10000 ms × 10^6 wraps to 10 s; 2^58+100 ms to 100 ms.
		`{"holder":"x","fabric_remotes":["tcp:1.2.3.4:1"],"lease_ttl_ms":288230376151721744}`,
		`{"holder":"x","fabric_remotes":["tcp:1.2.3.4:1"],"period_ms":288230376151711844}`} {
		if _, err := h.StartJob(api.Job{Name: "ctl", Type: JobController, Config: []byte(bad)}); api.CodeOf(err) != api.InvalidArgument {
			t.Errorf("controller %s: %v", bad, err)
		}
	}
	if _, err := h.StartJob(api.Job{Name: "x", Type: "overlay-nope", Config: []byte(`{}`)}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("unknown job type: %v", err)
	}
}

// asError unwraps an *api.Error.
func asError(err error, target **api.Error) bool { return errors.As(err, target) }

// TestFlowsWithoutFabric: an agent whose fabric is unreachable answers Flows for its bridge
// (only), says in Health what is missing, refuses a second agent on the bridge, and a
// restarted plugin forwards on the table it stored before the fabric answers.
func TestFlowsWithoutFabric(t *testing.T) {
	h, _ := newHost(t)
	if _, err := h.StartJob(api.Job{Name: "agent", Type: JobAgent, Config: agentJSON(t, nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(api.Job{Name: "agent2", Type: JobAgent, Config: agentJSON(t, nil)}); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("second agent on br-int: %v", err)
	}
	// No tunnel port on the bridge: no flows, and Health says which port to add.
	fs, err := h.Flows(api.BridgeFacts{Name: "br-int", DatapathType: "netdev"})
	if err != nil || len(fs.Flows) != 0 || fs.RefreshMillis != 500 {
		t.Fatalf("no tunnel port: %+v %v", fs, err)
	}
	hl, _ := h.Health()
	if hl.State != api.HealthDegraded || !strings.Contains(hl.Message, "tunnel port ovl0 is not on bridge br-int") ||
		!strings.Contains(hl.Message, "no route table installed yet") {
		t.Errorf("health: %+v", hl)
	}
	// A port of the wrong type.
	facts := api.BridgeFacts{Name: "br-int", Ports: []api.BridgePort{{Port: "ovl0", Interface: "ovl0", Type: "internal", Ofport: 4}}}
	if fs, _ := h.Flows(facts); len(fs.Flows) != 0 {
		t.Errorf("internal port taken as the tunnel: %+v", fs)
	}
	hl, _ = h.Health()
	if !strings.Contains(hl.Message, `of type "internal"`) {
		t.Errorf("health: %+v", hl)
	}
	// The tunnel port, no table yet: own prefix delivered, the tunnel's other traffic dropped.
	facts.Ports[0].Type = "vxlan"
	fs, err = h.Flows(facts)
	if err != nil || len(fs.Flows) != 5 || fs.Flows[2].Match != "in_port=4" || fs.Flows[2].Actions != "drop" {
		t.Errorf("no table: %+v %v", fs.Flows, err)
	}
	if fs, _ := h.Flows(api.BridgeFacts{Name: "br-ex", Ports: facts.Ports}); len(fs.Flows) != 0 || fs.RefreshMillis != 0 {
		t.Errorf("another bridge: %+v", fs)
	}
	samples, err := h.Stats(api.StatsRequest{Jobs: []string{"agent"}}, 1)
	if err != nil || len(samples) != 1 || !hasMetric(samples[0].Metrics, "overlay_installed_version", 0) || !hasMetric(samples[0].Metrics, "overlay_fabric_connected", 0) {
		t.Errorf("stats: %+v %v", samples, err)
	}
	if err := h.StopJob("agent"); err != nil {
		t.Fatal(err)
	}

	// A stored table (as an earlier process of the plugin left it) is forwarded on at once.
	tab := ovsinstall.Table{Version: 9, Node: "a", Hops: []ovsinstall.Hop{
		{Dest: "b", NextHop: "s1", Underlay: netip.MustParseAddr("10.10.0.1"), Cost: 36000},
		{Dest: "s1", NextHop: "s1", Underlay: netip.MustParseAddr("10.10.0.1"), Cost: 15000},
	}}
	if err := ovsinstall.SaveTable(filepath.Join(h.Facts.DataDir, "overlay-agent-agent.json"), tab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(api.Job{Name: "agent", Type: JobAgent, Config: agentJSON(t, nil)}); err != nil {
		t.Fatal(err)
	}
	fs, err = h.Flows(facts)
	if err != nil {
		t.Fatal(err)
	}
	want := "set_field:7->tun_id,set_field:10.10.0.1->tun_dst,output:4"
	n := 0
	for _, f := range fs.Flows {
		if f.Actions == want {
			n++
		}
		if f.Cookie != ovsinstall.Cookie(h.Cookies, 9) {
			t.Errorf("flow %+v: cookie not of version 9", f)
		}
	}
	if n != 4 { // ip and arp for b and s1
		t.Errorf("stored table: %d flows to s1, want 4: %+v", n, fs.Flows)
	}
}

func hasMetric(ms []api.Metric, name string, v float64) bool {
	for _, m := range ms {
		if m.Name == name && m.Value == v {
			return true
		}
	}
	return false
}
