package vswitchd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// Keys the daemon adds to the external_ids of the bridges and ports created through the API
// (besides ovsdb.OwnerKey and ovsdb.GenerationKey).
const (
	// OriginKey is "api" on rows created through the API; rows of the configuration file do
	// not carry it.
	OriginKey = ovsdb.TagPrefix + "origin"
	// SpecKey holds the JSON of the object's spec as the API received it (config.Bridge
	// without ports, or config.Port), so that a restarted daemon rebuilds its API objects
	// from OVSDB alone and repairs drift from the spec, not from the drifted row.
	SpecKey = ovsdb.TagPrefix + "spec"
)

// Client is what the Daemon needs from *ovsdb.Client.
type Client interface {
	reconcile.Client
	batch.PortDB
	// Tags returns the ovsdb.TagPrefix keys of an owned row (ok false when absent or foreign).
	Tags(table, name string) (map[string]string, bool)
	Connected() bool
	Endpoint() string
	// AwaitConnected waits for a lost connection, at most wait after it was lost (see
	// ovsdb.Client.AwaitConnected).
	AwaitConnected(ctx context.Context, wait time.Duration) error
}

// Options configure a Daemon. Zero values are usable except where noted.
type Options struct {
	Logger *slog.Logger
	// Mode is reported by Health.
	Mode Mode
	// Commit is passed to every OVSDB commit (the reconciler's and the batches'). Its
	// ReconnectWait, DefaultReconnectWait when 0 (negative: no bound), bounds how long write
	// requests wait for a lost OVSDB connection (see awaitOVSDB).
	Commit ovsdb.CommitOptions
	// Batch tunes the batcher of ApplyPort/DeletePort. Defaults: MaxSize 512, MaxDelay 20ms,
	// MaxInFlight 1, lingering with cohorts (see batch.Options.Cohort): a batch goes as soon as
	// as many requests wait as the previous batch had, else after MaxDelay. Without lingering,
	// the first client answered after a batch would find nothing in flight and go alone, and N
	// clients in lock step would make batches far smaller than N (more ovs-vswitchd
	// reconfigurations); without cohorts every batch would wait the full delay.
	BatchMaxSize  int
	BatchMaxDelay time.Duration
	// Reload loads the configuration again (file, environment, flags) for Reload and SIGHUP.
	// nil: Reload fails.
	Reload func(ctx context.Context) (*config.Config, error)
	// Reconcile tunes the reconciler (Logger, Commit, Extra, Lock and OnChange are set by the
	// Daemon; an OnChange given here is called too).
	Reconcile reconcile.Options
	// Observer receives measurements (metrics); nil: none.
	Observer Observer
	// VswitchdProbe, if set, is polled by Run every ProbeInterval (default 1s) to learn
	// whether ovs-vswitchd runs (see LockProbe); while it does not, interfaces report an error.
	VswitchdProbe VswitchdProbe
	ProbeInterval time.Duration
	// Degraded, if set, is asked by Health for the parts of the switch the caller runs itself
	// that do not work now (ovsplaned: the sandbox's daemons while they are restarted), one
	// line each, none when all is well.
	Degraded func() []string
	// Plugins is the plugin host: ports whose interface type a plugin provides are validated
	// and attached through it. Nil: no plugins (such types are refused as unknown).
	Plugins Plugins
	// OpenFlow programs the plugins' flow programs on the managed bridges; nil: none are
	// (the embedded OVSDB has no OpenFlow).
	OpenFlow OpenFlow
}

// Plugins is what the Daemon needs from the plugin host (plugins/host.Host through an
// adapter).
type Plugins interface {
	// PortProvider returns the port provider of a port type and the name of the plugin that
	// provides it; ok is false when no configured plugin provides the type (whatever its
	// state: calls to a plugin that is not running fail with api.CodeUnavailable).
	PortProvider(portType string) (p api.PortProvider, plugin string, ok bool)
	// Plugins returns every configured plugin, in configuration order.
	Plugins() []PluginInfo
	// Reload makes the running plugins match a reloaded configuration's list.
	Reload(ctx context.Context, plugins []config.Plugin) error
	// GlobalConfig returns the plugins' merged contribution to Open_vSwitch.other_config
	// given the daemon's own keys (which win), and the conflicts: keys on which plugins (or a
	// plugin and the daemon) disagree, which no plugin gets. A plugin that cannot answer
	// contributes what it last answered.
	GlobalConfig(ctx context.Context, daemon map[string]string) (merged map[string]string, conflicts []error)
	// Flows asks every plugin with the flow-program capability for its flows and groups on a
	// bridge (see PluginFlows).
	Flows(ctx context.Context, bridge api.BridgeFacts) []PluginFlows
	// Cookies is the cookie space of all plugins' flows: flows in it whose plugin is not
	// configured any more are pruned.
	Cookies() api.CookieRange
}

// PluginFlows is one plugin's desired flows and groups on a bridge, with its ranges.
type PluginFlows struct {
	Plugin  string
	Cookies api.CookieRange
	Groups  api.GroupRange
	Set     api.FlowSet
	// Err: the plugin could not answer (or answered outside its ranges); its current flows
	// are left alone.
	Err error
}

// OpenFlow programs the plugins' flows (vswitchd/openflow.Programmer).
type OpenFlow interface {
	// Sync makes the bridge's flows in cookies and groups in groups exactly fs.
	Sync(ctx context.Context, bridge string, cookies api.CookieRange, groups api.GroupRange, fs api.FlowSet) error
	// PruneForeign deletes the flows in the space marker/mask whose cookie is in none of keep.
	PruneForeign(ctx context.Context, bridge string, marker, mask uint64, keep []api.CookieRange) error
}

// Observer receives the daemon's measurements. Implementations must not block.
type Observer interface {
	// BatchCommitted: one batch of size requests was committed to OVSDB in committed
	// (planning included) and acknowledged by ovs-vswitchd in applied after that; err is the
	// whole-batch error, if any.
	BatchCommitted(size int, committed, applied time.Duration, err error)
	// ReconcileDone: one reconcile pass took d.
	ReconcileDone(d time.Duration, err error)
	// Statuses: the current count of objects per state (after every change).
	Statuses(counts map[reconcile.State]int)
}

// Daemon owns the desired state (the configuration's objects plus those created through the
// API) and keeps OVSDB converged to it. API calls that change ports are coalesced by a batcher
// into one OVSDB transaction and one ovs-vswitchd acknowledgement per batch; everything else
// goes through the reconciler. A mutex (writer) serialises the batches, the API's bridge
// changes and the reconciler's passes, so none of them sees the others half done.
//
// API objects live in OVSDB: their rows carry OriginKey and SpecKey. New reads them back, so a
// restarted daemon has them all again; a commit whose outcome was unknown (lost connection,
// timeout) is settled by reading OVSDB, never assumed.
type Daemon struct {
	c    Client
	log  *slog.Logger
	opts Options
	rec  *reconcile.Reconciler

	writer sync.Mutex // held while writing OVSDB (batches, API bridge changes, passes)

	mu      sync.Mutex
	cfg     *config.Config
	cfgDes  config.DesiredState      // cfg.Desired()
	bridges map[string]config.Bridge // API bridges (no ports)
	ports   map[string]apiPort       // API ports by name
	// objVer counts the changes of bridges and ports; extraCache is extra's result at
	// extraVer (the status refresh asks for it after every change of OVSDB).
	objVer, extraVer int
	extraCache       []config.Bridge
	// attaching counts, per port name, the ApplyPort calls between a plugin's Attach and the
	// end of their write, whose host work must not be swept as orphaned.
	attaching map[string]int
	// pluginOC is the plugins' merged other_config contribution, pluginConflicts what was
	// left out of it (see refreshGlobal).
	pluginOC        map[string]string
	pluginConflicts []string
	pluginOCRead    bool          // pluginOC comes from the plugins, not from OVSDB at start
	flowKick        chan struct{} // a flow sync is wanted (capacity 1)
	// cfgPlugins are the configuration's ports of plugin types, by name (see cfgPluginPort).
	cfgPlugins map[string]*cfgPluginPort
	subs       map[*subscriber]struct{}

	batcher *batch.Batcher[batch.PortRequest, batch.PortResult]
	stop    context.CancelFunc
	live    liveness // what watchVswitchd knows of ovs-vswitchd
}

type apiPort struct {
	bridge string
	spec   config.Port // the request
	// plugin is the plugin's attachment of a port whose type a plugin provides; nil otherwise.
	plugin *pluginPort
	tagged config.Port // spec (or the plugin's shape) with the API tags: what the reconciler ensures (computed once)
}

func newAPIPort(sp storedPort) apiPort {
	return apiPort{bridge: sp.Bridge, spec: sp.Port, plugin: sp.Plugin, tagged: sp.tagged()}
}

// stored returns the spec kept in p's SpecKey.
func (p apiPort) stored() storedPort {
	return storedPort{Bridge: p.bridge, Port: p.spec, Plugin: p.plugin}
}

// New returns a Daemon for cfg on c, whose cache must be synchronised (ovsdb.Dial does that):
// it reads the API objects back from OVSDB. The batcher starts at once; call Run to reconcile
// and Close to stop.
func New(ctx context.Context, c Client, cfg *config.Config, opts Options) (*Daemon, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BatchMaxSize <= 0 {
		opts.BatchMaxSize = 512
	}
	if opts.BatchMaxDelay <= 0 {
		opts.BatchMaxDelay = 20 * time.Millisecond
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	if opts.Commit.ReconnectWait == 0 {
		opts.Commit.ReconnectWait = DefaultReconnectWait
	}
	d := &Daemon{c: c, log: opts.Logger, opts: opts, cfg: cfg, cfgDes: cfg.Desired(),
		bridges: map[string]config.Bridge{}, ports: map[string]apiPort{}, attaching: map[string]int{}, flowKick: make(chan struct{}, 1), cfgPlugins: map[string]*cfgPluginPort{}, subs: map[*subscriber]struct{}{}}
	owned := c.Owned()
	d.adopt(owned)
	d.mu.Lock()
	d.syncCfgPluginsLocked()
	d.adoptCfgPluginsLocked(owned)
	d.mu.Unlock()
	if opts.Plugins != nil {
		// Until the plugins answer (RefreshPluginConfig), keep the other_config keys ovsplane
		// set that the configuration does not: they may be plugins' contributions, and
		// removing them for the moment the plugins start would make ovs-vswitchd flap.
		if own, err := c.OwnedGlobal(ctx); err == nil {
			for k, v := range own {
				if _, inCfg := d.cfgDes.OtherConfig[k]; !inCfg {
					if d.pluginOC == nil {
						d.pluginOC = map[string]string{}
					}
					d.pluginOC[k] = v
				}
			}
		}
	}

	ro := opts.Reconcile
	ro.Logger, ro.Commit = opts.Logger, opts.Commit
	ro.Extra = d.extra
	ro.Unheld = d.unheld
	ro.Lock = &d.writer
	userChange := ro.OnChange
	ro.OnChange = func(changed []reconcile.Status) {
		d.publish(changed)
		d.KickFlows()
		if userChange != nil {
			userChange(changed)
		}
	}
	if opts.Observer != nil {
		userPass := ro.OnPass
		ro.OnPass = func(dur time.Duration, err error) {
			opts.Observer.ReconcileDone(dur, err)
			if userPass != nil {
				userPass(dur, err)
			}
		}
	}
	d.rec = reconcile.New(c, d.desired(), ro)

	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b, err := batch.Start(bctx, &portCommitter{d: d}, batch.Options[batch.PortRequest]{
		MaxSize: opts.BatchMaxSize, MaxDelay: opts.BatchMaxDelay, Linger: true, Cohort: true, Key: batch.PortKey})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("vswitchd: starting the batcher: %w", err)
	}
	d.batcher, d.stop = b, cancel
	return d, nil
}

// Run reconciles until ctx ends (see reconcile.Reconciler.Run) and returns ctx's error. With
// Options.VswitchdProbe it also watches ovs-vswitchd.
func (d *Daemon) Run(ctx context.Context) error {
	if d.opts.VswitchdProbe != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); d.watchVswitchd(ctx) }()
	}
	if d.opts.OpenFlow != nil && d.opts.Plugins != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); d.flowLoop(ctx) }()
	}
	return d.rec.Run(ctx)
}

// Watch returns a channel closed at the next change of any status.
func (d *Daemon) Watch() <-chan struct{} { return d.rec.Watch() }

// Reconcile runs one reconcile pass now (for --once and tests).
func (d *Daemon) Reconcile(ctx context.Context) error { return d.rec.Reconcile(ctx) }

// Close stops accepting API changes, lets the batches in flight finish (or ctx end) and ends
// the subscriptions.
func (d *Daemon) Close(ctx context.Context) error {
	err := d.batcher.Close(ctx)
	d.stop()
	d.mu.Lock()
	for s := range d.subs {
		s.end()
	}
	d.subs = map[*subscriber]struct{}{}
	d.mu.Unlock()
	return err
}

// adopt records the API objects found among owned rows (OriginKey "api" with a readable
// SpecKey) that the daemon does not know yet. A row whose spec cannot be read is left to the
// reconciler, which prunes it like any owned row that is not desired.
func (d *Daemon) adopt(owned []ovsdb.OwnedRow) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ports []ovsdb.OwnedRow
	for _, o := range owned {
		if o.Tags[OriginKey] != string(OriginAPI) {
			continue
		}
		switch o.Table {
		case "Bridge":
			if _, ok := d.bridges[o.Name]; ok {
				continue
			}
			var b config.Bridge
			if err := json.Unmarshal([]byte(o.Tags[SpecKey]), &b); err != nil || b.Name != o.Name {
				d.log.Warn("API bridge with an unreadable spec; it will be pruned", "bridge", o.Name, "error", err)
				continue
			}
			d.bridges[o.Name] = b
			d.objVer++
		case "Port":
			ports = append(ports, o)
		}
	}
	for _, o := range ports {
		if _, ok := d.ports[o.Name]; ok {
			continue
		}
		var sp storedPort
		if err := json.Unmarshal([]byte(o.Tags[SpecKey]), &sp); err != nil || sp.Port.Name != o.Name {
			d.log.Warn("API port with an unreadable spec; it will be pruned", "port", o.Name, "error", err)
			continue
		}
		d.ports[o.Name] = newAPIPort(sp)
		d.objVer++
	}
}

// extra is the reconciler's Options.Extra: the API objects, after adopting API rows found in
// OVSDB (left by a commit whose outcome was unknown, or by another instance).
func (d *Daemon) extra(owned []ovsdb.OwnedRow) []config.Bridge {
	if owned != nil {
		d.adopt(owned)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extraCache != nil && d.extraVer == d.objVer {
		return d.extraCache // callers only read it
	}
	byBridge := map[string][]config.Port{}
	for _, p := range d.ports {
		byBridge[p.bridge] = append(byBridge[p.bridge], p.tagged)
	}
	out := make([]config.Bridge, 0, len(d.bridges)+len(byBridge))
	for name, b := range d.bridges {
		tb := taggedBridge(b)
		tb.Ports = byBridge[name]
		delete(byBridge, name)
		out = append(out, tb)
	}
	for name, ports := range byBridge {
		out = append(out, config.Bridge{Name: name, Ports: ports})
	}
	d.extraCache, d.extraVer = out, d.objVer
	return out
}

// unheld is the reconciler's Options.Unheld: the bridges holding API ports that neither the
// configuration nor the API desires (the configuration file lost the bridge while the daemon
// was not running: Reload refuses to drop such a bridge). ovsplane leaves such a bridge as it
// is, neither rewritten with an empty spec nor pruned with the API ports; its status says why
// and what to do.
func (d *Daemon) unheld(extra []config.Bridge) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string]string
	for _, b := range extra {
		_, isAPI := d.bridges[b.Name]
		_, isCfg := d.cfgDes.Bridge(b.Name)
		if isAPI || isCfg || len(b.Ports) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[b.Name] = fmt.Sprintf("bridge %q is in neither the configuration file nor the API objects but holds ports created through the API (%s): ovsplane leaves the bridge as it is; add it back to the configuration file and reload, or delete those ports through the API (the bridge is then removed)",
			b.Name, strings.Join(portNames(b.Ports), ", "))
	}
	return out
}

// droppedHoldingLocked returns, for each bridge of the running configuration that next no
// longer lists, the API ports it holds (sorted), as "bridge "B" (ports p1, p2)". Callers hold
// d.mu.
func (d *Daemon) droppedHoldingLocked(next config.DesiredState) []string {
	held := map[string][]string{}
	for name, p := range d.ports {
		_, wasCfg := d.cfgDes.Bridge(p.bridge)
		_, stays := next.Bridge(p.bridge)
		if wasCfg && !stays {
			held[p.bridge] = append(held[p.bridge], name)
		}
	}
	var out []string
	for _, b := range slices.Sorted(maps.Keys(held)) {
		slices.Sort(held[b])
		out = append(out, fmt.Sprintf("bridge %q (ports %s)", b, strings.Join(held[b], ", ")))
	}
	return out
}

func portNames(ports []config.Port) []string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// taggedBridge returns b with the API tags in its external_ids.
func taggedBridge(b config.Bridge) config.Bridge {
	spec, _ := json.Marshal(b) // plain data: cannot fail
	b.ExternalIDs = withTags(b.ExternalIDs, string(spec))
	return b
}

func withTags(m map[string]string, spec string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out[OriginKey] = string(OriginAPI)
	out[SpecKey] = spec
	return out
}

// ---- bridges ----

// ApplyBridge creates or updates a bridge through the API (b.Ports must be empty) and waits
// until ovs-vswitchd applied it. A bridge of the configuration file cannot be changed here.
func (d *Daemon) ApplyBridge(ctx context.Context, b config.Bridge) (BridgeInfo, error) {
	if err := config.ValidateBridge(b); err != nil {
		return BridgeInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	b = canonicalBridge(b)
	d.mu.Lock()
	err := d.conflictLocked("bridge", b.Name, "")
	d.mu.Unlock()
	if err != nil {
		return BridgeInfo{}, err
	}
	if err := d.awaitOVSDB(ctx, "bridge", b.Name); err != nil {
		return BridgeInfo{}, err
	}
	d.writer.Lock()
	defer d.writer.Unlock()
	txn := d.c.NewTxn(d.rec.Generation())
	txn.EnsureBridge(reconcile.BridgeSpec(taggedBridge(b)), nil)
	_, cerr := txn.Commit(ctx, d.opts.Commit)
	var applyErr *ovsdb.ApplyError
	if tags, ok := d.c.Tags("Bridge", b.Name); ok && tags[OriginKey] == string(OriginAPI) && !notSent(cerr) &&
		(cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
		d.mu.Lock()
		d.bridges[b.Name] = b
		d.objVer++
		d.mu.Unlock()
		cerr = nil // committed: its status tells the rest
	}
	if cerr != nil {
		return BridgeInfo{}, classify("bridge", b.Name, cerr)
	}
	d.rec.Refresh()
	info, _ := d.Bridge(b.Name)
	return info, nil
}

// DeleteBridge deletes a bridge created through the API, with its ports.
func (d *Daemon) DeleteBridge(ctx context.Context, name string) error {
	d.mu.Lock()
	_, isAPI := d.bridges[name]
	_, isCfg := d.cfgDesired().Bridge(name)
	d.mu.Unlock()
	switch {
	case isCfg:
		return fmt.Errorf("%w: bridge %q comes from the configuration file; remove it there and reload", ErrConflict, name)
	case !isAPI:
		return fmt.Errorf("%w: bridge %q is not managed by ovsplane", ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "bridge", name); err != nil {
		return err
	}
	d.writer.Lock()
	defer d.writer.Unlock()
	_, cerr := d.c.NewTxn(d.rec.Generation()).DeleteBridge(name).Commit(ctx, d.opts.Commit)
	var applyErr *ovsdb.ApplyError
	if _, still := d.c.Tags("Bridge", name); !still && (cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
		d.mu.Lock()
		delete(d.bridges, name)
		d.objVer++
		var attached []apiPort
		for pn, p := range d.ports {
			if p.bridge == name {
				delete(d.ports, pn)
				d.objVer++
				if p.plugin != nil {
					attached = append(attached, p)
				}
			}
		}
		d.mu.Unlock()
		for _, p := range attached {
			d.detach(p.bridge, p.spec, p.plugin)
		}
		d.rec.Refresh()
		return nil
	}
	if cerr == nil {
		return fmt.Errorf("%w: bridge %q is still in OVSDB after its deletion committed; the reconciler will retry", ErrUnavailable, name)
	}
	return classify("bridge", name, cerr)
}

// Bridge returns one managed bridge (ErrNotFound when it is not).
func (d *Daemon) Bridge(name string) (BridgeInfo, error) {
	d.mu.Lock()
	b, isAPI := d.bridges[name]
	cb, isCfg := d.cfgDesired().Bridge(name)
	d.mu.Unlock()
	info := BridgeInfo{}
	switch {
	case isCfg:
		cb.Ports = nil
		info.Spec, info.Origin = cb, OriginConfig
	case isAPI:
		info.Spec, info.Origin = b, OriginAPI
	default:
		return BridgeInfo{}, fmt.Errorf("%w: bridge %q is not managed by ovsplane", ErrNotFound, name)
	}
	info.Status = d.status("bridge/"+name, reconcile.KindBridge, name, "")
	return info, nil
}

// Bridges returns every managed bridge, sorted by name.
func (d *Daemon) Bridges() []BridgeInfo {
	d.mu.Lock()
	names := make([]string, 0, len(d.bridges))
	for n := range d.bridges {
		names = append(names, n)
	}
	for _, b := range d.cfgDesired().Bridges {
		names = append(names, b.Name)
	}
	d.mu.Unlock()
	slices.Sort(names)
	out := make([]BridgeInfo, 0, len(names))
	for _, n := range slices.Compact(names) {
		if info, err := d.Bridge(n); err == nil {
			out = append(out, info)
		}
	}
	return out
}

// ---- ports ----

// ApplyPort creates or updates a port through the API on a managed bridge and waits until
// ovs-vswitchd applied it. Concurrent calls share OVSDB transactions (package batch). An
// interface ovs-vswitchd refused is not an error of the call: the port is written, and its
// status is reconcile.Error with ovs-vswitchd's message.
func (d *Daemon) ApplyPort(ctx context.Context, bridge string, p config.Port) (PortInfo, error) {
	if err := config.ValidatePortWith(bridge, p, d.pluginType); err != nil {
		return PortInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	p = canonicalPort(p)
	prov, plugin, typ, isPlugin, err := d.pluginRequest(p)
	if err != nil {
		return PortInfo{}, err
	}
	d.mu.Lock()
	err = d.portConflictLocked(bridge, p)
	var prev *storedPort
	if cur, ok := d.ports[p.Name]; ok {
		sp := cur.stored()
		prev = &sp
	}
	d.mu.Unlock()
	if err != nil {
		return PortInfo{}, err
	}
	if prev != nil && prev.Plugin != nil && !isPlugin {
		return PortInfo{}, fmt.Errorf("%w: port %q was attached by plugin %q (type %q); delete it first, then apply the new one",
			ErrConflict, p.Name, prev.Plugin.Plugin, prev.Plugin.Type)
	}
	if err := d.awaitOVSDB(ctx, "port", p.Name); err != nil {
		return PortInfo{}, err
	}
	sp := storedPort{Bridge: bridge, Port: p}
	fresh := false
	var announced *batch.Announcement[batch.PortRequest, batch.PortResult]
	if isPlugin {
		// The plugin's work comes before the port reaches the batcher: announce it so its
		// batch waits for it instead of leaving without it (splitting the cohort).
		announced = d.batcher.Announce()
		defer announced.Cancel() // no-op once submitted
		d.mu.Lock()
		d.attaching[p.Name]++
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			if d.attaching[p.Name]--; d.attaching[p.Name] <= 0 {
				delete(d.attaching, p.Name)
			}
			d.mu.Unlock()
		}()
		if sp.Plugin, fresh, err = d.attach(ctx, bridge, p, prov, plugin, typ, prev); err != nil {
			return PortInfo{}, err
		}
	}
	req := batch.PortRequest{Spec: reconcile.PortSpec(bridge, sp.tagged())}
	var res batch.PortResult
	if announced != nil {
		res, err = d.batcher.SubmitAnnounced(ctx, announced, req)
	} else {
		res, err = d.batcher.Submit(ctx, req)
	}
	if err != nil && !errors.Is(err, ovsdb.ErrVswitchd) {
		if fresh && !unknownOutcome(err) { // certainly not written: undo the plugin's work
			d.detach(bridge, p, sp.Plugin)
		}
		return PortInfo{}, classify("port", p.Name, err)
	}
	// The batch's own view of the interfaces (what ovs-vswitchd acknowledged), not the
	// reconciler's statuses, which follow OVSDB asynchronously.
	info := PortInfo{Bridge: bridge, Spec: p, Origin: OriginAPI,
		Status: reconcile.Status{Kind: reconcile.KindPort, Name: p.Name, Bridge: bridge, State: reconcile.Ready}}
	d.fillPlugin(&info, sp.Plugin)
	for _, st := range res.Interfaces {
		s := reconcile.Status{Kind: reconcile.KindInterface, Name: st.Name, Bridge: bridge, State: reconcile.Pending}
		switch {
		case st.Error != "":
			s.State, s.Error = reconcile.Error, st.Error
		case st.Ofport > 0:
			s.State, s.Ofport = reconcile.Ready, st.Ofport
		case st.Ofport < 0:
			s.State, s.Error = reconcile.Error, "ovs-vswitchd could not set it up (ofport -1)"
		}
		switch {
		case s.State == reconcile.Error && info.Status.State != reconcile.Error:
			info.Status.State, info.Status.Error = reconcile.Error, s.Error
		case s.State == reconcile.Pending && info.Status.State == reconcile.Ready:
			info.Status.State = reconcile.Pending
		}
		info.Interfaces = append(info.Interfaces, s)
	}
	return info, nil
}

// DeletePort deletes a port created through the API.
func (d *Daemon) DeletePort(ctx context.Context, name string) error {
	d.mu.Lock()
	p, isAPI := d.ports[name]
	cfgBridge := d.cfgPortBridgeLocked(name)
	d.mu.Unlock()
	switch {
	case cfgBridge != "":
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); remove it there and reload", ErrConflict, name, cfgBridge)
	case !isAPI:
		return fmt.Errorf("%w: port %q is not managed by ovsplane", ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "port", name); err != nil {
		return err
	}
	_, err := d.batcher.Submit(ctx, batch.PortRequest{Delete: true, Spec: ovsdb.PortOn{Bridge: p.bridge, Port: config.Port{Name: name}}})
	if err != nil {
		return classify("port", name, err)
	}
	if p.plugin != nil {
		d.detach(p.bridge, p.spec, p.plugin)
	}
	return nil
}

// Port returns one managed port (ErrNotFound when it is not).
func (d *Daemon) Port(name string) (PortInfo, error) {
	d.mu.Lock()
	info, ok := d.portLocked(name)
	d.mu.Unlock()
	if !ok {
		return PortInfo{}, fmt.Errorf("%w: port %q is not managed by ovsplane", ErrNotFound, name)
	}
	d.fillPortStatus(&info)
	return info, nil
}

// Ports returns the managed ports of bridge ("" for all), sorted by name.
func (d *Daemon) Ports(bridge string) []PortInfo {
	d.mu.Lock()
	var out []PortInfo
	for _, b := range d.cfgDesired().Bridges {
		if bridge != "" && b.Name != bridge {
			continue
		}
		for _, p := range b.Ports {
			info := PortInfo{Bridge: b.Name, Spec: p, Origin: OriginConfig}
			if c := d.cfgPlugins[p.Name]; c != nil {
				d.fillPlugin(&info, c.pp)
			}
			out = append(out, info)
		}
	}
	for _, p := range d.ports {
		if bridge == "" || p.bridge == bridge {
			info := PortInfo{Bridge: p.bridge, Spec: p.spec, Origin: OriginAPI}
			d.fillPlugin(&info, p.plugin)
			out = append(out, info)
		}
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b PortInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	for i := range out {
		d.fillPortStatus(&out[i])
	}
	return out
}

func (d *Daemon) portLocked(name string) (PortInfo, bool) {
	if p, ok := d.ports[name]; ok {
		info := PortInfo{Bridge: p.bridge, Spec: p.spec, Origin: OriginAPI}
		d.fillPlugin(&info, p.plugin)
		return info, true
	}
	for _, b := range d.cfgDesired().Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				info := PortInfo{Bridge: b.Name, Spec: p, Origin: OriginConfig}
				if c := d.cfgPlugins[p.Name]; c != nil {
					d.fillPlugin(&info, c.pp)
				}
				return info, true
			}
		}
	}
	return PortInfo{}, false
}

func (d *Daemon) fillPortStatus(info *PortInfo) {
	info.Status = d.status("port/"+info.Spec.Name, reconcile.KindPort, info.Spec.Name, info.Bridge)
	info.Interfaces = info.Interfaces[:0]
	ifaces := info.Spec.Interfaces
	if info.Shape != nil {
		ifaces = info.Shape.Interfaces
	}
	for _, in := range ifaces {
		info.Interfaces = append(info.Interfaces,
			d.status("interface/"+in.Name, reconcile.KindInterface, in.Name, info.Bridge))
	}
}

// status returns the reconciler's status of key, or a pending one when it has none yet.
func (d *Daemon) status(key string, kind reconcile.Kind, name, bridge string) reconcile.Status {
	if s, ok := d.statusOf(key); ok {
		return s
	}
	return d.pluginStatus(reconcile.Status{Kind: kind, Name: name, Bridge: bridge, State: reconcile.Pending})
}

// statusOf is the reconciler's status of key, with the health of the object's plugin.
func (d *Daemon) statusOf(key string) (reconcile.Status, bool) {
	s, ok := d.rec.StatusOf(key)
	if ok {
		s = d.pluginStatus(s)
	}
	return s, ok
}

// fillPlugin sets the plugin fields of info from pp (nil: not a plugin's port).
func (d *Daemon) fillPlugin(info *PortInfo, pp *pluginPort) {
	if pp == nil {
		return
	}
	shape := pp.Shape
	info.Plugin, info.PluginStatus, info.Endpoints, info.Shape = pp.Plugin, pp.Status, maps.Clone(pp.Endpoints), &shape
}

// cfgDesired returns the configuration's desired state. Callers hold d.mu.
func (d *Daemon) cfgDesired() config.DesiredState { return d.cfgDes }

// cfgPortBridgeLocked returns the configured bridge holding port name, or "".
func (d *Daemon) cfgPortBridgeLocked(name string) string {
	for _, b := range d.cfg.Bridges {
		for _, p := range b.Ports {
			if p.Name == name {
				return b.Name
			}
		}
	}
	return ""
}

// cfgIfaceOwnerLocked returns the configured port that has interface name.
func (d *Daemon) cfgIfaceOwnerLocked(name string) (string, bool) {
	for _, b := range d.cfg.Bridges {
		for _, p := range b.Ports {
			for _, in := range p.Interfaces {
				if in.Name == name {
					return p.Name, true
				}
			}
		}
	}
	return "", false
}

// conflictLocked refuses a bridge name held by the configuration.
func (d *Daemon) conflictLocked(kind, name, _ string) error {
	for _, b := range d.cfg.Bridges {
		if b.Name == name {
			return fmt.Errorf("%w: %s %q comes from the configuration file; change it there and reload", ErrConflict, kind, name)
		}
		for _, p := range b.Ports {
			if p.Name == name {
				return fmt.Errorf("%w: %s %q is the name of a port of the configuration file (bridge %q); pick another name", ErrConflict, kind, name, b.Name)
			}
		}
	}
	if _, isPort := d.ports[name]; isPort {
		return fmt.Errorf("%w: %s %q is the name of a port created through the API; pick another name", ErrConflict, kind, name)
	}
	return nil
}

// portConflictLocked checks that p may be applied on bridge: the bridge is managed, the port
// is not the configuration's, not on another bridge, and its interfaces are not another
// managed port's.
func (d *Daemon) portConflictLocked(bridge string, p config.Port) error {
	_, apiBridge := d.bridges[bridge]
	_, cfgBridge := d.cfgDesired().Bridge(bridge)
	if !apiBridge && !cfgBridge {
		return fmt.Errorf("%w: bridge %q of port %q is not managed by ovsplane; create it first (ApplyBridge or the configuration file)", ErrNotFound, bridge, p.Name)
	}
	if b := d.cfgPortBridgeLocked(p.Name); b != "" {
		return fmt.Errorf("%w: port %q comes from the configuration file (bridge %q); change it there and reload", ErrConflict, p.Name, b)
	}
	_, isCfgBr := d.cfgDes.Bridge(p.Name)
	if _, isBr := d.bridges[p.Name]; isBr || isCfgBr {
		return fmt.Errorf("%w: port %q has the name of a bridge; pick another name", ErrConflict, p.Name)
	}
	if cur, ok := d.ports[p.Name]; ok && cur.bridge != bridge {
		return fmt.Errorf("%w: port %q is on bridge %q; delete it there first to move it to %q", ErrConflict, p.Name, cur.bridge, bridge)
	}
	for _, in := range p.Interfaces {
		if other, ok := d.cfgIfaceOwnerLocked(in.Name); ok {
			return fmt.Errorf("%w: interface %q of port %q belongs to port %q of the configuration file; pick another name", ErrConflict, in.Name, p.Name, other)
		}
		if in.Name != p.Name {
			if op, ok := d.ports[in.Name]; ok {
				return fmt.Errorf("%w: interface %q of port %q is the name of port %q on bridge %q; pick another name", ErrConflict, in.Name, p.Name, in.Name, op.bridge)
			}
		}
	}
	return nil
}

// ---- status ----

// Status returns every managed object's status (see reconcile.Reconciler.Status).
func (d *Daemon) Status() []reconcile.Status {
	st := d.rec.Status()
	infos := d.pluginInfos()
	for i := range st {
		st[i] = d.pluginStatusIn(st[i], infos)
	}
	return st
}

// WaitReady waits until every object named by keys ("port/NAME", "bridge/NAME",
// "interface/NAME") is ready. It fails at once for an unknown key, and as soon as one of them
// is in error (naming it and ovs-vswitchd's message).
func (d *Daemon) WaitReady(ctx context.Context, keys []string) ([]reconcile.Status, error) {
	for {
		watch := d.rec.Watch()
		out := make([]reconcile.Status, 0, len(keys))
		ready := true
		for _, k := range keys {
			s, ok := d.statusOf(k)
			if !ok && d.managed(k) { // applied (or waiting for its plugin), not yet in the reconciler's statuses
				kind, name, _ := strings.Cut(k, "/")
				s, ok = d.pluginStatus(reconcile.Status{Kind: reconcile.Kind(kind), Name: name, State: reconcile.Pending}), true
			}
			if !ok {
				return out, fmt.Errorf("%w: %s is not managed by ovsplane (keys are bridge/NAME, port/NAME or interface/NAME)", ErrNotFound, k)
			}
			out = append(out, s)
			switch s.State {
			case reconcile.Error:
				return out, fmt.Errorf("%w: %s: %s", ErrFailed, k, s.Error)
			case reconcile.Pending:
				ready = false
			}
		}
		if ready {
			return out, nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}

// managed reports whether key names an object the Daemon manages (whatever its status).
func (d *Daemon) managed(key string) bool {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case "bridge":
		_, err := d.Bridge(name)
		return err == nil
	case "port":
		d.mu.Lock()
		defer d.mu.Unlock()
		_, ok := d.portLocked(name)
		return ok
	case "interface":
		for _, p := range d.Ports("") {
			ifaces := p.Spec.Interfaces
			if p.Shape != nil {
				ifaces = p.Shape.Interfaces
			}
			if slices.ContainsFunc(ifaces, func(in config.Interface) bool { return in.Name == name }) {
				return true
			}
		}
	}
	return false
}

// Reload loads the configuration again and makes it the desired state. An invalid
// configuration, one that claims objects created through the API, or one that drops a bridge
// still holding ports created through the API (they would be left on a bridge nobody manages),
// is rejected whole with ErrConflict naming them, and the running one stays.
func (d *Daemon) Reload(ctx context.Context) error {
	if d.opts.Reload == nil {
		return fmt.Errorf("%w: this daemon has no configuration source to reload", ErrInvalid)
	}
	cfg, err := d.opts.Reload(ctx)
	if err != nil {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: %w", ErrInvalid, err)
	}
	d.mu.Lock()
	var clashes []string
	for _, b := range cfg.Bridges {
		if _, ok := d.bridges[b.Name]; ok {
			clashes = append(clashes, fmt.Sprintf("bridge %q", b.Name))
		}
		for _, p := range b.Ports {
			if _, ok := d.ports[p.Name]; ok {
				clashes = append(clashes, fmt.Sprintf("port %q", p.Name))
			}
		}
	}
	next := cfg.Desired()
	held := d.droppedHoldingLocked(next)
	var gone []*cfgPluginPort
	if len(clashes) == 0 && len(held) == 0 {
		d.cfg, d.cfgDes = cfg, next
		gone = d.syncCfgPluginsLocked()
	}
	d.mu.Unlock()
	if len(clashes) > 0 {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: %s created through the API; delete them through the API first or rename them in the file",
			ErrConflict, strings.Join(clashes, ", "))
	}
	if len(held) > 0 {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: the new file drops %s, which still hold ports created through the API; delete those ports through the API first (DeletePort), or keep the bridge in the file",
			ErrConflict, strings.Join(held, ", "))
	}
	d.rec.Update(d.desired())
	d.log.Info("configuration reloaded")
	if len(gone) > 0 { // their rows go first, then their plugins detach them
		if err := d.rec.Reconcile(ctx); err != nil {
			d.log.Warn("reconcile after reload", "error", err)
		}
	}
	if d.opts.Plugins != nil {
		err := d.opts.Plugins.Reload(ctx, cfg.Plugins)
		d.RefreshPluginConfig(ctx)
		d.attachCfgPlugins(ctx, gone)
		d.KickFlows()
		if err != nil {
			return fmt.Errorf("%w: configuration reloaded, but plugins: %w", ErrFailed, err)
		}
	}
	return nil
}

// Health reports the daemon's state.
func (d *Daemon) Health(context.Context) Health {
	h := Health{Version: Version, Mode: d.opts.Mode, OVSDBConnected: d.c.Connected(), Objects: map[reconcile.State]int{}}
	d.mu.Lock()
	h.PluginConflicts = slices.Clone(d.pluginConflicts)
	d.mu.Unlock()
	if h.OVSDBConnected {
		h.OVSDBEndpoint = d.c.Endpoint()
	}
	for st, n := range d.rec.Counts() {
		h.Objects[st] = n
	}
	if err := d.rec.LastError(); err != nil {
		h.LastError = err.Error()
	}
	h.Degraded = d.degraded(h.OVSDBConnected)
	return h
}

// Plugins returns the configured plugins (none without Options.Plugins).
func (d *Daemon) Plugins() []PluginInfo {
	if d.opts.Plugins == nil {
		return nil
	}
	return d.opts.Plugins.Plugins()
}

// ---- helpers ----

func canonicalBridge(b config.Bridge) config.Bridge {
	c := config.Config{Bridges: []config.Bridge{b}}
	return c.Desired().Bridges[0]
}

func canonicalPort(p config.Port) config.Port {
	c := config.Config{Bridges: []config.Bridge{{Name: "x", Ports: []config.Port{p}}}}
	return c.Desired().Bridges[0].Ports[0]
}

// unknownOutcome reports errors after which a commit may or may not have happened.
func unknownOutcome(err error) bool {
	if notSent(err) {
		return false
	}
	return errors.Is(err, ovsdb.ErrTimeout) || errors.Is(err, ovsdb.ErrNotConnected) ||
		errors.Is(err, batch.ErrOutcomeUnknown) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// classify wraps an error of a commit about kind/name with the Daemon's error kinds.
func classify(kind, name string, err error) error {
	switch {
	case disconnected(err): // OVSDB stayed down for the reconnect wait; the error says whether anything may be applied
		return fmt.Errorf("%w: %s %q: %w", ErrUnavailable, kind, name, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if unknownOutcome(err) && errors.Is(err, batch.ErrOutcomeUnknown) {
			return fmt.Errorf("%s %q: request ended while being committed (it may still be applied; check its status): %w", kind, name, err)
		}
		return fmt.Errorf("%s %q: %w", kind, name, err)
	case errors.Is(err, ovsdb.ErrInvalid):
		return fmt.Errorf("%w: %s %q: %w", ErrInvalid, kind, name, err)
	case errors.Is(err, ovsdb.ErrNotOwned), errors.Is(err, ovsdb.ErrConstraintViolation):
		return fmt.Errorf("%w: %s %q: %w", ErrConflict, kind, name, err)
	case errors.Is(err, ovsdb.ErrNotFound):
		return fmt.Errorf("%w: %s %q: %w", ErrNotFound, kind, name, err)
	case errors.Is(err, batch.ErrClosed):
		return fmt.Errorf("%w: %s %q: the daemon is shutting down: %w", ErrUnavailable, kind, name, err)
	case unknownOutcome(err):
		return fmt.Errorf("%w: %s %q: %w", ErrUnavailable, kind, name, err)
	}
	return fmt.Errorf("%s %q: %w", kind, name, err)
}
