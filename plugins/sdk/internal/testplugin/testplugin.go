// Package testplugin is a tiny plugin serving every capability, for the SDK's own tests: it
// records every request it receives and answers from its inputs, so a test can check that a
// call crosses the gRPC shims unchanged both ways; Fail and Hang make chosen methods fail or
// block until their context ends.
package testplugin

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// PortOptions are the options of the "testport" port type.
type PortOptions struct {
	Peer string `option:"peer,required" doc:"name of the peer interface"`
	MTU  *int   `option:"mtu" doc:"MTU of both ends"`
	// Job, when set, gives the port a data-path job of that name (type "testjob").
	Job string `option:"job" doc:"name of the port's own job"`
}

// Config is the plugin's configuration.
type Config struct {
	Greeting string `json:"greeting"`
}

// State is what Attach stores in the host.
type State struct {
	Peer    string `json:"peer"`
	Created int    `json:"created"`
}

// Plugin is the test plugin. Set Fail and Hang before serving it.
type Plugin struct {
	// Fail makes a method (by its Go name, e.g. "Attach") return the error.
	Fail map[string]error
	// Hang makes a method block until its context ends; it then returns the context's error.
	Hang map[string]bool
	Log  *slog.Logger

	mu       sync.Mutex
	received []Received
	config   api.ConfigureRequest
	greeting string
	ports    map[string]api.OwnedPort
	created  int
	jobs     map[string]api.Job
	ctxErrs  map[string]error
}

// Received is one request as the plugin received it.
type Received struct {
	Method string
	Req    any
}

// New returns a plugin logging to log.
func New(log *slog.Logger) *Plugin {
	return &Plugin{Log: log, ports: map[string]api.OwnedPort{}, jobs: map[string]api.Job{}, ctxErrs: map[string]error{}}
}

// Received returns the requests received so far.
func (p *Plugin) Received() []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.received)
}

// CtxErr returns the context error a hanging method saw.
func (p *Plugin) CtxErr(method string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctxErrs[method]
}

// Created counts the ports whose host work was done (Attach without a replay).
func (p *Plugin) Created() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created
}

// enter records a request and applies Fail and Hang.
func (p *Plugin) enter(ctx context.Context, method string, req any) error {
	p.mu.Lock()
	p.received = append(p.received, Received{Method: method, Req: req})
	fail, hang := p.Fail[method], p.Hang[method]
	p.mu.Unlock()
	if hang {
		<-ctx.Done()
		p.mu.Lock()
		p.ctxErrs[method] = ctx.Err()
		p.mu.Unlock()
		return ctx.Err()
	}
	return fail
}

// Info implements api.Plugin.
func (p *Plugin) Info(ctx context.Context) (api.Info, error) {
	if err := p.enter(ctx, "Info", nil); err != nil {
		return api.Info{}, err
	}
	port, err := sdk.PortType("testport", PortOptions{}, "a port with a peer")
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        "testplugin",
		Version:     "0.1.0",
		Description: "the SDK's test plugin",
		Types: []api.ObjectType{
			port,
			{Name: "testjob", Kind: api.ObjectKindJob, Doc: "a job counting"},
		},
		Watch: api.WatchFilter{InterfaceTypes: []string{"dpdkvhostuser", "dpdkvhostuserclient"}, Owners: []api.PortOwner{api.OwnerForeign, api.OwnerOvsplane}},
	}, nil
}

// ConfigSchema implements api.Plugin.
func (p *Plugin) ConfigSchema(ctx context.Context) (api.ConfigSchema, error) {
	if err := p.enter(ctx, "ConfigSchema", nil); err != nil {
		return api.ConfigSchema{}, err
	}
	return api.ConfigSchema{JSONSchema: `{"type":"object","properties":{"greeting":{"type":"string"}}}`, Doc: "greeting: a word"}, nil
}

// Configure implements api.Plugin.
func (p *Plugin) Configure(ctx context.Context, req api.ConfigureRequest) error {
	if err := p.enter(ctx, "Configure", req); err != nil {
		return err
	}
	var c Config
	if err := sdk.DecodeConfig(req.Config, &c); err != nil {
		return err
	}
	p.mu.Lock()
	p.config, p.greeting = req, c.Greeting
	p.mu.Unlock()
	p.Log.Info("configured", "greeting", c.Greeting, "ovs", req.Facts.OVSVersion)
	return nil
}

// Health implements api.Plugin.
func (p *Plugin) Health(ctx context.Context) (api.Health, error) {
	if err := p.enter(ctx, "Health", nil); err != nil {
		return api.Health{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return api.Health{State: api.HealthOK, Message: p.greeting}, nil
}

// Validate implements api.PortProvider.
func (p *Plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	if err := p.enter(ctx, "Validate", req); err != nil {
		return nil, err
	}
	var o PortOptions
	return sdk.ProblemsOf(sdk.DecodeOptions(req.Options, &o))
}

// Attach implements api.PortProvider: a port named like the request with a dpdk interface and
// a second port with a bond of two internal interfaces, so every field of the shape is used.
func (p *Plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	if err := p.enter(ctx, "Attach", req); err != nil {
		return api.Attachment{}, err
	}
	var o PortOptions
	if err := sdk.DecodeOptions(req.Options, &o); err != nil {
		return api.Attachment{}, err
	}
	var st State
	replay, err := sdk.DecodeState(req, &st)
	if err != nil {
		return api.Attachment{}, err
	}
	key := req.Bridge + "/" + req.Name
	p.mu.Lock()
	if _, ok := p.ports[key]; !ok && !replay {
		p.created++
		st = State{Peer: o.Peer, Created: p.created}
	}
	state, err := sdk.EncodeState(st)
	if err != nil {
		p.mu.Unlock()
		return api.Attachment{}, err
	}
	p.ports[key] = api.OwnedPort{Bridge: req.Bridge, Name: req.Name, Type: req.Type, State: state, Status: "peer " + o.Peer}
	p.mu.Unlock()
	return Shape(req, o, state), nil
}

// Shape is the attachment Attach returns for a request.
func Shape(req api.PortRequest, o PortOptions, state []byte) api.Attachment {
	main := sdk.SinglePort(req.Name, "dpdk", map[string]string{"dpdk-devargs": "0000:3b:00.0,representor=vf3"})
	main.Interfaces[0].MTURequest = o.MTU
	main.Interfaces[0].OtherConfig = map[string]string{"peer": o.Peer}
	main.ExternalIDs = map[string]string{"test": "yes"}
	tag, ofport := 10, 7
	bond := sdk.Port(req.Name+"-bond",
		api.OVSInterface{Name: req.Name + "-a", Type: "internal", OfportRequest: &ofport, ExternalIDs: map[string]string{"x": "1"}},
		sdk.Interface(req.Name+"-b", "internal", nil))
	bond.Bridge, bond.Tag, bond.Trunks = "br-other", &tag, []int{10, 20}
	bond.VLANMode, bond.BondMode, bond.LACP = "native-untagged", "balance-slb", "active"
	bond.OtherConfig = map[string]string{"bond-rebalance-interval": "0"}
	return api.Attachment{
		Ports:     []api.OVSPort{main, bond},
		State:     state,
		Status:    "peer " + o.Peer,
		Endpoints: map[string]string{"peer": o.Peer},
		Jobs:      jobsOf(o),
	}
}

func jobsOf(o PortOptions) []api.Job {
	if o.Job == "" {
		return nil
	}
	return []api.Job{{Name: o.Job, Type: "testjob", Config: []byte(`{"peer":"` + o.Peer + `"}`)}}
}

// Jobs returns the names of the running jobs, sorted.
func (p *Plugin) Jobs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.jobs))
}

// Detach implements api.PortProvider.
func (p *Plugin) Detach(ctx context.Context, req api.PortRequest) error {
	if err := p.enter(ctx, "Detach", req); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ports, req.Bridge+"/"+req.Name)
	return nil
}

// List implements api.PortProvider.
func (p *Plugin) List(ctx context.Context) ([]api.OwnedPort, error) {
	if err := p.enter(ctx, "List", nil); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []api.OwnedPort
	for _, op := range p.ports {
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b api.OwnedPort) int { return cmp.Compare(a.Bridge+"/"+a.Name, b.Bridge+"/"+b.Name) })
	return out, nil
}

// OnPortEvents implements api.Watcher: every added or changed interface gets test-dma=on.
func (p *Plugin) OnPortEvents(ctx context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	if err := p.enter(ctx, "OnPortEvents", batch); err != nil {
		return nil, err
	}
	var changes []api.InterfaceChange
	for _, e := range batch.Events {
		if e.Kind == api.EventAdded || e.Kind == api.EventChanged {
			changes = append(changes, api.InterfaceChange{Interface: e.Interface, Set: map[string]string{"test-dma": "on"}, Remove: []string{"test-old"}})
		}
	}
	return changes, nil
}

// Contribute implements api.GlobalConfigContributor.
func (p *Plugin) Contribute(ctx context.Context) (api.GlobalConfig, error) {
	if err := p.enter(ctx, "Contribute", nil); err != nil {
		return api.GlobalConfig{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return api.GlobalConfig{OtherConfig: map[string]string{"test-greeting": p.greeting}, DPDKExtra: []string{"--test-flag"}}, nil
}

// Flows implements api.FlowProgrammer: a select group over the bridge's ports with an ofport
// and a flow per port sending to it.
func (p *Plugin) Flows(ctx context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	if err := p.enter(ctx, "Flows", bridge); err != nil {
		return api.FlowSet{}, err
	}
	p.mu.Lock()
	cookies, groups := p.config.Cookies, p.config.Groups
	p.mu.Unlock()
	group := api.Group{ID: groups.First, Type: "select", SelectionMethod: "dp_hash"}
	var fs api.FlowSet
	for _, port := range bridge.Ports {
		if port.Ofport <= 0 {
			continue
		}
		group.Buckets = append(group.Buckets, api.Bucket{Actions: fmt.Sprintf("output:%d", port.Ofport), Weight: 100, WatchPort: uint32(port.Ofport)})
		fs.Flows = append(fs.Flows, api.Flow{
			Cookie: cookies.Value | 1, Table: 1, Priority: 100, Match: fmt.Sprintf("in_port=%d", port.Ofport),
			Actions: fmt.Sprintf("group:%d", groups.First), IdleTimeout: 10, HardTimeout: 60,
		})
	}
	fs.Groups = []api.Group{group}
	fs.RefreshMillis = 1000
	return fs, nil
}

// Start implements api.DataPath.
func (p *Plugin) Start(ctx context.Context, job api.Job) (string, error) {
	if err := p.enter(ctx, "Start", job); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jobs[job.Name] = job
	return "running " + job.Type, nil
}

// Stop implements api.DataPath.
func (p *Plugin) Stop(ctx context.Context, name string) error {
	if err := p.enter(ctx, "Stop", name); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, name)
	return nil
}

// Stats implements api.DataPath: one sample per selected job every interval (default 5ms),
// with a counter growing by one per sample.
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	if err := p.enter(ctx, "Stats", req); err != nil {
		return err
	}
	interval := time.Duration(req.IntervalMillis) * time.Millisecond
	if interval == 0 {
		interval = 5 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 1; ; n++ {
		p.mu.Lock()
		jobs := sortedJobs(p.jobs, req.Jobs)
		p.mu.Unlock()
		for _, job := range jobs {
			sample := api.StatsSample{Job: job, TimeUnixNano: time.Now().UnixNano(), Metrics: []api.Metric{
				{Name: "packets", Kind: api.MetricCounter, Value: float64(n), Labels: map[string]string{"dir": "rx"}},
				{Name: "load", Kind: api.MetricGauge, Value: 0.5},
			}}
			if err := send(sample); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func sortedJobs(jobs map[string]api.Job, only []string) []string {
	var names []string
	for name := range jobs {
		if len(only) == 0 || slices.Contains(only, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

var (
	_ api.PortProvider            = (*Plugin)(nil)
	_ api.Watcher                 = (*Plugin)(nil)
	_ api.GlobalConfigContributor = (*Plugin)(nil)
	_ api.FlowProgrammer          = (*Plugin)(nil)
	_ api.DataPath                = (*Plugin)(nil)
)
