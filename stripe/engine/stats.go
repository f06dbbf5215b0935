package engine

import (
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/policy"
)

// LinkStats are one link's counters and load.
type LinkStats struct {
	Name   string
	Usable bool   // usable for sending now
	Downs  uint64 // times it became unusable (interface down, no carrier, down error)
	Ups    uint64 // times it became usable (the first sample included)
	// PeerMACs is how many MACs of the peer are known on this link now.
	PeerMACs int
	link.Stats
	// TxLoad and RxLoad are the EWMA-smoothed load rates (rate / Vmax) of the last period.
	TxLoad, RxLoad float64
	// BalanceDegree is TxLoad minus the mean TxLoad of the other links.
	BalanceDegree float64
}

// Stats are the engine's counters.
type Stats struct {
	Links []LinkStats
	// SentFrames and SentBytes count the application frames and payload bytes Send took into
	// the window (each once, however often it went out).
	SentFrames, SentBytes uint64
	// DeliveredFrames and DeliveredBytes count what Receive can return (in order).
	DeliveredFrames, DeliveredBytes uint64
	// Retransmits counts frames sent again (ack late, or their link went down).
	Retransmits uint64
	// FastRetransmits counts the frames marked for sending again before their timeout because
	// acks kept asking for them while later frames arrived.
	FastRetransmits uint64
	// Skips counts policy choices moved to another link because the chosen one was unusable.
	Skips uint64
	// PaceWaits counts sends that waited for their link's token bucket (Config.Pace).
	PaceWaits uint64
	// SendErrors counts link sends that failed for another reason than a down link (the
	// retransmitter recovers the frame).
	SendErrors uint64
	// Policy are the send policy's counters (choices, adjusts, per link).
	Policy policy.Stats
	// Reorder sums the receive connections' reorder counters; ReorderDepth is the most frames
	// held now by one connection, MaxReorderDepth the most ever held.
	Reordered, Lost, Duplicates, TooOld uint64
	ReorderDepth, MaxReorderDepth       int
	// Flows are the connections, each direction.
	SendFlows, RecvFlows int
	// Unacked is the number of frames sent and not yet acknowledged, over all connections.
	Unacked uint64
	// MaxAckDelay is the longest time from a frame's last copy going out to the ack covering
	// it: the retransmit timeout should stay above it.
	MaxAckDelay time.Duration
	// SRTT is the smoothed ack delay and RTO the retransmit timeout it gives now.
	SRTT, RTO time.Duration
	// AcksSent and AcksReceived count ack control frames.
	AcksSent, AcksReceived uint64
	// HellosSent and HellosReceived count discovery frames (requests and replies).
	HellosSent, HellosReceived uint64
	// BadFrames counts frames dropped because they did not decode or were control frames of an
	// unknown type; Foreign those for another node or from a node that is not the peer;
	// Refused data frames of a connection beyond Config.MaxFlows; RxErrors receive errors
	// other than a down link.
	BadFrames, Foreign, Refused, RxErrors uint64
	// Resets counts receive connections the peer restarted (a FlagReset frame of a newer
	// sequence space); StaleFrames data frames dropped because they belong to a sequence space
	// this engine does not follow (one begun before it started, or one already replaced);
	// ResetRequests the reset requests sent for the former. Restarts counts send connections
	// restarted at the peer's request, and Discarded the unacknowledged frames they dropped.
	Resets, StaleFrames, ResetRequests, Restarts, Discarded uint64
	// Discovery are the discovery table's counters.
	Discovery discovery.Stats
}

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats {
	now := time.Now()
	s := Stats{
		SentFrames: e.c.sentFrames.Load(), SentBytes: e.c.sentBytes.Load(),
		DeliveredFrames: e.c.deliveredFrames.Load(), DeliveredBytes: e.c.deliveredByte.Load(),
		Retransmits: e.c.retransmits.Load(), FastRetransmits: e.c.fastRetransmits.Load(), Skips: e.c.skips.Load(), PaceWaits: e.c.paceWaits.Load(), SendErrors: e.c.sendErrors.Load(),
		AcksSent: e.c.acksSent.Load(), AcksReceived: e.c.acksReceived.Load(),
		HellosSent: e.c.hellosSent.Load(), HellosReceived: e.c.hellosReceived.Load(),
		BadFrames: e.c.badFrames.Load(), Foreign: e.c.foreign.Load(), Refused: e.c.refused.Load(),
		RxErrors: e.c.rxErrors.Load(), Discovery: e.table.Stats(),
		Resets: e.c.resets.Load(), StaleFrames: e.c.staleFrames.Load(), ResetRequests: e.c.resetRequests.Load(),
		Restarts: e.c.restarts.Load(), Discarded: e.c.discarded.Load(),
	}
	e.sampleMu.Lock()
	ports := e.tracker.Ports()
	loads := e.tracker.TxLoads()
	e.sampleMu.Unlock()
	for i, ls := range e.links {
		l := LinkStats{Name: ls.l.Name(), Usable: ls.usable.Load(), Downs: ls.downs.Load(), Ups: ls.ups.Load(),
			PeerMACs: len(e.table.MACs(now, e.cfg.Peer, i)), Stats: ls.l.Stats(),
			TxLoad: ports[i].TxLoad, RxLoad: ports[i].RxLoad}
		if b, err := load.BalanceDegree(loads, i); err == nil {
			l.BalanceDegree = b
		}
		s.Links = append(s.Links, l)
	}
	e.sendMu.Lock()
	s.Policy = e.pol.Stats()
	s.SendFlows = len(e.flows)
	s.MaxAckDelay, s.SRTT, s.RTO = e.maxAckDelay, e.srtt, e.rto
	for _, fl := range e.flows {
		s.Unacked += fl.next - fl.base
	}
	e.sendMu.Unlock()
	e.rxMu.Lock()
	s.RecvFlows = len(e.rflows)
	for _, rf := range e.rflows {
		r := rf.buf.Stats()
		s.Reordered += r.Reordered
		s.Lost += r.Lost
		s.Duplicates += r.Duplicates
		s.TooOld += r.TooOld
		s.ReorderDepth = max(s.ReorderDepth, r.Held)
		s.MaxReorderDepth = max(s.MaxReorderDepth, r.MaxHeld)
	}
	e.rxMu.Unlock()
	return s
}
