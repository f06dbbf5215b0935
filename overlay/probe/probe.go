// Package probe measures the overlay's underlay links (issue 17) and reports them into the
// fabric database's link metrics, which the controller turns into route costs: per link the
// one-way latency (half the median round trip of UDP echoes to the peer's probe responder),
// the loss (echoes unanswered in a window) and a bandwidth estimate (the dispersion of the
// replies to a train of back-to-back packets, smoothed and capped).
//
// One UDP socket per node, on the probe port, both answers other nodes' probes and sends this
// node's. Which links a node measures: those to every registered node sharing a carrier with
// it, where at least one end is a super (ordinary nodes never talk to each other); an ordinary
// node reports its links to supers, and of two supers the one whose name sorts first reports.
// A window in which no echo came back reports the link dead (bandwidth 0), which removes it
// from the route graph until it answers again. Every packet received is checked (size, magic,
// version, type, fields) and a bad one is dropped and counted; every report is validated
// (fabric.LinkReport.Validate) before it is written.
package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

// Defaults and bounds of Config.
const (
	// DefaultPort is the probe port when Config.Port is 0.
	DefaultPort = 7471
	// DefaultInterval is the time between echoes of a link when Config.Interval is 0.
	DefaultInterval = time.Second
	// MinInterval and MaxInterval bound Config.Interval.
	MinInterval = 10 * time.Millisecond
	MaxInterval = time.Minute
	// DefaultWindow is the number of echoes per report when Config.Window is 0.
	DefaultWindow = 10
	// MinWindow and MaxWindow bound Config.Window.
	MinWindow = 2
	MaxWindow = 1000
	// DefaultMaxBandwidthKbps caps the bandwidth estimate when Config.MaxBandwidthKbps is 0:
	// 10 Gbit/s.
	DefaultMaxBandwidthKbps = 10_000_000
	// TrainLen is the number of packets of a bandwidth train.
	TrainLen = 16
	// MaxTargets bounds the links one node probes.
	MaxTargets = 256
	// smoothing is the weight of a new bandwidth estimate in the running one.
	smoothing = 0.5
	// RefreshWindows is how many windows pass at most between two reports of a link whose
	// measurements do not change significantly (the report then repeats the last values
	// with a new time, so the controller sees the link alive without a new route version).
	RefreshWindows = 6
)

// Significant reports whether measurement now differs enough from the last one reported
// (reported false: none yet) to be written: the first report, a link dying or coming back,
// latency moving by more than 10 % and more than 1 ms, bandwidth by more than 20 %, or loss by
// more than one point (10,000 ppm). Smaller changes are noise: writing them would make the
// controller publish a new route version each window.
func Significant(last, now fabric.LinkReport, reported bool) bool {
	if !reported || (last.BandwidthKbps == 0) != (now.BandwidthKbps == 0) {
		return true
	}
	dl := now.LatencyUs - last.LatencyUs
	if dl < 0 {
		dl = -dl
	}
	if dl > 1000 && float64(dl) > 0.1*float64(last.LatencyUs) {
		return true
	}
	db := math.Abs(float64(now.BandwidthKbps - last.BandwidthKbps))
	if db > 0.2*float64(last.BandwidthKbps) {
		return true
	}
	dp := now.LossPPM - last.LossPPM
	return dp > 10_000 || dp < -10_000
}

// Fabric is what the prober needs from the fabric database; *fabric.Client implements it.
type Fabric interface {
	Nodes(ctx context.Context) ([]fabric.NodeState, error)
	ReportLink(ctx context.Context, l fabric.LinkReport) error
}

// Config configures a Prober.
type Config struct {
	// Self is this node (name, kind, carriers).
	Self fabric.NodeSpec
	// Local are this node's underlay addresses (to pick a peer's address: see Target).
	Local []netip.Addr
	// Port is the UDP port of the probe responders (0: DefaultPort); a peer registered as
	// IP:port is probed at that port instead.
	Port uint16
	// Interval is the time between echoes of one link (0: DefaultInterval).
	Interval time.Duration
	// Window is the number of echoes per report (0: DefaultWindow).
	Window int
	// MaxBandwidthKbps caps the bandwidth estimate (0: DefaultMaxBandwidthKbps).
	MaxBandwidthKbps int64
	// Via pins the address a peer is probed at (as the tunnel uses it).
	Via map[string]netip.Addr
	// Fabric reads the nodes and takes the reports. Required by Run.
	Fabric Fabric
	// Logger receives report errors; nil discards them.
	Logger *slog.Logger
}

// CheckBounds checks the numeric settings (0 means the default).
func (c Config) CheckBounds() error {
	if c.Interval != 0 && (c.Interval < MinInterval || c.Interval > MaxInterval) {
		return fmt.Errorf("interval %v: give %v to %v", c.Interval, MinInterval, MaxInterval)
	}
	if c.Window != 0 && (c.Window < MinWindow || c.Window > MaxWindow) {
		return fmt.Errorf("window %d: give %d to %d echoes", c.Window, MinWindow, MaxWindow)
	}
	if c.MaxBandwidthKbps < 0 || c.MaxBandwidthKbps > fabric.MaxBandwidthKbps {
		return fmt.Errorf("max bandwidth %d kbit/s: give 1 to %d", c.MaxBandwidthKbps, int64(fabric.MaxBandwidthKbps))
	}
	return nil
}

// withDefaults returns c with its defaults applied.
func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxBandwidthKbps == 0 {
		c.MaxBandwidthKbps = DefaultMaxBandwidthKbps
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Target is one link this node measures and reports.
type Target struct {
	// Peer is the node at the other end.
	Peer string
	// Addr is where its responder is probed.
	Addr netip.AddrPort
}

// Targets returns the links self measures among nodes, sorted by peer: nodes sharing a carrier
// with self, not both ordinary, that self reports (an ordinary node reports its links to
// supers; of two supers, the one whose name sorts first). A peer without an underlay address
// of self's families is left out. At most MaxTargets.
func Targets(c Config, nodes []fabric.NodeState) []Target {
	c = c.withDefaults()
	var out []Target
	for _, n := range nodes {
		if n.Name == c.Self.Name || !shareCarrier(c.Self.Carriers, n.Carriers) {
			continue
		}
		switch {
		case c.Self.Kind == fabric.KindOrdinary && n.Kind == fabric.KindSuper:
		case c.Self.Kind == fabric.KindSuper && n.Kind == fabric.KindSuper && c.Self.Name < n.Name:
		default:
			continue
		}
		addr, ok := peerAddr(c, n)
		if !ok {
			continue
		}
		out = append(out, Target{Peer: n.Name, Addr: addr})
		if len(out) == MaxTargets {
			break
		}
	}
	slices.SortFunc(out, func(a, b Target) int {
		if a.Peer < b.Peer {
			return -1
		}
		if a.Peer > b.Peer {
			return 1
		}
		return 0
	})
	return out
}

// shareCarrier reports whether two carrier lists intersect.
func shareCarrier(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// peerAddr picks the address and port to probe n at: Via, else the registered address with
// the longest common prefix with a local one (the same rule as the tunnel's next hop).
func peerAddr(c Config, n fabric.NodeState) (netip.AddrPort, bool) {
	ports := map[netip.Addr]uint16{}
	var cands []netip.Addr
	for _, s := range n.Underlay {
		a, port, err := parseUnderlay(s)
		if err != nil || a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" {
			continue
		}
		cands = append(cands, a)
		if port != 0 {
			ports[a] = port
		}
	}
	a, ok := c.Via[n.Name]
	if !ok {
		if a, ok = selectAddr(c.Local, cands); !ok {
			return netip.AddrPort{}, false
		}
	}
	port := c.Port
	if p, ok := ports[a]; ok {
		port = p
	}
	return netip.AddrPortFrom(a, port), true
}

// parseUnderlay parses "IP" or "IP:port".
func parseUnderlay(s string) (netip.Addr, uint16, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), 0, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	return ap.Addr().Unmap(), ap.Port(), nil
}

// selectAddr is the longest-common-prefix choice (overlay/ovsinstall.SelectUnderlay's rule;
// duplicated here so that the prober does not depend on the OVS installer).
func selectAddr(local, cands []netip.Addr) (netip.Addr, bool) {
	best, bestLen, found := netip.Addr{}, -1, false
	for _, c := range cands {
		l := -1
		for _, a := range local {
			if a.Is4() == c.Is4() {
				l = max(l, common(a, c))
			}
		}
		if len(local) == 0 {
			l = 0
		}
		if l >= 0 && (!found || l > bestLen || (l == bestLen && c.Less(best))) {
			best, bestLen, found = c, l, true
		}
	}
	return best, found
}

// common is the length of the common prefix of two addresses of one family.
func common(a, b netip.Addr) int {
	for bits := a.BitLen(); bits > 0; bits-- {
		pa, _ := a.Prefix(bits)
		pb, _ := b.Prefix(bits)
		if pa == pb {
			return bits
		}
	}
	return 0
}

// LinkStats is what the prober knows of one link; read with Prober.Links.
type LinkStats struct {
	Target
	// Sent and Received count echoes of the current window.
	Sent, Received int
	// Last is the last report written (zero before the first).
	Last fabric.LinkReport
	// Reports counts reports written; ReportErrors those that failed; Unchanged windows whose
	// measurement was too close to the last report to be written.
	Reports, ReportErrors, Unchanged int
}

// Stats counts what a prober did.
type Stats struct {
	// Answered counts echoes and train packets of other nodes answered.
	Answered int64
	// Refused counts echoes and train packets not answered because their source address is
	// not a registered node's underlay address (the responder is no reflector).
	Refused int64
	// Bad counts packets dropped as malformed or unexpected.
	Bad int64
	// Links is every measured link, sorted by peer.
	Links []LinkStats
}

// link is the state of one measured link (guarded by Prober.mu).
type link struct {
	LinkStats
	outstanding map[uint64]time.Time // echo seq → send time
	rtts        []time.Duration
	trainID     uint64
	trainAt     []time.Time // arrival of each train reply (zero: not arrived)
	bandwidth   float64     // smoothed estimate, bit/s (0: none yet)
	latency     time.Duration
	stale       int // windows since the last report
}

// Prober measures and reports this node's links and answers other nodes' probes; create with
// New, run with Run.
type Prober struct {
	cfg Config

	mu       sync.Mutex
	links    map[string]*link
	byAddr   map[netip.AddrPort]*link // every address of each peer at its probed port
	known    map[netip.Addr]bool      // every registered node's underlay addresses (and Via)
	seq      uint64
	answered int64
	refused  int64
	bad      int64
}

// New checks cfg and returns a prober.
func New(cfg Config) (*Prober, error) {
	if err := cfg.CheckBounds(); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	if cfg.Fabric == nil {
		return nil, errors.New("probe: Config.Fabric is nil: give the fabric client")
	}
	if err := cfg.Self.Validate(); err != nil {
		return nil, fmt.Errorf("probe: Config.Self: %w", err)
	}
	return &Prober{cfg: cfg.withDefaults(), links: map[string]*link{}, byAddr: map[netip.AddrPort]*link{}}, nil
}

// Stats returns a snapshot of the counters.
func (p *Prober) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Answered: p.answered, Refused: p.refused, Bad: p.bad}
	for _, l := range p.links {
		s.Links = append(s.Links, l.LinkStats)
	}
	slices.SortFunc(s.Links, func(a, b LinkStats) int {
		if a.Peer < b.Peer {
			return -1
		}
		if a.Peer > b.Peer {
			return 1
		}
		return 0
	})
	return s
}

// Listen opens the probe socket on the probe port of every address (the responder and the
// prober share it).
func (p *Prober) Listen() (*net.UDPConn, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{Port: int(p.cfg.Port)})
	if err != nil {
		return nil, fmt.Errorf("probe: listen on UDP port %d: %w", p.cfg.Port, err)
	}
	return conn, nil
}

// Run answers probes on conn and measures the links until ctx ends; it closes conn and
// returns ctx's error.
func (p *Prober) Run(ctx context.Context, conn *net.UDPConn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.receive(conn)
	}()
	defer func() { conn.Close(); <-done }()
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	round := 0
	for {
		if round%p.cfg.Window == 0 {
			p.refresh(ctx)
		}
		p.sendEchoes(conn)
		if round%p.cfg.Window == p.cfg.Window/2 {
			p.sendTrains(conn)
		}
		round++
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if round%p.cfg.Window == 0 {
			p.report(ctx)
		}
	}
}

// refresh re-reads the nodes and updates the set of links (keeping the state of links that
// stay).
func (p *Prober) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, p.fabricTimeout())
	defer cancel()
	nodes, err := p.cfg.Fabric.Nodes(rctx)
	if err != nil {
		p.cfg.Logger.Warn("probe: cannot read the nodes; keeping the links", "err", err)
		return
	}
	targets := Targets(p.cfg, nodes)
	p.mu.Lock()
	defer p.mu.Unlock()
	links := map[string]*link{}
	byAddr := map[netip.AddrPort]*link{}
	for _, t := range targets {
		l := p.links[t.Peer]
		if l == nil || l.Addr != t.Addr {
			l = &link{LinkStats: LinkStats{Target: t}, outstanding: map[uint64]time.Time{}}
		}
		links[t.Peer], byAddr[t.Addr] = l, l
	}
	// A peer's responder answers from whichever of its addresses the kernel picks (its socket
	// is not bound to one): its replies are taken from any of its registered addresses at the
	// probed port, unless that address and port is another link's probed one.
	known := map[netip.Addr]bool{}
	for _, n := range nodes {
		l := links[n.Name]
		for _, u := range n.Underlay {
			a, _, err := parseUnderlay(u)
			if err != nil || !a.IsValid() || a.IsUnspecified() {
				continue
			}
			known[a] = true
			if l != nil {
				if k := netip.AddrPortFrom(a, l.Addr.Port()); byAddr[k] == nil {
					byAddr[k] = l
				}
			}
		}
	}
	for _, a := range p.cfg.Via {
		known[a.Unmap()] = true
	}
	p.links, p.byAddr, p.known = links, byAddr, known
}

// fabricTimeout bounds one fabric read or report: a window, within 1 to 10 s (a short probe
// interval must not starve the fabric calls of a loaded cluster).
func (p *Prober) fabricTimeout() time.Duration {
	return min(max(p.cfg.Interval*time.Duration(p.cfg.Window), time.Second), 10*time.Second)
}

// sendEchoes sends one echo on every link.
func (p *Prober) sendEchoes(conn *net.UDPConn) {
	var buf [EchoLen]byte
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, l := range p.links {
		p.seq++
		b, err := Packet{Type: TypeEcho, Seq: p.seq, Len: EchoLen}.Marshal(buf[:])
		if err != nil {
			continue
		}
		// Forget echoes older than a window: they count as lost.
		for s, at := range l.outstanding {
			if now.Sub(at) > time.Duration(p.cfg.Window)*p.cfg.Interval {
				delete(l.outstanding, s)
			}
		}
		if _, err := conn.WriteToUDPAddrPort(b, l.Addr); err == nil {
			l.outstanding[p.seq] = now
			l.Sent++
		}
	}
}

// sendTrains sends a bandwidth train on every link.
func (p *Prober) sendTrains(conn *net.UDPConn) {
	var buf [TrainPacketLen]byte
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		p.seq++
		l.trainID, l.trainAt = p.seq, make([]time.Time, TrainLen)
		for i := range TrainLen {
			b, err := Packet{Type: TypeTrain, Seq: l.trainID, Index: uint16(i), Count: TrainLen, Len: TrainPacketLen}.Marshal(buf[:])
			if err != nil {
				break
			}
			if _, err := conn.WriteToUDPAddrPort(b, l.Addr); err != nil {
				break
			}
		}
	}
}

// receive reads packets until conn closes: it answers echoes and trains, and records replies.
func (p *Prober) receive(conn *net.UDPConn) {
	buf := make([]byte, MaxPacketLen+1)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		now := time.Now()
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		pkt, err := Parse(buf[:n])
		if err != nil {
			p.count(&p.bad)
			continue
		}
		switch pkt.Type {
		case TypeEcho, TypeTrain:
			if !p.isKnown(from.Addr()) {
				p.count(&p.refused)
				continue
			}
			buf[5] = pkt.Type + 1 // the reply type; everything else echoed as is
			if _, err := conn.WriteToUDPAddrPort(buf[:n], from); err == nil {
				p.count(&p.answered)
			}
		case TypeReply, TypeTrainReply:
			p.reply(pkt, from, now)
		}
	}
}

// isKnown reports whether addr is a registered node's underlay address (as of the last node
// read: none before the first).
func (p *Prober) isKnown(addr netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known[addr]
}

// count increments a counter under the lock.
func (p *Prober) count(c *int64) {
	p.mu.Lock()
	*c++
	p.mu.Unlock()
}

// reply records a reply from a measured link; anything else is counted bad.
func (p *Prober) reply(pkt Packet, from netip.AddrPort, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.byAddr[from]
	switch {
	case l == nil:
		p.bad++
	case pkt.Type == TypeReply:
		at, ok := l.outstanding[pkt.Seq]
		if !ok {
			p.bad++ // late, duplicated or never sent
			return
		}
		delete(l.outstanding, pkt.Seq)
		l.Received++
		if len(l.rtts) < MaxWindow {
			l.rtts = append(l.rtts, now.Sub(at))
		}
	case pkt.Seq == l.trainID && int(pkt.Count) == len(l.trainAt) && l.trainAt[pkt.Index].IsZero():
		l.trainAt[pkt.Index] = now
	default:
		p.bad++
	}
}

// report writes one report per link from the window just ended and starts the next window.
func (p *Prober) report(ctx context.Context) {
	p.mu.Lock()
	var reports []fabric.LinkReport
	for _, l := range p.links {
		m := p.measure(l)
		switch {
		case Significant(l.Last, m, l.Reports > 0):
			l.stale = 0
		case l.stale+1 < RefreshWindows:
			l.stale++
			l.Unchanged++
			continue // nothing worth a new route version
		default:
			// Refresh the measurement time with the values last reported, so that costs (and
			// route versions) do not follow the noise.
			l.stale = 0
			m = l.Last
			m.MeasuredAt = time.Time{}
		}
		reports = append(reports, m)
	}
	p.mu.Unlock()
	for _, r := range reports {
		rctx, cancel := context.WithTimeout(ctx, p.fabricTimeout())
		err := r.Validate()
		if err == nil {
			err = p.cfg.Fabric.ReportLink(rctx, r)
		}
		cancel()
		peer := r.B
		if peer == p.cfg.Self.Name {
			peer = r.A
		}
		p.mu.Lock()
		if l := p.links[peer]; l != nil {
			if err != nil {
				l.ReportErrors++
			} else {
				l.Reports++
				l.Last = r
			}
		}
		p.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("probe: link report failed", "peer", peer, "err", err)
		}
	}
}

// measure turns a link's window into a report and resets the window (called under p.mu).
func (p *Prober) measure(l *link) fabric.LinkReport {
	r := fabric.LinkReport{A: p.cfg.Self.Name, B: l.Peer}
	sent, recv := l.Sent, l.Received
	if sent > 0 {
		r.LossPPM = min(int64(math.Round(float64(sent-recv)/float64(sent)*1e6)), fabric.MaxLossPPM)
		r.LossPPM = max(r.LossPPM, 0)
	}
	if len(l.rtts) > 0 {
		rtts := slices.Clone(l.rtts)
		slices.Sort(rtts)
		l.latency = rtts[len(rtts)/2] / 2
	}
	r.LatencyUs = min(l.latency.Microseconds(), fabric.MaxLatencyUs)
	if est, ok := trainEstimate(l.trainAt); ok {
		if l.bandwidth == 0 {
			l.bandwidth = est
		} else {
			l.bandwidth = smoothing*est + (1-smoothing)*l.bandwidth
		}
	}
	bw := l.bandwidth
	if bw == 0 {
		bw = float64(p.cfg.MaxBandwidthKbps) * 1000 // no train came back yet: assume the cap
	}
	r.BandwidthKbps = min(max(int64(bw/1000), 1), p.cfg.MaxBandwidthKbps)
	if recv == 0 {
		r.BandwidthKbps = 0 // dead: no echo came back in the whole window
	}
	l.Sent, l.Received, l.rtts = 0, 0, l.rtts[:0]
	return r
}

// trainEstimate is the bandwidth in bit/s from a train's reply arrivals: the bytes after the
// first reply over the time from the first to the last (at least 2 replies, spread in time).
func trainEstimate(at []time.Time) (float64, bool) {
	var first, last time.Time
	n := 0
	for _, t := range at {
		if t.IsZero() {
			continue
		}
		n++
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	d := last.Sub(first)
	if n < 2 || d <= 0 {
		return 0, false
	}
	return float64((n-1)*TrainPacketLen*8) / d.Seconds(), true
}
