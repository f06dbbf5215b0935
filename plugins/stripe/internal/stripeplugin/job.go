package stripeplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
)

// peerEngine is the engine of a job towards one peer, over its own sockets on the job's links.
type peerEngine struct {
	peer  uint32
	e     *engine.Engine
	links []link.Link
	done  chan struct{} // closed when Run returned
	err   error         // Run's error, set before done is closed
	tun   *peerTunnel   // the transparent mode's tunnel, or nil
}

// transport is what the endpoint uses towards the peer: the engine, or with the transparent
// mode the engine less the tunnel's service.
func (p *peerEngine) transport() endpoint.Transport {
	if p.tun != nil {
		return appView{p.tun.d}
	}
	return p.e
}

// closeTunnel removes the peer's tun device, if any, logging a failure.
func (p *peerEngine) closeTunnel(log *slog.Logger, job string) {
	if p.tun == nil {
		return
	}
	if err := p.tun.t.Close(); err != nil {
		log.Warn("closing the transparent mode's device", "job", job, "peer", p.peer, "err", err)
	}
}

// job is one running stripe job: an engine per peer.
type job struct {
	name    string
	cfg     Config
	started time.Time
	cancel  context.CancelFunc
	peers   []*peerEngine
	apps    *appServer // the application endpoint
}

// closeLinks closes links, logging failures.
func closeLinks(log *slog.Logger, job string, links []link.Link) {
	for _, l := range links {
		if err := l.Close(); err != nil {
			log.Warn("closing a link", "job", job, "link", l.Name(), "err", err)
		}
	}
}

// openLinks opens the configured links of the engine towards peer inside the job's namespace,
// all or none; each socket takes only the peer's frames (link.Config.PeerNode).
func openLinks(ctx context.Context, log *slog.Logger, name string, cfg Config, peer uint32) ([]link.Link, error) {
	var links []link.Link
	err := inNetns(cfg.Netns, func() error {
		for i, lc := range cfg.Links {
			l, err := openLink(ctx, cfg, i, peer)
			if err != nil {
				where := "this namespace"
				if cfg.Netns != "" {
					where = "netns " + cfg.Netns
				}
				if cfg.ovsMode() {
					return api.Errorf(api.FailedPrecondition, "job %s: config.links[%d].lane %s: %v: name a lane of bridge %s in %s (a port of type %s)", name, i, lc.Lane, err, cfg.Bridge, where, LanesType)
				}
				return api.Errorf(api.FailedPrecondition, "job %s: config.links[%d].interface %s: %v: name a kernel NIC that exists in %s (ip link show)", name, i, lc.Interface, err, where)
			}
			links = append(links, l)
		}
		return nil
	})
	if err != nil {
		closeLinks(log, name, links)
		var ae *api.Error
		if !errors.As(err, &ae) {
			err = api.Errorf(api.FailedPrecondition, "job %s: config.netns: %v", name, err)
		}
		return nil, err
	}
	return links, nil
}

// startJob opens the links, builds the engines of a job and opens its application endpoint's
// sockets (the default unix socket in dir; nothing stays open when it fails), then runs them
// until life ends or stop.
func startJob(ctx, life context.Context, log *slog.Logger, name, dir string, cfg Config) (*job, error) {
	j := &job{name: name, cfg: cfg, started: time.Now()}
	fail := func(err error) (*job, error) {
		for _, p := range j.peers {
			p.closeTunnel(log, name)
			closeLinks(log, name, p.links)
		}
		return nil, err
	}
	for _, pc := range cfg.Peers {
		links, err := openLinks(ctx, log, name, cfg, pc.Node)
		if err != nil {
			return fail(err)
		}
		p := &peerEngine{peer: pc.Node, links: links, done: make(chan struct{})}
		j.peers = append(j.peers, p)
		ec, err := cfg.engineConfig(pc.Node)
		if err != nil {
			return fail(err)
		}
		ec.Links = links
		ec.Logger = log.With("job", name, "peer", pc.Node)
		if p.e, err = engine.New(ec); err != nil {
			return fail(api.Errorf(api.FailedPrecondition, "job %s: peer %d: %v", name, pc.Node, err))
		}
	}
	for i, pc := range cfg.Peers {
		if pc.Transparent == nil {
			continue
		}
		f := fmt.Sprintf("config.peers[%d].transparent", i)
		pt, err := openTunnel(ctx, name, f, cfg, *pc.Transparent, j.peers[i], log.With("job", name, "peer", pc.Node))
		if err != nil {
			return fail(err)
		}
		j.peers[i].tun = pt
	}
	apps, err := openApps(ctx, name, dir, cfg, j.peers, log.With("job", name))
	if err != nil {
		return fail(err)
	}
	j.apps = apps
	jctx, cancel := context.WithCancel(life)
	j.cancel = cancel
	j.apps.run(jctx, name, log)
	for _, p := range j.peers {
		go func() {
			defer close(p.done)
			p.err = p.e.Run(jctx)
			if p.err != nil {
				log.Error("engine stopped", "job", name, "peer", p.peer, "err", p.err)
			}
		}()
		if p.tun != nil {
			p.tun.run(jctx, name, p.peer, log) // the tunnel waits for the engine's Run
		}
	}
	log.Info("stripe job started", "job", name, "node", cfg.Node, "links", len(cfg.Links), "peers", len(cfg.Peers), "netns", cfg.Netns,
		"unix", j.apps.unix, "tcp", cfg.Endpoint.TCP, "udp", cfg.Endpoint.UDP)
	return j, nil
}

// stop stops the endpoint and the engines and closes the sockets and links. When ctx ends
// first it returns its error; the links are then closed once the engines have returned.
func (j *job) stop(ctx context.Context, log *slog.Logger) error {
	j.cancel()
	for _, p := range j.peers {
		select {
		case <-p.done:
		case <-ctx.Done():
			go func() {
				for _, p := range j.peers {
					<-p.done
					if p.tun != nil {
						<-p.tun.done
					}
					p.closeTunnel(log, j.name)
					closeLinks(log, j.name, p.links)
				}
			}()
			return fmt.Errorf("job %s: stop: %w", j.name, ctx.Err())
		}
	}
	for _, p := range j.peers {
		if p.tun != nil {
			select { // Run returns once its context ended
			case <-p.tun.done:
			case <-ctx.Done():
			}
			p.closeTunnel(log, j.name) // removes the device (and ends a Run still reading)
		}
		closeLinks(log, j.name, p.links)
	}
	// The endpoint's sockets close themselves as their context ended; wait for it, so that a
	// job started again finds its unix socket path free.
	select {
	case <-j.apps.done:
	case <-ctx.Done():
		return fmt.Errorf("job %s: stop: the endpoint: %w", j.name, ctx.Err())
	}
	log.Info("stripe job stopped", "job", j.name)
	return nil
}

// running reports whether every engine still runs.
func (p *peerEngine) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// known reports whether discovery knows the peer on at least one link now.
func (p *peerEngine) known() bool {
	return slices.ContainsFunc(p.e.Peers(), func(n discovery.Node) bool { return n.ID == p.peer && len(n.NICs) > 0 })
}

// problems describes, for Health, what is wrong with the job now: engines that stopped, peers
// not discovered, links unusable. Empty when all is well.
func (j *job) problems() []string {
	var out []string
	for _, p := range j.peers {
		if !p.running() {
			out = append(out, fmt.Sprintf("job %s: engine towards peer %d stopped: %v", j.name, p.peer, p.err))
			continue
		}
		if !p.known() {
			out = append(out, fmt.Sprintf("job %s: peer %d unknown: no hello heard on any link (is its stripe job running, and are the links cabled to it?)", j.name, p.peer))
			continue
		}
		if p.tun != nil && !p.tun.running() {
			out = append(out, fmt.Sprintf("job %s: peer %d: transparent device %s stopped: %v", j.name, p.peer, p.tun.cfg.Device, p.tun.err))
		}
		var down []string
		for _, l := range p.e.Stats().Links {
			if !l.Usable {
				down = append(down, l.Name)
			}
		}
		if len(down) > 0 {
			out = append(out, fmt.Sprintf("job %s: peer %d: %d of %d links unusable (down, no carrier or the peer's MAC unknown): %s",
				j.name, p.peer, len(down), len(p.links), strings.Join(down, ", ")))
		}
	}
	return out
}

// status is Start's status for humans.
func (j *job) status() string {
	var peers []string
	for _, p := range j.peers {
		peers = append(peers, fmt.Sprint(p.peer))
	}
	var links []string
	for _, l := range j.cfg.Links {
		links = append(links, l.Interface)
	}
	return fmt.Sprintf("node %d striping over %s to peers %s since %s; applications at unix:%s", j.cfg.Node, strings.Join(links, ","),
		strings.Join(peers, ","), j.started.UTC().Format(time.RFC3339), j.apps.unix)
}
