package dsaplugin

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Names the plugin announces.
const (
	// Name is the plugin's name (api.Info.Name), the name of its entry in the daemon's config.
	Name = "dsa"
	// Version is the plugin's own version.
	Version = "0.1.0"
)

// WatchedTypes are the interface types whose copies DSA can offload: vhost-user, both ways.
func WatchedTypes() []string { return []string{"dpdkvhostuser", "dpdkvhostuserclient"} }

// DefaultUnixctlTimeout bounds each unixctl call to ovs-vswitchd (pmd-rxq-show, the threshold).
const DefaultUnixctlTimeout = 2 * time.Second

// Options configure a Plugin; every field is optional.
type Options struct {
	// Logger; slog.Default() when nil. The SDK forwards it to the daemon's log.
	Logger *slog.Logger
	// OpenMachine opens the machine a configuration names (default OpenMachine). Tests inject
	// machines they inspect.
	OpenMachine func(cfg Config, log *slog.Logger) (*Machine, error)
	// TestPause is the value of the PauseEnv testing hook (main reads the environment); it acts
	// on simulated machines only.
	TestPause string
	// UnixctlTimeout bounds each unixctl call (default DefaultUnixctlTimeout).
	UnixctlTimeout time.Duration
}

// Plugin is the dsa plugin: api.Plugin, api.GlobalConfigContributor and api.Watcher. Its
// methods are safe for concurrent use; Configure's host work is serialised.
type Plugin struct {
	log         *slog.Logger
	openMachine func(Config, *slog.Logger) (*Machine, error)
	pause       string
	ucTimeout   time.Duration
	work        chan struct{} // a one-slot semaphore around host work

	mu         sync.Mutex
	configured bool
	cfg        Config
	facts      api.HostFacts
	machine    *Machine
	view       view
}

// view is what the last successful Configure established: what statuses, Health and
// Contribute tell.
type view struct {
	mode     string
	ovs      dsa.OVSCapability
	devices  []string // the devices prepared, by name
	wqs      []dsa.WQRef
	warnings []dsa.Warning
	extra    []string // dpdk-extra fragments of the vfio-pci devices
	changed  bool     // the last Apply wrote to the kernel
	thresh   threshold
	// pending: vhost-async-support=true was contributed while the running ovs-vswitchd
	// (process startPID, 0 when its pidfile was unreadable) had started without it; it clears
	// once the pidfile names another process.
	pending  bool
	startPID int
}

// threshold is the outcome of setting the vhost async threshold on a capable ovs-vswitchd.
type threshold struct {
	asked    int    // bytes asked for; 0: not asked (OVS's default stays)
	readBack int    // what ovs-vswitchd answered when asked back
	err      string // why it could not be set or verified; "" when verified or not asked
}

// The interfaces Plugin implements.
var (
	_ api.Plugin                  = (*Plugin)(nil)
	_ api.GlobalConfigContributor = (*Plugin)(nil)
	_ api.Watcher                 = (*Plugin)(nil)
)

// New returns an unconfigured Plugin; the daemon calls Configure before anything but Info and
// ConfigSchema.
func New(opts Options) *Plugin {
	p := &Plugin{log: opts.Logger, openMachine: opts.OpenMachine, pause: opts.TestPause, ucTimeout: opts.UnixctlTimeout,
		work: make(chan struct{}, 1)}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.openMachine == nil {
		p.openMachine = OpenMachine
	}
	if p.ucTimeout <= 0 {
		p.ucTimeout = DefaultUnixctlTimeout
	}
	return p
}

// Info describes the plugin: no types of its own, a watch on every vhost-user interface
// whoever created it (no bridge or owner restriction: os-vif's ports too).
func (p *Plugin) Info(context.Context) (api.Info, error) {
	return api.Info{
		Name:        Name,
		Version:     Version,
		APIVersions: api.SupportedAPIVersions(),
		Watch:       api.WatchFilter{InterfaceTypes: WatchedTypes()},
		Description: "Intel DSA for OVS-DPDK vhost async copies: idxd work queues or vfio-pci, wired into OVS only when it can use them, with a per-port status",
	}, nil
}

// ConfigSchema returns the JSON schema of Config.
func (p *Plugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{JSONSchema: configSchema, Doc: configDoc}, nil
}

// Configure validates a configuration and applies it: the OVS side is judged first (asyncMode
// require on an ovs-vswitchd without vhost async fails with OVS_NO_VHOST_ASYNC, before any
// write); then devices the plugin configured earlier and the configuration no longer names
// are reset, and the configured ones applied (idempotent: a device that matches is left
// alone); on a capable ovs-vswitchd the threshold is set and read back. An invalid
// configuration or a refused Plan leaves the previous configuration in place (nothing is reset
// before the whole new request is planned); after any failure the view is narrowed to what a
// fresh Discover finds, so Health and the statuses never claim devices the host lacks.
func (p *Plugin) Configure(ctx context.Context, req api.ConfigureRequest) error {
	cfg, err := ParseConfig(req.Config)
	if err != nil {
		return err
	}
	facts := req.Facts
	sock := socketOf(cfg, facts)
	if sock.path != "" {
		// The daemon found its facts through the run directory; an ovs-vswitchd with its own
		// --unixctl=PATH answers on the configured socket only: ask it for its commands.
		if cmds, err := p.appctlCommands(ctx, sock.path); err != nil {
			p.log.Warn("ovs.unixctl does not answer; judging OVS by the daemon's facts", "socket", sock.path, "err", err)
		} else {
			facts.AppctlCommands = cmds
		}
	}
	mode := cfg.asyncMode()
	ovs := dsa.ProbeOVS(facts.AppctlCommands, facts.OtherConfig, facts.OVSVersion, facts.DPDKVersion)
	warn, err := ovs.Check(dsa.AsyncMode(mode))
	if err != nil {
		return apiError("ovs", err)
	}
	owner, err := ovsOwner(cfg, facts.OVSRunDir)
	if err != nil {
		return invalid("config.ovs.user", err.Error())
	}
	release, err := p.lock(ctx)
	if err != nil {
		return err
	}
	defer release()
	m, err := p.machineFor(cfg)
	if err != nil {
		p.refresh(ctx)
		return err
	}
	v, err := p.apply(ctx, m, cfg, facts, owner)
	if err != nil {
		p.refresh(ctx)
		return err
	}
	v.mode, v.ovs = mode, ovs
	if warn != nil && len(cfg.Devices) > 0 {
		v.warnings = append(v.warnings, *warn)
	}
	if mode != AsyncOff && ovs.VhostAsync && len(cfg.Devices) > 0 && facts.OtherConfig[dsa.VhostAsyncSupportKey] != "true" {
		v.pending = true
		v.startPID, _ = ovsproc.VswitchdPID(facts.OVSRunDir)
	}
	if mode != AsyncOff && ovs.VhostAsync && cfg.OVS.Threshold > 0 {
		v.thresh = p.setThreshold(ctx, sock, ovs, cfg.OVS.Threshold)
	}
	p.mu.Lock()
	p.configured, p.cfg, p.facts, p.machine, p.view = true, cfg, facts, m, v
	p.mu.Unlock()
	p.log.Info("configured", "devices", v.devices, "wqs", len(v.wqs), "changed", v.changed, "async_mode", mode,
		"vhost_async", ovs.VhostAsync, "ovs", facts.OVSVersion, "dpdk", facts.DPDKVersion, "simulate", cfg.Simulate)
	for _, w := range v.warnings {
		p.log.Warn("dsa warning", "code", w.Code, "object", w.Object, "message", w.Message)
	}
	return ctx.Err()
}

// machineFor returns the open machine when cfg names the same one, else opens it.
func (p *Plugin) machineFor(cfg Config) (*Machine, error) {
	p.mu.Lock()
	m, same := p.machine, p.configured && p.cfg.sameMachine(cfg)
	p.mu.Unlock()
	if m != nil && same {
		return m, nil
	}
	m, err := p.openMachine(cfg, p.log)
	if err != nil {
		if cfg.Simulate != "" {
			return nil, invalid("config.simulate", err.Error())
		}
		return nil, api.Errorf(api.FailedPrecondition, "open the machine (root %s): %w", cfg.Root, err)
	}
	if m, err = withPause(m, p.pause, p.log); err != nil {
		return nil, api.Errorf(api.FailedPrecondition, "%w", err)
	}
	return m, nil
}

// machineKey names a machine in the state file.
func machineKey(cfg Config) string {
	if cfg.Simulate != "" {
		return "simulate:" + cfg.Simulate
	}
	return "root:" + cfg.Root
}

// apply resets the devices the plugin owns and cfg no longer names, then applies cfg's
// devices, recording in the data dir which devices it owns before writing to them.
func (p *Plugin) apply(ctx context.Context, m *Machine, cfg Config, facts api.HostFacts, owner *dsa.Owner) (view, error) {
	h, err := dsa.New(dsa.Config{FS: m.FS, Logger: p.log})
	if err != nil {
		return view{}, api.Errorf(api.Internal, "dsa library: %w", err)
	}
	prefix, err := dsa.FilePrefix(facts.OtherConfig["dpdk-extra"])
	if err != nil {
		p.log.Warn("cannot read --file-prefix from other_config:dpdk-extra; DPDK's default prefix assumed", "err", err)
		prefix = ""
	}
	req := cfg.Request(owner)
	if err := req.Normalize(prefix); err != nil {
		return view{}, apiError("configuration", err)
	}
	inv, err := h.Discover(ctx)
	if err != nil {
		return view{}, apiError("discover the DSA devices", err)
	}
	st := store{dir: facts.DataDir}
	key := machineKey(cfg)
	prev, err := st.load(key)
	if err != nil {
		return view{}, api.Errorf(api.FailedPrecondition, "plugin data: %w", err)
	}
	want := make([]owned, len(cfg.Devices))
	for i, d := range cfg.Devices {
		want[i] = resolve(inv, d.DSA)
	}
	// Judge the whole new request before any reset: a refused request changes nothing.
	plan, err := h.Plan(ctx, req)
	if err != nil {
		return view{}, apiError("plan", err)
	}
	// Reset what the configuration dropped, one device at a time, keeping the record true.
	for _, o := range slices.Clone(prev) {
		if slices.ContainsFunc(want, func(w owned) bool { return o.names(w.Config) || o.names(w.Name) || o.names(w.BDF) }) {
			continue
		}
		if err := h.Reset(ctx, o.ref()); err != nil && dsa.CodeOf(err) != dsa.CodeAbsent {
			return view{}, apiError("reset "+o.ref()+" (no longer configured)", err)
		}
		p.log.Info("device reset: no longer configured", "device", o.ref())
		prev = slices.DeleteFunc(prev, func(x owned) bool { return x.Config == o.Config })
		if err := st.save(key, prev); err != nil {
			return view{}, api.Errorf(api.FailedPrecondition, "%w", err)
		}
	}
	// Own the devices Apply is about to write to — recorded before the first write, so that a
	// plugin killed mid-way still owns them. A device that already matches and was not ours (an
	// accel-config setup adopted as it is) is never owned, so never reset by the plugin.
	owning := prev
	for _, dp := range plan.Devices {
		if len(dp.Steps) == 0 {
			continue
		}
		for _, w := range want {
			if w.Config == dp.Device || w.Name == dp.Device || w.BDF == dp.Device {
				owning = merge(owning, w)
			}
		}
	}
	if err := st.save(key, owning); err != nil {
		return view{}, api.Errorf(api.FailedPrecondition, "%w", err)
	}
	res, err := h.Apply(ctx, req)
	if err != nil {
		return view{}, apiError("apply", err)
	}
	v := view{wqs: res.WQs, changed: res.Changed}
	if res.Plan != nil {
		v.warnings = res.Plan.Warnings
		for _, d := range res.Plan.Devices {
			v.devices = append(v.devices, d.Device)
		}
	}
	v.extra = vfioExtra(res.Plan, req, inv)
	if again, err := h.Discover(ctx); err == nil { // the names vfio-pci or idxd gave the devices now
		for i, o := range owning {
			owning[i] = merge([]owned{o}, resolve(again, o.Config))[0]
		}
	}
	if err := st.save(key, owning); err != nil {
		return view{}, api.Errorf(api.FailedPrecondition, "%w", err)
	}
	return v, nil
}

// refresh narrows the plugin's view to what a fresh Discover of its machine finds: after a
// failed Configure, devices and work queues the host no longer has ready are not claimed by
// Health or the statuses. When Discover fails, nothing is claimed.
func (p *Plugin) refresh(ctx context.Context) {
	p.mu.Lock()
	configured, m := p.configured, p.machine
	p.mu.Unlock()
	if !configured {
		return
	}
	var inv *dsa.Inventory
	if m != nil {
		if h, err := dsa.New(dsa.Config{FS: m.FS, Logger: p.log}); err == nil {
			if got, err := h.Discover(ctx); err == nil {
				inv = got
			} else {
				p.log.Warn("rediscover after a refused configuration", "err", err)
			}
		}
	}
	p.mu.Lock()
	p.view = narrow(p.view, inv)
	p.mu.Unlock()
}

// narrow returns v keeping only the devices and work queues inv shows ready: a device enabled
// under idxd or bound to vfio-pci, an idxd work queue enabled. A nil inv keeps none.
func narrow(v view, inv *dsa.Inventory) view {
	ready := func(name string) (dsa.Device, bool) {
		if inv == nil {
			return dsa.Device{}, false
		}
		for _, d := range inv.Devices {
			if (d.Name == name || d.BDF == name) && (d.State == "enabled" || d.PCIDriver == DriverVFIO) {
				return d, true
			}
		}
		return dsa.Device{}, false
	}
	var devs []string
	for _, n := range v.devices {
		if _, ok := ready(n); ok {
			devs = append(devs, n)
		}
	}
	var wqs []dsa.WQRef
	for _, w := range v.wqs {
		d, ok := ready(w.Device)
		if !ok {
			continue
		}
		if d.PCIDriver == DriverVFIO || slices.ContainsFunc(d.WQs, func(q dsa.WQ) bool { return q.Name == w.Name && q.State == "enabled" }) {
			wqs = append(wqs, w)
		}
	}
	v.devices, v.wqs = devs, wqs
	if len(devs) == 0 {
		v.extra = nil
	}
	return v
}

// resolve returns the owned record of the device a configuration names as name, with its idxd
// name and PCI address when the inventory has it.
func resolve(inv *dsa.Inventory, name string) owned {
	o := owned{Config: name}
	if inv == nil {
		return o
	}
	for _, d := range inv.Devices {
		if d.Name == name || d.BDF == name {
			o.Name, o.BDF = d.Name, d.BDF
			break
		}
	}
	return o
}

// vfioExtra returns the dpdk-extra fragments of the plan's vfio-pci devices: the plan's own,
// and "-a <BDF>,max_queues=N" for a vfio-pci device the plan gave none.
func vfioExtra(plan *dsa.Plan, req dsa.Request, inv *dsa.Inventory) []string {
	var out []string
	if plan != nil {
		out = slices.Clone(plan.DPDKExtra)
	}
	for _, d := range req.Devices {
		if d.Driver != DriverVFIO {
			continue
		}
		bdf := resolve(inv, d.Device).BDF
		if bdf == "" && bdfRE.MatchString(d.Device) {
			bdf = d.Device
		}
		if bdf == "" || slices.ContainsFunc(out, func(f string) bool { return strings.Contains(f, bdf) }) {
			continue
		}
		if a, err := dsa.AllowArgs(bdf, d.WQs.Count); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// invalid is the InvalidArgument error of one configuration field.
func invalid(field, msg string) error {
	return &api.Error{Code: api.InvalidArgument, Message: field + ": " + msg, Problems: []api.Problem{{Field: field, Message: msg}}}
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

// current returns a snapshot of the configured state, or FailedPrecondition before the first
// Configure.
func (p *Plugin) current() (Config, api.HostFacts, *Machine, view, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.configured {
		return Config{}, api.HostFacts{}, nil, view{}, api.Errorf(api.FailedPrecondition, "plugin %s is not configured yet", Name)
	}
	return p.cfg, p.facts, p.machine, p.view, nil
}

// Health tells whether the DSA devices do what they were configured for: OK while they
// accelerate (or asyncMode is off, or none is configured, or vhost async is enabled and no DMA
// copy was observed yet), Degraded when they are prepared but unused (no vhost async in this
// ovs-vswitchd, a restart pending, the running ovs-vswitchd not answering for its threshold).
// It asks the running ovs-vswitchd (bounded unixctl calls): its pidfile for a restart, its
// threshold and its vhost_async_* counters; "accelerating" needs both.
func (p *Plugin) Health(ctx context.Context) (api.Health, error) {
	cfg, facts, m, v, err := p.current()
	if err != nil {
		return api.Health{State: api.HealthOK, Message: "waiting for the configuration"}, nil
	}
	pending := p.stillPending(v, facts.OVSRunDir)
	copies := false
	if len(cfg.Devices) > 0 && v.mode != AsyncOff && v.ovs.VhostAsync && !pending {
		v.thresh = p.observeThreshold(ctx, socketOf(cfg, facts), v)
		_, copies = p.dmaCopies(ctx, socketOf(cfg, facts))
	}
	state, msg := api.HealthOK, ""
	prepared := fmt.Sprintf("%d DSA devices, %d work queues", len(v.devices), len(v.wqs))
	switch {
	case len(cfg.Devices) == 0:
		msg = "no DSA device configured"
	case v.mode == AsyncOff:
		msg = prepared + " prepared; ovs.asyncMode off: OVS is not asked to use them"
	case !v.ovs.VhostAsync:
		state, msg = api.HealthDegraded, prepared+" prepared, unused: this ovs-vswitchd has no vhost async support ("+
			string(dsa.CodeOVSNoVhostAsync)+": "+v.ovs.Reason+")"
	case pending:
		state, msg = api.HealthDegraded, prepared+" prepared, unused until ovs-vswitchd restarts: "+dsa.VhostAsyncSupportKey+"=true is contributed and read at start only"
	case v.thresh.err != "":
		state, msg = api.HealthDegraded, prepared+"; vhost async on, threshold not verified: "+v.thresh.err
	case !copies:
		msg = prepared + "; vhost async enabled, no DMA copies observed yet"
	default:
		msg = prepared + " accelerating vhost copies"
		if v.thresh.asked > 0 {
			msg += fmt.Sprintf(" from %d bytes (read back from ovs-vswitchd)", v.thresh.readBack)
		}
	}
	if v.mode != AsyncOff && v.ovs.VhostAsync && len(cfg.Devices) > 0 {
		msg += txFlushAdvice(facts.OtherConfig[TxFlushIntervalKey])
	}
	var codes []string
	for _, w := range v.warnings {
		if w.Code != dsa.CodeOVSNoVhostAsync { // the message says it already
			codes = append(codes, string(w.Code))
		}
	}
	if len(codes) > 0 {
		msg += "; warnings: " + strings.Join(slices.Compact(slices.Sorted(slices.Values(codes))), ", ")
	}
	if m != nil && m.Simulated != "" {
		msg = "SIMULATION (" + filepath.Base(m.Simulated) + ", no hardware touched): " + msg
	}
	return api.Health{State: state, Message: msg}, nil
}

// Contribute returns the dpdk-extra fragments of the vfio-pci devices and, only when the
// running ovs-vswitchd has vhost async, asyncMode is not off and at least one device is
// configured, other_config vhost-async-support=true; nothing else.
func (p *Plugin) Contribute(context.Context) (api.GlobalConfig, error) {
	cfg, _, _, v, err := p.current()
	if err != nil {
		return api.GlobalConfig{}, err
	}
	var gc api.GlobalConfig
	if len(v.extra) > 0 {
		gc.DPDKExtra = slices.Clone(v.extra)
	}
	if v.mode != AsyncOff && v.ovs.VhostAsync && len(cfg.Devices) > 0 {
		gc.OtherConfig = map[string]string{dsa.VhostAsyncSupportKey: "true"}
	}
	return gc, nil
}

// TxFlushIntervalKey is the Open_vSwitch.other_config key that lets a PMD thread hold vhost
// transmits for up to that many microseconds to send them in bigger bursts.
const TxFlushIntervalKey = "tx-flush-interval"

// AdvisedTxFlushInterval is the tx-flush-interval Intel's OVS DSA tuning guide gives: DSA pays
// off on batches of about 16 copies or more, and OVS's bursts are often near 6 packets without it.
const AdvisedTxFlushInterval = 50

// txFlushAdvice returns the health message's advice about tx-flush-interval, given its value in
// other_config ("" when unset): none when it is at least AdvisedTxFlushInterval. It is advice
// only: the plugin does not write the key, which changes latency for every port.
func txFlushAdvice(v string) string {
	n, err := strconv.Atoi(v)
	if err == nil && n >= AdvisedTxFlushInterval {
		return ""
	}
	now := "unset, 0 µs"
	if v != "" {
		now = fmt.Sprintf("%.16q", v)
	}
	return fmt.Sprintf("; advice: set other_config:%s=%d (now %s) so PMD threads batch vhost copies for DSA, at the cost of up to %d µs of added latency",
		TxFlushIntervalKey, AdvisedTxFlushInterval, now, AdvisedTxFlushInterval)
}

// stillPending reports whether v's restart is still pending: the pidfile in runDir names the
// process that ran when the key was contributed (or cannot be read). When it names another
// process, ovs-vswitchd restarted and read the key; the plugin's view forgets the pending state.
func (p *Plugin) stillPending(v view, runDir string) bool {
	if !v.pending {
		return false
	}
	pid, err := ovsproc.VswitchdPID(runDir)
	if err != nil || pid == v.startPID {
		return true
	}
	p.mu.Lock()
	if p.view.pending && p.view.startPID == v.startPID {
		p.view.pending = false
	}
	p.mu.Unlock()
	p.log.Info("ovs-vswitchd restarted: vhost-async-support is read", "old_pid", v.startPID, "pid", pid)
	return false
}

// observeThreshold asks the running ovs-vswitchd for its vhost async threshold: set again and
// read back when the configuration asks for one (a restarted process forgot it, and the view
// keeps the outcome), else only read. An error in the result means the running process did
// not confirm it.
func (p *Plugin) observeThreshold(ctx context.Context, sock vswitchdSocket, v view) threshold {
	if v.thresh.asked > 0 {
		t := p.setThreshold(ctx, sock, v.ovs, v.thresh.asked)
		p.mu.Lock()
		if p.view.thresh.asked == t.asked {
			p.view.thresh = t
		}
		p.mu.Unlock()
		return t
	}
	got, err := p.getThreshold(ctx, sock)
	if err != nil {
		return threshold{err: err.Error()}
	}
	return threshold{readBack: got}
}
