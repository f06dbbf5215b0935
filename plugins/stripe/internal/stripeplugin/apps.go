package stripeplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
)

// appServer is a job's application endpoint (stripe/endpoint) over the job's engines, with
// the sockets it serves on.
type appServer struct {
	ep   *endpoint.Endpoint
	unix string // the unix socket's path
	tcp  net.Listener
	udp  net.PacketConn
	ln   net.Listener // the unix socket
	done chan struct{}
}

// socketDir is where a job's default unix socket goes: the plugin's data dir the host gave
// (under the daemon's data dir), else the working directory (the host starts the plugin there).
func (p *Plugin) socketDir() (string, error) {
	if req, ok := p.Configured(); ok && req.Facts.DataDir != "" {
		return req.Facts.DataDir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("the plugin's working directory: %w", err)
	}
	return dir, nil
}

// openApps builds the endpoint of job name over its engines and opens its sockets: the unix
// socket here, TCP and UDP in the job's namespace. All or nothing: on failure every socket
// opened is closed, and the error is FailedPrecondition naming the field.
func openApps(ctx context.Context, name, dir string, cfg Config, peers []*peerEngine, log *slog.Logger) (*appServer, error) {
	var eps []endpoint.Peer
	for _, p := range peers {
		ec, err := cfg.engineConfig(p.peer)
		if err != nil {
			return nil, err
		}
		eps = append(eps, endpoint.Peer{Node: p.peer, Transport: p.transport(), Vmax: ec.Vmax})
	}
	ep, err := endpoint.New(endpoint.Config{Peers: eps, MaxApps: cfg.Endpoint.MaxApps,
		Period: cfg.Endpoint.period(), Logger: log})
	if err != nil {
		return nil, api.Errorf(api.FailedPrecondition, "job %s: config.endpoint: %v", name, err)
	}
	a := &appServer{ep: ep, unix: cfg.Endpoint.socketPath(dir, name), done: make(chan struct{})}
	fail := func(field string, err error) (*appServer, error) {
		a.close()
		return nil, api.Errorf(api.FailedPrecondition, "job %s: config.endpoint.%s: %v", name, field, err)
	}
	if len(a.unix) > endpoint.MaxSocketPath {
		return fail("unix", fmt.Errorf("the socket path %s is longer than %d bytes: set endpoint.unix to a shorter absolute path", a.unix, endpoint.MaxSocketPath))
	}
	if a.ln, err = endpoint.ListenUnix(ctx, a.unix); err != nil {
		return fail("unix", err)
	}
	if cfg.Endpoint.TCP != "" {
		err := inNetns(cfg.Netns, func() error {
			var err error
			a.tcp, err = endpoint.ListenTCP(ctx, cfg.Endpoint.TCP, cfg.Endpoint.Remote)
			return err
		})
		if err != nil {
			return fail("tcp", err)
		}
	}
	if cfg.Endpoint.UDP != "" {
		err := inNetns(cfg.Netns, func() error {
			var err error
			a.udp, err = endpoint.ListenUDP(ctx, cfg.Endpoint.UDP, cfg.Endpoint.Remote)
			return err
		})
		if err != nil {
			return fail("udp", err)
		}
	}
	return a, nil
}

// close closes the sockets (before run; run closes them when its context ends). A nil
// listener converts to a nil interface, so the check below skips the sockets not opened.
func (a *appServer) close() {
	for _, c := range []interface{ Close() error }{a.ln, a.tcp, a.udp} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// run runs the endpoint and serves its sockets until ctx ends; done is closed when all
// returned (the sockets closed, the unix socket's file removed).
func (a *appServer) run(ctx context.Context, job string, log *slog.Logger) {
	var wg sync.WaitGroup
	report := func(what string, err error) {
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			log.Error("stripe endpoint stopped", "job", job, "socket", what, "err", err)
		}
	}
	wg.Go(func() { report("endpoint", a.ep.Run(ctx)) })
	wg.Go(func() { report("unix "+a.unix, a.ep.ServeStream(ctx, a.ln)) })
	if a.tcp != nil {
		wg.Go(func() { report("tcp", a.ep.ServeStream(ctx, a.tcp)) })
	}
	if a.udp != nil {
		wg.Go(func() { report("udp", a.ep.ServeUDP(ctx, a.udp)) })
	}
	go func() {
		wg.Wait()
		close(a.done)
	}()
}

// appMetrics appends the endpoint's job-wide metrics (metricsPerJob − 2), its per-peer
// metrics to each peer's (2, by peer id) and at most shown applications' metrics
// (metricsPerApp each, labelled app and peer), the first by id.
func (a *appServer) appMetrics(s *metricSet, shown int) map[uint32]endpoint.PeerStats {
	st := a.ep.Stats()
	n := min(len(st.Apps), shown)
	s.gauge("stripe_apps", float64(len(st.Apps)), nil)
	s.gauge("stripe_apps_shown", float64(n), nil)
	s.counter("stripe_app_registrations", st.Registered, nil)
	s.counter("stripe_app_refused", st.Refused, nil)
	s.counter("stripe_app_malformed", st.Malformed, nil)
	s.counter("stripe_app_unroutable", st.Unroutable, nil)
	s.counter("stripe_app_broken_messages", st.Broken+st.Gaps, nil)
	s.counter("stripe_app_resets", st.Resets, nil)
	for _, ap := range st.Apps[:n] {
		l := map[string]string{"app": ap.Name, "peer": strconv.FormatUint(uint64(ap.PeerNode), 10)}
		s.gauge("stripe_app_share_bytes_per_second", ap.Share, l)
		s.gauge("stripe_app_send_bytes_per_second", ap.SendRate, l)
		s.gauge("stripe_app_receive_bytes_per_second", ap.ReceiveRate, l)
		s.counter("stripe_app_sent_bytes", ap.SentBytes, l)
		s.counter("stripe_app_received_bytes", ap.ReceivedBytes, l)
		s.counter("stripe_app_pacing_drops", ap.SendDrops, l)
		s.counter("stripe_app_receive_drops", ap.ReceiveDrops, l)
	}
	peers := map[uint32]endpoint.PeerStats{}
	for _, p := range st.Peers {
		peers[p.Node] = p
	}
	return peers
}
