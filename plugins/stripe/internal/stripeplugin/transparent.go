package stripeplugin

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/tunnel"
)

// The transparent mode: a peer's option transparent makes the job create a tun device in its
// namespace (stripe/tunnel: the device, its address and the route of its prefix, set with
// ioctls) and run a tunnel on that peer's engine, so an ordinary TCP or UDP connection between
// this node's and the peer's tun addresses is striped over the links without the applications
// knowing. The engine's deliveries are split by service (demux): the tunnel's service
// (tunnel.DefaultService) goes to the tunnel, every other to the application endpoint, which
// may not send on the tunnel's service.

// Bounds and defaults of TransparentConfig.
const (
	// DefaultTunQueueLen is the tun device's transmit queue when queue_len is absent: room for
	// a window of packets while the engine waits for acks.
	DefaultTunQueueLen = 4096
	// MaxTunQueueLen bounds queue_len, as stripe/tunnel does.
	MaxTunQueueLen = 1 << 20
)

// TransparentConfig is a peer's transparent mode.
type TransparentConfig struct {
	// Device is the tun device's name, which the job creates in its namespace and removes when
	// it stops; a valid interface name not used by a link or another peer.
	Device string `json:"device"`
	// Address is the device's IPv4 address with its prefix length, 1 to 31 ("10.99.0.1/30");
	// the prefix is routed through the device, and the peer's device has another address of it.
	Address string `json:"address"`
	// MTU is the device's MTU: tunnel.MinMTU up to the engine's frame payload (the links' MTU
	// minus the frame header), checked when the job starts; 0 is that payload.
	MTU int `json:"mtu,omitempty"`
	// Offloads turns the device's segmentation offloads on or off (absent: on). Peers may
	// differ.
	Offloads *bool `json:"offloads,omitempty"`
	// QueueLen is the device's transmit queue in packets, 0 to MaxTunQueueLen (0:
	// DefaultTunQueueLen).
	QueueLen int `json:"queue_len,omitempty"`
}

// prefix is the parsed Address (valid after check).
func (t *TransparentConfig) prefix() netip.Prefix {
	p, _ := netip.ParsePrefix(t.Address)
	return p
}

// offloads is Offloads with its default.
func (t *TransparentConfig) offloads() bool { return t.Offloads == nil || *t.Offloads }

// describe is the peer line's suffix of Config.Describe ("" without the transparent mode).
func (t *TransparentConfig) describe() string {
	if t == nil {
		return ""
	}
	q := t.QueueLen
	if q == 0 {
		q = DefaultTunQueueLen
	}
	mtu := "the engine's frame payload"
	if t.MTU > 0 {
		mtu = fmt.Sprint(t.MTU)
	}
	return fmt.Sprintf(", transparent: tun %s %s, MTU %s, offloads %t, queue %d", t.Device, t.Address, mtu, t.offloads(), q)
}

// checkTransparent validates every peer's transparent option; links maps the links'
// interface names (a device may not take one).
func (c *Config) checkTransparent(links map[string]int) error {
	devices := map[string]int{}
	var prefixes []netip.Prefix
	for i, p := range c.Peers {
		t := p.Transparent
		if t == nil {
			continue
		}
		f := fmt.Sprintf("config.peers[%d].transparent", i)
		if err := link.CheckInterfaceName(t.Device); err != nil {
			return problem(f+".device", "%q: %v", clip(t.Device), err)
		}
		if j, dup := links[t.Device]; dup {
			return problem(f+".device", "%s is links[%d]: name a new device for the tunnel", t.Device, j)
		}
		if j, dup := devices[t.Device]; dup {
			return problem(f+".device", "%s is also peers[%d]'s device: give each peer its own", t.Device, j)
		}
		devices[t.Device] = i
		pre, err := netip.ParsePrefix(t.Address)
		if err != nil || !pre.Addr().Is4() || pre.Bits() < 1 || pre.Bits() > 31 {
			return problem(f+".address", "%q: want an IPv4 address with a prefix length 1 to 31, like 10.99.0.1/30", clip(t.Address))
		}
		if pre.Masked().Addr() == pre.Addr() {
			return problem(f+".address", "%s is the network address of its prefix: give a host address, like %s", t.Address, netip.PrefixFrom(pre.Addr().Next(), pre.Bits()))
		}
		for _, o := range prefixes {
			if o.Overlaps(pre) {
				return problem(f+".address", "%s overlaps %s of another peer: give each peer's device its own prefix", t.Address, o)
			}
		}
		prefixes = append(prefixes, pre)
		if t.MTU != 0 && (t.MTU < tunnel.MinMTU || t.MTU > tunnel.MaxMTU) {
			return problem(f+".mtu", "%d: want %d to %d, at most the engine's frame payload (or leave it out for that payload)", t.MTU, tunnel.MinMTU, tunnel.MaxMTU)
		}
		if t.QueueLen < 0 || t.QueueLen > MaxTunQueueLen {
			return problem(f+".queue_len", "%d packets: want 0 to %d (or leave it out for %d)", t.QueueLen, MaxTunQueueLen, DefaultTunQueueLen)
		}
	}
	return nil
}

// demuxBuffer bounds the deliveries waiting for the tunnel or the endpoint; the engine's own
// ready queue holds the rest (and stops reading its links when full).
const demuxBuffer = 1024

// demux takes one engine's deliveries and hands those of service to the tunnel's view and the
// others to the endpoint's. A receiver that does not take its deliveries holds up the other
// once its buffer is full, as it would hold up the engine; once the tunnel has stopped
// (tunGone), its deliveries are dropped instead, so the applications keep theirs.
type demux struct {
	e       *engine.Engine
	service uint16
	tun     chan engine.Delivery
	apps    chan engine.Delivery
	tunGone <-chan struct{}
	done    chan struct{} // closed when run returned
	err     error         // why run returned, set before done is closed
}

// newDemux returns a demux of e's deliveries; run starts it. tunGone is closed when the
// tunnel stops taking deliveries.
func newDemux(e *engine.Engine, service uint16, tunGone <-chan struct{}) *demux {
	return &demux{e: e, service: service, tun: make(chan engine.Delivery, demuxBuffer),
		apps: make(chan engine.Delivery, demuxBuffer), tunGone: tunGone, done: make(chan struct{})}
}

// run waits for the engine's Run, then routes its deliveries until ctx ends or the engine
// stops.
func (d *demux) run(ctx context.Context) {
	defer close(d.done)
	if d.err = d.e.WaitRunning(ctx); d.err != nil {
		return
	}
	ds := make([]engine.Delivery, 256)
	for {
		n, err := d.e.ReceiveBatch(ctx, ds)
		if err != nil {
			d.err = err
			return
		}
		for _, x := range ds[:n] {
			ch, gone := d.apps, (<-chan struct{})(nil)
			if x.Conn.Service == d.service {
				ch, gone = d.tun, d.tunGone
			}
			select {
			case ch <- x:
			case <-gone: // the tunnel stopped: its delivery is dropped
			case <-ctx.Done():
				d.err = ctx.Err()
				return
			}
		}
		clear(ds[:n])
	}
}

// receive takes the next delivery of ch.
func (d *demux) receive(ctx context.Context, ch chan engine.Delivery) (engine.Delivery, error) {
	select {
	case x := <-ch:
		return x, nil
	case <-ctx.Done():
		return engine.Delivery{}, fmt.Errorf("stripe demux: %w", ctx.Err())
	case <-d.done:
		select {
		case x := <-ch:
			return x, nil
		default:
		}
		return engine.Delivery{}, fmt.Errorf("stripe demux: %w", d.err)
	}
}

// tunView is the tunnel's side of a demux: the engine's sends, waits and buffer reuse, and
// the deliveries of the tunnel's service.
type tunView struct{ d *demux }

// Send sends m on the engine.
func (v tunView) Send(ctx context.Context, m engine.Message) error { return v.d.e.Send(ctx, m) }

// SendBatch sends ms on the engine.
func (v tunView) SendBatch(ctx context.Context, ms []engine.Message) error {
	return v.d.e.SendBatch(ctx, ms)
}

// Receive returns the next delivery of the tunnel's service.
func (v tunView) Receive(ctx context.Context) (engine.Delivery, error) {
	return v.d.receive(ctx, v.d.tun)
}

// ReceiveBatch waits for one delivery of the tunnel's service and adds those already waiting,
// at most len(ds).
func (v tunView) ReceiveBatch(ctx context.Context, ds []engine.Delivery) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	x, err := v.Receive(ctx)
	if err != nil {
		return 0, err
	}
	ds[0] = x
	n := 1
	for n < len(ds) {
		select {
		case x := <-v.d.tun:
			ds[n] = x
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

// Release gives delivered payloads back to the engine.
func (v tunView) Release(ds []engine.Delivery) { v.d.e.Release(ds) }

// WaitRunning waits for the engine's Run.
func (v tunView) WaitRunning(ctx context.Context) error { return v.d.e.WaitRunning(ctx) }

// MaxPayload is the engine's.
func (v tunView) MaxPayload() int { return v.d.e.MaxPayload() }

// appView is the endpoint's side of a demux: the engine, less the tunnel's service.
type appView struct{ d *demux }

// Send sends m on the engine; the tunnel's service is refused.
func (v appView) Send(ctx context.Context, m engine.Message) error {
	if m.Conn.Service == v.d.service {
		return fmt.Errorf("service %#04x is the transparent mode's towards this peer: register the application with another", m.Conn.Service)
	}
	return v.d.e.Send(ctx, m)
}

// Receive returns the next delivery of any other service than the tunnel's.
func (v appView) Receive(ctx context.Context) (engine.Delivery, error) {
	return v.d.receive(ctx, v.d.apps)
}

// Stats is the engine's.
func (v appView) Stats() engine.Stats { return v.d.e.Stats() }

// MaxPayload is the engine's.
func (v appView) MaxPayload() int { return v.d.e.MaxPayload() }

// peerTunnel is a peer's running transparent mode.
type peerTunnel struct {
	cfg  TransparentConfig
	t    *tunnel.Tunnel
	d    *demux
	done chan struct{} // closed when the tunnel's Run returned
	err  error         // Run's error, set before done is closed
}

// openTunnel creates peer p's tun device (field f of the configuration) in the job's
// namespace over p's engine. The error is FailedPrecondition naming the field.
func openTunnel(ctx context.Context, job, f string, cfg Config, tc TransparentConfig, p *peerEngine, log *slog.Logger) (*peerTunnel, error) {
	done := make(chan struct{})
	d := newDemux(p.e, tunnel.DefaultService, done)
	q := tc.QueueLen
	if q == 0 {
		q = DefaultTunQueueLen
	}
	pt := &peerTunnel{cfg: tc, d: d, done: done}
	err := inNetns(cfg.Netns, func() error {
		var err error
		pt.t, err = tunnel.Open(ctx, tunnel.Config{Name: tc.Device, Addr: tc.prefix(), MTU: tc.MTU, TxQueueLen: q,
			Engine: tunView{d}, Service: tunnel.DefaultService, NoOffload: !tc.offloads(), Logger: log})
		return err
	})
	if err != nil {
		return nil, api.Errorf(api.FailedPrecondition, "job %s: %s: %v: name a device that does not exist yet in the job's namespace, an MTU the links allow, and run the plugin with CAP_NET_ADMIN", job, f, err)
	}
	return pt, nil
}

// run runs the demux and the tunnel until ctx ends; done is closed when the tunnel returned.
func (pt *peerTunnel) run(ctx context.Context, job string, peer uint32, log *slog.Logger) {
	go pt.d.run(ctx)
	go func() {
		defer close(pt.done)
		pt.err = pt.t.Run(ctx)
		if pt.err != nil {
			log.Error("stripe transparent mode stopped", "job", job, "peer", peer, "device", pt.cfg.Device, "err", pt.err)
		}
	}()
}

// running reports whether the tunnel still runs.
func (pt *peerTunnel) running() bool {
	select {
	case <-pt.done:
		return false
	default:
		return true
	}
}

// metricsPerTunnel is the metrics a sample holds per transparent device.
const metricsPerTunnel = 6

// tunnelMetrics appends the metrics of peer's transparent device.
func tunnelMetrics(s *metricSet, peer string, pt *peerTunnel) {
	st := pt.t.Stats()
	l := map[string]string{"peer": peer, "device": pt.cfg.Device}
	s.gauge("stripe_tunnel_running", boolValue(pt.running()), l)
	s.counter("stripe_tunnel_tx_packets", st.TxPackets, l)
	s.counter("stripe_tunnel_tx_bytes", st.TxBytes, l)
	s.counter("stripe_tunnel_rx_packets", st.RxPackets, l)
	s.counter("stripe_tunnel_rx_bytes", st.RxBytes, l)
	s.counter("stripe_tunnel_dropped", st.Malformed+st.Foreign+st.WriteErrors, l)
}
