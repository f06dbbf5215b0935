package vswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

// FuzzPluginPort makes a plugin answer Attach with arbitrary bytes (an AttachResponse in
// protobuf) and applies a port of its type through the daemon, on the embedded OVSDB with the
// simulated ovs-vswitchd: the answer goes through the real gRPC shims (sdktest.Connect), the
// host's check (api.ValidateAttachment, as plugins/host applies it), the daemon's shape
// conversion and port validation, and the batched write. It checks that nothing panics; that
// ApplyPort either succeeds with a port within model/limits (names, maps, interface count)
// or fails with one of the daemon's error kinds; and that a refused answer — by the host's
// check or by the daemon — leaves OVSDB exactly as it was and its fresh attachment detached,
// once, with the answer's state.
func FuzzPluginPort(f *testing.F) {
	for _, s := range fuzzPluginPortSeeds() {
		f.Add(s)
	}
	h := newFuzzPluginHarness(f)
	f.Fuzz(func(t *testing.T, answer []byte) {
		h.plugin.setAnswer(answer)
		before := ovsdbtest.MustDump(t, h.db.Endpoint())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a safety net, not a timing assertion
		defer cancel()
		port := model.Port{Name: "vm1", Interfaces: []model.Interface{{Name: "vm1", Type: "fz", Options: map[string]string{"pf": "0000:65:00.0"}}}}
		info, err := h.d.ApplyPort(ctx, "br-cfg", port)
		attached, detached, errored := h.plugin.counts()
		if err != nil {
			if !errors.Is(err, model.ErrInvalid) && !errors.Is(err, model.ErrFailed) && !errors.Is(err, model.ErrConflict) {
				t.Fatalf("ApplyPort: an error of no daemon kind: %v", err)
			}
			if after := ovsdbtest.MustDump(t, h.db.Endpoint()); !reflect.DeepEqual(before, after) {
				t.Fatalf("ApplyPort refused (%v) but OVSDB changed:\n%.4000s", err, before.Diff(after))
			}
			// Every attachment the plugin answered is detached once it is refused, whether
			// the host's check (api.RefusedAnswerError) or the daemon (its shape) refused
			// it; an Attach the plugin itself failed leaves nothing to detach.
			if answered := attached - errored; detached != answered {
				t.Fatalf("ApplyPort refused (%v) after %d answered attach(es) (%d more failed in the plugin) but %d detach(es)", err, answered, errored, detached)
			}
			if st := h.plugin.lastDetachState(); detached > 0 && string(st) != string(h.plugin.answerState()) {
				t.Fatalf("detached with state %q, not the answer's %q", st, h.plugin.answerState())
			}
			return
		}
		if info.Shape == nil {
			t.Fatalf("ApplyPort of a plugin port without a shape: %+v", info)
		}
		checkShapeLimits(t, *info.Shape)
		if err := h.d.DeletePort(ctx, "vm1"); err != nil {
			t.Fatalf("DeletePort: %v", err)
		}
	})
}

// checkShapeLimits checks a written port against model/limits.
func checkShapeLimits(t *testing.T, p model.Port) {
	t.Helper()
	errs := []error{limits.CheckName(limits.Port, p.Name), limits.CheckInterfaces("port", len(p.Interfaces)),
		limits.CheckMap("port", "other_config", p.OtherConfig), limits.CheckMap("port", "external_ids", p.ExternalIDs)}
	for _, in := range p.Interfaces {
		errs = append(errs, limits.CheckInterfaceName(in.Name, in.Type), limits.CheckMap("interface", "options", in.Options),
			limits.CheckMap("interface", "other_config", in.OtherConfig), limits.CheckMap("interface", "external_ids", in.ExternalIDs))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("a plugin's shape out of model/limits was written: %+v\n%v", p, err)
	}
}

type fuzzPluginHarness struct {
	db     *embedded.DB
	d      *vswitchd.Daemon
	plugin *fuzzPlugin
}

func newFuzzPluginHarness(tb testing.TB) *fuzzPluginHarness {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	h := &fuzzPluginHarness{plugin: &fuzzPlugin{}}
	var c *ovsdb.Client
	h.db, c = vswitchdtest.EmbeddedSim(tb, ctx, quiet)
	conn := sdktest.Connect(tb, h.plugin)
	host := &fuzzHost{prov: conn.PortProvider, facts: sdktest.DefaultFacts(), plugin: h.plugin}
	h.d = vswitchdtest.RunDaemon(tb, ctx, c, cfgWithBridge(), vswitchd.Options{
		Logger: quiet, Mode: model.ModeEmbedded, Plugins: host,
		Commit:    ovsdb.CommitOptions{ApplyTimeout: 30 * time.Second},
		Reconcile: vswitchdtest.FastReconcile(),
	})
	return h
}

// fuzzHost is the plugin host as the daemon sees it: one running plugin "fz" providing port
// type "fz", its Attach answers checked with api.ValidateAttachment as plugins/host does (a
// refused answer is an *api.RefusedAnswerError with the answer's State).
type fuzzHost struct {
	prov   api.PortProvider
	facts  api.HostFacts
	plugin *fuzzPlugin
}

func (h *fuzzHost) PortProvider(t string) (api.PortProvider, string, bool) {
	if t != "fz" {
		return nil, "", false
	}
	return fuzzCheckedProvider{h.prov, h.facts, h.plugin}, "fz", true
}

func (h *fuzzHost) Plugins() []model.PluginInfo {
	return []model.PluginInfo{{Name: "fz", State: "running", Types: []string{"fz"}}}
}
func (h *fuzzHost) Reload(context.Context, []model.Plugin) error             { return nil }
func (h *fuzzHost) Flows(context.Context, api.BridgeFacts) []api.PluginFlows { return nil }
func (h *fuzzHost) Cookies() api.CookieRange {
	return api.CookieRange{Value: 0xa5 << 56, Mask: 0xff << 56}
}
func (h *fuzzHost) GlobalConfig(context.Context, map[string]string) vswitchd.PluginGlobals {
	return vswitchd.PluginGlobals{}
}

type fuzzCheckedProvider struct {
	api.PortProvider
	facts  api.HostFacts
	plugin *fuzzPlugin
}

func (p fuzzCheckedProvider) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	a, err := p.PortProvider.Attach(ctx, req)
	if err != nil {
		return api.Attachment{}, fmt.Errorf("plugin %q: %w", "fz", err)
	}
	if err := api.ValidateAttachment(p.facts, req, a); err != nil {
		return api.Attachment{}, &api.RefusedAnswerError{Plugin: "fz", State: a.State, Err: err}
	}
	return a, nil
}

// fuzzPlugin is the plugin: its Attach answers the fuzz input, decoded as the AttachResponse
// it stands for; it counts attaches and detaches and keeps the last Detach's state.
type fuzzPlugin struct {
	mu                          sync.Mutex
	answer                      []byte
	attached, detached, errored int // errored: Attach calls the plugin itself failed
	detachState                 []byte
}

func (p *fuzzPlugin) setAnswer(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer, p.attached, p.detached, p.errored, p.detachState = b, 0, 0, 0, nil
}

func (p *fuzzPlugin) counts() (attached, detached, errored int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attached, p.detached, p.errored
}

// lastDetachState returns the State of the last Detach request.
func (p *fuzzPlugin) lastDetachState() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.detachState
}

// answerState returns the State of the current answer (nil when it does not decode).
func (p *fuzzPlugin) answerState() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := &pb.AttachResponse{}
	if proto.Unmarshal(p.answer, m) != nil {
		return nil
	}
	return m.GetState()
}

func (p *fuzzPlugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "fz", Version: "1.0.0", APIVersions: []string{"1.0"},
		Capabilities: []api.Capability{api.CapabilityPortProvider},
		Types:        []api.ObjectType{{Name: "fz", Kind: api.ObjectKindPort}}}, nil
}
func (p *fuzzPlugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}
func (p *fuzzPlugin) Configure(context.Context, api.ConfigureRequest) error { return nil }
func (p *fuzzPlugin) Health(context.Context) (api.Health, error)            { return api.Health{}, nil }
func (p *fuzzPlugin) Validate(context.Context, api.PortRequest) ([]api.Problem, error) {
	return nil, nil
}
func (p *fuzzPlugin) List(context.Context) ([]api.OwnedPort, error) { return nil, nil }
func (p *fuzzPlugin) Detach(_ context.Context, req api.PortRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.detached++
	p.detachState = req.State
	return nil
}

func (p *fuzzPlugin) Attach(context.Context, api.PortRequest) (api.Attachment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attached++
	m := &pb.AttachResponse{}
	if err := proto.Unmarshal(p.answer, m); err != nil {
		p.errored++
		return api.Attachment{}, api.Errorf(api.Internal, "not an AttachResponse: %v", err)
	}
	a := api.Attachment{State: m.GetState(), Status: m.GetStatus(), Endpoints: m.GetEndpoints()}
	for _, mp := range m.GetPorts() {
		op := api.OVSPort{Bridge: mp.GetBridge(), Name: mp.GetName(), Tag: fuzzIntPtr(mp.Tag), VLANMode: mp.GetVlanMode(),
			BondMode: mp.GetBondMode(), LACP: mp.GetLacp(), OtherConfig: mp.GetOtherConfig(), ExternalIDs: mp.GetExternalIds()}
		for _, tr := range mp.GetTrunks() {
			op.Trunks = append(op.Trunks, int(tr))
		}
		for _, i := range mp.GetInterfaces() {
			op.Interfaces = append(op.Interfaces, api.OVSInterface{Name: i.GetName(), Type: i.GetType(), Options: i.GetOptions(),
				OtherConfig: i.GetOtherConfig(), ExternalIDs: i.GetExternalIds(), MTURequest: fuzzIntPtr(i.MtuRequest), OfportRequest: fuzzIntPtr(i.OfportRequest)})
		}
		a.Ports = append(a.Ports, op)
	}
	return a, nil
}

func fuzzIntPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	x := int(*v)
	return &x
}

// fuzzPluginPortSeeds are answers to the request for port vm1 on br-cfg: good shapes and bad ones.
func fuzzPluginPortSeeds() [][]byte {
	i32 := func(v int32) *int32 { return &v }
	iface := func(name, typ string) *pb.OvsInterface { return &pb.OvsInterface{Name: name, Type: typ} }
	msgs := []*pb.AttachResponse{
		{State: []byte("vf3"), Status: "vf 3", Endpoints: map[string]string{"vhost": "/dev/vhost-vdpa-3"},
			Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("vm1", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Tag: i32(10), Trunks: []int32{1, 2}, OtherConfig: map[string]string{"a": "b"},
			Interfaces: []*pb.OvsInterface{{Name: "vm1", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "net_tap0"},
				MtuRequest: i32(9000), OfportRequest: i32(9)}}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", BondMode: "balance-slb", Interfaces: []*pb.OvsInterface{iface("e1", "internal"), iface("e2", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("vm1\x00", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("..", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("cfg0", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("br-cfg", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Bridge: "br-other", Interfaces: []*pb.OvsInterface{iface("vm1", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "other", Interfaces: []*pb.OvsInterface{iface("vm1", "internal")}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{{Name: "vm1", Type: "internal",
			Options: map[string]string{"k": "v\x00"}, ExternalIds: map[string]string{"k\u200b": "v"}}}}}},
		{Ports: []*pb.OvsPort{{Name: "vm1", Interfaces: []*pb.OvsInterface{iface("vm1", "internal")}}}, State: make([]byte, 4096)},
	}
	var seeds [][]byte
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, b)
	}
	return append(seeds, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, nil)
}
