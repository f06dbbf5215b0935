package vethplugin

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Names the plugin announces.
const (
	// Name is the plugin's name (api.Info.Name) and the owner in its kernel marks.
	Name = "veth"
	// Version is the plugin's own version.
	Version = "0.1.0"
	// PortType is the port type it provides.
	PortType = "veth"
	// StatsJobType is the data-path job type it provides.
	StatsJobType = "veth-stats"
	// OVSInterfaceType is the OVS interface type of the host end: a plain netdev, which a
	// datapath_type=netdev bridge opens with af_packet.
	OVSInterfaceType = "system"
)

// Links is what the plugin needs of the kernel; *veth.Manager implements it. Tests that need
// no root use a fake.
type Links interface {
	// Ensure makes the pair of spec exist as described (idempotent) and returns its state.
	Ensure(ctx context.Context, spec veth.Spec) (veth.State, error)
	// Delete removes port's pair (idempotent), refusing interfaces the plugin did not create,
	// and then netnsHint when the plugin created it and it is empty.
	Delete(ctx context.Context, port, netnsHint string) error
	// Get returns port's pair.
	Get(port string) (veth.State, error)
	// List returns every pair of the plugin.
	List() ([]veth.State, error)
}

// Options configure a Plugin. Exactly one of Links and NewLinks is required.
type Options struct {
	// Links creates and deletes the pairs, whatever the configuration says (tests).
	Links Links
	// NewLinks builds the Links for a configuration's host namespace (Config.HostNetns: a
	// path, empty for the plugin's own namespace); Configure calls it when that changes and
	// closes the previous Links when it has a Close method.
	NewLinks func(hostNetns string) (Links, error)
	// NetnsDir is where named namespaces live (veth.DefaultNetnsDir when empty); Validate
	// looks there for options:netns.
	NetnsDir string
	// Logger; slog.Default() when nil. The SDK forwards it to the host's log.
	Logger *slog.Logger
	// Now is the clock of stats samples; time.Now when nil.
	Now func() time.Time
}

// Plugin is the veth plugin: it implements api.Plugin and every capability interface. Its
// methods are safe for concurrent use.
type Plugin struct {
	newLinks func(hostNetns string) (Links, error)
	netnsDir string
	log      *slog.Logger
	now      func() time.Time

	mu         sync.Mutex
	links      Links
	linksNetns string // the HostNetns links were built for
	configured bool
	cfg        Config
	drop       []uint16 // parsed cfg.DropEthertypes, sorted
	cookies    api.CookieRange
	facts      api.HostFacts
	watch      watchState
	jobs       map[string]*job
	jobsCtx    context.Context // parent of every job; cancelled by Close
	stopJobs   context.CancelFunc
}

// Plugin implements the base interface and every capability.
var (
	_ api.Plugin                  = (*Plugin)(nil)
	_ api.PortProvider            = (*Plugin)(nil)
	_ api.Watcher                 = (*Plugin)(nil)
	_ api.GlobalConfigContributor = (*Plugin)(nil)
	_ api.FlowProgrammer          = (*Plugin)(nil)
	_ api.DataPath                = (*Plugin)(nil)
	_ Links                       = (*veth.Manager)(nil)
)

// New returns an unconfigured Plugin; the host calls Configure before anything else but Info
// and ConfigSchema. Close stops its jobs.
func New(opts Options) (*Plugin, error) {
	if (opts.Links == nil) == (opts.NewLinks == nil) {
		return nil, fmt.Errorf("vethplugin: exactly one of Options.Links and Options.NewLinks is required")
	}
	p := &Plugin{links: opts.Links, newLinks: opts.NewLinks, netnsDir: opts.NetnsDir, log: opts.Logger, now: opts.Now,
		jobs: map[string]*job{}, watch: newWatchState()}
	if p.netnsDir == "" {
		p.netnsDir = veth.DefaultNetnsDir
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	// Jobs outlive the Start call that creates them; they end with Stop or Close.
	p.jobsCtx, p.stopJobs = context.WithCancel(context.Background())
	return p, nil
}

// Close stops every job, waits for them and closes Links built by NewLinks. The veth pairs
// stay: they belong to the ports.
func (p *Plugin) Close() {
	p.stopJobs()
	p.mu.Lock()
	jobs := p.jobs
	p.jobs = map[string]*job{}
	p.mu.Unlock()
	for _, j := range jobs {
		<-j.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.newLinks != nil {
		closeLinks(p.links)
		p.links = nil
	}
}

// closeLinks closes l when it can be closed (*veth.Manager can).
func closeLinks(l Links) {
	if c, ok := l.(interface{ Close() }); ok {
		c.Close()
	}
}

// kernel returns the current Links (nil before the first Configure when built by NewLinks).
func (p *Plugin) kernel() Links {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.links
}

// Info describes the plugin: the port type veth, the job type veth-stats, and a watch on every
// interface (the watcher looks for foreign interfaces on the bridges of its ports).
func (p *Plugin) Info(context.Context) (api.Info, error) {
	port, err := sdk.PortType(PortType, PortOptions{}, optionsDoc)
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Types: []api.ObjectType{
			port,
			{Name: StatsJobType, Kind: api.ObjectKindJob, OptionsSchema: jobSchema, Doc: jobDoc},
		},
		Description: "veth pairs as OVS ports, the peer end optionally in a named network namespace",
	}, nil
}

// ConfigSchema returns the JSON schema of Config.
func (p *Plugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{JSONSchema: configSchema, Doc: configDoc}, nil
}

// Configure validates and applies a configuration (the previous one stays when it is
// invalid) and checks that the running Open vSwitch has the "system" interface type.
func (p *Plugin) Configure(ctx context.Context, req api.ConfigureRequest) error {
	cfg, drop, err := parseConfig(req.Config)
	if err != nil {
		return err
	}
	if len(req.Facts.IfaceTypes) > 0 && !req.Facts.HasIfaceType(OVSInterfaceType) {
		return api.Errorf(api.FailedPrecondition, "Open vSwitch %s has no %q interface type (iface_types %v)",
			req.Facts.OVSVersion, OVSInterfaceType, req.Facts.IfaceTypes)
	}
	hostNetns := cfg.HostNetns
	if hostNetns != "" && !filepath.IsAbs(hostNetns) {
		hostNetns = filepath.Join(p.netnsDir, hostNetns)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.newLinks != nil && (p.links == nil || p.linksNetns != hostNetns) {
		links, err := p.newLinks(hostNetns)
		if err != nil {
			return api.Errorf(api.FailedPrecondition, "host namespace %q: %w", cfg.HostNetns, err)
		}
		closeLinks(p.links)
		p.links, p.linksNetns = links, hostNetns
	}
	p.configured, p.cfg, p.drop, p.cookies, p.facts = true, cfg, drop, req.Cookies, req.Facts
	p.log.Info("configured", "ovs", req.Facts.OVSVersion, "api", req.APIVersion, "drop_ethertypes", cfg.DropEthertypes,
		"stats_update_interval_ms", cfg.StatsUpdateIntervalMS)
	return ctx.Err()
}

// config returns the configuration, or FailedPrecondition before the first Configure.
func (p *Plugin) config() (Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.configured {
		return Config{}, api.Errorf(api.FailedPrecondition, "plugin %s is not configured yet", Name)
	}
	return p.cfg, nil
}

// Health is failing when netlink cannot list the pairs, degraded while an interface that is
// the peer end of one of its pairs sits on a bridge (a loop), OK otherwise; the message counts
// pairs and the foreign interfaces seen on their bridges.
func (p *Plugin) Health(context.Context) (api.Health, error) {
	links := p.kernel()
	if links == nil {
		return api.Health{State: api.HealthOK, Message: "waiting for the configuration"}, nil
	}
	states, err := links.List()
	if err != nil {
		return api.Health{State: api.HealthFailing, Message: "cannot list veth pairs: " + err.Error()}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := fmt.Sprintf("%d veth pairs; %d foreign interfaces on their bridges; %d port events seen",
		len(states), len(p.watch.foreign), p.watch.events)
	if len(p.watch.clashes) > 0 {
		return api.Health{State: api.HealthDegraded, Message: msg + "; peer ends on a bridge: " + p.watch.clashList()}, nil
	}
	return api.Health{State: api.HealthOK, Message: msg}, nil
}

// Contribute returns other_config:stats-update-interval when configured, nothing otherwise.
func (p *Plugin) Contribute(context.Context) (api.GlobalConfig, error) {
	cfg, err := p.config()
	if err != nil {
		return api.GlobalConfig{}, err
	}
	if cfg.StatsUpdateIntervalMS == 0 {
		return api.GlobalConfig{}, nil
	}
	return api.GlobalConfig{OtherConfig: map[string]string{
		"stats-update-interval": strconv.Itoa(cfg.StatsUpdateIntervalMS),
	}}, nil
}
