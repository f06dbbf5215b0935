package watch

import (
	"cmp"
	"slices"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// queue is one plugin's coalescing queue: the latest state of each interface the plugin must
// hear about, at most max of them, and the snapshot under way. It is not safe for concurrent
// use (the Dispatcher's lock guards it).
//
// Coalescing: a newer state of an interface replaces the pending one (an interface that comes
// and goes before it is delivered disappears without a trace). The kind of an event is decided
// when its batch is built, from what the plugin was told so far (known): a state of an
// interface the plugin knows is EventChanged, of one it does not EventAdded; the end of one it
// knows is EventRemoved.
//
// Overflow: when a state of a new interface would make more than max interfaces pending, the
// queue drops them all and asks for a resync instead (the Dispatcher starts one when no batch
// is in flight): memory stays bounded by max whatever the rate of changes, and the plugin
// still converges. During a snapshot, an overflow asks for another snapshot once this one is
// done.
type queue struct {
	max     int
	pending map[string]pending
	known   map[string]struct{}
	snap    *snapshot
	// again is set by an overflow during a snapshot: resync once it is done.
	again bool
	// wantResync asks the Dispatcher for a snapshot (it has the names).
	wantResync bool
	// epoch changes with every snapshot started: a batch built before answers nothing.
	epoch uint64
	stats Stats
}

// pending is one interface's latest state for the plugin: gone when it went away or no longer
// matches the plugin's filter (s is then its last state).
type pending struct {
	s    *state
	gone bool
	seq  uint64
}

// snapshot is a resync under way: the names to send, and how many were delivered.
type snapshot struct {
	names   []string
	next    int
	started bool // the first batch (Resync) was delivered
}

// batch is one delivery: its events and what the queue needs to settle it.
type batch struct {
	api.PortEventBatch
	epoch   uint64
	snap    bool      // a snapshot batch; next is the snapshot's cursor after it
	next    int       // for snapshot batches
	entries []pending // the pending states it took, for a redelivery
}

func newQueue(bound int) *queue {
	return &queue{max: bound, pending: map[string]pending{}, known: map[string]struct{}{}, stats: Stats{MaxPending: bound}}
}

// offer records the latest state of interface name for the plugin: s when it matches the
// plugin's filter, or gone (s is then its last state, possibly nil).
func (q *queue) offer(name string, s *state, gone bool, seq uint64) {
	_, isKnown := q.known[name]
	old, isPending := q.pending[name]
	if gone && !isKnown {
		if isPending {
			delete(q.pending, name) // came and went before the plugin heard of it
			q.stats.Coalesced++
		}
		return
	}
	if isPending {
		q.stats.Coalesced++
	} else if len(q.pending) >= q.max {
		q.overflow()
		return
	}
	if gone && s == nil {
		s = old.s
	}
	if s == nil {
		s = &state{ev: api.PortEvent{Interface: name}}
	}
	q.pending[name] = pending{s: s, gone: gone, seq: seq}
	q.stats.PendingHigh = max(q.stats.PendingHigh, len(q.pending))
}

// overflow drops every pending state and asks for a resync: one more interface would have
// made more than max pending.
func (q *queue) overflow() {
	q.stats.Overflows++
	q.stats.Dropped += uint64(len(q.pending)) + 1
	clear(q.pending)
	if q.snap != nil {
		q.again = true
	} else {
		q.wantResync = true
	}
}

// startResync starts a snapshot of names (the interfaces matching the plugin's filter now, in
// order): the plugin forgets everything it knew, pending states are dropped (the snapshot and
// the changes after it say everything), and a batch in flight answers nothing.
func (q *queue) startResync(names []string) {
	q.epoch++
	clear(q.pending)
	clear(q.known)
	q.snap = &snapshot{names: names}
	q.again, q.wantResync = false, false
}

// ready reports whether next would return a batch (a snapshot under way or states pending).
func (q *queue) ready() bool { return q.snap != nil || len(q.pending) > 0 }

// next builds the next batch, at most maxEvents events of at most maxBytes in all (one event
// whatever its size), or returns false when there is nothing to deliver. lookup returns an
// interface's current state when it matches the plugin's filter (nil otherwise).
func (q *queue) next(maxEvents, maxBytes int, lookup func(string) *state) (batch, bool) {
	b := batch{epoch: q.epoch}
	size := 0
	fits := func(s *state) bool {
		return len(b.Events) == 0 || (len(b.Events) < maxEvents && size+s.size <= maxBytes)
	}
	if sn := q.snap; sn != nil {
		b.snap, b.Resync = true, !sn.started
		i := sn.next
		for ; i < len(sn.names); i++ {
			s := lookup(sn.names[i])
			if s == nil {
				continue
			}
			if !fits(s) {
				break
			}
			ev := s.ev
			ev.Kind = api.EventAdded
			b.Events = append(b.Events, ev)
			size += s.size
			delete(q.pending, sn.names[i]) // the snapshot sends its latest state
		}
		b.next, b.ResyncDone = i, i == len(sn.names)
		return b, true
	}
	if len(q.pending) == 0 {
		return b, false
	}
	names := make([]string, 0, len(q.pending))
	for n := range q.pending {
		names = append(names, n)
	}
	slices.SortFunc(names, func(x, y string) int { return cmp.Compare(q.pending[x].seq, q.pending[y].seq) })
	for _, n := range names {
		p := q.pending[n]
		_, isKnown := q.known[n]
		if p.gone && !isKnown {
			delete(q.pending, n)
			continue
		}
		if !fits(p.s) {
			break
		}
		ev := p.s.ev
		switch {
		case p.gone:
			ev.Kind = api.EventRemoved
		case isKnown:
			ev.Kind = api.EventChanged
		default:
			ev.Kind = api.EventAdded
		}
		b.Events = append(b.Events, ev)
		b.entries = append(b.entries, p)
		size += p.s.size
		delete(q.pending, n)
	}
	return b, len(b.Events) > 0
}

// done settles a batch: delivered (ok) or to be delivered again, merged with the states that
// arrived meanwhile (newer ones win). A batch of an earlier epoch changes nothing.
func (q *queue) done(b batch, ok bool) {
	if b.epoch != q.epoch {
		return
	}
	if !ok {
		q.stats.Failures++
		if b.snap {
			return // the snapshot's cursor did not move: the same names go again
		}
		for _, p := range b.entries {
			if _, newer := q.pending[p.s.ev.Interface]; newer {
				continue
			}
			if len(q.pending) >= q.max {
				q.overflow()
				return
			}
			q.pending[p.s.ev.Interface] = p
		}
		q.stats.PendingHigh = max(q.stats.PendingHigh, len(q.pending))
		return
	}
	q.stats.Batches++
	q.stats.Events += uint64(len(b.Events))
	for _, ev := range b.Events {
		if ev.Kind == api.EventRemoved {
			delete(q.known, ev.Interface)
		} else {
			q.known[ev.Interface] = struct{}{}
		}
	}
	if !b.snap {
		return
	}
	q.snap.started = true
	q.snap.next = b.next
	if b.ResyncDone {
		q.snap = nil
		q.stats.Resyncs++
		if q.again {
			q.again, q.wantResync = false, true
		}
	}
}

// snapshotStats fills the gauges of s from the queue.
func (q *queue) snapshotStats() Stats {
	s := q.stats
	s.Pending, s.Known, s.Resyncing = len(q.pending), len(q.known), q.snap != nil || q.wantResync
	return s
}
