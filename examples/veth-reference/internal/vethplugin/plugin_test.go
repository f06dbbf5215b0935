package vethplugin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// newHost serves a Plugin over fake links through the SDK's fake host (real gRPC shims).
func newHost(t *testing.T, links Links) (*sdktest.FakeHost, *Plugin) {
	t.Helper()
	p, err := New(Options{Links: links, NetnsDir: t.TempDir(), Logger: testkit.Logger(t, slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return sdktest.NewFakeHost(t, p), p
}

// configured is newHost followed by a successful Configure.
func configured(t *testing.T, links Links, config string) *sdktest.FakeHost {
	t.Helper()
	h, _ := newHost(t, links)
	if err := h.Configure([]byte(config)); err != nil {
		t.Fatal(err)
	}
	return h
}

// attach attaches a veth port of each name on br0 (default options) and fails the test on an
// error.
func attach(t *testing.T, h *sdktest.FakeHost, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: name, Type: PortType}); err != nil {
			t.Fatal(err)
		}
	}
}

// wantCode fails the test unless err is an *api.Error with the code; it returns the error.
func wantCode(t *testing.T, what string, err error, code api.Code) *api.Error {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: %v; want code %s", what, err, code)
	}
	return e
}

func fields(ps []api.Problem) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Field)
	}
	return strings.Join(s, ",")
}

func TestInfo(t *testing.T) {
	h, _ := newHost(t, newFakeLinks())
	info := h.Conn().Info
	want := []api.Capability{api.CapabilityPortProvider, api.CapabilityWatcher, api.CapabilityGlobalConfig,
		api.CapabilityFlowProgram, api.CapabilityDataPath}
	if info.Name != Name || !slices.Equal(info.Capabilities, want) {
		t.Errorf("Info = %s %v; want %s with every capability", info.Name, info.Capabilities, Name)
	}
	if len(info.Types) != 2 || info.Types[0].Name != PortType || info.Types[0].Kind != api.ObjectKindPort ||
		info.Types[1].Name != StatsJobType || info.Types[1].Kind != api.ObjectKindJob {
		t.Fatalf("Types = %+v", info.Types)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal([]byte(info.Types[0].OptionsSchema), &schema); err != nil || len(schema.Properties) != 6 {
		t.Errorf("options schema %s: %v; want the six options", info.Types[0].OptionsSchema, err)
	}
	cs, err := h.Conn().Plugin.ConfigSchema(t.Context())
	if err != nil || !json.Valid([]byte(cs.JSONSchema)) || !json.Valid([]byte(info.Types[1].OptionsSchema)) {
		t.Errorf("ConfigSchema = %v, %v", cs, err)
	}
}

func TestNothingBeforeConfigure(t *testing.T) {
	h, _ := newHost(t, newFakeLinks())
	// Past the fake host's own guard, straight to the plugin through the shims.
	_, err := h.Conn().PortProvider.Attach(t.Context(), api.PortRequest{Bridge: "br0", Name: "v1", Type: PortType})
	wantCode(t, "Attach before Configure", err, api.FailedPrecondition)
	_, err = h.Conn().GlobalConfig.Contribute(t.Context())
	wantCode(t, "Contribute before Configure", err, api.FailedPrecondition)
}

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		name, config, fields string
	}{
		{"empty", `{}`, ""},
		{"full", `{"default_mtu": 9000, "create_netns": false, "offloads": true, "drop_ethertypes": ["ipv6", "0x88cc"], "flow_priority": 200, "stats_update_interval_ms": 10000}`, ""},
		{"unknown field", `{"mtu": 1500}`, "config.mtu"},
		{"wrong type", `{"default_mtu": "big"}`, "config.default_mtu"},
		{"bad values", `{"default_mtu": 10, "flow_priority": 70000, "stats_update_interval_ms": 1000, "drop_ethertypes": ["ipv4", "ipx", "0x0042"]}`,
			"config.default_mtu,config.flow_priority,config.stats_update_interval_ms,config.drop_ethertypes[1],config.drop_ethertypes[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newHost(t, newFakeLinks())
			err := h.Configure([]byte(tc.config))
			if tc.fields == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e := wantCode(t, "Configure", err, api.InvalidArgument)
			if got := fields(e.Problems); got != tc.fields {
				t.Errorf("problems %v; want fields %s", e.Problems, tc.fields)
			}
		})
	}
	t.Run("no system interface type", func(t *testing.T) {
		h, _ := newHost(t, newFakeLinks())
		h.Facts.IfaceTypes = []string{"dpdk", "internal"}
		wantCode(t, "Configure", h.Configure(nil), api.FailedPrecondition)
	})
	t.Run("an invalid reload keeps the previous configuration", func(t *testing.T) {
		h := configured(t, newFakeLinks(), `{"stats_update_interval_ms": 6000}`)
		wantCode(t, "reload", h.Configure([]byte(`{"stats_update_interval_ms": 1}`)), api.InvalidArgument)
		if g, err := h.Contribute(); err != nil || g.OtherConfig["stats-update-interval"] != "6000" {
			t.Errorf("Contribute after a rejected reload = %+v, %v", g, err)
		}
	})
}

func TestValidate(t *testing.T) {
	links := newFakeLinks()
	links.foreign["eth9"] = true
	for _, tc := range []struct {
		name   string
		config string
		req    api.PortRequest
		fields string
	}{
		{"minimal", `{}`, api.PortRequest{Name: "v1", Type: PortType}, ""},
		{"full", `{}`, api.PortRequest{Name: "v1", Type: PortType, Options: map[string]string{"peer": "eth0", "netns": "red", "address": "10.0.0.1/24", "mtu": "9000", "offloads": "true"}}, ""},
		{"wrong type", `{}`, api.PortRequest{Name: "v1", Type: "vethx"}, "type"},
		{"bad options", `{}`, api.PortRequest{Name: "v1", Type: PortType, Options: map[string]string{"peer": "a/b", "address": "10.0.0.300/24", "mtu": "jumbo", "color": "red"}},
			"options.address,options.mtu,options.color,options.peer"},
		{"mtu out of range", `{}`, api.PortRequest{Name: "v1", Type: PortType, Options: map[string]string{"mtu": "20"}}, "options.mtu"},
		{"long name", `{}`, api.PortRequest{Name: "a-very-long-port-name", Type: PortType}, "name"},
		{"missing netns, creation off", `{"create_netns": false}`, api.PortRequest{Name: "v1", Type: PortType, Options: map[string]string{"netns": "nope"}}, "options.netns"},
		{"name taken by a foreign interface", `{}`, api.PortRequest{Name: "eth9", Type: PortType}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := configured(t, links, tc.config)
			ps, err := h.Validate(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := fields(ps); got != tc.fields {
				t.Errorf("problems %v; want fields %q", ps, tc.fields)
			}
		})
	}
}

func TestAttachDetachList(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{"default_mtu": 1400}`)
	req := api.PortRequest{Bridge: "br0", Name: "v1", Type: PortType,
		Options: map[string]string{"netns": "red", "address": "10.0.0.1/24"}}
	a, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Ports) != 1 || len(a.Ports[0].Interfaces) != 1 {
		t.Fatalf("Attach shape %+v; want one port with one interface", a.Ports)
	}
	port, iface := a.Ports[0], a.Ports[0].Interfaces[0]
	if port.Name != "v1" || port.Bridge != "" || iface.Name != "v1" || iface.Type != "system" ||
		iface.MTURequest == nil || *iface.MTURequest != 1400 || iface.ExternalIDs["veth-peer"] != "v1-p" || iface.ExternalIDs["veth-netns"] != "red" {
		t.Errorf("port %+v interface %+v", port, iface)
	}
	if a.Endpoints["netns"] != "red" || a.Endpoints["address"] != "10.0.0.1/24" || a.Endpoints["peer"] != "v1-p" {
		t.Errorf("endpoints %v", a.Endpoints)
	}
	if string(a.State) != `{"v":1,"peer":"v1-p","netns":"red","created_netns":true}` {
		t.Errorf("state %s", a.State)
	}
	if a.Status != "peer v1-p in netns red, 10.0.0.1/24, mtu 1400, up" {
		t.Errorf("status %q", a.Status)
	}
	if _, err := h.Attach(req); err != nil || links.creates != 1 {
		t.Fatalf("second Attach: %v, %d pairs created; want the same pair", err, links.creates)
	}
	if links.pairs["v1"].Spec.KeepOffloads {
		t.Error("offloads kept by default; want them off")
	}
	req.Options["offloads"] = "true"
	if _, err := h.Attach(req); err != nil || !links.pairs["v1"].Spec.KeepOffloads {
		t.Errorf("Attach with offloads=true: %v, spec %+v", err, links.pairs["v1"].Spec)
	}
	delete(req.Options, "offloads")

	owned, err := h.List()
	if err != nil || len(owned) != 1 || owned[0].Bridge != "br0" || owned[0].Name != "v1" || owned[0].Type != PortType ||
		string(owned[0].State) != string(a.State) {
		t.Fatalf("List = %+v, %v", owned, err)
	}

	if err := h.Detach("br0", "v1"); err != nil {
		t.Fatal(err)
	}
	if len(links.pairs) != 0 || len(links.netns) != 0 {
		t.Errorf("after Detach: pairs %v, namespaces %v; want none", links.pairs, links.netns)
	}
	if err := h.Detach("br0", "v1"); err != nil {
		t.Errorf("Detach of a detached port: %v; want nil", err)
	}
}

func TestAttachErrors(t *testing.T) {
	links := newFakeLinks()
	links.foreign["eth9"] = true
	h := configured(t, links, `{"create_netns": false}`)
	e := wantCode(t, "Attach with bad options", attachErr(h, api.PortRequest{Bridge: "br0", Name: "v1", Type: PortType,
		Options: map[string]string{"mtu": "x"}}), api.InvalidArgument)
	if fields(e.Problems) != "options.mtu" {
		t.Errorf("problems %v", e.Problems)
	}
	wantCode(t, "Attach over a foreign interface", attachErr(h, api.PortRequest{Bridge: "br0", Name: "eth9", Type: PortType}), api.FailedPrecondition)
	wantCode(t, "Detach of a foreign interface", h.Detach("br0", "eth9"), api.FailedPrecondition)
	wantCode(t, "Attach into a missing namespace", attachErr(h, api.PortRequest{Bridge: "br0", Name: "v2", Type: PortType,
		Options: map[string]string{"netns": "nope"}}), api.FailedPrecondition)
	links.fail = errors.New("netlink: operation not permitted")
	e = wantCode(t, "Attach while netlink fails", attachErr(h, api.PortRequest{Bridge: "br0", Name: "v3", Type: PortType}), api.Unavailable)
	if !strings.Contains(e.Message, "v3") || !strings.Contains(e.Message, "not permitted") {
		t.Errorf("message %q; want the port and the cause", e.Message)
	}
	if health, err := h.Health(); err != nil || health.State != api.HealthFailing {
		t.Errorf("Health while netlink fails = %+v, %v; want failing", health, err)
	}
}

func attachErr(h *sdktest.FakeHost, req api.PortRequest) error {
	_, err := h.Attach(req)
	return err
}

func TestRestartReplaysWithoutRecreating(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{}`)
	for _, name := range []string{"v1", "v2"} {
		if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: name, Type: PortType, Options: map[string]string{"netns": "ns-" + name}}); err != nil {
			t.Fatal(err)
		}
	}
	p2, err := New(Options{Links: links, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p2.Close)
	if err := h.Restart(p2); err != nil {
		t.Fatal(err)
	}
	if links.creates != 2 {
		t.Errorf("%d pairs created after the replay; want the 2 adopted", links.creates)
	}
	if owned, err := h.List(); err != nil || len(owned) != 2 {
		t.Errorf("List after restart = %+v, %v", owned, err)
	}
}

func TestWatcher(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{}`)
	if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "v1", Type: PortType}); err != nil { // peer v1-p stays in the host namespace
		t.Fatal(err)
	}
	ev := func(kind api.PortEventKind, bridge, iface string, owner api.PortOwner) api.PortEvent {
		return api.PortEvent{Kind: kind, Owner: owner, Bridge: bridge, Port: iface, Interface: iface, Ofport: 5}
	}
	health := func(state api.HealthState, contains string) {
		t.Helper()
		got, err := h.Health()
		if err != nil || got.State != state || !strings.Contains(got.Message, contains) {
			t.Errorf("Health = %+v, %v; want state %d with %q", got, err, state, contains)
		}
	}
	changes, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{
		{Kind: api.EventAdded, Owner: api.OwnerPlugin, Plugin: Name, Bridge: "br0", Port: "v1", Interface: "v1", Ofport: 1},
		ev(api.EventAdded, "br0", "tap0", api.OwnerForeign),
		ev(api.EventAdded, "br0", "mgmt0", api.OwnerOvsplane),
		ev(api.EventAdded, "br9", "tap9", api.OwnerForeign), // not a bridge of ours
	}})
	if err != nil || len(changes) != 0 {
		t.Fatalf("OnPortEvents = %v, %v; want no changes", changes, err)
	}
	health(api.HealthOK, "1 veth pairs; 2 foreign interfaces on their bridges; 4 port events")

	// Someone attaches the peer end of v1 to a bridge: a loop.
	if _, err := h.Events(api.PortEventBatch{Events: []api.PortEvent{ev(api.EventAdded, "br1", "v1-p", api.OwnerForeign),
		ev(api.EventRemoved, "br0", "tap0", api.OwnerForeign)}}); err != nil {
		t.Fatal(err)
	}
	health(api.HealthDegraded, "peer ends on a bridge: v1-p@br1")
	if _, err := h.Events(api.PortEventBatch{Events: []api.PortEvent{ev(api.EventRemoved, "br1", "v1-p", api.OwnerForeign)}}); err != nil {
		t.Fatal(err)
	}
	health(api.HealthOK, "1 foreign interfaces")

	// A resync forgets what is not listed again.
	if _, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true}); err != nil {
		t.Fatal(err)
	}
	health(api.HealthOK, "0 foreign interfaces")
}

func TestContribute(t *testing.T) {
	h := configured(t, newFakeLinks(), `{}`)
	if g, err := h.Contribute(); err != nil || len(g.OtherConfig) != 0 || len(g.DPDKExtra) != 0 {
		t.Errorf("default contribution %+v, %v; want none", g, err)
	}
	if err := h.Configure([]byte(`{"stats_update_interval_ms": 15000}`)); err != nil {
		t.Fatal(err)
	}
	if g, err := h.Contribute(); err != nil || len(g.OtherConfig) != 1 || g.OtherConfig["stats-update-interval"] != "15000" {
		t.Errorf("contribution %+v, %v", g, err)
	}
}

func TestFlows(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{}`)
	attach(t, h, "v1", "v2")
	bridge := api.BridgeFacts{Name: "br0", DatapathType: "netdev", Ports: []api.BridgePort{
		{Port: "v1", Interface: "v1", Type: "system", Ofport: 3, Owner: api.OwnerPlugin, Plugin: Name},
		{Port: "v2", Interface: "v2", Type: "system", Ofport: -1, Owner: api.OwnerPlugin, Plugin: Name}, // failed: no flows
		{Port: "tap0", Interface: "tap0", Type: "tap", Ofport: 4, Owner: api.OwnerForeign},
	}}
	if fs, err := h.Flows(bridge); err != nil || len(fs.Flows) != 0 {
		t.Errorf("Flows without drop_ethertypes = %+v, %v; want none", fs, err)
	}
	if err := h.Configure([]byte(`{"drop_ethertypes": ["lldp", "ipv6", "0x86DD"], "flow_priority": 250}`)); err != nil {
		t.Fatal(err)
	}
	fs, err := h.Flows(bridge) // the fake host checks the cookies against its range
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs.Flows {
		if f.Cookie != h.Cookies.Value || f.Priority != 250 || f.Table != 0 || f.Actions != "drop" {
			t.Errorf("flow %+v", f)
		}
		got = append(got, f.Match)
	}
	if want := "in_port=3,dl_type=0x86dd in_port=3,dl_type=0x88cc"; strings.Join(got, " ") != want {
		t.Errorf("matches %v; want %s", got, want)
	}
}

func TestStatsJob(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{}`)
	attach(t, h, "v1", "v2")
	links.traffic("v1", 1000) // before the job: not counted
	status, err := h.StartJob(api.Job{Name: "j1", Type: StatsJobType, Config: []byte(`{"ports": ["v1"], "interval_ms": 100}`)})
	if err != nil || status != "sampling ports [v1] every 100 ms" {
		t.Fatalf("StartJob = %q, %v", status, err)
	}
	if _, err := h.StartJob(api.Job{Name: "j1", Type: StatsJobType, Config: []byte(`{"ports": ["v1"], "interval_ms": 100}`)}); err != nil {
		t.Fatalf("StartJob again: %v", err)
	}
	links.traffic("v1", 50)
	var last api.StatsSample
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		samples, err := h.Stats(api.StatsRequest{Jobs: []string{"j1"}, IntervalMillis: 100}, 2)
		if err != nil {
			t.Fatal(err)
		}
		last = samples[len(samples)-1]
		if metric(last, "rx_packets", "v1", "host") == 50 {
			break
		}
	}
	if last.Job != "j1" || metric(last, "rx_packets", "v1", "host") != 50 || metric(last, "tx_packets", "v1", "peer") != 50 ||
		metric(last, "tx_bytes", "v1", "peer") != 5000 || metric(last, "pairs", "", "") != 1 {
		t.Errorf("sample %+v; want v1 only, 50 packets since the job started", last)
	}
	if metric(last, "rx_packets", "v2", "host") != -1 {
		t.Error("v2 sampled by a job for v1")
	}

	_, err = h.Stats(api.StatsRequest{Jobs: []string{"nope"}}, 1)
	wantCode(t, "Stats of an unknown job", err, api.NotFound)
	_, err = h.StartJob(api.Job{Name: "j2", Type: "other"})
	wantCode(t, "StartJob of a foreign type", err, api.InvalidArgument)
	_, err = h.StartJob(api.Job{Name: "j2", Type: StatsJobType, Config: []byte(`{"interval_ms": 5}`)})
	wantCode(t, "StartJob with a bad config", err, api.InvalidArgument)
	if err := h.StopJob("j1"); err != nil {
		t.Fatal(err)
	}
	if err := h.StopJob("j1"); err != nil {
		t.Errorf("second StopJob: %v", err)
	}
}

// metric returns the value of a metric with the port and end labels, -1 when absent.
func metric(s api.StatsSample, name, port, end string) float64 {
	for _, m := range s.Metrics {
		if m.Name == name && m.Labels["port"] == port && m.Labels["end"] == end {
			return m.Value
		}
	}
	return -1
}

// TestPortJob: a port with options:stats brings its own veth-stats job (Attachment.Jobs); the
// fake host starts it after Attach, as the daemon does, and it samples that port only until the
// port is detached.
func TestPortJob(t *testing.T) {
	links := newFakeLinks()
	h := configured(t, links, `{}`)
	attach(t, h, "v2")
	a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "v1", Type: PortType, Options: map[string]string{"stats": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) != 1 || a.Jobs[0].Name != "stats-v1" || a.Jobs[0].Type != StatsJobType {
		t.Fatalf("jobs of a port with stats=true: %+v", a.Jobs)
	}
	links.traffic("v1", 7)
	var last api.StatsSample
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && metric(last, "rx_packets", "v1", "host") != 7; {
		samples, err := h.Stats(api.StatsRequest{Jobs: []string{"stats-v1"}, IntervalMillis: 100}, 1)
		if err != nil {
			t.Fatal(err)
		}
		last = samples[0]
	}
	if metric(last, "rx_packets", "v1", "host") != 7 || metric(last, "rx_packets", "v2", "host") != -1 {
		t.Errorf("sample of the port's job %+v; want v1's 7 packets only", last)
	}
	if b, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "v3", Type: PortType}); err != nil || len(b.Jobs) != 0 {
		t.Errorf("a port without stats: jobs %+v, %v", b.Jobs, err)
	}
	if err := h.Detach("br0", "v1"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Stats(api.StatsRequest{Jobs: []string{"stats-v1"}}, 1)
	wantCode(t, "Stats of the job of a detached port", err, api.NotFound)
}
