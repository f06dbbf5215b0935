package ethudp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Link defaults and bounds.
const (
	// PingInterval is the reference's keepalive period: one PING (and one PASSWORD, when set)
	// per tick.
	PingInterval = time.Second
	// DefaultRecvQueue is the default number of received frames waiting for Recv.
	DefaultRecvQueue = 256
	// MaxRecvQueue bounds Config.RecvQueue.
	MaxRecvQueue = 65536
)

// Config describes one Link.
type Config struct {
	// Local is the UDP address to bind (required; port 0 picks a free port).
	Local netip.AddrPort
	// Remote is the peer. A valid address with a non-zero port is a fixed peer: only its
	// datagrams are accepted. An unspecified address (0.0.0.0 or ::), an invalid one or port 0
	// is NAT mode, as in the reference: the peer is learned from received datagrams (from the
	// PASSWORD message when Password is set, from any valid datagram otherwise), and a
	// specified address or non-zero port here restricts which peers may be learned.
	Remote netip.AddrPort
	// Codec holds the wire options; both ends must agree.
	Codec Options
	// Password is the reference's -p (0–2047 bytes, no NUL). With a fixed peer it is sent every
	// tick; in NAT mode only a PASSWORD message carrying it latches a peer, and other datagrams
	// from anyone but the latched peer are dropped.
	Password string
	// Logger receives state changes, peer changes and weak-cipher warnings; nil discards them.
	Logger *slog.Logger
	// Ticks drives PINGs, PASSWORDs and the link state; nil means a real ticker every
	// PingInterval. Tests send on their own channel.
	Ticks <-chan time.Time
	// Now is the clock for fragment ages; nil means time.Now.
	Now func() time.Time
	// RecvQueue is the number of received frames kept for Recv (0 means DefaultRecvQueue, at
	// most MaxRecvQueue); more are dropped and counted (DropQueueFull).
	RecvQueue int
	// FragmentTimeout and MaxPendingHalves configure reassembly (see Codec.NewDecoder).
	FragmentTimeout  time.Duration
	MaxPendingHalves int
}

// State is a link's up/down state.
type State uint8

// The link states.
const (
	StateDown State = iota // no PONG recently (or never)
	StateUp                // PONGs are coming back
)

// String returns "up" or "down".
func (s State) String() string {
	if s == StateUp {
		return "up"
	}
	return "down"
}

// Counters is a snapshot of a Link's counters.
type Counters struct {
	FramesSent, FramesReceived       uint64 // Ethernet frames through Send / to Recv
	DatagramsSent, DatagramsReceived uint64 // UDP datagrams written / read
	Compressed                       uint64 // payloads sent as an LZ4 block
	Decompressed                     uint64 // payloads received as an LZ4 block
	Fragmented                       uint64 // payloads sent as two UDPFRG halves
	Reassembled                      uint64 // payloads joined from two halves
	PingsSent, PingsReceived         uint64
	PongsSent, PongsReceived         uint64
	PasswordsSent, PasswordsAccepted uint64
	PeerChanges                      uint64 // NAT mode: times the peer address was (re)learned
	StateChanges                     uint64
	Dropped                          map[string]uint64 // by DropReason.String(); absent means 0
}

// Link is one EthUDP tunnel endpoint: a UDP socket, a peer, the codec and the link state. Its
// methods are safe for concurrent use. It stops when the context given to Open is cancelled or
// Close is called.
type Link struct {
	cfg    Config
	codec  *Codec
	conn   *net.UDPConn
	log    *slog.Logger
	now    func() time.Time
	nat    bool
	frames chan []byte
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex // guards everything below
	enc     *Encoder
	peer    netip.AddrPort
	hasPeer bool
	mon     Monitor
	c       Counters
	drops   [numDropReasons]uint64
}

// Open validates cfg, binds the local socket and starts the link's receive and keepalive loops,
// which run until ctx is cancelled or Close is called.
func Open(ctx context.Context, cfg Config) (*Link, error) {
	if !cfg.Local.IsValid() {
		return nil, errors.New("ethudp: link: Local address is required (for example 0.0.0.0:6000)")
	}
	if cfg.Password != "" {
		if err := checkPassword(cfg.Password); err != nil {
			return nil, fmt.Errorf("ethudp: link: %w", err)
		}
	}
	if cfg.RecvQueue < 0 || cfg.RecvQueue > MaxRecvQueue {
		return nil, fmt.Errorf("ethudp: link: RecvQueue %d: use 0 (default %d) to %d", cfg.RecvQueue, DefaultRecvQueue, MaxRecvQueue)
	}
	if cfg.RecvQueue == 0 {
		cfg.RecvQueue = DefaultRecvQueue
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	codec, err := NewCodec(cfg.Codec, func(msg string) { log.Warn(msg) })
	if err != nil {
		return nil, fmt.Errorf("ethudp: link: %w", err)
	}
	dec, err := codec.NewDecoder(cfg.FragmentTimeout, cfg.MaxPendingHalves)
	if err != nil {
		return nil, fmt.Errorf("ethudp: link: %w", err)
	}
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, "udp", cfg.Local.String())
	if err != nil {
		return nil, fmt.Errorf("ethudp: link: bind %v: %w", cfg.Local, err)
	}
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		_ = pc.Close()
		return nil, fmt.Errorf("ethudp: link: bind %v: not a UDP socket", cfg.Local)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Link{cfg: cfg, codec: codec, conn: conn, log: log, now: now, frames: make(chan []byte, cfg.RecvQueue),
		cancel: cancel, done: make(chan struct{}), enc: codec.NewEncoder(0)}
	r := cfg.Remote
	l.nat = !r.IsValid() || r.Addr().IsUnspecified() || r.Port() == 0
	if !l.nat {
		l.peer, l.hasPeer = normalize(r), true
	}
	ticks := cfg.Ticks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(PingInterval)
		ticks = ticker.C
	}
	l.wg.Add(3)
	go func() { defer l.wg.Done(); l.readLoop(dec) }()
	go func() { defer l.wg.Done(); l.tickLoop(ctx, ticks) }()
	go func() {
		defer l.wg.Done()
		<-ctx.Done()
		if ticker != nil {
			ticker.Stop()
		}
		_ = conn.Close()
	}()
	go func() { l.wg.Wait(); close(l.done) }()
	return l, nil
}

func normalize(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// Close stops the link and waits for its loops to end.
func (l *Link) Close() error {
	l.cancel()
	<-l.done
	return nil
}

// Done is closed when the link has stopped.
func (l *Link) Done() <-chan struct{} { return l.done }

// LocalAddr returns the bound local address.
func (l *Link) LocalAddr() netip.AddrPort {
	return normalize(l.conn.LocalAddr().(*net.UDPAddr).AddrPort())
}

// Peer returns the current peer and whether one is known (always, with a fixed Remote).
func (l *Link) Peer() (netip.AddrPort, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peer, l.hasPeer
}

// State returns the link state.
func (l *Link) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mon.Up() {
		return StateUp
	}
	return StateDown
}

// Counters returns a snapshot of the counters.
func (l *Link) Counters() Counters {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	c.Dropped = make(map[string]uint64)
	for r, n := range l.drops {
		if n > 0 {
			c.Dropped[DropReason(r).String()] = n
		}
	}
	return c
}

func (l *Link) drop(r DropReason) {
	l.mu.Lock()
	l.drops[r]++
	l.mu.Unlock()
}

// Send encodes one Ethernet frame (MinFrameSize–MaxFrameSize bytes) and writes its datagrams to
// the peer. Refused frames return a *DropError and are counted: DropOversize when the frame or
// its sealed body cannot be carried, DropNoPeer when no peer is known yet in NAT mode,
// DropSendError when the socket refuses a datagram.
func (l *Link) Send(ctx context.Context, frame []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ethudp: send: %w", err)
	}
	if len(frame) < MinFrameSize || len(frame) > MaxFrameSize {
		l.drop(DropOversize)
		return dropf(DropOversize, "frame of %d bytes: an Ethernet frame here is %d-%d bytes", len(frame), MinFrameSize, MaxFrameSize)
	}
	return l.sendPayload(frame, &l.c.FramesSent)
}

// sendPayload encodes and writes one payload (frame or control message) to the peer; it
// increments *sent (a field of l.c) once the payload is encoded and a peer is known, before the
// write, so that a peer that saw the datagram never sees a counter that lags behind.
func (l *Link) sendPayload(payload []byte, sent *uint64) error {
	l.mu.Lock()
	peer, has := l.peer, l.hasPeer
	out, err := l.enc.Encode(payload)
	if err == nil && has {
		*sent++
		if out.Compressed {
			l.c.Compressed++
		}
		if out.Fragmented {
			l.c.Fragmented++
		}
	}
	l.mu.Unlock()
	if err != nil {
		if r, ok := ReasonOf(err); ok {
			l.drop(r)
		}
		return err
	}
	if !has {
		l.drop(DropNoPeer)
		return dropf(DropNoPeer, "no peer learned yet (NAT mode): wait for the peer's first datagram or PASSWORD")
	}
	for _, d := range out.Datagrams {
		if _, werr := l.conn.WriteToUDPAddrPort(d, peer); werr != nil {
			l.drop(DropSendError)
			return &DropError{Reason: DropSendError, Msg: fmt.Sprintf("write to %v", peer), Err: werr}
		}
		l.mu.Lock()
		l.c.DatagramsSent++
		l.mu.Unlock()
	}
	return nil
}

// Recv returns the next received Ethernet frame; the caller owns it.
func (l *Link) Recv(ctx context.Context) ([]byte, error) {
	select {
	case f := <-l.frames:
		return f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("ethudp: recv: %w", ctx.Err())
	case <-l.done:
		select {
		case f := <-l.frames:
			return f, nil
		default:
		}
		return nil, errors.New("ethudp: recv: link closed")
	}
}

func (l *Link) tickLoop(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ticks:
			if !ok {
				return
			}
			l.tick()
		}
	}
}

// tick does one keepalive round in the reference's order: PASSWORD (fixed peer only), PING,
// then the state evaluation.
func (l *Link) tick() {
	if l.cfg.Password != "" && !l.nat {
		if pw, err := PasswordPayload(l.cfg.Password); err == nil {
			_ = l.sendPayload(pw, &l.c.PasswordsSent) // failures are counted
		}
	}
	_ = l.sendPayload([]byte(PingMessage), &l.c.PingsSent)
	l.mu.Lock()
	up, changed := l.mon.Tick()
	if changed {
		l.c.StateChanges++
	}
	l.mu.Unlock()
	if changed {
		l.log.Info("ethudp: link state changed", "local", l.LocalAddr(), "up", up)
	}
}

func (l *Link) readLoop(dec *Decoder) {
	buf := make([]byte, MaxDatagramSize+1)
	for {
		n, from, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors and the like: the reference ignores them too
		}
		l.mu.Lock()
		l.c.DatagramsReceived++
		l.mu.Unlock()
		if n > MaxDatagramSize {
			l.drop(DropOversize)
			continue
		}
		l.handle(dec, normalize(from), buf[:n])
	}
}

// handle processes one datagram from src, following the reference's receive path.
func (l *Link) handle(dec *Decoder, src netip.AddrPort, datagram []byte) {
	if !l.nat {
		if src != l.peer { // the reference's connected socket never sees these
			l.drop(DropUnknownPeer)
			return
		}
	}
	msg, err := dec.Decode(l.now(), datagram)
	if msg.Stale > 0 {
		l.mu.Lock()
		l.drops[DropStaleHalf] += uint64(msg.Stale)
		l.mu.Unlock()
	}
	if err != nil {
		if r, ok := ReasonOf(err); ok {
			l.drop(r)
		}
		return
	}
	if msg.Kind == KindHalf {
		return
	}
	l.mu.Lock()
	if msg.Reassembled {
		l.c.Reassembled++
	}
	if msg.Compressed {
		l.c.Decompressed++
	}
	l.mu.Unlock()
	if l.nat {
		if l.cfg.Password == "" {
			if !l.latch(src) || msg.Kind == KindPassword {
				return
			}
		} else {
			if msg.Kind == KindPassword {
				if PasswordMatches(msg.Payload, l.cfg.Password) {
					l.mu.Lock()
					l.c.PasswordsAccepted++
					l.mu.Unlock()
					l.latch(src)
				} else {
					l.drop(DropWrongPassword)
				}
				return
			}
			if p, ok := l.Peer(); !ok || p != src {
				l.drop(DropUnknownPeer)
				return
			}
		}
	} else if msg.Kind == KindPassword {
		return // a fixed peer needs no password; the reference ignores it
	}
	switch msg.Kind {
	case KindPing:
		l.mu.Lock()
		l.c.PingsReceived++
		l.mu.Unlock()
		_ = l.sendPayload([]byte(PongMessage), &l.c.PongsSent)
	case KindPong:
		l.mu.Lock()
		l.c.PongsReceived++
		l.mon.Pong()
		l.mu.Unlock()
	case KindFrame:
		l.mu.Lock()
		select {
		case l.frames <- msg.Payload:
			l.c.FramesReceived++
		default:
			l.drops[DropQueueFull]++
		}
		l.mu.Unlock()
	}
}

// latch makes src the peer in NAT mode when the configured Remote allows it (its address is
// unspecified or equal, its port 0 or equal) and reports whether it did. A refused source is
// counted as DropUnknownPeer; unlike the reference, which only logs the refusal and still
// forwards the datagram, the caller then drops it.
func (l *Link) latch(src netip.AddrPort) bool {
	r := l.cfg.Remote
	if r.IsValid() {
		if (!r.Addr().IsUnspecified() && r.Addr().Unmap() != src.Addr()) || (r.Port() != 0 && r.Port() != src.Port()) {
			l.drop(DropUnknownPeer)
			return false
		}
	}
	l.mu.Lock()
	changed := !l.hasPeer || l.peer != src
	if changed {
		l.peer, l.hasPeer = src, true
		l.c.PeerChanges++
	}
	l.mu.Unlock()
	if changed {
		l.log.Info("ethudp: peer learned (NAT mode)", "peer", src)
	}
	return true
}
