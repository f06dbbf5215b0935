package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/fair"
	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/reorder"
	"github.com/ovsplane/ovsplane/stripe/toeplitz"
)

// ErrNotRunning is wrapped by Send and Receive when Run is not running.
var ErrNotRunning = errors.New("engine not running")

// Message is what an application sends on a connection.
type Message struct {
	Conn    Conn
	Payload []byte // at most MaxSend bytes; split into frames of at most MaxPayload bytes
}

// Delivery is one frame's payload delivered in order.
type Delivery struct {
	Conn    Conn
	Seq     uint64
	Payload []byte
	// Reset marks the first delivery of a new sequence space of Conn: the peer restarted
	// (FlagReset) and what follows does not continue what came before.
	Reset bool
}

// wallClock is the real clock of the load tracker.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// linkState is the engine's bookkeeping of one link.
type linkState struct {
	l      link.Link
	usable atomic.Bool // interface up with carrier and no down error since
	downs  atomic.Uint64
	ups    atomic.Uint64
	rr     atomic.Uint64 // receive-NIC round robin over the peer's MACs on this link

	paceMu sync.Mutex
	bucket *fair.TokenBucket // nil without pacing

	macs atomic.Pointer[macCache] // the peer MACs on this link, read recently (pool.go)
}

// pending is one unacknowledged frame.
type pending struct {
	used  bool
	fb    *frameBuf // the frame; the slot is one of its holders
	link  int       // the link it last went out on; −1 while not sent yet
	sent  time.Time // when it last went out
	tries int       // times it was sent again
	fast  bool      // repeated acks asked for it: due for the retransmitter now (fastretransmit.go)
}

// sendFlow is a connection's sender state.
type sendFlow struct {
	conn  Conn
	next  uint64 // the next sequence number to assign
	base  uint64 // the lowest unacknowledged sequence number
	start uint64 // the first sequence number of the current sequence space
	// fresh: no ack of the current sequence space arrived yet, so new frames carry FlagReset.
	fresh bool
	slots []pending
	dups  int // acks in a row that did not move base (fastretransmit.go)
}

// recvFlow is a connection's receiver state.
type recvFlow struct {
	conn  Conn
	buf   *reorder.Buffer
	start uint64 // the first sequence number of the sender's current sequence space
	dirty bool   // frames arrived since the last ack
	reset bool   // the next delivery is the first of a new sequence space
}

// seqAlign aligns the start of every sequence space: a connection's frames carry FlagReset
// only while none of its current space was acknowledged, so within Window (at most
// reorder.MaxWindow = seqAlign) of the start, and the receiver finds the start of a flagged
// frame's space as seq &^ (seqAlign−1).
const seqAlign = uint64(reorder.MaxWindow)

// initialSeq is the first sequence number of a new sequence space: the wall clock in
// nanoseconds, above after, rounded up to a multiple of seqAlign. A sender sends fewer than one
// frame per nanosecond, so the space of an engine started later (the same node after a restart)
// begins above every number an earlier one used, as long as the clock does not step back by
// more than the time between the two starts; receivers compare the starts to tell a new space
// from a stale frame of an old one.
func initialSeq(now time.Time, after uint64) uint64 {
	var s uint64
	if ns := now.UnixNano(); ns > 0 {
		s = uint64(ns)
	}
	s = (max(s, after)/seqAlign + 1) * seqAlign
	if s >= reorder.MaxSeq { // not before the year 2262
		s = 0
	}
	return s
}

// Engine is the data path of one node towards one peer; see the package documentation. Its
// methods are safe for concurrent use.
type Engine struct {
	cfg        Config
	links      []*linkState
	table      *discovery.Table
	maxPayload int

	sendMu    sync.Mutex
	pol       policy.Policy
	flows     map[Conn]*sendFlow
	retrans   chan struct{}
	retransRR int
	ackRR     atomic.Uint64
	// inflight counts the unacknowledged frames of all connections (≤ Config.MaxInFlight);
	// space is closed, and replaced, whenever acks free some.
	inflight int
	space    chan struct{}
	// maxAckDelay is the longest time from a frame's last copy going out to its ack.
	maxAckDelay time.Duration
	// srtt and rttvar estimate the ack delay; rto is the retransmit timeout they give.
	srtt, rttvar, rto time.Duration
	// txFree holds the frame buffers no one holds (pool.go).
	txFree []*frameBuf

	rxMu   sync.Mutex
	rflows map[Conn]*recvFlow
	// resetReq holds the connections (at most MaxFlows) whose data frames arrived without a
	// receive state and without FlagReset: the acknowledger asks their sender to restart
	// them, with the sequence number that showed it.
	resetReq map[Conn]uint64
	// ready holds the in-order deliveries Receive has not taken yet, from readyHead on; the
	// receivers stop reading their links while it holds readyMax or more.
	ready     []Delivery
	readyHead int
	readyMax  int
	readyCh   chan struct{}      // signalled when deliveries are added
	rxOut     []reorder.Delivery // dispatch's reusable list of what a frame made deliverable
	spaceCh   chan struct{}      // signalled when Receive takes one

	sampleMu sync.Mutex
	tracker  *load.Tracker

	scratch scratchPool // SendBatch's reusable buffers (sendbatch.go)
	rx      rxPool      // received payloads' buffers (pool.go)

	started atomic.Bool   // Run was called
	running atomic.Bool   // Run is running
	up      chan struct{} // closed once Run runs
	done    chan struct{}

	c counters
}

// counters are the engine-wide counters.
type counters struct {
	sentFrames, sentBytes          atomic.Uint64
	deliveredFrames, deliveredByte atomic.Uint64
	retransmits, skips, sendErrors atomic.Uint64
	fastRetransmits                atomic.Uint64
	acksSent, acksReceived         atomic.Uint64
	badFrames, foreign, refused    atomic.Uint64
	hellosSent, hellosReceived     atomic.Uint64
	rxErrors, paceWaits            atomic.Uint64
	resets, staleFrames            atomic.Uint64
	resetRequests, restarts        atomic.Uint64
	discarded                      atomic.Uint64
}

// New validates cfg and returns an engine; Run starts it.
func New(cfg Config) (*Engine, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	pol, err := policy.New(cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	table, err := discovery.NewTable(discovery.Config{Self: cfg.Node, TTL: cfg.PeerTTL, LocalLinks: len(cfg.Links)})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	tracker, err := load.NewTracker(load.TrackerConfig{Clock: wallClock{}, Vmax: cfg.Vmax, Smoothing: cfg.Smoothing})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{cfg: cfg, table: table, pol: pol, tracker: tracker, flows: map[Conn]*sendFlow{},
		rflows: map[Conn]*recvFlow{}, resetReq: map[Conn]uint64{}, retrans: make(chan struct{}, 1),
		readyCh: make(chan struct{}, 1), spaceCh: make(chan struct{}, 1), readyMax: cfg.Window,
		done: make(chan struct{}), up: make(chan struct{}), space: make(chan struct{}), maxPayload: frame.MaxPayload, rto: cfg.RetransmitTimeout}
	now := time.Now()
	for i, l := range cfg.Links {
		ls := &linkState{l: l}
		if cfg.Pace {
			burst := max(float64(l.MTU()), cfg.Vmax[i]*0.005)
			if ls.bucket, err = fair.NewTokenBucket(cfg.Vmax[i], burst, now); err != nil {
				return nil, fmt.Errorf("engine: link %d pacing: %w", i, err)
			}
		}
		e.links = append(e.links, ls)
		e.maxPayload = min(e.maxPayload, l.MTU()-frame.HeaderLen)
		e.rx.size = max(e.rx.size, l.MTU()-frame.HeaderLen)
	}
	return e, nil
}

// MaxPayload is the largest payload of one frame: the smallest link MTU minus the header.
func (e *Engine) MaxPayload() int { return e.maxPayload }

// Running reports whether Run is running, that is whether Send and Receive are accepted.
func (e *Engine) Running() bool { return e.running.Load() }

// WaitRunning waits until Run runs, so that Send and Receive are accepted, or ctx ends. It
// returns nil while Run runs, an error wrapping ErrNotRunning once Run has ended, and ctx's
// error when ctx ends first. A sender that treats ErrNotRunning as the engine's end (such as
// stripe/tunnel) calls it first, so it may be handed an engine whose Run is only starting.
func (e *Engine) WaitRunning(ctx context.Context) error {
	select {
	case <-e.up:
	case <-ctx.Done():
		return fmt.Errorf("engine: waiting for Run: %w", ctx.Err())
	}
	if !e.running.Load() {
		return fmt.Errorf("engine: %w: Run has ended", ErrNotRunning)
	}
	return nil
}

// Run runs the engine until ctx ends: one receiver per link, the sampler (every Period), the
// hello sender, the acknowledger and the retransmitter. It returns nil when ctx ends, and an
// error at once when the engine is already running or has run.
func (e *Engine) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return fmt.Errorf("engine: Run called twice: build a new engine with New")
	}
	e.running.Store(true)
	close(e.up)
	defer close(e.done)
	// The first sample makes links usable before anything else runs.
	e.sample(time.Now())
	var wg sync.WaitGroup
	for i := range e.links {
		wg.Go(func() { e.receive(ctx, i) })
	}
	wg.Go(func() { e.every(ctx, e.cfg.Period, e.sample) })
	wg.Go(func() { e.every(ctx, e.cfg.HelloInterval, func(time.Time) { e.hello(ctx) }) })
	wg.Go(func() { e.every(ctx, e.cfg.AckInterval, func(now time.Time) { e.acknowledge(ctx, now) }) })
	wg.Go(func() { e.retransmitLoop(ctx) })
	wg.Wait()
	e.running.Store(false)
	return nil
}

// every calls fn at once and then every d until ctx ends.
func (e *Engine) every(ctx context.Context, d time.Duration, fn func(time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	fn(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			fn(now)
		}
	}
}

// Peers returns the discovery table: every node heard, with its NICs.
func (e *Engine) Peers() []discovery.Node { return e.table.Snapshot(time.Now()) }

// tuple is the policy's flow tuple of c.
func (e *Engine) tuple(c Conn) toeplitz.Tuple {
	return toeplitz.Tuple{Service: c.Service, SrcNode: e.cfg.Node, DstNode: e.cfg.Peer, SrcPort: c.SrcPort, DstPort: c.DstPort}
}

// peerMAC returns the peer MAC to send to on link i (round robin over the peer's MACs heard
// on it), or nil when none is known.
func (e *Engine) peerMAC(now time.Time, i int) net.HardwareAddr {
	macs := e.cachedMACs(now, i)
	if len(macs) == 0 {
		return nil
	}
	return macs[e.links[i].rr.Add(1)%uint64(len(macs))]
}

// usableFrom returns the first usable link at or after i (cyclically) with its peer MAC, or
// −1.
func (e *Engine) usableFrom(now time.Time, i int) (int, net.HardwareAddr) {
	n := len(e.links)
	for k := range n {
		j := (i + k) % n
		if !e.links[j].usable.Load() {
			continue
		}
		if mac := e.peerMAC(now, j); mac != nil {
			return j, mac
		}
	}
	return -1, nil
}

// Send sends m on its connection: it splits the payload into frames, assigns each the
// connection's next sequence number and transmits it on the link the policy picks. It blocks
// while the connection's window is full or the chosen link's socket (or pacing) makes it wait,
// until ctx ends. It fails on an empty or oversized payload, the reserved control service, too
// many connections, or when the engine is not running. Frames already sent when it fails stay
// in the window and are delivered.
func (e *Engine) Send(ctx context.Context, m Message) error {
	if m.Conn.Service == discovery.ControlService {
		return fmt.Errorf("engine: service %#04x is reserved for control frames: use another", m.Conn.Service)
	}
	if len(m.Payload) == 0 || len(m.Payload) > MaxSend {
		return fmt.Errorf("engine: message of %d bytes: want 1 to %d", len(m.Payload), MaxSend)
	}
	for off := 0; off < len(m.Payload); off += e.maxPayload {
		chunk := m.Payload[off:min(len(m.Payload), off+e.maxPayload)]
		seq, fb, err := e.enqueue(ctx, m.Conn, chunk)
		if err != nil {
			return err
		}
		e.c.sentFrames.Add(1)
		e.c.sentBytes.Add(uint64(len(chunk)))
		if err := e.transmit(ctx, m.Conn, seq, fb); err != nil {
			return err
		}
	}
	return nil
}

// alive fails when ctx ended or the engine is not running.
func (e *Engine) alive(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if !e.running.Load() {
		return fmt.Errorf("engine: %w: call Run first", ErrNotRunning)
	}
	return nil
}

// enqueue waits for window space, assigns the next sequence number and keeps the frame. The
// caller holds the returned frame too and must release it (mark does) once it was sent.
func (e *Engine) enqueue(ctx context.Context, c Conn, payload []byte) (uint64, *frameBuf, error) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	for {
		if err := e.alive(ctx); err != nil {
			return 0, nil, err
		}
		fl := e.flows[c]
		if fl == nil {
			if len(e.flows) >= e.cfg.MaxFlows {
				return 0, nil, fmt.Errorf("engine: connection %+v: already %d connections, the maximum (Config.MaxFlows)", c, e.cfg.MaxFlows)
			}
			start := initialSeq(e.cfg.Clock.Now(), 0)
			fl = &sendFlow{conn: c, next: start, base: start, start: start, fresh: true, slots: make([]pending, e.cfg.Window)}
			e.flows[c] = fl
		}
		if fl.next-fl.base < uint64(len(fl.slots)) && e.inflight < e.cfg.MaxInFlight {
			seq := fl.next
			var flags frame.Flags
			if fl.fresh {
				flags = frame.FlagReset
			}
			fb := e.newFrameLocked()
			b, err := frame.Append(fb.b[:0], frame.Header{Flags: flags, Service: c.Service,
				SrcNode: e.cfg.Node, DstNode: e.cfg.Peer, SrcPort: c.SrcPort, DstPort: c.DstPort, Seq: seq}, payload)
			if err != nil {
				return 0, nil, fmt.Errorf("engine: %w", err)
			}
			fb.b = b
			// sent now: the retransmitter leaves it to transmit for a timeout.
			fl.slots[seq%uint64(len(fl.slots))] = pending{used: true, fb: fb, link: -1, sent: time.Now()}
			fl.next++
			e.inflight++
			return seq, fb, nil
		}
		space := e.space
		e.sendMu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
		case <-e.done:
		}
		e.sendMu.Lock()
	}
}

// transmit sends frame seq of connection c on the policy's link (or the next usable one) and
// records where it went, releasing the caller's hold on fb. With no usable link the frame stays
// for the retransmitter.
func (e *Engine) transmit(ctx context.Context, c Conn, seq uint64, fb *frameBuf) error {
	e.sendMu.Lock()
	choice := e.pol.Choose(e.tuple(c))
	e.sendMu.Unlock()
	for range len(e.links) {
		// A down error moves the frame to the next link; every link is tried at most once.
		i, mac := e.usableFrom(time.Now(), choice)
		if i < 0 {
			break
		}
		if i != choice {
			e.c.skips.Add(1)
		}
		err := e.sendOn(ctx, i, mac, fb.b)
		if err == nil || !link.IsDown(err) {
			e.mark(c, seq, i, time.Now(), fb)
			if err != nil {
				e.c.sendErrors.Add(1) // the retransmitter sends it again
			}
			return e.alive(ctx)
		}
		choice = i + 1
	}
	e.mark(c, seq, -1, time.Time{}, fb) // no usable link: due for the retransmitter's next pass
	return nil
}

// sendOn paces and sends b on link i; a down error marks the link unusable.
func (e *Engine) sendOn(ctx context.Context, i int, mac net.HardwareAddr, b []byte) error {
	ls := e.links[i]
	if ls.bucket != nil {
		if err := e.pace(ctx, ls, len(b)); err != nil {
			return err
		}
	}
	err := ls.l.Send(ctx, mac, b)
	if link.IsDown(err) && ls.usable.CompareAndSwap(true, false) {
		ls.downs.Add(1)
		e.kickRetransmit()
	}
	return err
}

// pace waits until link ls's bucket holds n bytes and takes them.
func (e *Engine) pace(ctx context.Context, ls *linkState, n int) error {
	for {
		ls.paceMu.Lock()
		now := time.Now()
		wait, err := ls.bucket.Wait(now, float64(n))
		if err == nil && wait == 0 {
			ls.bucket.Take(now, float64(n))
		}
		ls.paceMu.Unlock()
		if err != nil || wait == 0 {
			return err
		}
		e.c.paceWaits.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("engine: pacing: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// mark records that frame seq of c went out on link i at now, and releases the sender's hold
// on its frame fb.
func (e *Engine) mark(c Conn, seq uint64, i int, now time.Time, fb *frameBuf) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	e.releaseLocked(fb)
	fl := e.flows[c]
	if fl == nil || seq < fl.base {
		return
	}
	if p := &fl.slots[seq%uint64(len(fl.slots))]; p.used {
		p.link, p.sent = i, now
	}
}

func (e *Engine) kickRetransmit() {
	select {
	case e.retrans <- struct{}{}:
	default:
	}
}

// retransmitLoop sends again the frames whose ack is late or whose link went down, every
// quarter of the retransmit timeout, when a link goes down, and when repeated acks mark a frame
// (checked every fastCheck too).
func (e *Engine) retransmitLoop(ctx context.Context) {
	period := e.cfg.RetransmitTimeout / 4
	t := time.NewTicker(min(period, fastCheck))
	defer t.Stop()
	var last time.Time
	for {
		kicked := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.retrans:
			kicked = true
		}
		now := time.Now()
		if e.fastDue(now) || kicked || now.Sub(last) >= period {
			e.retransmit(ctx, now)
			last = now
		}
	}
}

// Retransmission bounds: one pass sends at most maxRetransmitBatch frames in all; of a
// connection, every frame whose link went down, and the run of frames whose ack is late that
// starts at the lowest unacknowledged one, at most maxLateBatch (the cumulative ack says nothing
// about the later ones, which mostly wait in the receiver's reorder buffer). A frame sent again
// n times waits RetransmitTimeout·2^n (n ≤ maxBackoff) before the next time, so a stall of the
// whole path (a busy CPU) costs a few copies, not a window of them.
const (
	maxRetransmitBatch = 4096
	maxLateBatch       = 256
	maxBackoff         = 4
)

type resend struct {
	conn Conn
	seq  uint64
	fb   *frameBuf // held by the retransmitter until mark or the end of the pass
}

// retransmit sends the due frames once, round robin over the usable links.
func (e *Engine) retransmit(ctx context.Context, now time.Time) {
	var due []resend
	e.sendMu.Lock()
	for _, fl := range e.flows {
		lateLeft := maxLateBatch
		for seq := fl.base; seq < fl.next && len(due) < maxRetransmitBatch; seq++ {
			p := &fl.slots[seq%uint64(len(fl.slots))]
			if !p.used {
				continue
			}
			downed := p.link >= 0 && !e.links[p.link].usable.Load()
			late := p.fast || lateLeft > 0 && now.Sub(p.sent) >= e.rto<<min(p.tries, maxBackoff)
			p.fast = false
			if !late {
				lateLeft = 0 // only the run of late frames from the oldest: the likely hole
			}
			if !downed && !late {
				continue
			}
			if late {
				lateLeft--
			}
			p.fb.refs++
			due = append(due, resend{fl.conn, seq, p.fb})
			p.sent = now // not again before the timeout, wherever it goes
			if p.link >= 0 {
				p.tries++
			}
		}
	}
	e.sendMu.Unlock()
	for k, r := range due {
		e.sendMu.Lock()
		e.retransRR++
		start := e.retransRR % len(e.links)
		e.sendMu.Unlock()
		i, mac := e.usableFrom(time.Now(), start)
		if i < 0 {
			e.releaseAll(due[k:]) // nothing usable: the frames stay due for the next pass
			return
		}
		if err := e.sendOn(ctx, i, mac, r.fb.b); err != nil {
			if ctx.Err() != nil {
				e.releaseAll(due[k:])
				return
			}
			e.releaseAll(due[k : k+1])
			continue
		}
		e.mark(r.conn, r.seq, i, time.Now(), r.fb)
		e.c.retransmits.Add(1)
	}
}

// releaseAll releases the retransmitter's hold on the frames of rs.
func (e *Engine) releaseAll(rs []resend) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	for _, r := range rs {
		e.releaseLocked(r.fb)
	}
}

// onAck frees the acknowledged frames of a connection, or restarts it on a reset request.
func (e *Engine) onAck(a Ack) {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	fl := e.flows[a.Conn]
	if a.Reset {
		e.restartLocked(fl, a.Next)
		return
	}
	if fl != nil && a.Next == fl.base && fl.next > fl.base {
		e.dupAckLocked(fl, time.Now())
		return
	}
	if fl == nil || a.Next <= fl.base || a.Next > fl.next {
		return
	}
	fl.fresh = false // the receiver follows the current sequence space
	fl.dups = 0
	now := time.Now()
	if p := fl.slots[(a.Next-1)%uint64(len(fl.slots))]; p.link >= 0 && p.tries == 0 {
		e.sampleRTT(now.Sub(p.sent)) // Karn: only frames sent once
	}
	for seq := fl.base; seq < a.Next; seq++ {
		p := &fl.slots[seq%uint64(len(fl.slots))]
		if p.link >= 0 {
			e.maxAckDelay = max(e.maxAckDelay, now.Sub(p.sent))
		}
		e.releaseLocked(p.fb)
		*p = pending{}
	}
	e.inflight -= int(a.Next - fl.base)
	fl.base = a.Next
	close(e.space) // wake every sender waiting for room
	e.space = make(chan struct{})
}

// restartLocked restarts connection fl in a new sequence space because its receiver asked
// (it has no state for it: the peer restarted). The unacknowledged frames are discarded and
// counted, not sent again: the receiver that lost them may have handed some to its
// application already, and a copy in the new space would reach it twice. A request about an
// older space or the current one (seq at or below the current start) or one arriving while the current space is not
// acknowledged yet (its frames carry FlagReset and will start the receiver's state) changes
// nothing. Called with sendMu held.
func (e *Engine) restartLocked(fl *sendFlow, seq uint64) {
	if fl != nil && fl.fresh && seq > fl.start {
		e.moveAboveLocked(fl, seq)
		return
	}
	// A request naming exactly the current start comes from a receiver that follows this
	// space (it dropped a late copy of an older one): nothing to do. A receiver without state
	// names an unflagged frame, and only frames after the first acknowledged one go unflagged.
	if fl == nil || fl.fresh || seq <= fl.start {
		return
	}
	for s := fl.base; s < fl.next; s++ {
		p := &fl.slots[s%uint64(len(fl.slots))]
		e.releaseLocked(p.fb)
		*p = pending{}
	}
	n := fl.next - fl.base
	e.inflight -= int(n)
	e.c.discarded.Add(n)
	e.c.restarts.Add(1)
	start := initialSeq(e.cfg.Clock.Now(), fl.next)
	fl.next, fl.base, fl.start, fl.fresh = start, start, start, true
	close(e.space) // wake every sender waiting for room
	e.space = make(chan struct{})
	e.cfg.Logger.Info("stripe engine: peer asked to restart a connection", "conn", fl.conn, "discarded", n)
}

// moveAboveLocked moves connection fl, whose current space is not acknowledged yet, into a
// new space above seq, because its receiver follows a space starting at seq, above fl's: this
// engine started after the one that used that space, with a clock that stepped back. The
// receiver dropped every frame of fl's space as a stale copy and delivered none, so the
// unacknowledged frames are not discarded but numbered again, in order, from the new space's
// start (still FlagReset) and sent again by the retransmitter. A request that is only a
// duplicate of an earlier one names a space at or below the new start and changes nothing.
// Called with sendMu held.
func (e *Engine) moveAboveLocked(fl *sendFlow, seq uint64) {
	start := initialSeq(e.cfg.Clock.Now(), max(seq, fl.next))
	if start == 0 { // past the sequence numbers' end: nothing above to move to
		return
	}
	n := fl.next - fl.base
	held := make([]pending, 0, n)
	for s := fl.base; s < fl.next; s++ {
		p := &fl.slots[s%uint64(len(fl.slots))]
		held = append(held, *p)
		*p = pending{}
	}
	for k, p := range held {
		if !p.used {
			continue
		}
		ns := start + uint64(k)
		h, payload, err := frame.Decode(p.fb.b)
		if err == nil {
			h.Seq = ns
			fb := e.newFrameLocked()
			fb.refs = 1 // the slot's only
			if fb.b, err = frame.Append(fb.b[:0], h, payload); err == nil {
				// due for the retransmitter at once: no link, never sent.
				fl.slots[ns%uint64(len(fl.slots))] = pending{used: true, fb: fb, link: -1}
			} else {
				e.releaseLocked(fb)
			}
		}
		if err != nil { // cannot happen: the frame was encoded here; the slot stays empty
			e.c.discarded.Add(1)
		}
		e.releaseLocked(p.fb)
	}
	fl.next, fl.base, fl.start = start+n, start, start
	fl.dups = 0
	e.c.restarts.Add(1)
	e.kickRetransmit()
	e.cfg.Logger.Info("stripe engine: the peer follows a later sequence space (this node's clock stepped back): connection moved above it",
		"conn", fl.conn, "frames", n)
}

// sampleRTT feeds one ack delay into the smoothed RTT and its variation (RFC 6298's estimator)
// and recomputes the retransmit timeout: srtt + 4·rttvar, at least Config.RetransmitTimeout,
// at most half the loss timeout. Called with sendMu held.
func (e *Engine) sampleRTT(r time.Duration) {
	if e.srtt == 0 {
		e.srtt, e.rttvar = r, r/2
	} else {
		d := e.srtt - r
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + r) / 8
	}
	e.rto = min(max(e.cfg.RetransmitTimeout, e.srtt+4*e.rttvar), e.cfg.LossTimeout/2)
}

// sample reads every link's state and counters at now, feeds the tracker and the policy, and
// expires the discovery table.
func (e *Engine) sample(now time.Time) {
	counters := make([]load.Counters, len(e.links))
	for i, ls := range e.links {
		st, err := ls.l.State()
		usable := err == nil && st.Usable()
		if usable && ls.usable.CompareAndSwap(false, true) {
			ls.ups.Add(1)
		} else if !usable && ls.usable.CompareAndSwap(true, false) {
			ls.downs.Add(1)
			e.kickRetransmit()
		}
		s := ls.l.Stats()
		counters[i] = load.Counters{RxPackets: s.RxFrames, TxPackets: s.TxFrames, RxBytes: s.RxBytes,
			TxBytes: s.TxBytes, RxMissed: s.KernelDrops, RxErrors: s.RxOversize}
	}
	e.table.Expire(now)
	e.sampleMu.Lock()
	err := e.tracker.Observe(counters)
	loads := e.tracker.TxLoads()
	e.sampleMu.Unlock()
	if err != nil {
		e.cfg.Logger.Warn("stripe engine: load sample skipped", "err", err)
		return
	}
	e.sendMu.Lock()
	err = e.pol.Observe(loads)
	e.sendMu.Unlock()
	if err != nil {
		e.cfg.Logger.Warn("stripe engine: policy refused the loads", "err", err)
	}
}

// hello sends a hello request on every link whose interface is up with carrier.
func (e *Engine) hello(ctx context.Context) {
	for i, ls := range e.links {
		if st, err := ls.l.State(); err != nil || !st.Usable() {
			continue
		}
		b, err := discovery.AppendHello(nil, discovery.Hello{Node: e.cfg.Node, Link: i, MAC: ls.l.MAC()})
		if err != nil {
			e.cfg.Logger.Warn("stripe engine: hello", "link", ls.l.Name(), "err", err)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, e.cfg.HelloInterval)
		if err := ls.l.Send(sctx, discovery.Broadcast(), b); err == nil {
			e.c.hellosSent.Add(1)
		}
		cancel()
	}
}

// acknowledge applies the loss timeout and sends an ack for every connection that received
// frames since the last one.
func (e *Engine) acknowledge(ctx context.Context, now time.Time) {
	var acks []Ack
	e.rxMu.Lock()
	for _, rf := range e.rflows {
		e.queue(rf, rf.buf.Expire(now))
		if rf.dirty {
			rf.dirty = false
			acks = append(acks, Ack{From: e.cfg.Node, To: e.cfg.Peer, Conn: rf.conn, Next: rf.buf.Next()})
		}
	}
	for c, seq := range e.resetReq {
		acks = append(acks, Ack{From: e.cfg.Node, To: e.cfg.Peer, Conn: c, Next: seq, Reset: true})
	}
	clear(e.resetReq)
	e.rxMu.Unlock()
	for _, a := range acks {
		b, err := AppendAck(nil, a)
		if err != nil {
			continue
		}
		// Try the usable links in turn, starting one further each time, until one takes it.
		start := int(e.ackRR.Add(1) % uint64(len(e.links)))
		for k := range len(e.links) {
			i, mac := e.usableFrom(now, start+k)
			if i < 0 {
				return
			}
			if e.sendControl(ctx, i, mac, b) == nil {
				if a.Reset {
					e.c.resetRequests.Add(1)
				} else {
					e.c.acksSent.Add(1)
				}
				break
			}
		}
	}
}

// controlSendWait bounds how long a control frame (ack, hello reply) waits for room in a link's
// socket: a link full of data must not hold up the goroutine that sends it, which also
// receives (replies) or acknowledges every connection (acks).
const controlSendWait = 2 * time.Millisecond

// sendControl sends control frame b on link i to mac, waiting at most controlSendWait.
func (e *Engine) sendControl(ctx context.Context, i int, mac net.HardwareAddr, b []byte) error {
	sctx, cancel := context.WithTimeout(ctx, controlSendWait)
	defer cancel()
	return e.links[i].l.Send(sctx, mac, b)
}

// queue appends in-order deliveries of connection rf for Receive, the first after a reset
// marked. Called with rxMu held.
func (e *Engine) queue(rf *recvFlow, ds []reorder.Delivery) {
	if len(ds) == 0 {
		return
	}
	for _, d := range ds {
		e.ready = append(e.ready, Delivery{Conn: rf.conn, Seq: d.Seq, Payload: d.Payload, Reset: rf.reset})
		rf.reset = false
		e.c.deliveredFrames.Add(1)
		e.c.deliveredByte.Add(uint64(len(d.Payload)))
	}
	signal(e.readyCh)
}

// signal wakes one waiter of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Receive returns the next frame delivered in order, of any connection, waiting until one
// arrives or ctx ends. The payload is the caller's (Release gives it back for reuse). After Run ended it returns what was
// delivered before, then fails with ErrNotRunning.
func (e *Engine) Receive(ctx context.Context) (Delivery, error) {
	for {
		e.rxMu.Lock()
		if e.readyHead < len(e.ready) {
			d := e.ready[e.readyHead]
			e.ready[e.readyHead] = Delivery{}
			e.readyHead++
			more := e.readyHead < len(e.ready)
			if !more {
				e.ready, e.readyHead = e.ready[:0], 0
			}
			e.rxMu.Unlock()
			signal(e.spaceCh)
			if more {
				signal(e.readyCh) // for another Receive waiting
			}
			return d, nil
		}
		e.rxMu.Unlock()
		select {
		case <-e.readyCh:
		case <-ctx.Done():
			return Delivery{}, fmt.Errorf("engine: receive: %w", ctx.Err())
		case <-e.done:
			e.rxMu.Lock()
			empty := e.readyHead == len(e.ready)
			e.rxMu.Unlock()
			if empty {
				return Delivery{}, fmt.Errorf("engine: receive: %w", ErrNotRunning)
			}
		}
	}
}

// receive reads link i until ctx ends and dispatches every frame.
func (e *Engine) receive(ctx context.Context, i int) {
	ls := e.links[i]
	buf := make([]byte, ls.l.MTU())
	for {
		n, src, err := ls.l.Recv(ctx, buf)
		switch {
		case ctx.Err() != nil || errors.Is(err, link.ErrClosed):
			return
		case link.IsDown(err):
			continue
		case err != nil:
			e.c.rxErrors.Add(1)
			e.cfg.Logger.Warn("stripe engine: receive", "link", ls.l.Name(), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(e.cfg.Period):
			}
			continue
		}
		e.dispatch(ctx, i, src, buf[:n])
	}
}

// dispatch handles one received frame from src on link i; b is reused afterwards.
func (e *Engine) dispatch(ctx context.Context, i int, src net.HardwareAddr, b []byte) {
	h, payload, err := frame.Decode(b)
	if err != nil {
		e.c.badFrames.Add(1)
		return
	}
	now := time.Now()
	if h.Flags&frame.FlagControl != 0 {
		e.control(ctx, i, src, h, payload, now)
		return
	}
	if h.SrcNode != e.cfg.Peer || h.DstNode != e.cfg.Node {
		e.c.foreign.Add(1)
		return
	}
	c := Conn{Service: h.Service, SrcPort: h.SrcPort, DstPort: h.DstPort}
	p := e.rx.copyOf(payload)
	e.rxMu.Lock()
	defer e.rxMu.Unlock()
	for len(e.ready)-e.readyHead >= e.readyMax { // Receive is behind: stop reading
		e.rxMu.Unlock()
		select {
		case <-e.spaceCh:
		case <-ctx.Done():
			e.rxMu.Lock()
			return
		}
		e.rxMu.Lock()
	}
	reset := h.Flags&frame.FlagReset != 0
	start := h.Seq &^ (seqAlign - 1)
	rf := e.rflows[c]
	switch {
	case rf == nil && len(e.rflows) >= e.cfg.MaxFlows:
		e.c.refused.Add(1)
		return
	case rf == nil && !reset:
		// The sender's sequence space began before this engine (it restarted): ask the
		// sender to restart the connection.
		if len(e.resetReq) < e.cfg.MaxFlows {
			e.resetReq[c] = h.Seq
		}
		e.c.staleFrames.Add(1)
		return
	case rf == nil:
		buf, err := reorder.New(reorder.Config{Window: e.cfg.Window, Timeout: e.cfg.LossTimeout, First: start})
		if err != nil {
			e.c.refused.Add(1)
			return
		}
		rf = &recvFlow{conn: c, buf: buf, start: start}
		e.rflows[c] = rf
	case reset && start > rf.start:
		// The sender restarted the connection: deliver what is held of the old space, then
		// follow the new one.
		held, err := rf.buf.Reset(start)
		if err != nil {
			e.c.badFrames.Add(1)
			return
		}
		e.queue(rf, held)
		rf.start, rf.reset = start, true
		e.c.resets.Add(1)
	case reset && start < rf.start:
		// A late copy from a space already replaced, or a new space that starts below the one
		// followed: the sender restarted with its clock stepped back. Tell the sender which
		// space is followed (a reset request naming its start): one behind moves its
		// connection above it, anyone else ignores it.
		e.c.staleFrames.Add(1)
		if _, ok := e.resetReq[c]; ok || len(e.resetReq) < e.cfg.MaxFlows {
			e.resetReq[c] = rf.start
		}
		return
	}
	rf.dirty = true
	e.rxOut = rf.buf.PushAppend(e.rxOut[:0], now, h.Seq, p)
	e.queue(rf, e.rxOut)
	clear(e.rxOut) // keep no payload alive
}

// control handles a control frame from src on link i.
func (e *Engine) control(ctx context.Context, i int, src net.HardwareAddr, h frame.Header, payload []byte, now time.Time) {
	t, err := discovery.Type(payload)
	if err != nil {
		e.c.badFrames.Add(1)
		return
	}
	switch t {
	case discovery.MsgHelloRequest, discovery.MsgHelloReply:
		hello, err := discovery.DecodeHello(h, payload)
		if err != nil {
			e.c.badFrames.Add(1)
			return
		}
		if hello.Reply && hello.To != e.cfg.Node {
			e.c.foreign.Add(1)
			return
		}
		e.c.hellosReceived.Add(1)
		if err := e.table.Learn(now, i, src, hello); err != nil {
			e.cfg.Logger.Warn("stripe engine: hello refused", "link", e.links[i].l.Name(), "err", err)
			return
		}
		if !hello.Reply {
			ls := e.links[i]
			b, err := discovery.AppendHello(nil, discovery.Hello{Reply: true, Node: e.cfg.Node, To: hello.Node, Link: i, MAC: ls.l.MAC()})
			if err != nil {
				return
			}
			if e.sendControl(ctx, i, src, b) == nil {
				e.c.hellosSent.Add(1)
			}
		}
	case discovery.MsgAck:
		a, err := DecodeAck(h, payload)
		if err != nil {
			e.c.badFrames.Add(1)
			return
		}
		if a.From != e.cfg.Peer || a.To != e.cfg.Node {
			e.c.foreign.Add(1)
			return
		}
		e.c.acksReceived.Add(1)
		e.onAck(a)
	default:
		e.c.badFrames.Add(1)
	}
}
