// Package engine is the stripe data path of one node towards one peer in kernel-NIC mode: it
// owns N links (stripe/link), learns the peer's MACs on each of them (stripe/discovery), sends
// each application frame on the link the send policy picks (stripe/policy, fed with EWMA loads
// from the links' byte counters by stripe/load.Tracker every Config.Period), and merges what
// arrives on all links through one reorder buffer per connection (stripe/reorder), delivering
// in order.
//
// # Connections and sequence numbers
//
// A connection is (service, source port, destination port) from this node to the peer. Its
// frames carry consecutive sequence numbers in the stripe/frame header, from a start taken
// from the clock (see Restarts). Send splits a message into frames of at most MaxPayload
// bytes (the smallest link MTU minus the header), so a connection is a byte stream: Receive
// returns the frames' payloads in order, not the messages Send was given.
//
// # Reliability
//
// The seed left reliability to the application; this engine does not: a frame lost on a link
// (a link going down empties its queue; a full receive buffer drops) would otherwise stall the
// reorder buffer and leave a hole in the stream. The receiver acknowledges cumulatively: every
// Config.AckInterval in which frames of a connection arrived, it sends an ack control frame
// (discovery.MsgAck) carrying the next sequence number it expects. The sender keeps every
// unacknowledged frame, at most Config.Window per connection (Send blocks while the window is
// full), and sends it again on another usable link when it has waited the retransmit timeout
// (TCP's estimator over the measured ack delays, at least Config.RetransmitTimeout; doubling for
// each further copy; only the oldest few hundred frames of a connection per pass), or at once
// when the link it went out on goes down. The receiver's reorder buffer drops the
// copies it already has, so nothing is delivered twice. Frames are declared lost only after
// Config.LossTimeout (longer than the retransmit timeout): then the stream has a gap, counted in
// Stats.Lost, and Receive's sequence numbers jump.
//
// # Links going down and up
//
// A link is usable when its interface is up with carrier (checked every Period), its last send
// did not fail with a down error (link.IsDown), and the peer's MAC on it is known and not
// expired. The policy's choice of an unusable link moves to the next usable one (Stats.Skips);
// the link is used again as soon as it is usable. When no link is usable, frames wait in the
// window and the retransmitter sends them once one is.
//
// # Pacing
//
// With Config.Pace, every link has a stripe/fair.TokenBucket at its Vmax and a send waits for
// its tokens, so the engine never offers a link more than its rate (needed where nothing below
// gives backpressure, as in OVS userspace). Without it, a full socket send buffer makes Send
// wait.
//
// # Control frames
//
// Control frames carry Service discovery.ControlService, flags FlagControl and a message type
// byte (stripe/discovery). Hellos go on every link every Config.HelloInterval. The ack payload is
// AckLen bytes: type 3, a zero byte, then the acknowledged connection's service, source port and
// destination port (2 bytes each, big endian, as the data frames carry them); the header's Seq
// is the next sequence number expected, SrcNode the receiver, DstNode the sender.
//
// # Restarts
//
// Every connection's sequence space starts at a number taken from the wall clock (initialSeq:
// nanoseconds, aligned to reorder.MaxWindow), and its frames carry frame.FlagReset until the
// first ack of that space arrives. A receiver that sees a flagged frame of a newer space than
// the one it follows (the sender restarted) delivers what it holds of the old space and
// follows the new one (Stats.Resets; the first delivery of the new space has Delivery.Reset);
// flagged frames of an older space are dropped (Stats.StaleFrames). A receiver that has no
// state for a connection and gets an unflagged frame (the receiver restarted) drops it and
// sends a reset request, an ack with FlagReset (Stats.ResetRequests); the sender then discards
// the connection's unacknowledged frames (Stats.Discarded: sending them again could hand the
// restarted side's application a copy of what it had before) and starts a new space
// (Stats.Restarts). A flagged frame of a space below the followed one may also be a new space
// whose sender restarted with its clock stepped back (Config.Clock): the receiver drops it as
// stale and sends a reset request naming the start of the space it follows; a sender whose
// current space is not acknowledged yet and starts below that number moves the connection
// into a new space above it, renumbering its unacknowledged frames in order (none of them was
// delivered) and sending them again (Stats.Restarts, nothing discarded); any other sender
// ignores it. Neither side hangs, and nothing is delivered twice or out of order.
//
// Still to come: several peers per engine. The OVS-DPDK link mode reaches the NICs through
// lanes (stripe/ovslane); the engine sees them as ordinary links.
package engine

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/reorder"
)

// Defaults and bounds of Config.
const (
	DefaultPeriod            = 20 * time.Millisecond
	DefaultHelloInterval     = 100 * time.Millisecond
	DefaultPeerTTL           = time.Second
	DefaultWindow            = 4096
	DefaultRetransmitTimeout = 200 * time.Millisecond
	DefaultLossTimeout       = 5 * time.Second
	DefaultAckInterval       = 5 * time.Millisecond
	DefaultMaxFlows          = 64
	DefaultMaxInFlight       = 4 * DefaultWindow
	MaxInFlight              = 1 << 22
	MaxFlows                 = 1 << 16
	MinInterval              = time.Millisecond
	MaxInterval              = time.Minute
	// MaxSend bounds the payload of one Send call.
	MaxSend = 64 << 20
	// MaxVmax bounds a link's Vmax: 1 Tbit/s in bytes per second.
	MaxVmax = 125e9
)

// Config configures an Engine.
type Config struct {
	// Node is this node's id and Peer the peer's, both ≥ 1 and different.
	Node, Peer uint32
	// Links are the links to the peer, 1..discovery.MaxLinks, opened by the caller (who closes
	// them after Run returns). A link's index here is its link index in hellos.
	Links []link.Link
	// Vmax is each link's capacity in bytes per second (one per link, finite, > 0, ≤ MaxVmax):
	// the load model's Vmax and, with Pace, the pacing rate.
	Vmax []float64
	// Policy chooses the send link; Policy.NICs may be 0 (set to len(Links)) or len(Links).
	Policy policy.Config
	// Pace paces every link to its Vmax with a token bucket.
	Pace bool
	// Smoothing is the load EWMA's factor r, 0 < r ≤ 1 (0: load.DefaultSmoothing).
	Smoothing float64
	// Period is T, how often link state and counters are sampled (0: DefaultPeriod).
	Period time.Duration
	// HelloInterval is how often hellos go out on every link (0: DefaultHelloInterval).
	HelloInterval time.Duration
	// PeerTTL is how long a peer MAC stays known without a hello (0: DefaultPeerTTL); more
	// than HelloInterval.
	PeerTTL time.Duration
	// Window bounds each connection's unacknowledged frames and its reorder buffer
	// (0: DefaultWindow; at most reorder.MaxWindow).
	Window int
	// RetransmitTimeout is the least time a frame waits for its ack before it is sent again
	// (0: DefaultRetransmitTimeout); the timeout in use follows the measured ack delay (smoothed
	// delay + 4 × its variation, as TCP's RTO) and is at most half the loss timeout.
	RetransmitTimeout time.Duration
	// LossTimeout is the reorder buffer's loss timeout (0: DefaultLossTimeout); more than
	// RetransmitTimeout, at most reorder.MaxTimeout.
	LossTimeout time.Duration
	// AckInterval is how often the receiver acknowledges (0: DefaultAckInterval); less than
	// RetransmitTimeout.
	AckInterval time.Duration
	// MaxFlows bounds the connections, each direction (0: DefaultMaxFlows; at most MaxFlows).
	// The receive side holds at most MaxFlows × Window frames in its reorder buffers.
	MaxFlows int
	// MaxInFlight bounds the unacknowledged frames of all connections together, which the
	// sender keeps (0: DefaultMaxInFlight, about 24 MB of 1500-byte frames; at most
	// MaxInFlight); Send waits while it is reached.
	MaxInFlight int
	// Clock is the wall clock every connection's sequence space starts from (see Restarts;
	// nil: the system clock). Timeouts and rates use the monotonic system clock regardless.
	Clock load.Clock
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// duration checks and defaults one duration field.
func duration(name string, d *time.Duration, def time.Duration) error {
	if *d == 0 {
		*d = def
	}
	if *d < MinInterval || *d > MaxInterval {
		return fmt.Errorf("engine: %s %v: want %v to %v (or 0 for %v)", name, *d, MinInterval, MaxInterval, def)
	}
	return nil
}

// check validates cfg and fills its defaults.
func (c *Config) check() error {
	if c.Node == 0 || c.Peer == 0 || c.Node == c.Peer {
		return fmt.Errorf("engine: node %d, peer %d: want two different ids ≥ 1", c.Node, c.Peer)
	}
	n := len(c.Links)
	if n < 1 || n > discovery.MaxLinks || n > policy.MaxNICs {
		return fmt.Errorf("engine: %d links: want 1 to %d", n, min(discovery.MaxLinks, policy.MaxNICs))
	}
	for i, l := range c.Links {
		if l == nil {
			return fmt.Errorf("engine: link %d is nil: open it with link.Open", i)
		}
		if l.MTU() < 64+128 {
			return fmt.Errorf("engine: link %d (%s) MTU %d: want at least %d", i, l.Name(), l.MTU(), 64+128)
		}
	}
	if len(c.Vmax) != n {
		return fmt.Errorf("engine: %d Vmax values for %d links: give each link's capacity in bytes per second", len(c.Vmax), n)
	}
	for i, v := range c.Vmax {
		if !(v > 0) || v > MaxVmax || math.IsInf(v, 0) {
			return fmt.Errorf("engine: link %d Vmax %v bytes/s: want more than 0 and at most %v", i, v, MaxVmax)
		}
	}
	if c.Policy.NICs == 0 {
		c.Policy.NICs = n
	}
	if c.Policy.NICs != n {
		return fmt.Errorf("engine: policy for %d NICs with %d links: leave Policy.NICs 0", c.Policy.NICs, n)
	}
	for _, d := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"period", &c.Period, DefaultPeriod},
		{"hello interval", &c.HelloInterval, DefaultHelloInterval},
		{"peer TTL", &c.PeerTTL, DefaultPeerTTL},
		{"retransmit timeout", &c.RetransmitTimeout, DefaultRetransmitTimeout},
		{"loss timeout", &c.LossTimeout, DefaultLossTimeout},
		{"ack interval", &c.AckInterval, DefaultAckInterval},
	} {
		if err := duration(d.name, d.d, d.def); err != nil {
			return err
		}
	}
	if c.PeerTTL <= c.HelloInterval {
		return fmt.Errorf("engine: peer TTL %v not above the hello interval %v: a MAC would expire between hellos", c.PeerTTL, c.HelloInterval)
	}
	if c.LossTimeout <= c.RetransmitTimeout || c.LossTimeout > reorder.MaxTimeout {
		return fmt.Errorf("engine: loss timeout %v: want above the retransmit timeout %v and at most %v", c.LossTimeout, c.RetransmitTimeout, reorder.MaxTimeout)
	}
	if c.AckInterval >= c.RetransmitTimeout {
		return fmt.Errorf("engine: ack interval %v not below the retransmit timeout %v: every frame would be sent twice", c.AckInterval, c.RetransmitTimeout)
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Window < 1 || c.Window > reorder.MaxWindow {
		return fmt.Errorf("engine: window of %d frames: want 1 to %d", c.Window, reorder.MaxWindow)
	}
	if c.MaxFlows == 0 {
		c.MaxFlows = DefaultMaxFlows
	}
	if c.MaxFlows < 1 || c.MaxFlows > MaxFlows {
		return fmt.Errorf("engine: at most %d connections: want 1 to %d", c.MaxFlows, MaxFlows)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > MaxInFlight {
		return fmt.Errorf("engine: at most %d frames in flight: want 1 to %d", c.MaxInFlight, MaxInFlight)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
	return nil
}
