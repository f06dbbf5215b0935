package vswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	ovsmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

// env is the daemon tests' OVSDB: in memory, with a simulated ovs-vswitchd.
type env struct{ *vswitchdtest.Env }

func newEnv(t *testing.T) *env { return &env{vswitchdtest.NewEnv(t, 3*time.Minute)} }

// client returns an initialised client on the server.
func (e *env) client(t *testing.T) *ovsdb.Client {
	t.Helper()
	c := e.Client(t, ovsdb.Config{})
	if err := c.Init(e.Ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// counter is an Observer counting batches.
type counter struct {
	mu      sync.Mutex
	batches []int
	passes  int
}

func (c *counter) BatchCommitted(n int, _, _ time.Duration, _ error) {
	c.mu.Lock()
	c.batches = append(c.batches, n)
	c.mu.Unlock()
}
func (c *counter) ReconcileDone(time.Duration, error) {
	c.mu.Lock()
	c.passes++
	c.mu.Unlock()
}
func (c *counter) Statuses(map[model.State]int) {}

// startDaemon runs a Daemon on a new client until the returned stop is called (or the test ends).
func startDaemon(t *testing.T, e *env, cfg *config.Config, obs vswitchd.Observer, mods ...func(*vswitchd.Options)) (*vswitchd.Daemon, func()) {
	t.Helper()
	c := e.client(t)
	opts := vswitchd.Options{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Commit:   ovsdb.CommitOptions{ApplyTimeout: 30 * time.Second},
		Observer: obs,
		Reconcile: reconcile.Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
			Debounce: 20 * time.Millisecond, DriftDelay: 50 * time.Millisecond},
	}
	for _, m := range mods {
		m(&opts)
	}
	d, err := vswitchd.New(e.Ctx, c, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(e.Ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			if err := d.Close(e.Ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			c.Close()
		})
	}
	t.Cleanup(stop)
	return d, stop
}

func internalPort(name string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "internal"}}}
}

func cfgWithBridge() *config.Config {
	return &config.Config{Bridges: []model.Bridge{{Name: "br-cfg", DatapathType: "netdev",
		Ports: []model.Port{internalPort("cfg0")}}}}
}

func TestConcurrentApplyPortsShareTransactions(t *testing.T) {
	e := newEnv(t)
	obs := &counter{}
	d, _ := startDaemon(t, e, cfgWithBridge(), obs)
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-api", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	infos := make([]model.PortInfo, n)
	for i := range n {
		wg.Go(func() {
			br := "br-api"
			if i%2 == 1 {
				br = "br-cfg" // API ports may sit on configured bridges too
			}
			infos[i], errs[i] = d.ApplyPort(e.Ctx, br, internalPort(fmt.Sprintf("p%d", i)))
		})
	}
	wg.Wait()
	ofports := map[int]string{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("port p%d: %v", i, errs[i])
		}
		in := infos[i].Interfaces
		if infos[i].Origin != model.OriginAPI || len(in) != 1 || in[0].State != model.StateReady || in[0].Ofport <= 0 {
			t.Fatalf("port p%d: %+v", i, infos[i])
		}
		key := fmt.Sprintf("%s/%d", infos[i].Bridge, in[0].Ofport)
		if prev, dup := ofports[in[0].Ofport]; dup && strings.HasPrefix(prev, infos[i].Bridge) {
			t.Fatalf("ofport %s given to p%d and %s", key, i, prev)
		}
		ofports[in[0].Ofport] = key
	}
	obs.mu.Lock()
	batches := len(obs.batches)
	obs.mu.Unlock()
	if batches >= n {
		t.Errorf("%d concurrent requests took %d batches: no coalescing", n, batches)
	}
	if got := len(d.Ports("")); got != n+1 {
		t.Errorf("Ports lists %d, want %d", got, n+1)
	}
	if got := len(d.Ports("br-cfg")); got != n/2+1 {
		t.Errorf("Ports(br-cfg) lists %d, want %d", got, n/2+1)
	}
}

func TestAPIObjectsSurviveRestart(t *testing.T) {
	e := newEnv(t)
	d, stop := startDaemon(t, e, cfgWithBridge(), nil)
	tag := 7
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-api", DatapathType: "netdev", FailMode: "secure"}); err != nil {
		t.Fatal(err)
	}
	want := model.Port{Name: "vm1", Tag: &tag, ExternalIDs: map[string]string{"iface-id": "abc"},
		Interfaces: []model.Interface{{Name: "vm1", Type: "internal", Options: map[string]string{}}}}
	if _, err := d.ApplyPort(e.Ctx, "br-api", want); err != nil {
		t.Fatal(err)
	}
	stop()

	obs := &counter{}
	d2, _ := startDaemon(t, e, cfgWithBridge(), obs)
	b, err := d2.Bridge("br-api")
	if err != nil || b.Origin != model.OriginAPI || b.Spec.FailMode != "secure" {
		t.Fatalf("bridge after restart: %+v, %v", b, err)
	}
	p, err := d2.Port("vm1")
	if err != nil || p.Origin != model.OriginAPI || p.Bridge != "br-api" || p.Spec.Tag == nil || *p.Spec.Tag != 7 ||
		p.Spec.ExternalIDs["iface-id"] != "abc" {
		t.Fatalf("port after restart: %+v, %v", p, err)
	}
	if _, err := d2.WaitReady(e.Ctx, []string{"port/vm1", "bridge/br-api", "port/cfg0"}); err != nil {
		t.Fatal(err)
	}
}

func TestAPIRefusals(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, cfgWithBridge(), nil)
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-api"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		bridge string
		port   model.Port
		kind   error
		says   string
	}{
		{"config port", "br-cfg", internalPort("cfg0"), model.ErrConflict, "configuration file"},
		{"unknown bridge", "br-nope", internalPort("x1"), model.ErrNotFound, `bridge "br-nope"`},
		{"bad type", "br-api", model.Port{Name: "x2", Interfaces: []model.Interface{{Name: "x2", Type: "bogus"}}}, model.ErrInvalid, "port.interfaces[0].type"},
		{"name too long", "br-api", internalPort("a-very-long-interface-name"), model.ErrInvalid, "longer than 15"},
		{"missing option", "br-api", model.Port{Name: "x3", Interfaces: []model.Interface{{Name: "x3", Type: "patch"}}}, model.ErrInvalid, "options.peer"},
		{"reserved key", "br-api", model.Port{Name: "x4", ExternalIDs: map[string]string{"ovsplane-owner": "me"}, Interfaces: []model.Interface{{Name: "x4"}}}, model.ErrInvalid, "reserved"},
		{"config interface", "br-api", model.Port{Name: "x5", Interfaces: []model.Interface{{Name: "cfg0", Type: "internal"}}}, model.ErrConflict, "cfg0"},
		{"bridge name", "br-api", internalPort("br-api"), model.ErrInvalid, `name of bridge "br-api"`},
		{"other bridge name", "br-api", internalPort("br-cfg"), model.ErrConflict, "name of a bridge"},
	}
	for _, c := range cases {
		_, err := d.ApplyPort(e.Ctx, c.bridge, c.port)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want %v mentioning %q", c.name, err, c.kind, c.says)
		}
	}
	// A port on one bridge cannot be applied on another.
	if _, err := d.ApplyPort(e.Ctx, "br-api", internalPort("mv")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("mv")); !errors.Is(err, model.ErrConflict) {
		t.Errorf("moving a port: %v", err)
	}
	if err := d.DeletePort(e.Ctx, "cfg0"); !errors.Is(err, model.ErrConflict) {
		t.Errorf("deleting a config port: %v", err)
	}
	if err := d.DeleteBridge(e.Ctx, "br-cfg"); !errors.Is(err, model.ErrConflict) {
		t.Errorf("deleting a config bridge: %v", err)
	}
	if err := d.DeletePort(e.Ctx, "nope"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("deleting an unknown port: %v", err)
	}
	// Nothing refused was written.
	for _, name := range []string{"x1", "x2", "x3", "x4", "x5", "a-very-long-interface-name"} {
		var ports []vswitch.Port
		if err := e.Raw.WhereCache(func(p *vswitch.Port) bool { return p.Name == name }).List(e.Ctx, &ports); err != nil || len(ports) != 0 {
			t.Errorf("refused port %s found in OVSDB: %v %v", name, ports, err)
		}
	}
}

func TestVswitchdRefusalFailsOnlyItsPort(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, cfgWithBridge(), nil)
	var wg sync.WaitGroup
	var bad model.PortInfo
	var badErr error
	good := make([]error, 8)
	wg.Go(func() {
		bad, badErr = d.ApplyPort(e.Ctx, "br-cfg", model.Port{Name: "nic0", Interfaces: []model.Interface{{Name: "nic0",
			Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:99:00.0"}}}})
	})
	for i := range good {
		wg.Go(func() { _, good[i] = d.ApplyPort(e.Ctx, "br-cfg", internalPort(fmt.Sprintf("g%d", i))) })
	}
	wg.Wait()
	if badErr != nil || bad.Status.State != model.StateError || bad.Status.Error == "" {
		t.Fatalf("refused dpdk port: %+v, %v", bad, badErr)
	}
	for i, err := range good {
		if err != nil {
			t.Errorf("neighbour g%d: %v", i, err)
		}
	}
	if _, err := d.WaitReady(e.Ctx, []string{"port/nic0"}); err == nil || !strings.Contains(err.Error(), "port/nic0") {
		t.Errorf("WaitReady on a refused port: %v", err)
	}
}

func TestDriftOfAPIPortRepaired(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, cfgWithBridge(), nil)
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("drift0")); err != nil {
		t.Fatal(err)
	}
	// Someone else deletes it behind the daemon's back.
	var br []vswitch.Bridge
	if err := e.Raw.WhereCache(func(b *vswitch.Bridge) bool { return b.Name == "br-cfg" }).List(e.Ctx, &br); err != nil || len(br) != 1 {
		t.Fatal(err)
	}
	port := &vswitch.Port{Name: "drift0"}
	if err := e.Raw.Get(e.Ctx, port); err != nil {
		t.Fatal(err)
	}
	ops, err := e.Raw.Where(&br[0]).Mutate(&br[0], ovsmodel.Mutation{Field: &br[0].Ports,
		Mutator: libovsdb.MutateOperationDelete, Value: []string{port.UUID}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Raw.Transact(e.Ctx, ops...); err != nil || res[0].Error != "" {
		t.Fatal(err, res)
	}
	// The reconciler puts it back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := &vswitch.Port{Name: "drift0"}
		if err := e.Raw.Get(e.Ctx, p); err == nil && p.UUID != port.UUID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("API port deleted by someone else was not recreated")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := d.WaitReady(e.Ctx, []string{"port/drift0"}); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteBridgeAndPorts(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, nil, nil)
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-x"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := d.ApplyPort(e.Ctx, "br-x", internalPort(fmt.Sprintf("x%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeletePort(e.Ctx, "x0"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Port("x0"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("deleted port still listed: %v", err)
	}
	if err := d.DeleteBridge(e.Ctx, "br-x"); err != nil {
		t.Fatal(err)
	}
	if got := d.Ports(""); len(got) != 0 {
		t.Errorf("ports left after DeleteBridge: %+v", got)
	}
	var ports []vswitch.Port
	if err := e.Raw.List(e.Ctx, &ports); err != nil || len(ports) != 0 {
		t.Errorf("OVSDB ports left: %d %v", len(ports), err)
	}
}

func TestReloadRefusesAPIObjects(t *testing.T) {
	e := newEnv(t)
	next := cfgWithBridge()
	var mu sync.Mutex
	c := e.client(t)
	d, err := vswitchd.New(e.Ctx, c, cfgWithBridge(), vswitchd.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Reload: func(context.Context) (*config.Config, error) {
			mu.Lock()
			defer mu.Unlock()
			return next, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(e.Ctx) })
	if err := d.Reconcile(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("api0")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	next = cfgWithBridge()
	next.Bridges[0].Ports = append(next.Bridges[0].Ports, internalPort("api0"))
	mu.Unlock()
	if err := d.Reload(e.Ctx); !errors.Is(err, model.ErrConflict) || !strings.Contains(err.Error(), `port "api0"`) {
		t.Fatalf("reload claiming an API port: %v", err)
	}
	if p, err := d.Port("api0"); err != nil || p.Origin != model.OriginAPI {
		t.Fatalf("API port after refused reload: %+v %v", p, err)
	}
	mu.Lock()
	next = cfgWithBridge()
	next.Bridges[0].Ports = append(next.Bridges[0].Ports, internalPort("cfg1"))
	mu.Unlock()
	if err := d.Reload(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WaitReady(e.Ctx, []string{"port/cfg1", "port/api0"}); err != nil {
		t.Fatal(err)
	}
}

func TestSubscribeSeesChanges(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, cfgWithBridge(), nil)
	ctx, cancel := context.WithCancel(e.Ctx)
	snap, ch := d.Subscribe(ctx)
	if len(snap) == 0 {
		t.Fatal("empty snapshot")
	}
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("w0")); err != nil {
		t.Fatal(err)
	}
	seen := false
	timeout := time.After(30 * time.Second)
	for !seen {
		select {
		case changes := <-ch:
			for _, s := range changes {
				if s.Key() == "interface/w0" && s.State == model.StateReady {
					seen = true
				}
			}
		case <-timeout:
			t.Fatal("no ready change for interface/w0")
		}
	}
	cancel()
	for range ch { //nolint:revive // drain until closed
	}
}

// An API port whose row carries its spec in the verbose JSON an older daemon wrote (every field,
// nulls included) is adopted as that spec and its row left as it is: a daemon upgrade does not
// rewrite every API row to the compact form.
func TestVerboseSpecAdoptedWithoutRewrite(t *testing.T) {
	e := newEnv(t)
	d, stop := startDaemon(t, e, cfgWithBridge(), nil)
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("old0")); err != nil {
		t.Fatal(err)
	}
	stop()
	port := &vswitch.Port{Name: "old0"}
	if err := e.Raw.Get(e.Ctx, port); err != nil {
		t.Fatal(err)
	}
	const verbose = `{"bridge":"br-cfg","port":{"Name":"old0","Tag":null,"Trunks":null,"VLANMode":"","BondMode":"","LACP":"",` +
		`"OtherConfig":null,"ExternalIDs":null,"Interfaces":[{"Name":"old0","Type":"internal","Options":null,"MTURequest":null,` +
		`"OFPortRequest":null,"OtherConfig":null,"ExternalIDs":null}]}}`
	if !strings.HasPrefix(port.ExternalIDs[vswitchd.SpecKey], `{"bridge":"br-cfg","port":{"Name":"old0","Interfaces"`) {
		t.Fatalf("the daemon wrote the spec %s, want the compact form", port.ExternalIDs[vswitchd.SpecKey])
	}
	port.ExternalIDs[vswitchd.SpecKey] = verbose
	ops, err := e.Raw.Where(port).Update(port, &port.ExternalIDs)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Raw.Transact(e.Ctx, ops...); err != nil || res[0].Error != "" {
		t.Fatal(err, res)
	}

	d2, _ := startDaemon(t, e, cfgWithBridge(), nil)
	p, err := d2.Port("old0")
	if err != nil || p.Origin != model.OriginAPI || p.Bridge != "br-cfg" || len(p.Spec.Interfaces) != 1 || p.Spec.Interfaces[0].Type != "internal" {
		t.Fatalf("port after restart: %+v, %v", p, err)
	}
	if _, err := d2.WaitReady(e.Ctx, []string{"port/old0"}); err != nil {
		t.Fatal(err)
	}
	if err := d2.Reconcile(e.Ctx); err != nil { // a pass that would repair what differs
		t.Fatal(err)
	}
	after := &vswitch.Port{Name: "old0"}
	if err := e.Raw.Get(e.Ctx, after); err != nil {
		t.Fatal(err)
	}
	if got := after.ExternalIDs[vswitchd.SpecKey]; got != verbose {
		t.Errorf("the adopted port's spec was rewritten:\n got %s\nwant %s", got, verbose)
	}
}
