package sdktest_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/internal/testplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func newPlugin() *testplugin.Plugin { return testplugin.New(slog.New(slog.DiscardHandler)) }

// lastReceived returns the last request the plugin received for method.
func lastReceived(t *testing.T, p *testplugin.Plugin, method string) any {
	t.Helper()
	rs := p.Received()
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Method == method {
			return rs[i].Req
		}
	}
	t.Fatalf("the plugin received no %s", method)
	return nil
}

func configured(t *testing.T, p *testplugin.Plugin) *sdktest.FakeHost {
	t.Helper()
	h := sdktest.NewFakeHost(t, p)
	if err := h.Configure([]byte(`{"greeting":"hello"}`)); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return h
}

func TestBaseRoundTrip(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	info := h.Conn().Info
	want := []api.Capability{api.CapabilityPortProvider, api.CapabilityWatcher, api.CapabilityGlobalConfig,
		api.CapabilityFlowProgram, api.CapabilityDataPath}
	if !reflect.DeepEqual(info.Capabilities, want) || info.Name != "testplugin" || info.Version != "0.1.0" {
		t.Errorf("Info = %+v, want capabilities %v", info, want)
	}
	if !reflect.DeepEqual(info.APIVersions, api.SupportedAPIVersions()) || len(info.Types) != 2 ||
		info.Types[0].Kind != api.ObjectKindPort || info.Types[0].OptionsSchema == "" ||
		!reflect.DeepEqual(info.Watch.Owners, []api.PortOwner{api.OwnerForeign, api.OwnerOvsplane}) {
		t.Errorf("Info = %+v", info)
	}
	got := lastReceived(t, p, "Configure").(api.ConfigureRequest)
	wantReq := api.ConfigureRequest{Config: []byte(`{"greeting":"hello"}`), Facts: h.Facts, APIVersion: api.APIVersion, Cookies: h.Cookies, Groups: h.Groups}
	if !reflect.DeepEqual(got, wantReq) {
		t.Errorf("plugin received Configure %+v, want %+v", got, wantReq)
	}
	health, err := h.Health()
	if err != nil || health != (api.Health{State: api.HealthOK, Message: "hello"}) {
		t.Errorf("Health = %+v, %v", health, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	cs, err := h.Conn().Plugin.ConfigSchema(ctx)
	if err != nil || cs.JSONSchema == "" || cs.Doc != "greeting: a word" {
		t.Errorf("ConfigSchema = %+v, %v", cs, err)
	}
}

func TestPortProviderRoundTrip(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	req := api.PortRequest{Bridge: "br0", Name: "p0", Type: "testport",
		Options: map[string]string{"peer": "p0-peer", "mtu": "9000"}, ExternalIDs: map[string]string{"iface-id": "abc"}}

	problems, err := h.Validate(api.PortRequest{Bridge: "br0", Name: "bad", Type: "testport", Options: map[string]string{"mtu": "x", "color": "red"}})
	wantProblems := []api.Problem{
		{Field: "options.peer", Message: "is required"},
		{Field: "options.mtu", Message: `"x" is not an integer of 64 bits`},
		{Field: "options.color", Message: "unknown option (known: job, mtu, peer)"},
	}
	if err != nil || !reflect.DeepEqual(problems, wantProblems) {
		t.Errorf("Validate = %+v, %v; want %+v", problems, err, wantProblems)
	}

	a, err := h.Attach(req)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if got := lastReceived(t, p, "Attach").(api.PortRequest); !reflect.DeepEqual(got, req) {
		t.Errorf("plugin received %+v, want %+v", got, req)
	}
	mtu := 9000
	if want := testplugin.Shape(req, testplugin.PortOptions{Peer: "p0-peer", MTU: &mtu}, a.State); !reflect.DeepEqual(a, want) {
		t.Errorf("Attach = %+v, want %+v", a, want)
	}
	// Idempotent, and the stored state goes back to the plugin.
	a2, err := h.Attach(req)
	if err != nil || !reflect.DeepEqual(a2, a) || p.Created() != 1 {
		t.Errorf("second Attach = %+v, %v (created %d); want the same shape, created once", a2, err, p.Created())
	}
	if got := lastReceived(t, p, "Attach").(api.PortRequest); string(got.State) != string(a.State) {
		t.Errorf("second Attach got state %q, want %q", got.State, a.State)
	}

	owned, err := h.List()
	if err != nil || len(owned) != 1 || owned[0].Name != "p0" || string(owned[0].State) != string(a.State) {
		t.Errorf("List = %+v, %v", owned, err)
	}
	if err := h.Detach("br0", "p0"); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if got := lastReceived(t, p, "Detach").(api.PortRequest); string(got.State) != string(a.State) || got.Type != "testport" {
		t.Errorf("Detach got %+v, want the stored request and state", got)
	}
	if err := h.Detach("br0", "p0"); err != nil {
		t.Errorf("second Detach: %v, want nil (idempotent)", err)
	}
	if owned, _ := h.List(); len(owned) != 0 {
		t.Errorf("List after Detach = %+v", owned)
	}
}

func TestRestartReplaysState(t *testing.T) {
	h := configured(t, newPlugin())
	for _, name := range []string{"p1", "p2"} {
		if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: name, Type: "testport", Options: map[string]string{"peer": "x"}}); err != nil {
			t.Fatalf("Attach %s: %v", name, err)
		}
	}
	before, _ := h.State("br0", "p2")
	fresh := newPlugin()
	if err := h.Restart(fresh); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if fresh.Created() != 0 {
		t.Errorf("the restarted plugin did the host work of %d ports again, want 0 (replay)", fresh.Created())
	}
	if req := lastReceived(t, fresh, "Attach").(api.PortRequest); !req.Replay || len(req.State) == 0 {
		t.Errorf("replayed Attach: Replay %v, state %q: want both set", req.Replay, req.State)
	}
	after, _ := h.State("br0", "p2")
	if string(before) != string(after) {
		t.Errorf("state after replay %q, want %q", after, before)
	}
	if owned, err := h.List(); err != nil || len(owned) != 2 {
		t.Errorf("List after restart = %+v, %v", owned, err)
	}
}

func TestWatcherRoundTrip(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	batch := api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{
		{Kind: api.EventAdded, Owner: api.OwnerForeign, Bridge: "br-int", Port: "vhu1", Interface: "vhu1", Type: "dpdkvhostuserclient",
			Options: map[string]string{"vhost-server-path": "/run/vhu1"}, OtherConfig: map[string]string{"a": "b"},
			ExternalIDs: map[string]string{"iface-id": "x"}, Ofport: 5},
		{Kind: api.EventRemoved, Owner: api.OwnerPlugin, Plugin: "other", Bridge: "br-int", Port: "vhu2", Interface: "vhu2", Ofport: -1, Error: "gone"},
	}}
	changes, err := h.Events(batch)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if got := lastReceived(t, p, "OnPortEvents").(api.PortEventBatch); !reflect.DeepEqual(got, batch) {
		t.Errorf("plugin received %+v, want %+v", got, batch)
	}
	want := []api.InterfaceChange{{Interface: "vhu1", Set: map[string]string{"test-dma": "on"}, Remove: []string{"test-old"}}}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("changes = %+v, want %+v", changes, want)
	}
}

func TestGlobalConfigRoundTrip(t *testing.T) {
	h := configured(t, newPlugin())
	g, err := h.Contribute()
	want := api.GlobalConfig{OtherConfig: map[string]string{"test-greeting": "hello"}, DPDKExtra: []string{"--test-flag"}}
	if err != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("Contribute = %+v, %v; want %+v", g, err, want)
	}
}

func TestFlowProgramRoundTrip(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	bridge := api.BridgeFacts{Name: "br0", DatapathType: "netdev", Protocols: []string{"OpenFlow13"}, Ports: []api.BridgePort{
		{Port: "a", Interface: "a", Type: "dpdk", Ofport: 1, Owner: api.OwnerOvsplane, ExternalIDs: map[string]string{"k": "v"}},
		{Port: "b", Interface: "b", Type: "vxlan", Ofport: 2, Owner: api.OwnerPlugin, Plugin: "overlay"},
	}}
	fs, err := h.Flows(bridge)
	if err != nil {
		t.Fatalf("Flows: %v", err)
	}
	if got := lastReceived(t, p, "Flows").(api.BridgeFacts); !reflect.DeepEqual(got, bridge) {
		t.Errorf("plugin received %+v, want %+v", got, bridge)
	}
	if len(fs.Flows) != 2 || fs.Flows[1] != (api.Flow{Cookie: h.Cookies.Value | 1, Table: 1, Priority: 100, Match: "in_port=2",
		Actions: "group:43776", IdleTimeout: 10, HardTimeout: 60}) || fs.RefreshMillis != 1000 {
		t.Errorf("flows = %+v", fs)
	}
	wantGroup := api.Group{ID: 0xab00, Type: "select", SelectionMethod: "dp_hash", Buckets: []api.Bucket{
		{Actions: "output:1", Weight: 100, WatchPort: 1}, {Actions: "output:2", Weight: 100, WatchPort: 2}}}
	if len(fs.Groups) != 1 || !reflect.DeepEqual(fs.Groups[0], wantGroup) {
		t.Errorf("groups = %+v, want %+v", fs.Groups, wantGroup)
	}
	// The host's checks: a plugin configured with other ranges answers out of the host's.
	h.Cookies = api.CookieRange{Value: 0x77 << 48, Mask: 0xffff << 48}
	if _, err := h.Flows(bridge); api.CodeOf(err) != api.Internal {
		t.Errorf("Flows with cookies out of range: %v, want an internal error", err)
	}
}

func TestDataPathRoundTrip(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	job := api.Job{Name: "mon", Type: "testjob", Config: []byte(`{"every":"1s"}`)}
	status, err := h.StartJob(job)
	if err != nil || status != "running testjob" {
		t.Fatalf("Start = %q, %v", status, err)
	}
	if got := lastReceived(t, p, "Start").(api.Job); !reflect.DeepEqual(got, job) {
		t.Errorf("plugin received %+v, want %+v", got, job)
	}
	samples, err := h.Stats(api.StatsRequest{Jobs: []string{"mon"}, IntervalMillis: 2}, 3)
	if err != nil || len(samples) != 3 {
		t.Fatalf("Stats = %d samples, %v", len(samples), err)
	}
	if got := lastReceived(t, p, "Stats").(api.StatsRequest); !reflect.DeepEqual(got, api.StatsRequest{Jobs: []string{"mon"}, IntervalMillis: 2}) {
		t.Errorf("plugin received %+v", got)
	}
	m := samples[2].Metrics
	if samples[2].Job != "mon" || samples[2].TimeUnixNano == 0 || len(m) != 2 || m[0].Value != 3 || m[0].Kind != api.MetricCounter ||
		m[0].Labels["dir"] != "rx" || m[1].Kind != api.MetricGauge {
		t.Errorf("third sample = %+v", samples[2])
	}
	if err := h.StopJob("mon"); err != nil {
		t.Errorf("Stop: %v", err)
	}
	// The stream of a plugin that stops sending ends with the host's deadline.
	h.Timeout = 100 * time.Millisecond
	if _, err := h.Stats(api.StatsRequest{}, 1); api.CodeOf(err) != api.DeadlineExceeded {
		t.Errorf("Stats with no job: %v, want deadline_exceeded", err)
	}
}

// TestErrorCodes checks that each code, message and problem list a plugin returns reaches the
// host unchanged, for every kind of call (unary and streaming).
func TestErrorCodes(t *testing.T) {
	codes := []api.Code{api.InvalidArgument, api.NotFound, api.Unavailable, api.FailedPrecondition,
		api.AlreadyExists, api.Internal, api.DeadlineExceeded}
	methods := map[string]func(h *sdktest.FakeHost) error{
		"Attach":       func(h *sdktest.FakeHost) error { _, err := h.Attach(api.PortRequest{Name: "p"}); return err },
		"Detach":       func(h *sdktest.FakeHost) error { return h.Detach("br0", "p") },
		"OnPortEvents": func(h *sdktest.FakeHost) error { _, err := h.Events(api.PortEventBatch{}); return err },
		"Contribute":   func(h *sdktest.FakeHost) error { _, err := h.Contribute(); return err },
		"Flows":        func(h *sdktest.FakeHost) error { _, err := h.Flows(api.BridgeFacts{}); return err },
		"Stats":        func(h *sdktest.FakeHost) error { _, err := h.Stats(api.StatsRequest{}, 1); return err },
		"Health":       func(h *sdktest.FakeHost) error { _, err := h.Health(); return err },
	}
	for method, call := range methods {
		for _, code := range codes {
			t.Run(method+"/"+code.String(), func(t *testing.T) {
				sent := &api.Error{Code: code, Message: "it broke", Problems: []api.Problem{{Field: "options.peer", Message: "no such interface"}}}
				p := newPlugin()
				p.Fail = map[string]error{method: sent}
				h := configured(t, p)
				err := call(h)
				var got *api.Error
				if !errors.As(err, &got) || got.Code != code || got.Message != sent.Message || !reflect.DeepEqual(got.Problems, sent.Problems) {
					t.Errorf("%s: %#v, want %#v", method, err, sent)
				}
				if !errors.Is(err, &api.Error{Code: code}) {
					t.Errorf("errors.Is(%v, code %v) = false", err, code)
				}
			})
		}
	}
	t.Run("plain error", func(t *testing.T) {
		p := newPlugin()
		p.Fail = map[string]error{"Attach": errors.New("disk on fire")}
		h := configured(t, p)
		_, err := h.Attach(api.PortRequest{Name: "p"})
		if !errors.Is(err, api.ErrInternal) || err.Error() != "internal: disk on fire" {
			t.Errorf("Attach: %v, want internal: disk on fire", err)
		}
	})
	t.Run("configure problems", func(t *testing.T) {
		h := sdktest.NewFakeHost(t, newPlugin())
		err := h.Configure([]byte(`{"greeting": 3, "x": 1}`))
		var got *api.Error
		if !errors.As(err, &got) || got.Code != api.InvalidArgument || len(got.Problems) != 1 || got.Problems[0].Field != "config.greeting" {
			t.Errorf("Configure: %#v, want invalid_argument naming config.greeting", err)
		}
		if _, err := h.Attach(api.PortRequest{}); api.CodeOf(err) != api.FailedPrecondition {
			t.Errorf("Attach before a successful Configure: %v, want failed_precondition", err)
		}
	})
}

// TestDeadline checks that a hanging plugin call returns DeadlineExceeded at the host's
// deadline, and that the plugin's context ends too.
func TestDeadline(t *testing.T) {
	for _, method := range []string{"Attach", "Configure", "OnPortEvents", "Flows"} {
		t.Run(method, func(t *testing.T) {
			p := newPlugin()
			h := configured(t, p)
			p.Hang = map[string]bool{method: true}
			h.Timeout = 150 * time.Millisecond
			start := time.Now()
			var err error
			switch method {
			case "Attach":
				_, err = h.Attach(api.PortRequest{Name: "p", Options: map[string]string{"peer": "x"}})
			case "Configure":
				err = h.Configure(nil)
			case "OnPortEvents":
				_, err = h.Events(api.PortEventBatch{})
			case "Flows":
				_, err = h.Flows(api.BridgeFacts{})
			}
			if api.CodeOf(err) != api.DeadlineExceeded || !errors.Is(err, api.ErrDeadlineExceeded) {
				t.Fatalf("%s of a hanging plugin: %v, want deadline_exceeded", method, err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%s returned after %v, want about 150ms", method, d)
			}
			deadline := time.Now().Add(3 * time.Second)
			for p.CtxErr(method) == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if p.CtxErr(method) == nil {
				t.Errorf("the plugin's context of %s did not end", method)
			}
		})
	}
}

func TestCallsRecorded(t *testing.T) {
	h := configured(t, newPlugin())
	_, _ = h.Attach(api.PortRequest{Bridge: "br0", Name: "p", Options: map[string]string{}})
	calls := h.Calls()
	if len(calls) != 2 || calls[0].Method != "Configure" || calls[1].Method != "Attach" || calls[1].Object != "br0/p" ||
		api.CodeOf(calls[1].Err) != api.InvalidArgument {
		t.Errorf("Calls = %+v", calls)
	}
}

// refusingPlugin is the test plugin whose Attach, once Refuse is set, does its host work and
// then answers with an interface name holding a NUL, which the host's checks refuse.
type refusingPlugin struct {
	*testplugin.Plugin
	Refuse atomic.Bool
}

func (p *refusingPlugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	a, err := p.Plugin.Attach(ctx, req)
	if err == nil && p.Refuse.Load() {
		a.Ports[0].Interfaces[0].Name = "bad\x00name"
	}
	return a, err
}

// TestRefusedAttachAnswerIsDetached checks that the fake host undoes a fresh attachment whose
// answer the host's checks refuse, as the daemon does: Detach with the refused answer's State,
// and the *api.RefusedAnswerError returned; a refused replay and the plugin's own error detach
// nothing.
func TestRefusedAttachAnswerIsDetached(t *testing.T) {
	detaches := func(p *testplugin.Plugin) []api.PortRequest {
		var out []api.PortRequest
		for _, r := range p.Received() {
			if r.Method == "Detach" {
				out = append(out, r.Req.(api.PortRequest))
			}
		}
		return out
	}
	req := api.PortRequest{Bridge: "br0", Name: "p0", Type: "testport", Options: map[string]string{"peer": "x"}}

	t.Run("fresh", func(t *testing.T) {
		p := &refusingPlugin{Plugin: newPlugin()}
		p.Refuse.Store(true)
		h := sdktest.NewFakeHost(t, p)
		if err := h.Configure(nil); err != nil {
			t.Fatalf("Configure: %v", err)
		}
		_, err := h.Attach(req)
		refused, ok := errors.AsType[*api.RefusedAnswerError](err)
		if !ok || refused.Plugin != "testplugin" || api.CodeOf(err) != api.Internal || len(refused.State) == 0 {
			t.Fatalf("Attach = %#v, want a *api.RefusedAnswerError of plugin testplugin with the answer's state", err)
		}
		want := req
		want.State = refused.State
		if got := detaches(p.Plugin); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("plugin received Detach %+v, want once %+v", got, want)
		}
		if owned, err := h.List(); err != nil || len(owned) != 0 {
			t.Errorf("List after the refused Attach = %+v, %v; want nothing owned", owned, err)
		}
		if st, ok := h.State("br0", "p0"); ok {
			t.Errorf("the host stored state %q of a refused answer", st)
		}
		calls := h.Calls()
		if len(calls) < 3 || calls[1].Method != "Attach" || calls[1].Err == nil ||
			calls[2].Method != "Detach" || calls[2].Object != "br0/p0" || calls[2].Err != nil {
			t.Errorf("Calls = %+v, want Configure, the failed Attach, then Detach of br0/p0", calls)
		}
	})

	t.Run("replay", func(t *testing.T) {
		p := &refusingPlugin{Plugin: newPlugin()}
		h := sdktest.NewFakeHost(t, p)
		if err := h.Configure(nil); err != nil {
			t.Fatalf("Configure: %v", err)
		}
		a, err := h.Attach(req)
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		p.Refuse.Store(true)
		if _, err := h.Attach(req); !errors.As(err, new(*api.RefusedAnswerError)) {
			t.Fatalf("second Attach = %v, want a *api.RefusedAnswerError", err)
		}
		if got := detaches(p.Plugin); len(got) != 0 {
			t.Errorf("plugin received Detach %+v after a refused replay, want none (the host still holds the port)", got)
		}
		if st, ok := h.State("br0", "p0"); !ok || string(st) != string(a.State) {
			t.Errorf("stored state = %q, %v; want %q kept", st, ok, a.State)
		}
	})

	t.Run("plugin error", func(t *testing.T) {
		p := newPlugin()
		p.Fail = map[string]error{"Attach": api.Errorf(api.Unavailable, "no peer")}
		h := configured(t, p)
		_, err := h.Attach(req)
		if api.CodeOf(err) != api.Unavailable || errors.As(err, new(*api.RefusedAnswerError)) {
			t.Errorf("Attach = %#v, want the plugin's unavailable error", err)
		}
		if got := detaches(p); len(got) != 0 {
			t.Errorf("plugin received Detach %+v after its own error, want none", got)
		}
	})
}

// TestPortJobs: the jobs of an attachment are started after Attach, started again after a
// restart's replay, and stopped before Detach, as the host does.
func TestPortJobs(t *testing.T) {
	p := newPlugin()
	h := configured(t, p)
	req := api.PortRequest{Bridge: "br0", Name: "p1", Type: "testport", Options: map[string]string{"peer": "x", "job": "p1-engine"}}
	a, err := h.Attach(req)
	if err != nil || len(a.Jobs) != 1 {
		t.Fatalf("Attach = %+v, %v", a.Jobs, err)
	}
	if got := p.Jobs(); !reflect.DeepEqual(got, []string{"p1-engine"}) {
		t.Fatalf("jobs after Attach %v, want [p1-engine]", got)
	}
	if got := lastReceived(t, p, "Start").(api.Job); !reflect.DeepEqual(got, a.Jobs[0]) {
		t.Errorf("started %+v, want the attachment's %+v", got, a.Jobs[0])
	}
	fresh := newPlugin()
	if err := h.Restart(fresh); err != nil {
		t.Fatal(err)
	}
	if got := fresh.Jobs(); !reflect.DeepEqual(got, []string{"p1-engine"}) {
		t.Fatalf("jobs after a restart %v, want [p1-engine] started again", got)
	}
	if err := h.Detach("br0", "p1"); err != nil {
		t.Fatal(err)
	}
	if got := fresh.Jobs(); len(got) != 0 {
		t.Fatalf("jobs after Detach %v, want none", got)
	}
}
