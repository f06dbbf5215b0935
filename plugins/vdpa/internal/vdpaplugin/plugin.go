package vdpaplugin

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/vdpa"
)

// Names the plugin announces.
const (
	// Name is the plugin's name (api.Info.Name), the name of its entry in the daemon's config.
	Name = "vdpa"
	// Version is the plugin's own version.
	Version = "0.1.0"
	// PortType is the port type it provides.
	PortType = "vdpa"
)

// watchedTypes are the interface types whose rows the watcher follows: the representor and
// fork shapes, the only ones that can name a VF.
var watchedTypes = []string{"dpdk", "dpdkvdpa"}

// Options configure a Plugin; every field is optional.
type Options struct {
	// Logger; slog.Default() when nil. The SDK forwards it to the daemon's log.
	Logger *slog.Logger
	// OpenKernel opens the machine a configuration names (default OpenKernel). Tests inject
	// simulated kernels they inspect.
	OpenKernel func(cfg Config, log *slog.Logger) (*Kernel, error)
	// PollInterval is how often the library's waits re-check (default: the library's 50ms).
	PollInterval time.Duration
	// MaxWait caps the library's waits for the character device, the representor and the
	// management device (default 10s); each call also keeps them within 60% of its deadline,
	// so a wait that times out reports its own error code rather than the daemon's deadline.
	MaxWait time.Duration
}

// Plugin is the vdpa plugin: api.Plugin, api.PortProvider, api.GlobalConfigContributor,
// api.Watcher and api.DataPath (the dpdk-vdpa process of each dpdk-pmd port, an
// sdk.Supervisor's). Its methods are safe for concurrent use; host work (Attach, Detach) is
// serialised, as the library asks (one provisioning per PF at a time).
type Plugin struct {
	log        *slog.Logger
	openKernel func(Config, *slog.Logger) (*Kernel, error)
	poll       time.Duration
	maxWait    time.Duration
	work       chan struct{} // a one-slot semaphore around host work
	sup        *sdk.Supervisor

	mu         sync.Mutex
	configured bool
	cfg        Config
	facts      api.HostFacts
	kernel     *Kernel
	ports      map[string]*port             // by "bridge/name"
	watched    map[string]vdpa.OVSInterface // by interface name, from the watcher
}

// The interfaces Plugin implements.
var (
	_ api.Plugin                  = (*Plugin)(nil)
	_ api.PortProvider            = (*Plugin)(nil)
	_ api.GlobalConfigContributor = (*Plugin)(nil)
	_ api.Watcher                 = (*Plugin)(nil)
	_ api.DataPath                = (*Plugin)(nil)
)

// New returns an unconfigured Plugin; the daemon calls Configure before anything but Info and
// ConfigSchema. Close releases its kernel handles.
func New(opts Options) *Plugin {
	p := &Plugin{log: opts.Logger, openKernel: opts.OpenKernel, poll: opts.PollInterval, maxWait: opts.MaxWait,
		work: make(chan struct{}, 1), ports: map[string]*port{}, watched: map[string]vdpa.OVSInterface{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.openKernel == nil {
		p.openKernel = OpenKernel
	}
	if p.maxWait <= 0 {
		p.maxWait = 10 * time.Second
	}
	p.sup = sdk.NewSupervisor(sdk.SupervisorOptions{Logger: p.log})
	return p
}

// Close stops the dpdk-vdpa processes (SIGTERM, SIGKILL after 3s) and releases the kernel
// handles (netlink socket, simulation directory). The ports' host state stays: it belongs to
// the ports.
func (p *Plugin) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace+2*time.Second)
	defer cancel()
	if err := p.sup.Close(ctx); err != nil {
		p.log.Warn("stopping the dpdk-vdpa processes", "err", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.kernel.Close(); err != nil {
		p.log.Warn("closing the kernel handles", "err", err)
	}
	p.kernel = nil
}

// Info describes the plugin: the port type vdpa and a watch on dpdk and dpdkvdpa interfaces.
func (p *Plugin) Info(context.Context) (api.Info, error) {
	port, err := sdk.PortType(PortType, portOptions{}, optionsDoc)
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Types:       []api.ObjectType{port, jobType()},
		Watch:       api.WatchFilter{InterfaceTypes: watchedTypes},
		Description: "mlx5 vDPA ports (ConnectX-6 Dx, BlueField NIC mode): VF, vDPA device and OVS representor; dpdk-vdpa supervised for mode dpdk-pmd",
	}, nil
}

// ConfigSchema returns the JSON schema of Config.
func (p *Plugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{JSONSchema: configSchema, Doc: configDoc}, nil
}

// Configure validates and applies a configuration; the previous one stays when it is invalid
// or its machine cannot be opened. The kernel handles are kept while root and simulate do not
// change, so a reload keeps a simulation's state.
// A new dpdk_vdpa path restarts the running dpdk-vdpa jobs with it.
func (p *Plugin) Configure(ctx context.Context, req api.ConfigureRequest) error {
	cfg, err := parseConfig(req.Config)
	if err != nil {
		return err
	}
	if err := p.configure(ctx, cfg, req.Facts); err != nil {
		return err
	}
	p.repathJobs(ctx, cfg)
	return ctx.Err()
}

// configure applies a parsed configuration (see Configure).
func (p *Plugin) configure(ctx context.Context, cfg Config, facts api.HostFacts) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kernel == nil || !p.cfg.sameMachine(cfg) {
		k, err := p.openKernel(cfg, p.log)
		if err != nil {
			if cfg.Simulate != "" {
				return sdk.Invalid(api.Problem{Field: "config.simulate", Message: err.Error()})
			}
			return api.Errorf(api.FailedPrecondition, "open the kernel interfaces (root %s): %w", cfg.Root, err)
		}
		if err := p.kernel.Close(); err != nil {
			p.log.Warn("closing the previous kernel handles", "err", err)
		}
		p.kernel = k
	}
	p.configured, p.cfg, p.facts = true, cfg, facts
	p.log.Info("configured", "root", cfg.Root, "simulate", cfg.Simulate, "hw_offload", cfg.hwOffload(),
		"dpdk_vdpa", cfg.DPDKVDPA, "supervise_dpdk_vdpa", cfg.supervise(),
		"ovs", facts.OVSVersion, "dpdk_initialized", facts.DPDKInitialized, "dpdkvdpa", facts.HasIfaceType("dpdkvdpa"))
	return ctx.Err()
}

// Health is OK once configured, Degraded while a dpdk-vdpa process is down (restarting); its
// message counts the ports and processes and says loudly when the plugin simulates.
func (p *Plugin) Health(context.Context) (api.Health, error) {
	running, down, why := p.jobsHealth()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.configured {
		return api.Health{State: api.HealthOK, Message: "waiting for the configuration"}, nil
	}
	msg := fmt.Sprintf("%d vdpa ports", len(p.ports))
	if p.kernel == nil {
		return api.Health{State: api.HealthFailing, Message: "shutting down"}, nil
	}
	if running+down > 0 {
		msg += fmt.Sprintf(", %d of %d dpdk-vdpa processes running", running, running+down)
	}
	if sim := p.kernel.Simulated; sim != "" {
		msg = "SIMULATION (fixture " + sim + ", no hardware touched): " + msg
	}
	if down > 0 {
		return api.Health{State: api.HealthDegraded, Message: msg + "; " + why}, nil
	}
	return api.Health{State: api.HealthOK, Message: msg}, nil
}

// Contribute returns other_config:hw-offload=true unless the configuration turns it off.
func (p *Plugin) Contribute(context.Context) (api.GlobalConfig, error) {
	cfg, _, _, err := p.current()
	if err != nil {
		return api.GlobalConfig{}, err
	}
	if !cfg.hwOffload() {
		return api.GlobalConfig{}, nil
	}
	return api.GlobalConfig{OtherConfig: map[string]string{"hw-offload": "true"}}, nil
}

// current returns the configuration, facts and kernel, or FailedPrecondition before the first
// Configure (Unavailable after Close).
func (p *Plugin) current() (Config, api.HostFacts, *Kernel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.configured:
		return Config{}, api.HostFacts{}, nil, api.Errorf(api.FailedPrecondition, "plugin %s is not configured yet", Name)
	case p.kernel == nil:
		return Config{}, api.HostFacts{}, nil, api.Errorf(api.Unavailable, "plugin %s is shutting down", Name)
	}
	return p.cfg, p.facts, p.kernel, nil
}

// lock takes the host-work semaphore, or fails when ctx ends first.
func (p *Plugin) lock(ctx context.Context) (func(), error) {
	select {
	case p.work <- struct{}{}:
		return func() { <-p.work }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// host returns a library Host over k whose waits end well within ctx's deadline.
func (p *Plugin) host(ctx context.Context, k *Kernel) *vdpa.Host {
	wait := p.maxWait
	if dl, ok := ctx.Deadline(); ok {
		if budget := time.Until(dl) * 6 / 10; budget < wait {
			wait = max(budget, time.Millisecond)
		}
	}
	return vdpa.New(vdpa.Config{FS: k.FS, VDPA: k.VDPA, Devlink: k.Devlink, PollInterval: p.poll,
		CharDevTimeout: wait, AppearTimeout: wait, Logger: p.log})
}

// OnPortEvents keeps the dpdk and dpdkvdpa interfaces of the switch, so that Attach refuses a
// VF that one of them already uses. It never asks for changes.
func (p *Plugin) OnPortEvents(ctx context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if batch.Resync {
		p.watched = map[string]vdpa.OVSInterface{}
	}
	for _, e := range batch.Events {
		if e.Kind == api.EventRemoved {
			delete(p.watched, e.Interface)
			continue
		}
		p.watched[e.Interface] = vdpa.OVSInterface{Name: e.Interface, Type: e.Type,
			Options: maps.Clone(e.Options), ExternalIDs: maps.Clone(e.ExternalIDs)}
	}
	return nil, ctx.Err()
}
