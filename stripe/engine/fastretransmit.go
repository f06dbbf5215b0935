package engine

import "time"

// Fast retransmission. The receiver acknowledges a connection every AckInterval while frames
// of it arrive, with the lowest sequence number it still misses. An ack that does not move the
// sender's base (a "duplicate" ack) therefore says that later frames arrived and the base frame
// did not. After fastRetransmitDups of them in a row, when the base frame went out longer ago
// than the ack delay estimate (srtt + 4·rttvar, at least two ack intervals), the sender sends
// it again at once instead of after the retransmit timeout (at least Config.RetransmitTimeout,
// 200 ms by default): one lost frame otherwise holds up the whole window, the reorder buffer
// behind it, and the application, for that long. A frame still on its way over a slower link
// is sent twice at worst; the receiver drops the second copy.
const fastRetransmitDups = 2

// dupAckLocked counts an ack of connection fl that did not move its base, and marks the base
// frame for the retransmitter when the rule above says so. Called with sendMu held.
func (e *Engine) dupAckLocked(fl *sendFlow, now time.Time) {
	if fl.dups++; fl.dups < fastRetransmitDups {
		return
	}
	p := &fl.slots[fl.base%uint64(len(fl.slots))]
	if !p.used || p.link < 0 || p.fast {
		return // not sent yet, due already, or marked
	}
	if now.Sub(p.sent) < max(e.srtt+4*e.rttvar, 2*e.cfg.AckInterval) {
		return
	}
	fl.dups = 0
	p.fast = true
	e.c.fastRetransmits.Add(1)
	e.kickRetransmit()
}
