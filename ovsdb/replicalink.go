package ovsdb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/internal/jsonrpc"
	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// replicaMonitorID names the replica link's monitor on its connection.
const replicaMonitorID = "ovsplane-replica"

// replicaLinkOptions configure a replicaLink.
type replicaLinkOptions struct {
	// Store is the replica to fill. Required.
	Store *replica.Store
	// Endpoints in OVSDB connection syntax, tried in order after Prefer. Required.
	Endpoints []string
	// Prefer, if set, returns the endpoint to try first (the client's write connection's, so
	// that reads and writes go to the same server while it answers); "" for none.
	Prefer func() string
	// TLS is used for ssl: endpoints.
	TLS *tls.Config
	// ConnectTimeout bounds each dial; MonitorTimeout the monitor_cond request and its reply,
	// which carries the whole monitored database.
	ConnectTimeout, MonitorTimeout time.Duration
	// Probe, when positive, sends an echo request on the connection this often; one left
	// unanswered for ConnectTimeout ends the connection, and the link reconnects (a peer gone
	// without closing, over TCP). Config.InactivityProbe.
	Probe time.Duration
	// MinBackoff and MaxBackoff bound the delay between attempts after a lost connection
	// (doubling, with jitter).
	MinBackoff, MaxBackoff time.Duration
	// OnCommit is called, on the connection's read goroutine, after every message the replica
	// applied: the monitor's reply (initial: a new generation) and each update2, whose changed
	// rows p.EachChange gives. It must be quick and must not wait for the link.
	OnCommit func(initial bool, p *replica.Pending)
	// OnRetry, if set, is called before every attempt to connect again after the connection was
	// lost (not before the first connection); it must be quick.
	OnRetry func()
	// OnState is called when the link goes up (its monitor's reply applied) or down.
	OnState func(up bool)
	Logger  *slog.Logger
}

// replicaLink keeps a compact replica of the monitored tables filled from its own monitor
// connection: it dials an endpoint, sends one monitor_cond for exactly the columns the
// replica keeps, and streams the reply and every update2 into it. When the connection is
// lost, the replica keeps the last state received (reads never fail or wait) and the link
// dials again with backoff; the new monitor's reply replaces the state at once, so a reader
// never sees a table empty or half filled. Close stops it.
type replicaLink struct {
	opts replicaLinkOptions
	log  *slog.Logger

	mu     sync.Mutex
	conn   *jsonrpc.Conn // the live connection; nil while down
	cancel context.CancelFunc
	done   chan struct{}
}

// startReplicaLink connects and fills the replica, then keeps it filled in the background. ctx
// bounds the first connection only: when it cannot be made, the error says why and nothing
// is left running.
func startReplicaLink(ctx context.Context, opts replicaLinkOptions) (*replicaLink, error) {
	if opts.Store == nil || len(opts.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: replica link needs a store and an endpoint", ErrInvalid)
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	if opts.MonitorTimeout <= 0 {
		opts.MonitorTimeout = time.Minute
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &replicaLink{opts: opts, log: opts.Logger, done: make(chan struct{})}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.conn, l.cancel = conn, cancel
	l.mu.Unlock()
	l.state(true)
	go l.probe(runCtx, conn)
	go l.run(runCtx, conn)
	return l, nil
}

// probe sends an echo request every Probe while conn lasts and closes conn when one is not
// answered within ConnectTimeout.
func (l *replicaLink) probe(ctx context.Context, conn *jsonrpc.Conn) {
	if l.opts.Probe <= 0 {
		return
	}
	tick := time.NewTicker(l.opts.Probe)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-conn.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, l.opts.ConnectTimeout)
		var echoed json.RawMessage
		err := conn.Call(pctx, "echo", []any{"ovsplane-replica"}, &echoed)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.log.Warn("OVSDB replica connection: no answer to an echo request; reconnecting", "err", err)
			conn.Close()
			return
		}
	}
}

// Connected reports whether the link's connection is up (its monitor's reply applied).
func (l *replicaLink) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil
}

// Close stops the link and waits for its goroutine. The replica keeps the last state.
func (l *replicaLink) Close() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-l.done
	}
}

// run follows conn until it ends, then reconnects until ctx ends.
func (l *replicaLink) run(ctx context.Context, conn *jsonrpc.Conn) {
	defer close(l.done)
	for {
		select {
		case <-ctx.Done():
			conn.Close()
			<-conn.Done()
			l.setConn(nil)
			return
		case <-conn.Done():
		}
		l.setConn(nil)
		l.log.Warn("OVSDB replica connection lost; reconnecting", "err", conn.Err())
		delay := l.opts.MinBackoff
		for {
			// Full jitter over [delay/2, delay): clients that lost the same server do not
			// come back in step.
			wait := delay/2 + rand.N(delay/2+1)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if l.opts.OnRetry != nil {
				l.opts.OnRetry()
			}
			c, err := l.connect(ctx)
			if err == nil {
				conn = c
				l.setConn(c)
				go l.probe(ctx, c)
				l.log.Info("OVSDB replica connection restored")
				break
			}
			if ctx.Err() != nil {
				return
			}
			l.log.Debug("OVSDB replica reconnection failed", "err", err)
			delay = min(2*delay, l.opts.MaxBackoff)
		}
	}
}

func (l *replicaLink) setConn(c *jsonrpc.Conn) {
	l.mu.Lock()
	was := l.conn != nil
	l.conn = c
	l.mu.Unlock()
	if was != (c != nil) {
		l.state(c != nil)
	}
}

func (l *replicaLink) state(up bool) {
	if l.opts.OnState != nil {
		l.opts.OnState(up)
	}
}

// connect dials the first endpoint that answers and runs the monitor on it; its reply has
// replaced the replica's state when connect returns nil.
func (l *replicaLink) connect(ctx context.Context) (*jsonrpc.Conn, error) {
	eps := l.opts.Endpoints
	if l.opts.Prefer != nil {
		if p := l.opts.Prefer(); p != "" {
			eps = append([]string{p}, eps...)
		}
	}
	var errs []error
	tried := map[string]bool{}
	for _, ep := range eps {
		if tried[ep] {
			continue
		}
		tried[ep] = true
		c, err := l.monitor(ctx, ep)
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: replica: %w", ErrNotConnected, errors.Join(errs...))
}

func (l *replicaLink) monitor(ctx context.Context, ep string) (*jsonrpc.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, l.opts.ConnectTimeout)
	nc, err := dialEndpoint(dctx, ep, l.opts.TLS)
	cancel()
	if err != nil {
		return nil, err
	}
	conn := jsonrpc.New(nc, jsonrpc.Options{Sink: replicaSink{l}})
	mctx, cancel := context.WithTimeout(ctx, l.opts.MonitorTimeout)
	defer cancel()
	if err := conn.Monitor(mctx, vswitch.Schema().Name, replicaMonitorID, l.opts.Store.MonitorRequests()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("monitoring: %w", err)
	}
	return conn, nil
}

// dialEndpoint opens a connection to an OVSDB endpoint ("unix:PATH", "tcp:HOST:PORT" or
// "ssl:HOST:PORT"; ssl needs tc).
func dialEndpoint(ctx context.Context, ep string, tc *tls.Config) (net.Conn, error) {
	scheme, addr, _ := strings.Cut(ep, ":")
	var d net.Dialer
	switch scheme {
	case "unix":
		return d.DialContext(ctx, "unix", addr)
	case "tcp":
		return d.DialContext(ctx, "tcp", addr)
	case "ssl":
		if tc == nil {
			return nil, fmt.Errorf("%w: endpoint %q needs TLS files", ErrInvalid, ep)
		}
		td := tls.Dialer{NetDialer: &d, Config: tc}
		return td.DialContext(ctx, "tcp", addr)
	}
	return nil, fmt.Errorf("%w: endpoint %q: unsupported scheme %q (use unix:, tcp: or ssl:)", ErrInvalid, ep, scheme)
}

// replicaSink streams the link's table-updates into its replica.
type replicaSink struct{ l *replicaLink }

// ReadTableUpdates implements jsonrpc.Sink.
func (s replicaSink) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (jsonrpc.Pending, error) {
	p, err := s.l.opts.Store.ReadTableUpdates(dec, initial)
	if err != nil {
		return nil, err
	}
	return replicaPending{p: p, initial: initial, after: s.l.opts.OnCommit}, nil
}

// replicaPending is a replica.Pending that tells the link's OnCommit once applied.
type replicaPending struct {
	p       *replica.Pending
	initial bool
	after   func(initial bool, p *replica.Pending)
}

func (p replicaPending) Commit() error {
	if err := p.p.Commit(); err != nil {
		return err
	}
	if p.after != nil {
		p.after(p.initial, p.p)
	}
	return nil
}

func (p replicaPending) Discard() { p.p.Discard() }
