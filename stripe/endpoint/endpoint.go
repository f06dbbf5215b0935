package endpoint

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/fair"
	"github.com/ovsplane/ovsplane/stripe/frame"
)

// Transport is what the endpoint needs of the data path towards one peer node; *engine.Engine
// implements it. Send carries a message on its connection, Receive returns the next frame
// payload delivered in order (of any connection), Stats gives the links' smoothed loads, and
// MaxPayload the largest payload one Send puts in one frame.
type Transport interface {
	Send(ctx context.Context, m engine.Message) error
	Receive(ctx context.Context) (engine.Delivery, error)
	Stats() engine.Stats
	MaxPayload() int
}

// Peer is a peer node the endpoint reaches.
type Peer struct {
	// Node is the peer's node id (≥ 1, unique among Peers).
	Node uint32
	// Transport carries the traffic, typically the engine towards Node.
	Transport Transport
	// Vmax is each of the transport's links' capacity in bytes per second, in link order (the
	// engine's Config.Vmax).
	Vmax []float64
}

// Defaults and bounds of Config.
const (
	DefaultMaxApps    = 1024
	MaxApps           = 1 << 16
	DefaultMaxMessage = 65000 // fits one UDP datagram with the protocol's overhead
	DefaultQueueDepth = 256
	MaxQueueDepth     = 1 << 16
	DefaultPeriod     = 100 * time.Millisecond
	MaxPeers          = 1024
	// MinShare is the least rate an application is paced to (bytes per second), so an
	// application keeps moving when the measured available bandwidth is zero.
	MinShare = 1024
	// smoothing is the EWMA weight of the newest sample of the applications' own rate (the
	// seed's r).
	smoothing = 0.8
	// fragHeader is the endpoint's header in front of each piece of a message in a frame.
	fragHeader = 1
	// fragFirstLen is the extra length field of a message's first piece.
	fragFirstLen = 4
	fragFirst    = 1
	fragLast     = 2
)

// Config configures an Endpoint.
type Config struct {
	// Peers are the peer nodes applications may talk to, 1..MaxPeers.
	Peers []Peer
	// MaxApps bounds the registered applications (0: DefaultMaxApps; at most MaxApps).
	MaxApps int
	// MaxMessage bounds one message's payload in bytes (0: DefaultMaxMessage; at most
	// MaxMessageLimit). Larger messages are refused with CodeTooLarge.
	MaxMessage int
	// QueueDepth bounds each application's queued messages, each direction (0:
	// DefaultQueueDepth; at most MaxQueueDepth). A full receive queue drops deliveries; a full
	// send queue makes a stream client wait and refuses a datagram client's message.
	QueueDepth int
	// Period is T, how often the shares are computed (0: DefaultPeriod; 1 ms to 1 min).
	Period time.Duration
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

func (c *Config) check() error {
	if len(c.Peers) < 1 || len(c.Peers) > MaxPeers {
		return fmt.Errorf("endpoint: %d peers: want 1 to %d", len(c.Peers), MaxPeers)
	}
	seen := map[uint32]bool{}
	for i, p := range c.Peers {
		if p.Node == 0 || seen[p.Node] {
			return fmt.Errorf("endpoint: peer %d: node %d is 0 or listed twice", i, p.Node)
		}
		seen[p.Node] = true
		if p.Transport == nil {
			return fmt.Errorf("endpoint: peer node %d has no transport: give its engine", p.Node)
		}
		if mp := p.Transport.MaxPayload(); mp < fragHeader+fragFirstLen+1 || mp > frame.MaxPayload {
			return fmt.Errorf("endpoint: peer node %d: transport payload of %d bytes: want %d to %d", p.Node, mp, fragHeader+fragFirstLen+1, frame.MaxPayload)
		}
		if len(p.Vmax) < 1 || len(p.Vmax) > fair.MaxUsers {
			return fmt.Errorf("endpoint: peer node %d: %d Vmax values: give each link's capacity", p.Node, len(p.Vmax))
		}
		for j, v := range p.Vmax {
			if !(v > 0) || v > engine.MaxVmax {
				return fmt.Errorf("endpoint: peer node %d link %d: Vmax %v bytes/s: want more than 0 and at most %v", p.Node, j, v, engine.MaxVmax)
			}
		}
	}
	bound := func(name string, v *int, def, hi int) error {
		if *v == 0 {
			*v = def
		}
		if *v < 1 || *v > hi {
			return fmt.Errorf("endpoint: %s %d: want 1 to %d (or 0 for %d)", name, *v, hi, def)
		}
		return nil
	}
	if err := bound("max apps", &c.MaxApps, DefaultMaxApps, MaxApps); err != nil {
		return err
	}
	if err := bound("max message", &c.MaxMessage, DefaultMaxMessage, MaxMessageLimit); err != nil {
		return err
	}
	if err := bound("queue depth", &c.QueueDepth, DefaultQueueDepth, MaxQueueDepth); err != nil {
		return err
	}
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.Period < time.Millisecond || c.Period > time.Minute {
		return fmt.Errorf("endpoint: period %v: want 1ms to 1m", c.Period)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// ErrNotRunning is wrapped when a request arrives while Run is not running.
var ErrNotRunning = errors.New("endpoint not running")

// Error is a refused request: its Code travels to the client in a TypeError reply.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("endpoint: %v: %s", e.Code, e.Msg) }

func errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}

// peerState is the endpoint's state of one peer.
type peerState struct {
	Peer
	maxFrag int
	// wire counts the bytes the applications handed to the transport since the last share
	// computation, frame headers included.
	wire atomic.Uint64
	// guarded by Endpoint.mu:
	appRate  float64 // EWMA of the applications' own rate, bytes per second
	capacity float64 // Σ(Vmax − V) of the last period, the applications' own traffic not in V
	sampled  bool
}

type portKey struct{ service, port uint16 }

// sendItem is one message waiting for its app's pacing.
type sendItem struct {
	tag     uint32
	payload []byte
}

// app is one registered application.
type app struct {
	id                  uint32
	name                string
	service, local      uint16
	peer                *peerState
	peerPort            uint16
	demand              float64 // bytes per second, +Inf for none
	owner               *owner
	sendq               chan sendItem
	gone                chan struct{}
	cancel              context.CancelFunc
	share               atomic.Uint64 // math.Float64bits of the pacing rate
	queued              atomic.Int64  // deliveries and replies in the owner's queue
	bucketMu            sync.Mutex
	bucket              *fair.TokenBucket
	sentMsgs, sentBytes atomic.Uint64
	recvMsgs, recvBytes atomic.Uint64
	sendDrops, recvDrop atomic.Uint64
	backpressure        atomic.Uint64
	sendErrors          atomic.Uint64
	// guarded by Endpoint.mu: the counters at the last share computation and the smoothed
	// rates (EWMA, the seed's r) of the bytes sent and received since, bytes per second.
	lastSent, lastRecv uint64
	sendRate, recvRate float64
	rated              bool
}

func (a *app) conn() engine.Conn {
	return engine.Conn{Service: a.service, SrcPort: a.local, DstPort: a.peerPort}
}

// Endpoint is the local endpoint of applications; see the package documentation. Its methods
// are safe for concurrent use.
type Endpoint struct {
	cfg   Config
	peers map[uint32]*peerState

	mu      sync.Mutex
	base    context.Context // Run's context while it runs, nil otherwise
	apps    map[uint32]*app
	byName  map[string]*app
	byPort  map[portKey]*app
	nextID  uint32
	running bool

	c struct {
		registered, refused, malformed atomic.Uint64
		unroutable, gaps, broken       atomic.Uint64
		resets                         atomic.Uint64
	}
}

// New validates cfg and returns an endpoint; Run starts it.
func New(cfg Config) (*Endpoint, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, peers: map[uint32]*peerState{}, apps: map[uint32]*app{},
		byName: map[string]*app{}, byPort: map[portKey]*app{}}
	for _, p := range cfg.Peers {
		ps := &peerState{Peer: p, maxFrag: p.Transport.MaxPayload()}
		for _, v := range p.Vmax {
			ps.capacity += v
		}
		e.peers[p.Node] = ps
	}
	return e, nil
}

// Run runs the endpoint until ctx ends: one dispatcher per peer, which takes what the
// transport delivers and routes it to the registered applications, and the share computation
// every Period. Applications register only while it runs; when it ends all are deregistered.
func (e *Endpoint) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return errors.New("endpoint: Run called twice")
	}
	e.running, e.base = true, ctx
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, ps := range e.peers {
		wg.Go(func() { e.dispatch(ctx, ps) })
	}
	wg.Go(func() {
		t := time.NewTicker(e.cfg.Period)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				e.reshare(now, now.Sub(last))
				last = now
			}
		}
	})
	wg.Wait()
	e.mu.Lock()
	e.base = nil
	apps := make([]*app, 0, len(e.apps))
	for _, a := range e.apps {
		apps = append(apps, a)
	}
	e.mu.Unlock()
	for _, a := range apps {
		e.remove(a)
	}
	return nil
}

// register adds an application owned by o.
func (e *Endpoint) register(m Msg, o *owner) (*app, *Error) {
	refuse := func(err *Error) (*app, *Error) {
		e.c.refused.Add(1)
		return nil, err
	}
	if err := CheckName(m.Name); err != nil {
		return refuse(errorf(CodeInvalid, "%v", err))
	}
	if m.Service == discovery.ControlService {
		return refuse(errorf(CodeInvalid, "application %q: service %#04x is reserved for stripe control frames: use another", m.Name, m.Service))
	}
	if m.LocalPort == 0 || m.PeerPort == 0 {
		return refuse(errorf(CodeInvalid, "application %q: local port %d, peer port %d: want both 1 to 65535", m.Name, m.LocalPort, m.PeerPort))
	}
	ps := e.peers[m.PeerNode]
	if ps == nil {
		return refuse(errorf(CodeUnknownPeer, "application %q: no stripe engine to node %d: name a configured peer", m.Name, m.PeerNode))
	}
	demand := math.Inf(1)
	if m.Rate > 0 {
		demand = float64(m.Rate)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.base == nil {
		return refuse(errorf(CodeNotRunning, "application %q: %v: the stripe plugin is starting or stopping, retry", m.Name, ErrNotRunning))
	}
	if e.byName[m.Name] != nil {
		return refuse(errorf(CodeAlreadyRegistered, "application %q is already registered: deregister it first or pick another name", m.Name))
	}
	if o2 := e.byPort[portKey{m.Service, m.LocalPort}]; o2 != nil {
		return refuse(errorf(CodeAlreadyRegistered, "application %q: service %d local port %d is already taken by %q", m.Name, m.Service, m.LocalPort, o2.name))
	}
	if len(e.apps) >= e.cfg.MaxApps {
		return refuse(errorf(CodeTooManyApps, "application %q: already %d applications, the endpoint's maximum", m.Name, e.cfg.MaxApps))
	}
	for e.nextID++; e.nextID == 0 || e.apps[e.nextID] != nil; e.nextID++ {
	}
	ctx, cancel := context.WithCancel(e.base)
	now := time.Now()
	burst := float64(max(4*ps.maxFrag, 64<<10))
	bucket, err := fair.NewTokenBucket(MinShare, burst, now)
	if err != nil {
		cancel()
		return refuse(errorf(CodeInvalid, "application %q: pacing: %v", m.Name, err))
	}
	a := &app{id: e.nextID, name: m.Name, service: m.Service, local: m.LocalPort, peer: ps, peerPort: m.PeerPort,
		demand: demand, owner: o, sendq: make(chan sendItem, e.cfg.QueueDepth), gone: make(chan struct{}),
		cancel: cancel, bucket: bucket}
	e.apps[a.id] = a
	e.byName[a.name] = a
	e.byPort[portKey{a.service, a.local}] = a
	o.apps[a.id] = a
	e.c.registered.Add(1)
	e.shareLocked(now)
	go e.pump(ctx, a)
	return a, nil
}

// remove deregisters a; it is a no-op when a is already gone.
func (e *Endpoint) remove(a *app) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.apps[a.id] != a {
		return
	}
	delete(e.apps, a.id)
	delete(e.byName, a.name)
	delete(e.byPort, portKey{a.service, a.local})
	delete(a.owner.apps, a.id)
	close(a.gone)
	a.cancel()
	e.shareLocked(time.Now())
}

// lookup returns o's application id.
func (e *Endpoint) lookup(o *owner, id uint32) (*app, *Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := o.apps[id]; a != nil {
		return a, nil
	}
	return nil, errorf(CodeUnknownApp, "application id %d is not registered by this client: register first", id)
}

// reshare samples the transports' loads and recomputes every application's share.
func (e *Endpoint) reshare(now time.Time, elapsed time.Duration) {
	type sample struct {
		ps   *peerState
		used []float64
	}
	var samples []sample
	for _, ps := range e.peers {
		st := ps.Transport.Stats()
		used := make([]float64, len(ps.Vmax))
		for i := range used {
			if i < len(st.Links) {
				used[i] = max(0, st.Links[i].TxLoad) * ps.Vmax[i]
			}
		}
		samples = append(samples, sample{ps, used})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range samples {
		ps := s.ps
		rate := float64(ps.wire.Swap(0)) / max(elapsed.Seconds(), 1e-3)
		if ps.sampled {
			ps.appRate = smoothing*rate + (1-smoothing)*ps.appRate
		} else {
			ps.appRate, ps.sampled = rate, true
		}
		// V is the traffic that is not the registered applications': their own rate is
		// taken out of each link's load in proportion to it, or the shares would shrink
		// as soon as the applications use them.
		var total float64
		for _, u := range s.used {
			total += u
		}
		others := make([]float64, len(s.used))
		for i, u := range s.used {
			if total > 0 {
				others[i] = max(0, u-min(ps.appRate, total)*u/total)
			}
		}
		if c, err := fair.SeedShare(ps.Vmax, others, 1); err == nil {
			ps.capacity = c
		} else {
			e.cfg.Logger.Warn("stripe endpoint: available bandwidth", "peer", ps.Node, "err", err)
		}
	}
	secs := max(elapsed.Seconds(), 1e-3)
	for _, a := range e.apps {
		sent, recv := a.sentBytes.Load(), a.recvBytes.Load()
		sr, rr := float64(sent-a.lastSent)/secs, float64(recv-a.lastRecv)/secs
		if a.rated {
			sr, rr = smoothing*sr+(1-smoothing)*a.sendRate, smoothing*rr+(1-smoothing)*a.recvRate
		}
		a.lastSent, a.lastRecv, a.sendRate, a.recvRate, a.rated = sent, recv, sr, rr, true
	}
	e.shareLocked(now)
}

// shareLocked divides every peer's capacity among its applications max-min fairly by their
// demands (equal shares, the seed's Σ(Vmax − V)/APP_NB, when none demands a rate) and sets
// their pacing rates. Called with mu held.
func (e *Endpoint) shareLocked(now time.Time) {
	byPeer := map[*peerState][]*app{}
	for _, a := range e.apps {
		byPeer[a.peer] = append(byPeer[a.peer], a)
	}
	for ps, apps := range byPeer {
		demands := make([]float64, len(apps))
		for i, a := range apps {
			demands[i] = a.demand
		}
		shares, err := fair.MaxMin(ps.capacity, demands)
		if err != nil {
			e.cfg.Logger.Warn("stripe endpoint: shares", "peer", ps.Node, "err", err)
			continue
		}
		for i, a := range apps {
			r := max(shares[i], MinShare)
			a.share.Store(math.Float64bits(r))
			a.bucketMu.Lock()
			_ = a.bucket.SetRate(now, r) // r is finite and ≥ MinShare
			a.bucketMu.Unlock()
		}
	}
}

// enqueueSend queues a message of a for pacing; wait says whether to wait for room (stream
// clients) or refuse when the queue is full (datagram clients).
func (e *Endpoint) enqueueSend(ctx context.Context, a *app, it sendItem, wait bool) *Error {
	select {
	case a.sendq <- it:
		return nil
	default:
	}
	if !wait {
		a.sendDrops.Add(1)
		return errorf(CodeQueueFull, "application %q: %d messages already queued for pacing: send slower or raise the queue depth", a.name, e.cfg.QueueDepth)
	}
	a.backpressure.Add(1)
	select {
	case a.sendq <- it:
		return nil
	case <-a.gone:
		return errorf(CodeUnknownApp, "application %q was deregistered", a.name)
	case <-ctx.Done():
		return errorf(CodeSendFailed, "application %q: %v", a.name, ctx.Err())
	}
}

// pump paces a's messages to its share and hands them to the transport in pieces of at most
// one frame each.
func (e *Endpoint) pump(ctx context.Context, a *app) {
	conn := a.conn()
	maxFrag := a.peer.maxFrag
	for {
		var it sendItem
		select {
		case it = <-a.sendq:
		case <-ctx.Done():
			return
		}
		p := it.payload
		first, failed := true, false
		for first || len(p) > 0 {
			hdr := fragHeader
			if first {
				hdr += fragFirstLen
			}
			n := min(len(p), maxFrag-hdr)
			piece := make([]byte, hdr, hdr+n)
			if first {
				piece[0] |= fragFirst
				binary.BigEndian.PutUint32(piece[1:], uint32(len(it.payload)))
			}
			if n == len(p) {
				piece[0] |= fragLast
			}
			piece = append(piece, p[:n]...)
			if err := e.paceWait(ctx, a, float64(len(piece))); err != nil {
				return
			}
			if err := a.peer.Transport.Send(ctx, engine.Message{Conn: conn, Payload: piece}); err != nil {
				if ctx.Err() != nil {
					return
				}
				a.sendErrors.Add(1)
				e.cfg.Logger.Warn("stripe endpoint: send", "app", a.name, "err", err)
				e.reply(a.owner, a, Msg{Type: TypeError, Tag: it.tag, Code: CodeSendFailed,
					Text: trimText(fmt.Sprintf("application %q: message of %d bytes: %v", a.name, len(it.payload), err))})
				failed = true
				break
			}
			a.peer.wire.Add(uint64(len(piece) + frame.HeaderLen))
			p, first = p[n:], false
		}
		if !failed {
			a.sentMsgs.Add(1)
			a.sentBytes.Add(uint64(len(it.payload)))
		}
	}
}

// paceWait waits until a's bucket holds n bytes and takes them.
func (e *Endpoint) paceWait(ctx context.Context, a *app, n float64) error {
	for {
		now := time.Now()
		a.bucketMu.Lock()
		d, err := a.bucket.Wait(now, n)
		if err == nil && d == 0 {
			a.bucket.Take(now, n)
		}
		a.bucketMu.Unlock()
		if err != nil {
			return err
		}
		if d == 0 {
			return nil
		}
		t := time.NewTimer(min(d, e.cfg.Period))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// assembly is a connection's message being put together from its pieces.
type assembly struct {
	next    uint64 // the sequence number expected next
	started bool
	want    int
	buf     []byte
	// skipping drops pieces until the next first piece (after a gap or a broken message).
	skipping bool
}

// dispatch takes what ps's transport delivers and routes each message to its application.
func (e *Endpoint) dispatch(ctx context.Context, ps *peerState) {
	asm := map[engine.Conn]*assembly{}
	for {
		d, err := ps.Transport.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.cfg.Logger.Warn("stripe endpoint: receive", "peer", ps.Node, "err", err)
			t := time.NewTimer(e.cfg.Period)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		e.mu.Lock()
		a := e.byPort[portKey{d.Conn.Service, d.Conn.DstPort}]
		e.mu.Unlock()
		if a == nil || a.peer != ps || a.peerPort != d.Conn.SrcPort {
			e.c.unroutable.Add(1)
			delete(asm, d.Conn)
			continue
		}
		s := asm[d.Conn]
		if d.Reset && s != nil {
			// The peer restarted the connection: a message in pieces is gone with it.
			e.c.resets.Add(1)
			if s.started {
				e.c.broken.Add(1)
			}
			s = nil
		}
		if s == nil {
			if len(asm) > e.cfg.MaxApps {
				clear(asm) // stale connections of deregistered applications
			}
			s = &assembly{next: d.Seq}
			asm[d.Conn] = s
		}
		if d.Seq != s.next {
			e.c.gaps.Add(1)
			s.started, s.buf, s.skipping = false, nil, true
		}
		s.next = d.Seq + 1
		if msg, ok := e.piece(s, d.Payload); ok {
			e.deliver(a, msg)
		}
	}
}

// piece adds one piece to s and returns the message it completes.
func (e *Endpoint) piece(s *assembly, p []byte) ([]byte, bool) {
	broken := func() ([]byte, bool) {
		e.c.broken.Add(1)
		s.started, s.buf, s.skipping = false, nil, true
		return nil, false
	}
	if len(p) < fragHeader || p[0]&^(fragFirst|fragLast) != 0 {
		return broken()
	}
	flags := p[0]
	p = p[fragHeader:]
	if flags&fragFirst != 0 {
		if s.started {
			e.c.broken.Add(1)
		}
		if len(p) < fragFirstLen {
			return broken()
		}
		want := binary.BigEndian.Uint32(p)
		if uint64(want) > uint64(e.cfg.MaxMessage) {
			return broken()
		}
		s.started, s.skipping, s.want, s.buf = true, false, int(want), make([]byte, 0, min(int(want), 64<<10))
		p = p[fragFirstLen:]
	} else if !s.started {
		if !s.skipping {
			e.c.broken.Add(1)
			s.skipping = true
		}
		return nil, false
	}
	if len(s.buf)+len(p) > s.want {
		return broken()
	}
	s.buf = append(s.buf, p...)
	if flags&fragLast == 0 {
		return nil, false
	}
	if len(s.buf) != s.want {
		return broken()
	}
	msg := s.buf
	s.started, s.buf = false, nil
	return msg, true
}

// deliver queues msg for a's client, or drops it when a's queue is full.
func (e *Endpoint) deliver(a *app, msg []byte) {
	if a.queued.Load() >= int64(e.cfg.QueueDepth) {
		a.recvDrop.Add(1)
		return
	}
	b, err := Append(make([]byte, 0, LenSize+overhead+len(msg)), Msg{Type: TypeDeliver, App: a.id, Payload: msg})
	if err != nil {
		a.recvDrop.Add(1)
		return
	}
	a.queued.Add(1)
	if !a.owner.push(outItem{app: a, b: b, deliver: true, bytes: len(msg)}) {
		a.queued.Add(-1)
		a.recvDrop.Add(1)
	}
}

// reply queues an asynchronous reply to a's client (a failed send), within a's queue bound.
func (e *Endpoint) reply(o *owner, a *app, m Msg) {
	if a.queued.Load() >= int64(e.cfg.QueueDepth) {
		return
	}
	b, err := Append(nil, m)
	if err != nil {
		return
	}
	a.queued.Add(1)
	if !o.push(outItem{app: a, b: b}) {
		a.queued.Add(-1)
	}
}

func trimText(s string) string {
	if len(s) <= MaxErrorText {
		return s
	}
	s = s[:MaxErrorText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// AppStats are one registered application's share and counters.
type AppStats struct {
	ID                 uint32
	Name               string
	Service, LocalPort uint16
	PeerNode           uint32
	PeerPort           uint16
	// Demand is the demanded rate in bytes per second (0: none, as much as the share gives);
	// Share the rate it is paced to now.
	Demand, Share float64
	// SendRate and ReceiveRate are the smoothed rates (EWMA with r = 0.8, updated every
	// Period) of the message bytes it sent and received, in bytes per second.
	SendRate, ReceiveRate float64
	// SentMessages and SentBytes count the messages handed to the transport; ReceivedMessages
	// and ReceivedBytes those written to the client.
	SentMessages, SentBytes         uint64
	ReceivedMessages, ReceivedBytes uint64
	// SendDrops counts messages refused because the send queue was full (datagram clients);
	// Backpressure the times a stream client's message waited for queue room; ReceiveDrops
	// deliveries dropped because the client did not read fast enough; SendErrors messages
	// the transport refused.
	SendDrops, Backpressure, ReceiveDrops, SendErrors uint64
}

// PeerStats are one peer's available bandwidth.
type PeerStats struct {
	Node uint32
	// Capacity is Σ(Vmax − V) of the last period in bytes per second, where V leaves out the
	// registered applications' own traffic; SeedShare is Capacity divided by the peer's
	// applications (the seed's equal share); AppRate the applications' smoothed own rate.
	Capacity, SeedShare, AppRate float64
	Apps                         int
}

// Stats are the endpoint's counters.
type Stats struct {
	Apps  []AppStats // by id
	Peers []PeerStats
	// Registered counts registrations, Refused refused ones; Malformed messages that did not
	// decode; Unroutable deliveries no registered application takes; Gaps sequence gaps in a
	// connection (frames the engine declared lost); Broken messages whose pieces did not fit;
	// Resets connections the peer restarted (engine.Delivery.Reset) while a message of theirs
	// was being put together or had been.
	Registered, Refused, Malformed, Unroutable, Gaps, Broken, Resets uint64
}

// Stats returns a snapshot of the shares and counters.
func (e *Endpoint) Stats() Stats {
	s := Stats{Registered: e.c.registered.Load(), Refused: e.c.refused.Load(), Malformed: e.c.malformed.Load(),
		Unroutable: e.c.unroutable.Load(), Gaps: e.c.gaps.Load(), Broken: e.c.broken.Load(), Resets: e.c.resets.Load()}
	e.mu.Lock()
	defer e.mu.Unlock()
	count := map[*peerState]int{}
	for _, a := range e.apps {
		count[a.peer]++
		demand := a.demand
		if math.IsInf(demand, 1) {
			demand = 0
		}
		s.Apps = append(s.Apps, AppStats{ID: a.id, Name: a.name, Service: a.service, LocalPort: a.local,
			PeerNode: a.peer.Node, PeerPort: a.peerPort, Demand: demand, Share: math.Float64frombits(a.share.Load()),
			SendRate: a.sendRate, ReceiveRate: a.recvRate,
			SentMessages: a.sentMsgs.Load(), SentBytes: a.sentBytes.Load(),
			ReceivedMessages: a.recvMsgs.Load(), ReceivedBytes: a.recvBytes.Load(),
			SendDrops: a.sendDrops.Load(), Backpressure: a.backpressure.Load(), ReceiveDrops: a.recvDrop.Load(),
			SendErrors: a.sendErrors.Load()})
	}
	slices.SortFunc(s.Apps, func(x, y AppStats) int { return cmp.Compare(x.ID, y.ID) })
	for _, ps := range e.peers {
		p := PeerStats{Node: ps.Node, Capacity: ps.capacity, AppRate: ps.appRate, Apps: count[ps]}
		if p.Apps > 0 {
			p.SeedShare = p.Capacity / float64(p.Apps)
		}
		s.Peers = append(s.Peers, p)
	}
	slices.SortFunc(s.Peers, func(x, y PeerStats) int { return cmp.Compare(x.Node, y.Node) })
	return s
}

// Running reports whether Run is running (applications can register).
func (e *Endpoint) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.base != nil
}
