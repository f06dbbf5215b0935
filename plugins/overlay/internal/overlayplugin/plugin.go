package overlayplugin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/overlay/ovsinstall"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Names of the plugin and its types.
const (
	// Name is the plugin's name (api.Info.Name), the name of its entry in the daemon's config.
	Name = "overlay"
	// Version is the plugin's version.
	Version = "0.1.0"
	// JobAgent is the node agent's job type: one per site (per bridge).
	JobAgent = "overlay-agent"
	// JobController is the controller role's job type (at most one active in the fabric).
	JobController = "overlay-controller"
	// PortTunnel is the port type of the flow-based tunnel port.
	PortTunnel = "overlay-tunnel"
)

// Stats intervals: the default, and the shortest a request gets.
const (
	DefaultStatsInterval = time.Second
	MinStatsInterval     = 100 * time.Millisecond
)

// MaxJobs bounds the jobs the plugin runs at once.
const MaxJobs = 64

// Options configure a Plugin.
type Options struct {
	// Logger receives the plugin's log; nil discards it.
	Logger *slog.Logger
}

// Plugin is the overlay plugin: job types overlay-agent and overlay-controller (DataPath),
// the agents' forwarding flows (FlowProgrammer) and the port type overlay-tunnel
// (PortProvider). It takes no plugin-wide configuration. Safe for concurrent use.
type Plugin struct {
	sdk.Base
	log  *slog.Logger
	life context.Context
	end  context.CancelFunc

	ops  sync.Mutex // serialises Start, Stop and Close
	mu   sync.Mutex // guards jobs and done
	jobs map[string]*job
	done bool
}

// New returns a Plugin without jobs; Close stops them.
func New(opts Options) *Plugin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Plugin{log: log, jobs: map[string]*job{}}
	p.life, p.end = context.WithCancel(context.Background())
	return p
}

// tunnelOptions are the options of an overlay-tunnel port.
type tunnelOptions struct {
	Tunnel  string `option:"tunnel" doc:"tunnel type: vxlan (default), geneve or gre"`
	DstPort uint16 `option:"dst_port" doc:"UDP destination port (vxlan, geneve); default OVS's (4789, 6081)"`
}

// Info describes the plugin.
func (p *Plugin) Info(context.Context) (api.Info, error) {
	port, err := sdk.PortType(PortTunnel, tunnelOptions{}, "The overlay's flow-based tunnel port (remote_ip=flow, key=flow): "+
		"one per bridge; the overlay-agent job forwards through it. Options: tunnel, dst_port.")
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Types: []api.ObjectType{
			{Name: JobAgent, Kind: api.ObjectKindJob, OptionsSchema: agentSchema, Doc: agentDoc},
			{Name: JobController, Kind: api.ObjectKindJob, OptionsSchema: controllerSchema, Doc: controllerDoc},
			port,
		},
		Description: "overlay: super-node WAN routing over OVS flow-based tunnels, fabric state in a clustered OVSDB",
	}, nil
}

// decodeTunnel decodes and checks an overlay-tunnel port's options.
func decodeTunnel(req api.PortRequest) (tunnelOptions, map[string]string, error) {
	o := tunnelOptions{Tunnel: "vxlan"}
	if err := sdk.DecodeOptions(req.Options, &o); err != nil {
		return o, nil, err
	}
	opts, err := ovsinstall.TunnelShape(o.Tunnel, o.DstPort)
	if err != nil {
		field := "options.tunnel"
		if o.DstPort != 0 && ovsinstall.IsTunnelType(o.Tunnel) {
			field = "options.dst_port"
		}
		return o, nil, sdk.Invalid(api.Problem{Field: field, Message: err.Error()})
	}
	return o, opts, nil
}

// Validate checks an overlay-tunnel port's options.
func (p *Plugin) Validate(_ context.Context, req api.PortRequest) ([]api.Problem, error) {
	_, _, err := decodeTunnel(req)
	return sdk.ProblemsOf(err)
}

// Attach returns the tunnel port's shape: one interface of the tunnel type with
// remote_ip=flow and key=flow. It does no host work. A tunnel type the running OVS lacks is
// FailedPrecondition.
func (p *Plugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	o, opts, err := decodeTunnel(req)
	if err != nil {
		return api.Attachment{}, err
	}
	if cfg, ok := p.Configured(); ok && len(cfg.Facts.IfaceTypes) > 0 && !cfg.Facts.HasIfaceType(o.Tunnel) {
		return api.Attachment{}, api.Errorf(api.FailedPrecondition, "port %s: this Open vSwitch has no %s interfaces (iface_types %s)",
			req.Name, o.Tunnel, strings.Join(cfg.Facts.IfaceTypes, ","))
	}
	return api.Attachment{Ports: []api.OVSPort{sdk.SinglePort(req.Name, o.Tunnel, opts)},
		Status: "flow-based " + o.Tunnel + " tunnel"}, nil
}

// Health is OK when every agent job is connected, forwards on a table and finds its tunnel
// port, and every controller job is connected; Degraded otherwise, naming the job and why
// (forwarding continues on the last table).
func (p *Plugin) Health(context.Context) (api.Health, error) {
	var probs, fails []string
	jobs := p.sortedJobs()
	for _, j := range jobs {
		probs = append(probs, j.problems()...)
		j.mu.Lock()
		if j.failed != "" {
			fails = append(fails, j.failed)
		}
		j.mu.Unlock()
	}
	if len(fails) > 0 {
		return api.Health{State: api.HealthFailing, Message: strings.Join(append(fails, probs...), "; ")}, nil
	}
	if len(probs) > 0 {
		return api.Health{State: api.HealthDegraded, Message: strings.Join(probs, "; ")}, nil
	}
	return api.Health{State: api.HealthOK, Message: fmt.Sprintf("%d overlay jobs", len(jobs))}, nil
}

// problems lists what is wrong with a job, for Health.
func (j *job) problems() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	if j.connErr != "" {
		out = append(out, fmt.Sprintf("job %s: fabric unreachable: %s", j.name, j.connErr))
	}
	out = append(out, j.partProblems()...)
	if j.typ != JobAgent {
		return out
	}
	if j.tunnel != "" {
		out = append(out, fmt.Sprintf("job %s: %s", j.name, j.tunnel))
	}
	st := j.inst.Status()
	if st.Installed.Version == 0 {
		out = append(out, fmt.Sprintf("job %s: no route table installed yet", j.name))
	}
	if st.RenderError != "" {
		out = append(out, fmt.Sprintf("job %s: %s", j.name, st.RenderError))
	}
	if j.agent != nil {
		if as := j.agent.Stats(); !as.Reachable && as.Errors > 0 {
			out = append(out, fmt.Sprintf("job %s: keeping route version %d: %s", j.name, st.Installed.Version, as.LastError))
		}
	}
	return out
}

// sortedJobs returns the jobs sorted by name.
func (p *Plugin) sortedJobs() []*job {
	p.mu.Lock()
	jobs := slices.Collect(maps.Values(p.jobs))
	p.mu.Unlock()
	slices.SortFunc(jobs, func(a, b *job) int { return strings.Compare(a.name, b.name) })
	return jobs
}

// Start starts an overlay-agent or overlay-controller job. A job running with the same
// configuration is left alone; with another it is restarted. A bad configuration is
// InvalidArgument naming the field; a second agent job on one bridge is FailedPrecondition.
func (p *Plugin) Start(ctx context.Context, j api.Job) (string, error) {
	if err := limits.CheckJob(j.Name, j.Type, nil); err != nil {
		return "", sdk.Invalid(api.Problem{Field: "name", Message: err.Error()})
	}
	var set agentSettings
	switch j.Type {
	case JobAgent:
		var err error
		if set, err = parseAgent(j.Config); err != nil {
			return "", err
		}
	case JobController:
		if _, _, _, err := parseController(j.Config); err != nil {
			return "", err
		}
	default:
		return "", sdk.Invalid(api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a job type of this plugin (%s, %s)", j.Type, JobAgent, JobController)})
	}
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	old, closed, n := p.jobs[j.Name], p.done, len(p.jobs)
	var clash string
	for _, o := range p.jobs {
		if o.name != j.Name && j.Type == JobAgent && o.typ == JobAgent && o.set.cfg.Bridge == set.cfg.Bridge {
			clash = o.name
		}
	}
	p.mu.Unlock()
	switch {
	case closed:
		return "", api.Errorf(api.Unavailable, "job %s: the plugin is shutting down", j.Name)
	case old != nil && old.typ == j.Type && bytes.Equal(old.config, j.Config):
		return "running", nil
	case old == nil && n >= MaxJobs:
		return "", api.Errorf(api.FailedPrecondition, "job %s: %d overlay jobs already run, the most this plugin runs", j.Name, n)
	case clash != "":
		return "", api.Errorf(api.FailedPrecondition, "job %s: bridge %s already has the overlay agent job %s: one agent per bridge", j.Name, set.cfg.Bridge, clash)
	}
	if old != nil {
		p.log.Info("overlay job: configuration changed, restarting", "job", j.Name)
		if err := p.remove(ctx, old); err != nil {
			return "", err
		}
	}
	var nj *job
	var err error
	if j.Type == JobAgent {
		req, _ := p.Configured()
		nj, err = startAgent(p.life, p.log, j.Name, j.Config, set, req.Facts.DataDir)
	} else {
		nj, err = startController(p.life, p.log, j.Name, j.Config)
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.jobs[j.Name] = nj
	p.mu.Unlock()
	return "started", nil
}

// remove stops a job and forgets it.
func (p *Plugin) remove(ctx context.Context, j *job) error {
	p.mu.Lock()
	if p.jobs[j.name] == j {
		delete(p.jobs, j.name)
	}
	p.mu.Unlock()
	return j.stop(ctx)
}

// Stop stops a job; an unknown job is already stopped. A stopped agent's flows go at the
// daemon's next flow sync.
func (p *Plugin) Stop(ctx context.Context, name string) error {
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	j := p.jobs[name]
	p.mu.Unlock()
	if j == nil {
		return nil
	}
	return p.remove(ctx, j)
}

// Close stops every job (bounded by ctx) and refuses new ones; it belongs after sdk.Serve.
func (p *Plugin) Close(ctx context.Context) error {
	p.ops.Lock()
	defer p.ops.Unlock()
	p.mu.Lock()
	p.done = true
	jobs := slices.Collect(maps.Values(p.jobs))
	p.mu.Unlock()
	var first error
	for _, j := range jobs {
		if err := p.remove(ctx, j); err != nil && first == nil {
			first = err
		}
	}
	p.end()
	return first
}

// Flows returns the forwarding flows of the agent job on this bridge (none for other
// bridges), asking the daemon to call again after the job's flow_refresh_ms: that call is how
// a new route version reaches the bridge. Without the tunnel port (not on the bridge, not a
// vxlan/geneve/gre interface, no ofport yet) the set is empty and Health says why.
func (p *Plugin) Flows(_ context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	var j *job
	for _, o := range p.sortedJobs() {
		if o.typ == JobAgent && o.set.cfg.Bridge == bridge.Name {
			j = o
		}
	}
	if j == nil {
		return api.FlowSet{}, nil
	}
	refresh := uint32(j.set.flowRefresh.Milliseconds())
	var port *api.BridgePort
	for k := range bridge.Ports {
		if bridge.Ports[k].Interface == j.set.cfg.TunnelPort {
			port = &bridge.Ports[k]
		}
	}
	problem := ""
	switch {
	case port == nil:
		problem = fmt.Sprintf("tunnel port %s is not on bridge %s (or has no ofport yet): add a port of type %s there", j.set.cfg.TunnelPort, bridge.Name, PortTunnel)
	case !ovsinstall.IsTunnelType(port.Type):
		problem = fmt.Sprintf("tunnel port %s on %s is of type %q, not a flow-based vxlan, geneve or gre port: use type %s", port.Interface, bridge.Name, port.Type, PortTunnel)
	}
	j.mu.Lock()
	j.tunnel = problem
	j.mu.Unlock()
	if problem != "" {
		return api.FlowSet{RefreshMillis: refresh}, nil
	}
	req, _ := p.Configured()
	return j.inst.FlowSet(port.Ofport, req.Cookies, refresh)
}

// Stats sends a sample of each selected job at once and then every interval until ctx ends.
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := DefaultStatsInterval
	if req.IntervalMillis > 0 {
		every = max(time.Duration(req.IntervalMillis)*time.Millisecond, MinStatsInterval)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, j := range p.sortedJobs() {
			if len(req.Jobs) > 0 && !slices.Contains(req.Jobs, j.name) {
				continue
			}
			if err := send(api.StatsSample{Job: j.name, TimeUnixNano: time.Now().UnixNano(), Metrics: j.metrics()}); err != nil {
				return err
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// metrics is a job's stats sample.
func (j *job) metrics() []api.Metric {
	g := func(name string, v float64) api.Metric {
		return api.Metric{Name: name, Kind: api.MetricGauge, Value: v}
	}
	c := func(name string, v float64) api.Metric {
		return api.Metric{Name: name, Kind: api.MetricCounter, Value: v}
	}
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	j.mu.Lock()
	connected := j.connErr == ""
	a, pr, ctl := j.agent, j.prob, j.ctl
	j.mu.Unlock()
	if j.typ == JobController {
		m := []api.Metric{g("overlay_fabric_connected", b(connected && ctl != nil))}
		if ctl != nil {
			s := ctl.Stats()
			m = append(m, g("overlay_controller_holding", b(s.Holding)), g("overlay_controller_epoch", float64(s.Epoch)),
				g("overlay_route_version", float64(s.Version)), c("overlay_controller_published", float64(s.Published)),
				c("overlay_controller_skipped", float64(s.Skipped)), c("overlay_controller_errors", float64(s.Errors)),
				c("overlay_controller_fenced", float64(s.Fenced)), g("overlay_controller_links_ignored", float64(s.LinksIgnored)))
		}
		return m
	}
	st := j.inst.Status()
	m := []api.Metric{g("overlay_fabric_connected", b(connected && a != nil)),
		g("overlay_installed_version", float64(st.Installed.Version)), g("overlay_routes", float64(len(st.Installed.Hops))),
		g("overlay_unreachable", float64(len(st.Installed.Unreachable))), c("overlay_installs", float64(st.Installs)),
		c("overlay_refused", float64(st.Refused)), g("overlay_served_version", float64(st.Served)), g("overlay_flows", float64(st.Flows))}
	if a != nil {
		s := a.Stats()
		m = append(m, g("overlay_applied_version", float64(s.Applied)), c("overlay_acks", float64(s.Acks)),
			c("overlay_agent_errors", float64(s.Errors)), g("overlay_fabric_reachable", b(s.Reachable)))
	}
	if pr != nil {
		s := pr.Stats()
		m = append(m, c("overlay_probe_answered", float64(s.Answered)),
			c("overlay_probe_refused", float64(s.Refused)), c("overlay_probe_bad", float64(s.Bad)))
		for _, l := range s.Links {
			if len(m)+5 > limits.MaxMetricsPerSample {
				break
			}
			lb := map[string]string{"peer": l.Peer}
			m = append(m, api.Metric{Name: "overlay_link_latency_us", Kind: api.MetricGauge, Value: float64(l.Last.LatencyUs), Labels: lb},
				api.Metric{Name: "overlay_link_loss_ppm", Kind: api.MetricGauge, Value: float64(l.Last.LossPPM), Labels: lb},
				api.Metric{Name: "overlay_link_bandwidth_kbps", Kind: api.MetricGauge, Value: float64(l.Last.BandwidthKbps), Labels: lb},
				api.Metric{Name: "overlay_link_reports", Kind: api.MetricCounter, Value: float64(l.Reports), Labels: lb},
				api.Metric{Name: "overlay_link_unchanged", Kind: api.MetricCounter, Value: float64(l.Unchanged), Labels: lb})
		}
	}
	return m
}
