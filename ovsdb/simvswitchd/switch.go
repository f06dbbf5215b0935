package simvswitchd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// DefaultDPDKVersion is the Open_vSwitch.dpdk_version the simulator reports:
// the DPDK release OVS 3.1.0 is built against.
const DefaultDPDKVersion = "DPDK 22.11.1"

// DefaultIfaceTypes returns a new copy of the interface types ovs-vswitchd
// 3.1.0 built with DPDK reports in Open_vSwitch.iface_types.
func DefaultIfaceTypes() []string {
	return []string{
		"bareudp", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient", "erspan", "geneve",
		"gre", "gtpu", "internal", "ip6erspan", "ip6gre", "lisp", "patch", "srv6",
		"stt", "system", "tap", "vxlan",
	}
}

// DefaultDatapathTypes returns a new copy of the datapath types ovs-vswitchd
// built with DPDK reports in Open_vSwitch.datapath_types.
func DefaultDatapathTypes() []string { return []string{"netdev", "system"} }

// reconnectTimeout bounds one reconnection attempt (connect and monitor).
const reconnectTimeout = 30 * time.Second

// Config describes a simulated ovs-vswitchd. Only Endpoint is
// required.
type Config struct {
	// Endpoint is the OVSDB endpoint to connect to, e.g. the Endpoint() of an
	// ovsdb/embedded or ovsdbtest server.
	Endpoint string
	// Logger receives the simulator's logs. Nil discards them.
	Logger *slog.Logger
	// Devargs decides which options:dpdk-devargs values attach. Nil means
	// DefaultDevargsPolicy().
	Devargs *DevargsPolicy
	// SystemDevice reports whether a kernel network device exists, for
	// interfaces of type "" or "system". Nil means every device exists.
	SystemDevice func(name string) bool
	// VhostConnected reports whether a guest is connected to a vhost-user
	// interface (types dpdkvhostuser and dpdkvhostuserclient); their
	// link_state is "down" otherwise. Nil means no guest is ever connected.
	VhostConnected func(name string) bool
	// RequireDPDKInit makes DPDK interface types fail to open, as in real
	// OVS, until Open_vSwitch.other_config:dpdk-init is "true" or "try".
	RequireDPDKInit bool
	// DPDKVersion is written to Open_vSwitch.dpdk_version. Empty means
	// DefaultDPDKVersion.
	DPDKVersion string
	// OnReconfigure, if set, is called from the simulator's goroutine after
	// every committed reconfiguration. It must not block for long and must
	// not call Switch.Close.
	OnReconfigure func(Reconfiguration)
	// RetryInterval is the pause between reconnection attempts and after a
	// failed reconfiguration. Zero means 20ms.
	RetryInterval time.Duration
}

// Option changes a Config; ovsdbtest.StartOVSVswitchd applies them in order.
type Option func(*Config)

// WithDevargs sets the accepted dpdk-devargs.
func WithDevargs(p DevargsPolicy) Option {
	return func(c *Config) { c.Devargs = &p }
}

// WithSystemDevice sets the function deciding which kernel devices exist.
func WithSystemDevice(exists func(name string) bool) Option {
	return func(c *Config) { c.SystemDevice = exists }
}

// WithVhostConnected sets the function deciding which vhost-user interfaces
// have a guest connected.
func WithVhostConnected(connected func(name string) bool) Option {
	return func(c *Config) { c.VhostConnected = connected }
}

// WithRequireDPDKInit makes DPDK types unusable until dpdk-init is set.
func WithRequireDPDKInit() Option {
	return func(c *Config) { c.RequireDPDKInit = true }
}

// WithOnReconfigure sets the hook called after every reconfiguration.
func WithOnReconfigure(f func(Reconfiguration)) Option {
	return func(c *Config) { c.OnReconfigure = f }
}

// WithLogger sends the simulator's logs to l.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) { c.Logger = l }
}

// Reconfiguration describes one committed reconfiguration transaction.
type Reconfiguration struct {
	// Seq numbers reconfigurations from 1, as counted by Reconfigurations.
	Seq int
	// NextCfg is the Open_vSwitch.next_cfg the transaction was computed from.
	NextCfg int
	// Acked tells whether the transaction set cur_cfg to NextCfg.
	Acked bool
	// Changed lists the names of the interfaces whose row was written.
	Changed []string
	// Errors maps the name of every failed interface to its Interface.error.
	Errors map[string]string
}

// Switch simulates ovs-vswitchd against an OVSDB server: it watches
// Open_vSwitch, Bridge, Port and Interface and, after every change, writes
// what the real bridge reconfiguration would (ofport, error, link and admin
// state, mtu, mac_in_use, statistics, dpdk_initialized) and acknowledges
// next_cfg in cur_cfg, all in one transaction. It reconnects after the
// server restarts. Methods are safe for concurrent use.
type Switch struct {
	cfg     Config
	log     *slog.Logger
	devargs DevargsPolicy
	dbModel model.ClientDBModel

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// pass is held for a whole reconfiguration pass, so that Pause and
	// PauseAck take effect for everything committed after they return.
	pass sync.Mutex

	mu        sync.Mutex
	paused    bool
	ackPaused bool
	seq       int

	// allocated is the last automatically allocated ofport per bridge name;
	// only the run goroutine touches it.
	allocated map[string]int
}

// New connects to cfg.Endpoint and starts simulating. ctx bounds the
// first connection only; the simulator runs until Close. It returns an
// error if the first connection fails.
func New(ctx context.Context, cfg Config) (*Switch, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("simvswitchd: no endpoint")
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 20 * time.Millisecond
	}
	if cfg.DPDKVersion == "" {
		cfg.DPDKVersion = DefaultDPDKVersion
	}
	dbModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("simvswitchd: vswitch model: %w", err)
	}
	v := &Switch{
		cfg:       cfg,
		log:       cfg.Logger,
		devargs:   DefaultDevargsPolicy(),
		dbModel:   dbModel,
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		allocated: map[string]int{},
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Devargs != nil {
		v.devargs = *cfg.Devargs
	}
	c, err := v.connect(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	v.cancel = cancel
	go v.run(runCtx, c)
	return v, nil
}

// Close stops the simulator and closes its connection. It waits for an
// OnReconfigure call in progress and is idempotent.
func (v *Switch) Close() {
	v.cancel()
	<-v.done
}

// Pause stops all reconfiguration, as if ovs-vswitchd hung. A pass in
// progress finishes first; nothing is written after Pause returns. Changes
// made meanwhile are applied after Resume. Do not call it from OnReconfigure.
func (v *Switch) Pause() { v.setPaused(&v.paused, true) }

// Resume undoes Pause.
func (v *Switch) Resume() { v.setPaused(&v.paused, false) }

// PauseAck keeps reconfiguring but stops acknowledging: cur_cfg stays where
// it is after PauseAck returns, so clients waiting for next_cfg time out.
// Do not call it from OnReconfigure.
func (v *Switch) PauseAck() { v.setPaused(&v.ackPaused, true) }

// ResumeAck undoes PauseAck; the pending next_cfg is acknowledged promptly.
func (v *Switch) ResumeAck() { v.setPaused(&v.ackPaused, false) }

func (v *Switch) setPaused(flag *bool, on bool) {
	v.pass.Lock()
	v.mu.Lock()
	*flag = on
	v.mu.Unlock()
	v.pass.Unlock()
	v.Kick()
}

// Kick schedules a reconfiguration pass even if nothing changed.
func (v *Switch) Kick() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// Reconfigurations returns how many reconfiguration transactions the
// simulator has committed so far.
func (v *Switch) Reconfigurations() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seq
}

// connect opens a client monitoring the tables ovs-vswitchd reacts to; every
// change to them schedules a reconfiguration.
func (v *Switch) connect(ctx context.Context) (client.Client, error) {
	c, err := client.NewOVSDBClient(v.dbModel, client.WithEndpoint(v.cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("simvswitchd: new client for %s: %w", v.cfg.Endpoint, err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("simvswitchd: connect to %s: %w", v.cfg.Endpoint, err)
	}
	kick := func(string, model.Model) { v.Kick() }
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    kick,
		DeleteFunc: kick,
		UpdateFunc: func(table string, _, m model.Model) { kick(table, m) },
	})
	mon := c.NewMonitor(
		client.WithTable(&vswitch.OpenvSwitch{}),
		client.WithTable(&vswitch.Bridge{}),
		client.WithTable(&vswitch.Port{}),
		client.WithTable(&vswitch.Interface{}),
	)
	if _, err := c.Monitor(ctx, mon); err != nil {
		c.Close()
		return nil, fmt.Errorf("simvswitchd: monitor %s: %w", v.cfg.Endpoint, err)
	}
	return c, nil
}

// run serves one connection after another until ctx is cancelled.
func (v *Switch) run(ctx context.Context, c client.Client) {
	defer close(v.done)
	for c != nil {
		v.serve(ctx, c)
		c.Close()
		c = v.reconnect(ctx)
	}
}

// reconnect retries connecting until it succeeds or ctx is cancelled (nil).
func (v *Switch) reconnect(ctx context.Context) client.Client {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(v.cfg.RetryInterval):
		}
		// Not cancelled by Close: libovsdb v0.8.1 races (its reply decoding against Monitor
		// reading the reply) when a monitor call's context is cancelled mid-call. With the
		// server gone the attempt fails fast anyway.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconnectTimeout)
		c, err := v.connect(cctx)
		cancel()
		if err == nil {
			v.log.Info("vswitchd reconnected", "endpoint", v.cfg.Endpoint)
			return c
		}
		v.log.Debug("vswitchd reconnect failed", "error", err)
	}
}

// serve reconfigures after every change until the connection drops or ctx
// is cancelled.
func (v *Switch) serve(ctx context.Context, c client.Client) {
	v.Kick()
	check := time.NewTicker(100 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.DisconnectNotify():
			return
		case <-check.C:
			if !alive(c) {
				return
			}
		case <-v.kick:
			v.pass.Lock()
			r, err := v.reconfigure(ctx, c)
			v.pass.Unlock()
			if r != nil && v.cfg.OnReconfigure != nil {
				v.cfg.OnReconfigure(*r)
			}
			if err != nil {
				if errors.Is(err, client.ErrNotConnected) || !alive(c) || ctx.Err() != nil {
					return
				}
				v.log.Warn("vswitchd reconfiguration failed", "error", err)
				time.AfterFunc(v.cfg.RetryInterval, v.Kick)
			}
		}
	}
}

// alive reports whether c still has a connection. libovsdb only delivers
// DisconnectNotify to a listener waiting at that moment, and after the
// server drops a client without WithReconnect, Connected keeps returning
// true; CurrentEndpoint turns empty once the connection is gone.
func alive(c client.Client) bool {
	return c.Connected() && c.CurrentEndpoint() != ""
}
