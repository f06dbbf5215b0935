package ovsdb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// DefaultOwner is the owner tag written when Config.Owner is empty.
const DefaultOwner = "ovsplane"

// TLSFiles names the PEM files used for ssl: endpoints, as ovs-vsctl's -p/-c/-C options do.
type TLSFiles struct {
	PrivateKey  string // client private key
	Certificate string // client certificate
	CACert      string // CA certificate that signed the server's certificate
}

// Config describes how to reach OVSDB and how this client tags what it creates.
type Config struct {
	// Endpoints in OVSDB connection syntax: "unix:/path", "tcp:host:port", "ssl:host:port".
	// Several endpoints name the members of a clustered database; the client uses the first
	// that answers (and, with LeaderOnly, is the Raft leader). Required.
	Endpoints []string
	// TLS files, required when any endpoint is ssl:.
	TLS *TLSFiles
	// LeaderOnly makes the client connect only to the cluster leader. nil means: true when
	// several endpoints are given, false for a single one.
	LeaderOnly *bool
	// Owner is the value written under the owner key in external_ids of every row created,
	// and the only owner whose rows this client will modify or delete. Default DefaultOwner.
	Owner string
	// Logger receives connection events. Default: slog.Default().
	Logger *slog.Logger
	// ConnectTimeout bounds each connection attempt. Default 5s.
	ConnectTimeout time.Duration
	// MaxBackoff caps the delay between reconnection attempts. Default 5s.
	MaxBackoff time.Duration
	// AttachToForeignBridges lets EnsurePort add owned ports to a bridge this owner did not
	// create (for example br-int made by an operator): the only change made to such a bridge is
	// a mutate insert/delete of the owned port's reference in Bridge.ports. Default false: a
	// foreign bridge is not touched at all.
	AttachToForeignBridges bool
	// MonitorStatistics adds Interface.statistics to the cache (InterfaceState.Statistics).
	// ovs-vswitchd rewrites it for every interface every few seconds, which on a large switch is
	// most of the update traffic, so it is off unless asked for.
	MonitorStatistics bool
	// Observer, if set, receives measurements of transactions and reconnections (metrics).
	Observer Observer
	// InactivityProbe, when non-zero, sends echo requests after this much silence and
	// reconnects when they go unanswered (useful over TCP). Must exceed ConnectTimeout.
	InactivityProbe time.Duration

	// libovsdbCache makes the client read from libovsdb's cache, filled by a monitor on
	// libovsdb's connection, as before the compact replica (docs/design/compact-read-path.md):
	// for the tests that compare the two read paths, until that path is deleted (step 9).
	// By default the client reads from the compact replica (ovsdb/internal/replica), filled by
	// a monitor on a connection of its own, and libovsdb's connection carries only
	// transactions.
	libovsdbCache bool
}

// Observer receives a Client's measurements. Implementations must be fast and must not block.
type Observer interface {
	// Transacted: one transaction of ops operations took d on the wire (err is its transport
	// or result error, nil when committed).
	Transacted(d time.Duration, ops int, err error)
	// Reconnecting: the connection carrying transactions (libovsdb's) was lost, or an attempt
	// to restore it failed, and the client is about to try again.
	Reconnecting()
	// MonitorReconnecting: the replica's monitor connection was lost, or an attempt to restore
	// it failed, and the client is about to try again. The two connections are lost together
	// when ovsdb-server goes away, and apart when only one of them is cut (an unanswered echo on
	// the monitor's, for one).
	MonitorReconnecting()
}

// Client is a cached, reconnecting connection to the Open_vSwitch database, safe for concurrent
// use. It keeps a replica of only the tables and columns it needs (monitoredColumns), in the
// compact form of ovsdb/internal/replica, filled by a monitor on a connection of its own;
// transactions go through libovsdb's client on another (docs/design/compact-read-path.md).
type Client struct {
	lc             client.Client
	bo             *closableBackOff
	owner          string
	endpoints      []string
	connectTimeout time.Duration
	foreignBridges bool
	log            *slog.Logger
	obs            Observer
	link           *link // the connection's outages, for writers with CommitOptions.ReconnectWait
	// store and rl: the compact replica read through rowReader and the monitor connection
	// that fills it; nil with Config.libovsdbCache.
	store *replica.Store
	rl    *replicaLink

	// beforeTransact, when set (tests only), runs between planning and sending a transaction.
	beforeTransact func()

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every cache change
	// handlers receive the compact replica's row events (see subscribe); nil with libovsdb's
	// cache, which calls its own.
	handlers []cache.EventHandler
}

// Dial validates cfg, connects to the first reachable endpoint, and fills the cache before
// returning. After that the client reconnects by itself, with exponential backoff, whenever the
// connection drops; the cache is resynchronised on reconnection. ctx bounds the initial
// connection only. Close releases the connection.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	bo := &closableBackOff{obs: cfg.Observer}
	opts, err := clientOptions(cfg, bo)
	if err != nil {
		return nil, err
	}
	dbModel, err := model.NewClientDBModel(vswitch.Schema().Name, map[string]model.Model{
		vswitch.OpenvSwitchTable: &vswitch.OpenvSwitch{},
		vswitch.BridgeTable:      &vswitch.Bridge{},
		vswitch.PortTable:        &vswitch.Port{},
		vswitch.InterfaceTable:   &vswitch.Interface{},
		vswitch.ControllerTable:  &vswitch.Controller{},
		// Flow export (flowexport.go): small tables, monitored whole.
		vswitch.NetFlowTable:                &vswitch.NetFlow{},
		vswitch.IPFIXTable:                  &vswitch.IPFIX{},
		vswitch.SFlowTable:                  &vswitch.SFlow{},
		vswitch.FlowSampleCollectorSetTable: &vswitch.FlowSampleCollectorSet{},
		// QoS and queues of ports (qos.go): monitored whole.
		vswitch.QoSTable:   &vswitch.QoS{},
		vswitch.QueueTable: &vswitch.Queue{},
		// Mirrors of bridges (mirror.go), without their statistics.
		vswitch.MirrorTable: &vswitch.Mirror{},
	})
	if err != nil {
		return nil, fmt.Errorf("ovsdb: building the client model: %w", err)
	}
	connectTimeout := cfg.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = 5 * time.Second
	}
	lc, err := client.NewOVSDBClient(dbModel, opts...)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: %w", err)
	}
	c := &Client{lc: lc, bo: bo, connectTimeout: connectTimeout, owner: cfg.Owner, endpoints: cfg.Endpoints, foreignBridges: cfg.AttachToForeignBridges, log: cfg.Logger, obs: cfg.Observer,
		changed: make(chan struct{})}
	if c.owner == "" {
		c.owner = DefaultOwner
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.link = newLink(c.Connected, bo.closed.Load)
	bo.onReset = c.link.lost
	if err := lc.Connect(ctx); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotConnected, strings.Join(cfg.Endpoints, ","), err)
	}
	if !cfg.libovsdbCache {
		if err := c.startReplica(ctx, cfg); err != nil {
			lc.Close()
			return nil, err
		}
		c.log.Info("connected to OVSDB", "endpoint", lc.CurrentEndpoint(), "owner", c.owner, "replica", "compact")
		return c, nil
	}
	c.subscribe(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { c.onChange() },
		UpdateFunc: func(string, model.Model, model.Model) { c.onChange() },
		DeleteFunc: func(string, model.Model) { c.onChange() },
	})
	mon := lc.NewMonitor(monitoredColumns(cfg.MonitorStatistics)...)
	if _, err := lc.Monitor(ctx, mon); err != nil {
		lc.Close()
		return nil, fmt.Errorf("ovsdb: monitoring %s: %w", lc.CurrentEndpoint(), err)
	}
	c.log.Info("connected to OVSDB", "endpoint", lc.CurrentEndpoint(), "owner", c.owner)
	return c, nil
}

// monitoredColumns lists, per table, the only columns the cache holds: those the typed
// operations read or write, plus the status columns they report. Everything else that
// ovs-vswitchd keeps rewriting (status maps, statistics, rstp/cfm/lacp state) never crosses the
// wire to this client.
func monitoredColumns(withStats bool) []client.MonitorOption {
	ovs := &vswitch.OpenvSwitch{}
	br := &vswitch.Bridge{}
	port := &vswitch.Port{}
	ifc := &vswitch.Interface{}
	ctl := &vswitch.Controller{}
	mir := &vswitch.Mirror{}
	ifCols := []any{&ifc.Name, &ifc.Type, &ifc.Options, &ifc.OtherConfig, &ifc.ExternalIDs, &ifc.MTURequest,
		&ifc.OfportRequest, &ifc.Ofport, &ifc.Error, &ifc.LinkState, &ifc.AdminState, &ifc.MTU, &ifc.MACInUse,
		&ifc.IngressPolicingRate, &ifc.IngressPolicingBurst, &ifc.IngressPolicingKpktsRate, &ifc.IngressPolicingKpktsBurst}
	if withStats {
		ifCols = append(ifCols, &ifc.Statistics)
	}
	return []client.MonitorOption{
		client.WithTable(ovs, &ovs.Bridges, &ovs.CurCfg, &ovs.NextCfg, &ovs.OtherConfig, &ovs.ExternalIDs,
			&ovs.OVSVersion, &ovs.DpdkVersion, &ovs.DpdkInitialized, &ovs.IfaceTypes, &ovs.DatapathTypes),
		client.WithTable(br, &br.Name, &br.DatapathType, &br.DatapathID, &br.FailMode, &br.Protocols, &br.OtherConfig,
			&br.ExternalIDs, &br.Ports, &br.Controller, &br.Netflow, &br.IPFIX, &br.Sflow, &br.Mirrors),
		// Controllers: what the typed operations read, and whether ovs-vswitchd is connected
		// (not Controller.status, which it rewrites as the connection's state changes).
		client.WithTable(ctl, &ctl.Target, &ctl.ExternalIDs, &ctl.IsConnected),
		client.WithTable(port, &port.Name, &port.Interfaces, &port.Tag, &port.Trunks, &port.VLANMode,
			&port.BondMode, &port.LACP, &port.OtherConfig, &port.ExternalIDs, &port.QOS, &port.BondUpdelay, &port.BondDowndelay),
		client.WithTable(ifc, ifCols...),
		client.WithTable(&vswitch.NetFlow{}),
		client.WithTable(&vswitch.IPFIX{}),
		client.WithTable(&vswitch.SFlow{}),
		client.WithTable(&vswitch.FlowSampleCollectorSet{}),
		client.WithTable(&vswitch.QoS{}),
		client.WithTable(&vswitch.Queue{}),
		client.WithTable(mir, &mir.Name, &mir.SelectAll, &mir.SelectSrcPort, &mir.SelectDstPort, &mir.SelectVLAN,
			&mir.OutputPort, &mir.OutputVLAN, &mir.Snaplen, &mir.ExternalIDs),
	}
}

// closableBackOff is libovsdb's reconnection backoff. libovsdb panics if a backoff gives up, and
// its Close is ignored while it is between connections, so after Close this backoff just waits
// very long instead of stopping.
type closableBackOff struct {
	backoff.BackOff
	closed atomic.Bool
	obs    Observer // told of every reconnection attempt
	// onReset, set before connecting, is called when libovsdb starts a reconnection (it resets
	// the backoff first): the connection was just lost.
	onReset func()
}

// Reset implements backoff.BackOff. libovsdb's backoff.Retry calls it once before its first
// attempt to reconnect, and NextBackOff after every failed attempt: between them, the Observer
// hears of every attempt, the first included (one that succeeds at once was not counted before).
func (b *closableBackOff) Reset() {
	b.BackOff.Reset()
	if b.obs != nil && !b.closed.Load() {
		b.obs.Reconnecting()
	}
	if b.onReset != nil {
		b.onReset()
	}
}

// NextBackOff implements backoff.BackOff: the delay before the next attempt, which it counts.
func (b *closableBackOff) NextBackOff() time.Duration {
	if b.closed.Load() {
		return 24 * time.Hour
	}
	if b.obs != nil {
		b.obs.Reconnecting()
	}
	return b.BackOff.NextBackOff()
}

func clientOptions(cfg Config, bo *closableBackOff) ([]client.Option, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no OVSDB endpoint given; set one such as unix:/var/run/openvswitch/db.sock", ErrInvalid)
	}
	var opts []client.Option
	needTLS := false
	for _, ep := range cfg.Endpoints {
		scheme, rest, ok := strings.Cut(ep, ":")
		switch {
		case !ok || rest == "":
			return nil, fmt.Errorf("%w: endpoint %q: expected unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", ErrInvalid, ep)
		case scheme == "ssl":
			needTLS = true
		case scheme != "unix" && scheme != "tcp":
			return nil, fmt.Errorf("%w: endpoint %q: unsupported scheme %q (use unix:, tcp: or ssl:)", ErrInvalid, ep, scheme)
		}
		opts = append(opts, client.WithEndpoint(ep))
	}
	if needTLS {
		tc, err := loadTLS(cfg.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLSConfig(tc))
	}
	leaderOnly := len(cfg.Endpoints) > 1
	if cfg.LeaderOnly != nil {
		leaderOnly = *cfg.LeaderOnly
	}
	opts = append(opts, client.WithLeaderOnly(leaderOnly))
	connTimeout, maxBackoff := cfg.ConnectTimeout, cfg.MaxBackoff
	if connTimeout <= 0 {
		connTimeout = 5 * time.Second
	}
	if maxBackoff <= 0 {
		maxBackoff = 5 * time.Second
	}
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = 50 * time.Millisecond
	exp.MaxInterval = maxBackoff
	exp.MaxElapsedTime = 0 // never give up (libovsdb panics when a backoff does); see Close
	bo.BackOff = exp
	if cfg.InactivityProbe > 0 {
		if cfg.InactivityProbe <= connTimeout {
			return nil, fmt.Errorf("%w: inactivity probe %s must exceed connect timeout %s", ErrInvalid, cfg.InactivityProbe, connTimeout)
		}
		opts = append(opts, client.WithInactivityCheck(cfg.InactivityProbe, connTimeout, bo))
	} else {
		opts = append(opts, client.WithReconnect(connTimeout, bo))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	lr := logr.FromSlogHandler(capLevel{h: logger.With("component", "libovsdb").Handler(), max: slog.LevelWarn})
	opts = append(opts, client.WithLogger(&lr))
	return opts, nil
}

func loadTLS(files *TLSFiles) (*tls.Config, error) {
	if files == nil || files.PrivateKey == "" || files.Certificate == "" || files.CACert == "" {
		return nil, fmt.Errorf("%w: ssl: endpoints need TLS private key, certificate and CA certificate files", ErrInvalid)
	}
	cert, err := tls.LoadX509KeyPair(files.Certificate, files.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: loading TLS key pair %s / %s: %w", files.Certificate, files.PrivateKey, err)
	}
	pem, err := os.ReadFile(files.CACert)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: reading CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: CA certificate %s holds no PEM certificate", ErrInvalid, files.CACert)
	}
	// OVS PKI certificates carry no host names, so verify the chain ourselves, as OVS does.
	return &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, //nolint:gosec // chain verified in VerifyPeerCertificate
		MinVersion:         tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, pool)
		},
	}, nil
}

func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("ovsdb: server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("ovsdb: parsing server certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

// Close disconnects and stops reconnecting. The client must not be used afterwards. If it is
// between connections, a connection attempt already under way may still succeed; Close watches
// for that for one connect timeout and closes it too.
func (c *Client) Close() {
	c.bo.closed.Store(true)
	if c.rl != nil {
		c.rl.Close()
	}
	wasConnected := c.lcConnected()
	c.lc.Close()
	if wasConnected {
		return
	}
	go func() {
		deadline := time.Now().Add(c.connectTimeout + time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			if c.lcConnected() {
				c.lc.Close()
				return
			}
		}
	}()
}

// Owner returns the owner tag this client writes and honours.
func (c *Client) Owner() string { return c.owner }

// Connected reports whether the client currently has a live connection. (libovsdb keeps its own
// "connected" flag set while it reconnects; the RPC client it drops on disconnection is the
// reliable signal, and CurrentEndpoint reports it.)
// With the compact replica, its monitor connection must be up too: writers then plan from
// rows as current as libovsdb's cache would hold.
func (c *Client) Connected() bool {
	return c.lcConnected() && (c.rl == nil || c.rl.Connected())
}

// lcConnected reports whether libovsdb's connection is up.
func (c *Client) lcConnected() bool { return c.lc.Connected() && c.lc.CurrentEndpoint() != "" }

// startReplica creates the compact replica and its monitor connection, which
// wakes the client's waiters at every applied message and reports its outages to the link.
func (c *Client) startReplica(ctx context.Context, cfg Config) error {
	store, err := replica.NewStore(replica.Options{Statistics: cfg.MonitorStatistics})
	if err != nil {
		return fmt.Errorf("ovsdb: %w", err)
	}
	var tc *tls.Config
	for _, ep := range cfg.Endpoints {
		if strings.HasPrefix(ep, "ssl:") {
			if tc, err = loadTLS(cfg.TLS); err != nil {
				return err
			}
			break
		}
	}
	c.store = store
	c.rl, err = startReplicaLink(ctx, replicaLinkOptions{
		Store: store, Endpoints: cfg.Endpoints, Prefer: c.lc.CurrentEndpoint, TLS: tc,
		ConnectTimeout: c.connectTimeout, MaxBackoff: cfg.MaxBackoff, Probe: cfg.InactivityProbe, Logger: c.log,
		OnCommit: c.replicaCommitted,
		OnRetry: func() {
			if c.obs != nil {
				c.obs.MonitorReconnecting()
			}
		},
		OnState: func(up bool) {
			if !up {
				c.link.lost()
			}
		},
	})
	if err != nil {
		c.store = nil
		return fmt.Errorf("ovsdb: monitoring %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return nil
}

// Endpoint returns the endpoint currently in use, or "" when disconnected.
func (c *Client) Endpoint() string { return c.lc.CurrentEndpoint() }

// onChange wakes everything waiting on the cache. Events only wake waiters; they always re-read
// the cache itself (libovsdb drops events when its queue is full).
func (c *Client) onChange() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.changed)
	c.changed = make(chan struct{})
}

// cachedRoot returns the cached Open_vSwitch row without copying it (read only), or nil.
func (c *Client) cachedRoot() *vswitch.OpenvSwitch {
	r, ok := c.read()
	if !ok {
		return nil
	}
	return r.root()
}

// changes returns a channel closed at the next cache change.
func (c *Client) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Changes returns a channel that is closed at the next change of any cached row. Callers that
// want to follow the database call it again after each close. It never blocks.
func (c *Client) Changes() <-chan struct{} { return c.changes() }

// root returns a copy of the cached Open_vSwitch row (its maps and sets shared with the cache:
// read only), or an error telling how to create it. It reads the cache as it is, like every
// other read of the planner: libovsdb's List would wait for the cache to be consistent, which
// it is not while the connection is down, so a reconcile pass or a commit planning during an
// outage would hang there instead of failing after CommitOptions.ReconnectWait.
func (c *Client) root(context.Context) (*vswitch.OpenvSwitch, error) {
	r := c.cachedRoot()
	if r == nil {
		return nil, fmt.Errorf("%w: the Open_vSwitch table has no row; initialise the database (`ovs-vsctl init` or Client.Init)", ErrNotFound)
	}
	cp := *r
	return &cp, nil
}

// Init creates the Open_vSwitch row if the database has none, as `ovs-vsctl init` does, and
// waits until the cache shows it. It is idempotent and never touches an existing row.
func (c *Client) Init(ctx context.Context) error {
	if err := c.waitConnected(ctx); err != nil {
		return err
	}
	if _, err := c.root(ctx); err == nil {
		return nil
	}
	ops, err := c.lc.Create(&vswitch.OpenvSwitch{UUID: "root"})
	if err != nil {
		return fmt.Errorf("ovsdb: init: %w", err)
	}
	// The schema allows one Open_vSwitch row (maxRows 1): if another initialiser won the race,
	// ovsdb-server rejects this insert with a constraint violation, which means done.
	results, err := c.lc.Transact(ctx, ops...)
	if err != nil {
		return fmt.Errorf("ovsdb: init: %w", translateTransportErr(err))
	}
	if err := translateResults(results, ops, []objRef{{table: vswitch.OpenvSwitchTable, name: "."}}); err != nil &&
		!errors.Is(err, ErrConstraintViolation) {
		return fmt.Errorf("ovsdb: init: %w", err)
	}
	for {
		ch := c.changes()
		if _, err := c.root(ctx); err == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("ovsdb: init: waiting for the Open_vSwitch row: %w", ctx.Err())
		}
	}
}

// waitConnected returns nil once the client is connected, or an error matching ErrNotConnected
// (naming the endpoints) when ctx ends first.
func (c *Client) waitConnected(ctx context.Context) error {
	if c.Connected() {
		return nil
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !c.Connected() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%w to %s (reconnecting): %w", ErrNotConnected, strings.Join(c.endpoints, ","), ctx.Err())
		}
	}
	return nil
}
