package vswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// fakePlugins is one plugin "thing" providing port type "thing": an attach gives an internal
// port (or a dpdk port with the devargs of options:devargs, which the simulated ovs-vswitchd
// refuses unless they start with net_tap), with state "st:<name>:<n>" where n counts the
// fresh attaches. Its state can be set to failed.
type fakePlugins struct {
	mu       sync.Mutex
	state    string
	attaches map[string]int
	detached []string // "name state"
	bad      bool     // Attach returns a second port on a bridge that is not the object's
	noMore   bool     // Attach ignores options:more
	global   map[string]string
	unknown  []string // GlobalConfig's Unknown: plugins that never started
}

func newFakePlugins() *fakePlugins {
	return &fakePlugins{state: "running", attaches: map[string]int{}}
}

func (f *fakePlugins) PortProvider(t string) (api.PortProvider, string, bool) {
	if t != "thing" {
		return nil, "", false
	}
	return f, "thing-plugin", true
}

func (f *fakePlugins) Plugins() []model.PluginInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []model.PluginInfo{{Name: "thing-plugin", State: f.state, Reason: "crashed 5 times in 30s", Types: []string{"thing"}}}
}

func (f *fakePlugins) Reload(context.Context, []model.Plugin) error { return nil }

func (f *fakePlugins) Flows(context.Context, api.BridgeFacts) []api.PluginFlows { return nil }

func (f *fakePlugins) Cookies() api.CookieRange {
	return api.CookieRange{Value: 0xa5 << 56, Mask: 0xff << 56}
}

func (f *fakePlugins) GlobalConfig(_ context.Context, daemon map[string]string) vswitchd.PluginGlobals {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	var conflicts []error
	for k, v := range f.global {
		if k == "dpdk-extra" { // the host appends fragments to the daemon's own value
			out[k] = v
			continue
		}
		if own, ok := daemon[k]; ok && own != v {
			conflicts = append(conflicts, fmt.Errorf("other_config:%s: plugin %q wants %q, the daemon's configuration has %q", k, "thing-plugin", v, own))
			continue
		}
		out[k] = v
	}
	return vswitchd.PluginGlobals{OtherConfig: out, Conflicts: conflicts, Unknown: f.unknown}
}

func (f *fakePlugins) Validate(_ context.Context, req api.PortRequest) ([]api.Problem, error) {
	if v, ok := req.Options["color"]; ok && v != "red" {
		return []api.Problem{{Field: "options.color", Message: "only red is supported; set options:color=red"}}, nil
	}
	return nil, nil
}

func (f *fakePlugins) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Options["fail"] != "" {
		return api.Attachment{}, &api.Error{Code: api.FailedPrecondition, Message: "plugin \"thing-plugin\": Attach: " + req.Options["fail"]}
	}
	state := req.State
	if state == nil {
		f.attaches[req.Name]++
		state = fmt.Appendf(nil, "st:%s:%d", req.Name, f.attaches[req.Name])
	}
	in := api.OVSInterface{Name: req.Name, Type: "internal"}
	if dev := req.Options["devargs"]; dev != "" {
		in = api.OVSInterface{Name: req.Name, Type: "dpdk", Options: map[string]string{"dpdk-devargs": dev}}
	}
	a := api.Attachment{Ports: []api.OVSPort{{Name: req.Name, Interfaces: []api.OVSInterface{in},
		ExternalIDs: map[string]string{"thing": "yes"}}}, State: state, Status: "thing " + req.Name,
		Endpoints: map[string]string{"socket": "/run/" + req.Name}}
	if req.Options["more"] != "" && !f.noMore { // a second port on a bridge the object creates
		a.Ports = append(a.Ports, api.OVSPort{Bridge: req.Name + "-mb", Name: req.Name + "-m", Interfaces: []api.OVSInterface{{Name: req.Name + "-m", Type: "internal"}}})
		a.Bridges = append(a.Bridges, api.OVSBridge{Name: req.Name + "-mb", DatapathType: "netdev"})
	}
	if f.bad {
		a.Ports = append(a.Ports, api.OVSPort{Bridge: "br-elsewhere", Name: req.Name + "-b", Interfaces: []api.OVSInterface{{Name: req.Name + "-b"}}})
	}
	return a, nil
}

func (f *fakePlugins) Detach(_ context.Context, req api.PortRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detached = append(f.detached, req.Name+" "+string(req.State))
	return nil
}

func (f *fakePlugins) List(context.Context) ([]api.OwnedPort, error) { return nil, nil }

func thingPort(name string, opts map[string]string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "thing", Options: opts}}}
}

func withPlugins(p vswitchd.Plugins) func(*vswitchd.Options) {
	return func(o *vswitchd.Options) { o.Plugins = p }
}

func TestPluginPortAttachedWrittenAndDetached(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, stop := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))

	info, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("t1", map[string]string{"color": "red"}))
	if err != nil {
		t.Fatal(err)
	}
	if info.Plugin != "thing-plugin" || info.Status.State != model.StateReady || info.Endpoints["socket"] != "/run/t1" ||
		info.Shape == nil || info.Shape.Interfaces[0].Type != "internal" || info.Spec.Interfaces[0].Type != "thing" {
		t.Fatalf("ApplyPort: %+v", info)
	}
	// OVSDB holds the plugin's shape, tagged with the plugin.
	ifc := &vswitch.Interface{Name: "t1"}
	if err := e.Raw.Get(e.Ctx, ifc); err != nil || ifc.Type != "internal" {
		t.Fatalf("interface row: %+v, %v", ifc, err)
	}
	port := &vswitch.Port{Name: "t1"}
	if err := e.Raw.Get(e.Ctx, port); err != nil || port.ExternalIDs[vswitchd.PluginKey] != "thing-plugin" || port.ExternalIDs["thing"] != "yes" {
		t.Fatalf("port row: %+v, %v", port, err)
	}

	// The same request again is a replay: the plugin gets its state, nothing is created again.
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("t1", map[string]string{"color": "red"})); err != nil {
		t.Fatal(err)
	}
	if fp.attaches["t1"] != 1 {
		t.Errorf("re-apply attached afresh: %d fresh attaches", fp.attaches["t1"])
	}
	// Another request for the same port is refused.
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("t1", map[string]string{"color": "red", "x": "1"})); !errors.Is(err, model.ErrConflict) {
		t.Errorf("changed request: %v", err)
	}

	// A restarted daemon reads the plugin's state back from OVSDB and replays it.
	stop()
	d, _ = startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	reqs, err := d.PluginPorts(e.Ctx, "thing-plugin")
	if err != nil || len(reqs) != 1 || string(reqs[0].State) != "st:t1:1" || reqs[0].Options["color"] != "red" {
		t.Fatalf("PluginPorts after restart: %+v, %v", reqs, err)
	}
	got, err := d.Port("t1")
	if err != nil || got.Plugin != "thing-plugin" || got.PluginStatus != "thing t1" {
		t.Fatalf("Port after restart: %+v, %v", got, err)
	}

	// Deleting removes the row, then detaches with the stored state.
	if err := d.DeletePort(e.Ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Raw.Get(e.Ctx, &vswitch.Port{Name: "t1"}); err == nil {
		t.Error("port row still there after DeletePort")
	}
	if !slices.Equal(fp.detached, []string{"t1 st:t1:1"}) {
		t.Errorf("detached: %q", fp.detached)
	}
}

func TestPluginPortRefusals(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	cases := []struct {
		name string
		port model.Port
		want error
		msg  string
	}{
		{"plugin's validation", thingPort("v1", map[string]string{"color": "blue"}), model.ErrInvalid, "options:color: only red"},
		{"plugin's refusal", thingPort("v2", map[string]string{"fail": "VF 3 is in use by vm7"}), model.ErrConflict, "VF 3 is in use"},
		{"two interfaces", model.Port{Name: "v3", Interfaces: []model.Interface{{Name: "v3", Type: "thing"}, {Name: "v3b"}}}, model.ErrInvalid, "exactly one interface"},
		{"unknown type", model.Port{Name: "v4", Interfaces: []model.Interface{{Name: "v4", Type: "thingy"}}}, model.ErrInvalid, "or a type of a configured plugin"},
	}
	for _, c := range cases {
		_, err := d.ApplyPort(e.Ctx, "br-cfg", c.port)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.want, c.msg)
		}
	}
	// A plugin answering with a shape ovsplaned cannot write: refused naming the plugin, and
	// what it attached is detached again.
	fp.bad = true
	_, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("v5", nil))
	fp.bad = false
	if !errors.Is(err, model.ErrFailed) || !strings.Contains(err.Error(), `plugin "thing-plugin"`) {
		t.Errorf("a port on another bridge: %v", err)
	}
	if !slices.Equal(fp.detached, []string{"v5 st:v5:1"}) {
		t.Errorf("detached after a refused shape: %q", fp.detached)
	}
	for _, n := range []string{"v1", "v2", "v3", "v4", "v5"} {
		if err := e.Raw.Get(e.Ctx, &vswitch.Port{Name: n}); err == nil {
			t.Errorf("refused port %s was written", n)
		}
	}
}

func TestPluginPortStatusFollowsVswitchdAndPlugin(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	// ovs-vswitchd refuses the shape: the port is written and its status carries the error.
	info, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("rep0", map[string]string{"devargs": "0000:65:00.0,representor=vf2"}))
	if err != nil {
		t.Fatal(err)
	}
	if info.Status.State != model.StateError || !strings.Contains(info.Status.Error, "0000:65:00.0") {
		t.Fatalf("refused representor: %+v", info.Status)
	}
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("ok0", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WaitReady(e.Ctx, []string{"port/ok0"}); err != nil {
		t.Fatal(err)
	}
	// The plugin's breaker opens: its ports show the plugin's error.
	fp.mu.Lock()
	fp.state = "failed"
	fp.mu.Unlock()
	_, err = d.WaitReady(e.Ctx, []string{"port/ok0"})
	if !errors.Is(err, model.ErrFailed) || !strings.Contains(err.Error(), `plugin "thing-plugin"`) || !strings.Contains(err.Error(), "crashed 5 times") {
		t.Errorf("WaitReady with the plugin failed: %v", err)
	}
	p, _ := d.Port("ok0")
	if p.Status.State != model.StateError {
		t.Errorf("Port with the plugin failed: %+v", p.Status)
	}
	if !slices.ContainsFunc(d.Status(), func(s model.Status) bool { return s.Name == "ok0" && s.State == model.StateError }) {
		t.Error("Status does not show the failed plugin on ok0")
	}
}

func TestPluginGlobalConfigMerged(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	fp.global = map[string]string{"hw-offload": "true", "pmd-cpu-mask": "0x6", "dpdk-extra": "--log-level=8 --huge-unlink"}
	cfg := cfgWithBridge()
	cfg.OtherConfig = map[string]string{"pmd-cpu-mask": "0x3", "dpdk-extra": "--log-level=8"}
	d, _ := startDaemon(t, e, cfg, nil, withPlugins(fp))
	d.RefreshPluginConfig(e.Ctx)
	root := func() map[string]string { return otherConfig(t, e) }
	waitFor(t, "hw-offload contributed", func() bool { return root()["hw-offload"] == "true" })
	if got := root()["pmd-cpu-mask"]; got != "0x3" {
		t.Errorf("pmd-cpu-mask = %q: the configuration's value must stay", got)
	}
	if got := root()["dpdk-extra"]; got != "--log-level=8 --huge-unlink" {
		t.Errorf("dpdk-extra = %q: the plugins' fragments follow the configuration's value", got)
	}
	h := d.Health(e.Ctx)
	if len(h.PluginConflicts) != 1 || !strings.Contains(h.PluginConflicts[0], "pmd-cpu-mask") {
		t.Errorf("Health.PluginConflicts = %q", h.PluginConflicts)
	}
	// The contribution goes away: so does the key it brought.
	fp.mu.Lock()
	fp.global = nil
	fp.mu.Unlock()
	d.RefreshPluginConfig(e.Ctx)
	waitFor(t, "hw-offload withdrawn", func() bool { _, ok := root()["hw-offload"]; return !ok })
	if got := root()["pmd-cpu-mask"]; got != "0x3" {
		t.Errorf("pmd-cpu-mask = %q after the plugin withdrew", got)
	}
}

// waitFor polls cond until it holds (the test's context bounds it).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 1000 {
			t.Fatalf("%s: not reached", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConfigPortOfPluginType(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	cfg := cfgWithBridge()
	cfg.Plugins = []model.Plugin{{Name: "thing-plugin", Path: "thing", SHA256: strings.Repeat("0", 64)}}
	cfg.Bridges[0].Ports = append(cfg.Bridges[0].Ports, thingPort("ct1", map[string]string{"color": "red"}))
	d, stop := startDaemon(t, e, cfg, nil, withPlugins(fp))
	// Before its plugin attached it, the port is not written and says why.
	if _, err := d.WaitReady(e.Ctx, []string{"port/ct1"}); !errors.Is(err, model.ErrFailed) || !strings.Contains(err.Error(), "not attached") {
		t.Fatalf("WaitReady before the plugin ran: %v", err)
	}
	d.PluginChanged("thing-plugin") // the host reports it running
	if _, err := d.WaitReady(e.Ctx, []string{"port/ct1", "interface/ct1"}); err != nil {
		t.Fatal(err)
	}
	port := &vswitch.Port{Name: "ct1"}
	if err := e.Raw.Get(e.Ctx, port); err != nil || port.ExternalIDs[vswitchd.PluginKey] != "thing-plugin" {
		t.Fatalf("ct1 row: %+v, %v", port, err)
	}
	info, err := d.Port("ct1")
	if err != nil || info.Origin != model.OriginConfig || info.Plugin != "thing-plugin" || info.Shape == nil {
		t.Fatalf("Port(ct1): %+v, %v", info, err)
	}
	reqs, _ := d.PluginPorts(e.Ctx, "thing-plugin")
	if len(reqs) != 1 || string(reqs[0].State) != "st:ct1:1" {
		t.Errorf("PluginPorts: %+v", reqs)
	}

	// A restarted daemon keeps the port from its stored attachment, without attaching again.
	stop()
	cfg2 := cfgWithBridge()
	cfg2.Plugins = cfg.Plugins
	d, _ = startReloadable(t, e, cfg, cfg2, fp)
	if _, err := d.WaitReady(e.Ctx, []string{"port/ct1"}); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if fp.attaches["ct1"] != 1 {
		t.Errorf("attached %d times", fp.attaches["ct1"])
	}

	// Removed from the configuration: the row goes, then the plugin detaches it.
	if err := d.Reload(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Raw.Get(e.Ctx, &vswitch.Port{Name: "ct1"}); err == nil {
		t.Error("ct1 still in OVSDB after its removal from the configuration")
	}
	if !slices.Contains(fp.detached, "ct1 st:ct1:1") {
		t.Errorf("detached: %q", fp.detached)
	}
}

// startReloadable starts a Daemon on cfg whose Reload loads next.
func startReloadable(t *testing.T, e *env, cfg, next *config.Config, p vswitchd.Plugins) (*vswitchd.Daemon, func()) {
	return startDaemon(t, e, cfg, nil, withPlugins(p), func(o *vswitchd.Options) {
		o.Reload = func(context.Context) (*config.Config, error) { return next, nil }
	})
}

// A restarted daemon keeps the plugins' other_config keys until the plugins answered: no
// flap of hw-offload while they start.
func TestPluginGlobalConfigKeptAcrossRestart(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	fp.global = map[string]string{"hw-offload": "true"}
	d, stop := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	d.RefreshPluginConfig(e.Ctx)
	root := func() map[string]string { return otherConfig(t, e) }
	waitFor(t, "hw-offload contributed", func() bool { return root()["hw-offload"] == "true" })
	stop()
	// The new daemon reconciles (startDaemon runs a pass) before any plugin answered.
	d, _ = startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	if got := root()["hw-offload"]; got != "true" {
		t.Fatalf("hw-offload = %q after a restart, before the plugins answered", got)
	}
	fp.mu.Lock()
	fp.global = nil
	fp.mu.Unlock()
	d.RefreshPluginConfig(e.Ctx)
	waitFor(t, "hw-offload released once the plugins answered without it", func() bool { _, ok := root()["hw-offload"]; return !ok })
}

// A plugin that never starts (its binary refused by the trust checks, say) leaves the
// other_config keys ovsplane had set as they were, however often the others answer; once
// every plugin has answered, keys nobody contributes go.
func TestPluginGlobalConfigKeptWhilePluginNeverStarted(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	fp.global = map[string]string{"hw-offload": "true", "pmd-perf-metrics": "true"}
	d, stop := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	d.RefreshPluginConfig(e.Ctx)
	root := func() map[string]string { return otherConfig(t, e) }
	waitFor(t, "keys contributed", func() bool { return root()["hw-offload"] == "true" && root()["pmd-perf-metrics"] == "true" })
	stop()

	// Restarted: the plugin that contributed hw-offload is refused; another answers
	// pmd-perf-metrics with a new value, which shows when its answer was written.
	fp.mu.Lock()
	fp.global, fp.unknown = map[string]string{"pmd-perf-metrics": "false"}, []string{"refused-plugin"}
	fp.mu.Unlock()
	d, _ = startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	for range 3 {
		d.RefreshPluginConfig(e.Ctx)
	}
	waitFor(t, "the answer written", func() bool { return root()["pmd-perf-metrics"] == "false" })
	if got := root(); got["hw-offload"] != "true" {
		t.Fatalf("other_config = %v while a plugin never started: hw-offload was pruned", got)
	}

	// The plugin starts and answers without hw-offload: now it goes.
	fp.mu.Lock()
	fp.unknown = nil
	fp.mu.Unlock()
	d.RefreshPluginConfig(e.Ctx)
	waitFor(t, "hw-offload released once every plugin answered", func() bool { _, ok := root()["hw-offload"]; return !ok })
	if got := root()["pmd-perf-metrics"]; got != "false" {
		t.Errorf("pmd-perf-metrics = %q: a key still contributed went", got)
	}
}

// otherConfig reads Open_vSwitch.other_config.
func otherConfig(t *testing.T, e *env) map[string]string {
	t.Helper()
	var rows []vswitch.OpenvSwitch
	if err := e.Raw.List(e.Ctx, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("Open_vSwitch: %v %d", err, len(rows))
	}
	return rows[0].OtherConfig
}

// A plugin that did its host work and then answered Attach with something the host's checks
// refuse (a NUL in a name, a state over api.MaxStateSize) gets a Detach for that port, with
// the refused answer's state, and the caller gets the refusal naming the plugin, the port and
// the field; a plugin whose Attach itself failed did nothing to detach. (Before the fix the
// refused attachments were kept until the plugin's next restart swept them.)
func TestPluginRefusedAnswerIsDetached(t *testing.T) {
	h := newFuzzPluginHarness(t)
	ctx := t.Context()
	port := model.Port{Name: "vm1", Interfaces: []model.Interface{{Name: "vm1", Type: "fz"}}}
	answer := func(name string, state []byte) []byte {
		b, err := proto.Marshal(&pb.AttachResponse{State: state, Ports: []*pb.OvsPort{{Name: "vm1",
			Interfaces: []*pb.OvsInterface{{Name: name, Type: "internal"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	huge := []byte(strings.Repeat("s", api.MaxStateSize+1))
	for _, c := range []struct {
		name   string
		answer []byte
		field  string // "" for the plugin's own failure
	}{
		{"nul-interface-name", answer("vm1\x00", []byte("vf3")), "ports[0].interfaces[0].name"},
		{"huge-state", answer("vm1", huge), "state"},
		{"plugin-error", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.plugin.setAnswer(c.answer)
			_, err := h.d.ApplyPort(ctx, "br-cfg", port)
			attached, detached, errored := h.plugin.counts()
			if !errors.Is(err, model.ErrFailed) || !strings.Contains(err.Error(), `plugin "fz"`) ||
				!strings.Contains(err.Error(), "vm1") || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("ApplyPort: %v, want ErrFailed naming plugin \"fz\", port vm1 and %q", err, c.field)
			}
			if _, err := h.d.Port("vm1"); !errors.Is(err, model.ErrNotFound) {
				t.Errorf("the refused port is known to the daemon: %v", err)
			}
			if c.field == "" {
				if attached != 1 || errored != 1 || detached != 0 {
					t.Errorf("the plugin's own failure: %d attaches (%d failed), %d detaches; want 1 (1), 0", attached, errored, detached)
				}
				return
			}
			if attached != 1 || detached != 1 {
				t.Fatalf("%d attaches, %d detaches; want the refused attachment detached once", attached, detached)
			}
			if got, want := h.plugin.lastDetachState(), h.plugin.answerState(); string(got) != string(want) {
				t.Errorf("Detach got state %.40q, want the refused answer's %.40q", got, want)
			}
		})
	}
	// A good answer is kept: written, and detached only when the port is deleted.
	h.plugin.setAnswer(answer("vm1", []byte("vf4")))
	if _, err := h.d.ApplyPort(ctx, "br-cfg", port); err != nil {
		t.Fatalf("ApplyPort of a good answer: %v", err)
	}
	if _, detached, _ := h.plugin.counts(); detached != 0 {
		t.Errorf("a good answer was detached %d times", detached)
	}
	if err := h.d.DeletePort(ctx, "vm1"); err != nil {
		t.Fatal(err)
	}
	if _, detached, _ := h.plugin.counts(); detached != 1 || string(h.plugin.lastDetachState()) != "vf4" {
		t.Errorf("DeletePort: %d detaches, state %q", detached, h.plugin.lastDetachState())
	}
}
