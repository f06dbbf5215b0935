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
// is sent twice at worst; the receiver drops the second copy. The age is checked again every
// fastCheck (retransmitLoop), because the acks stop once the window is full behind the hole.
// When the frames after the hole were lost too (a receiver kept from running drops everything
// its links bring meanwhile), no ack repeats the base at all: a base frame older than twice the
// estimate is sent again without them (a tail-loss probe), still well before the timeout.
const (
	fastRetransmitDups = 2
	fastCheck          = 5 * time.Millisecond
)

// dupAckLocked counts an ack of connection fl that did not move its base, and marks the base
// frame for the retransmitter when the rule above says so. Called with sendMu held.
func (e *Engine) dupAckLocked(fl *sendFlow, now time.Time) {
	fl.dups++
	e.fastLocked(fl, now)
}

// fastLocked marks fl's base frame for the retransmitter when enough acks repeated it and it
// is old enough; it reports whether it did. Called with sendMu held.
func (e *Engine) fastLocked(fl *sendFlow, now time.Time) bool {
	if fl.next == fl.base {
		return false
	}
	p := &fl.slots[fl.base%uint64(len(fl.slots))]
	if !p.used || p.link < 0 || p.fast {
		return false // not sent yet, due already, or marked
	}
	age, wait := now.Sub(p.sent), max(e.srtt+4*e.rttvar, 2*e.cfg.AckInterval)
	if age < wait || fl.dups < fastRetransmitDups && age < 2*wait {
		return false
	}
	fl.dups = 0
	p.fast = true
	e.c.fastRetransmits.Add(1)
	e.kickRetransmit()
	return true
}

// fastDue applies fastLocked to every connection at now; it reports whether it marked a frame.
func (e *Engine) fastDue(now time.Time) bool {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	marked := false
	for _, fl := range e.flows {
		if e.fastLocked(fl, now) {
			marked = true
		}
	}
	return marked
}
