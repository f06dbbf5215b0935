package vswitchd

import (
	"context"
	"fmt"

	"log/slog"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/jobs"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// Keys the daemon adds to the external_ids of the bridges and ports created through the API
// (besides ovsdb.OwnerKey and ovsdb.GenerationKey).
const (
	// OriginKey is "api" on rows created through the API; rows of the configuration file do
	// not carry it.
	OriginKey = ovsdb.TagPrefix + "origin"
	// SpecKey holds the JSON of the object's spec as the API received it (model.Bridge
	// without ports, or model.Port), so that a restarted daemon rebuilds its API objects
	// from OVSDB alone and repairs drift from the spec, not from the drifted row.
	SpecKey = ovsdb.TagPrefix + "spec"
)

// DefaultBatchMaxSize is Options.BatchMaxSize when it is 0: the most port requests in one
// OVSDB transaction.
const DefaultBatchMaxSize = 512

// Client is what the Daemon needs from *ovsdb.Client.
type Client interface {
	reconcile.Client
	writer.DB
	// Tags returns the ovsdb.TagPrefix keys of an owned row (ok false when absent or foreign).
	Tags(table, name string) (ovsdb.Tags, bool)
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
	Mode model.Mode
	// Commit is passed to every OVSDB commit (the reconciler's and the batches'). Its
	// ReconnectWait, DefaultReconnectWait when 0 (negative: no bound), bounds how long write
	// requests wait for a lost OVSDB connection (see awaitOVSDB).
	Commit ovsdb.CommitOptions
	// Batch tunes the batcher of ApplyPort/DeletePort. Defaults: MaxSize DefaultBatchMaxSize,
	// MaxDelay 20ms, BatchDepth writer.DefaultBatchDepth (batches in flight: a full batch is
	// committed while the previous one is applied by ovs-vswitchd; see
	// writer.Options.BatchDepth), lingering with cohorts (see batch.Options.Cohort): a batch
	// goes as soon as as many requests wait as the largest of the last few batches had, else
	// after MaxDelay. Without lingering, the first client answered after a batch would find
	// nothing in flight and go alone, and N clients in lock step would make batches far smaller
	// than N (more ovs-vswitchd reconfigurations); without cohorts every batch would wait the
	// full delay. A plugin port is announced to the batcher before its plugin's Validate and
	// Attach, and a batch ready to go waits for announced ports up to 5 × MaxDelay (see
	// batch.Options.AnnouncedDelay), so plugin ports join their cohort's transaction.
	BatchMaxSize  int
	BatchMaxDelay time.Duration
	BatchDepth    int
	// Reload loads the configuration again (file, environment, flags) for Reload and SIGHUP.
	// nil: Reload fails.
	Reload func(ctx context.Context) (*config.Config, error)
	// Reconcile tunes the reconciler (Logger, Commit, Extra, Unheld, Writer and OnChange are
	// set by the Daemon; an OnChange given here is called too).
	Reconcile reconcile.Options
	// Observer receives measurements (metrics); nil: none.
	Observer Observer
	// SwitchProbe, if set, is polled by Run every ProbeInterval (default 1s) to learn
	// whether ovs-vswitchd runs (see OVSVswitchdLockProbe); while it does not, interfaces
	// report an error.
	SwitchProbe   SwitchProbe
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
	// RefreshFacts, if set, is called by Run when SwitchProbe sees ovs-vswitchd running again
	// and every 10 s while it is not known to be down, so that plugins get the facts of the
	// running ovs-vswitchd (plugins/host.Host.RefreshFacts); after it configured plugins
	// again, their global config and flows are refreshed.
	RefreshFacts FactsRefresher
	// DataPaths runs the plugins' data-path jobs (plugins/host.Host); nil: no jobs run.
	DataPaths jobs.DataPaths
	// WatchedStatuses, if set, returns the watcher plugins' interface statuses
	// (vswitchd/watch.Dispatcher.Statuses, which the caller runs): what WatchedStatuses and the
	// API's ListStatus report. Nil: none.
	WatchedStatuses func() []model.WatchedStatus
	// JobStatsInterval is the sampling interval asked of the jobs' stats streams (default 1s).
	JobStatsInterval time.Duration
}

// Plugins is what the Daemon needs from the plugin host (plugins/host.Host through an
// adapter).
type Plugins interface {
	// PortProvider returns the port provider of a port type and the name of the plugin that
	// provides it; ok is false when no configured plugin provides the type (whatever its
	// state: calls to a plugin that is not running fail with api.CodeUnavailable).
	PortProvider(portType string) (p api.PortProvider, plugin string, ok bool)
	// Plugins returns every configured plugin, in configuration order.
	Plugins() []model.PluginInfo
	// Reload makes the running plugins match a reloaded configuration's list.
	Reload(ctx context.Context, plugins []model.Plugin) error
	// GlobalConfig returns the plugins' merged contribution to Open_vSwitch.other_config
	// given the daemon's own keys (which win), the conflicts (keys on which plugins, or a
	// plugin and the daemon, disagree, which no plugin gets) and the plugins whose
	// contribution is unknown because they never started. A plugin that cannot answer now
	// contributes what it last answered.
	GlobalConfig(ctx context.Context, daemon map[string]string) PluginGlobals
	// Flows asks every plugin with the flow-program capability for its flows and groups on a
	// bridge (see api.PluginFlows).
	Flows(ctx context.Context, bridge api.BridgeFacts) []api.PluginFlows
	// Cookies is the cookie space of all plugins' flows: flows in it whose plugin is not
	// configured any more are pruned.
	Cookies() api.CookieRange
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
	Statuses(counts map[model.State]int)
}

// Daemon owns the desired state (the configuration's objects plus those created through the
// API) and keeps OVSDB converged to it. API calls that change ports are coalesced by a batcher
// into one OVSDB transaction and one ovs-vswitchd acknowledgement per batch; everything else
// goes through the reconciler. All of them write through one writer.Writer, which serialises
// the batches, the API's bridge changes and the reconciler's passes, so none of them sees the
// others half done.
//
// API objects live in OVSDB: their rows carry OriginKey and SpecKey. New reads them back, so a
// restarted daemon has them all again; a commit whose outcome was unknown (lost connection,
// timeout) is settled by reading OVSDB, never assumed.
type Daemon struct {
	c    Client
	log  *slog.Logger
	opts Options
	rec  *reconcile.Reconciler
	w    *writer.Writer // the one writer of OVSDB

	store *objectStore // the API's and the configuration's objects
	att   *attacher    // the ports of plugin types, both origins

	live    *switchLiveness // nil without Options.SwitchProbe
	hub     *statusHub
	globals pluginGlobals
	flows   *flowSyncer
	facts   *factsLoop    // nil without Options.RefreshFacts
	jobs    *jobs.Manager // nil without Options.DataPaths
}

// New returns a Daemon for cfg on c, whose cache must be synchronised (ovsdb.Dial does that):
// it reads the API objects back from OVSDB. The batcher starts at once; call Run to reconcile
// and Close to stop.
func New(ctx context.Context, c Client, cfg *config.Config, opts Options) (*Daemon, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BatchMaxSize <= 0 {
		opts.BatchMaxSize = DefaultBatchMaxSize
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
	d := &Daemon{c: c, log: opts.Logger, opts: opts, att: newAttacher(opts.Plugins, opts.Logger)}
	d.store = newObjectStore(opts.Logger, c.Tags, d.att, cfg)
	d.flows = newFlowSyncer(opts.Plugins, opts.OpenFlow, opts.Logger, d.Bridges, d.Ports)
	owned := c.Owned()
	d.store.adopt(owned)
	d.att.syncConfig(d.store.configDesired())
	d.att.adoptConfig(owned)
	d.jobs = d.newJobs(cfg.Plugins)
	d.hub = newStatusHub(opts.Logger, opts.Observer, d.att.overlay, d.managed)
	d.hub.unattached, d.att.lookup = d.att.configUnattached, c.Interface // issue 14: status of unattached config ports; shapes naming foreign rows
	if opts.Plugins != nil {
		if own, err := c.OwnedGlobal(ctx); err == nil {
			d.globals.seed(own, d.store.configDesired().OtherConfig)
		}
	}

	w, err := writer.New(ctx, c, writer.Options{Logger: opts.Logger, Commit: opts.Commit,
		Generation: func() int64 { return d.rec.Generation() }, BatchMaxSize: opts.BatchMaxSize,
		BatchMaxDelay: opts.BatchMaxDelay, BatchDepth: opts.BatchDepth, OnBatch: d.batchCommitted, Settle: d.store.settle})
	if err != nil {
		return nil, fmt.Errorf("vswitchd: %w", err)
	}
	d.w = w

	ro := opts.Reconcile
	ro.Logger, ro.Commit = opts.Logger, opts.Commit
	ro.Extra = d.store.extra
	ro.Unheld = d.store.unheld
	ro.Writer = w
	userChange := ro.OnChange
	ro.OnChange = func(changed []model.Status) {
		d.hub.publish(changed)
		d.KickFlows()
		d.kickJobs()
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
	d.hub.rec = d.rec
	if opts.SwitchProbe != nil {
		every := opts.ProbeInterval
		if every <= 0 {
			every = time.Second
		}
		d.live = &switchLiveness{probe: opts.SwitchProbe, every: every, log: opts.Logger, setDown: d.rec.SetDown}
	}
	if opts.RefreshFacts != nil {
		d.facts = newFactsLoop(opts.RefreshFacts, opts.Logger, d.switchDown, func(ctx context.Context) {
			d.RefreshPluginConfig(ctx)
			d.KickFlows()
		})
		if d.live != nil {
			d.live.onUp = d.facts.Kick
		}
	}
	return d, nil
}

// Run reconciles until ctx ends (see reconcile.Reconciler.Run) and returns ctx's error. With
// Options.SwitchProbe it also watches ovs-vswitchd.
func (d *Daemon) Run(ctx context.Context) error {
	if d.live != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); d.live.run(ctx) }()
	}
	if d.facts != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); d.facts.run(ctx) }()
	}
	if d.opts.OpenFlow != nil && d.opts.Plugins != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); d.flows.run(ctx) }()
	}
	if d.jobs != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { defer close(done); _ = d.jobs.Run(ctx) }()
	}
	return d.rec.Run(ctx)
}

// Reconcile runs one reconcile pass now (for --once and tests).
func (d *Daemon) Reconcile(ctx context.Context) error { return d.rec.Reconcile(ctx) }

// Close stops accepting API changes, lets the batches in flight finish (or ctx end) and ends
// the subscriptions.
func (d *Daemon) Close(ctx context.Context) error {
	err := d.w.Close(ctx)
	d.hub.close()
	return err
}

// Plugins returns the configured plugins (none without Options.Plugins).
func (d *Daemon) Plugins() []model.PluginInfo {
	if d.opts.Plugins == nil {
		return nil
	}
	return d.opts.Plugins.Plugins()
}

// KickFlows asks for a sync of the plugins' flows (after a change of ports, ofports or
// plugins). It never blocks.
func (d *Daemon) KickFlows() { d.flows.Kick() }

// Pipeline returns a snapshot of the port batches in flight (committed and waiting for
// ovs-vswitchd) and of the apply-time model that sizes them.
func (d *Daemon) Pipeline() writer.PipelineStats { return d.w.Pipeline() }

// batchCommitted is the writer's Options.OnBatch: it reports the batch to the Observer.
func (d *Daemon) batchCommitted(size int, committed, applied time.Duration, err error) {
	if d.opts.Observer != nil {
		d.opts.Observer.BatchCommitted(size, committed, applied, err)
	}
}
