package engine

import (
	"net"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/stripe/frame"
)

// Buffer reuse. The data path allocates nothing per frame once warm:
//
//   - Sent frames live in frameBufs from a free list guarded by sendMu. A frameBuf counts its
//     holders: the window slot (until the ack or a restart frees the slot) and every goroutine
//     sending it (the first transmission, each retransmission), each of which releases it under
//     sendMu after its send returned. Only the last release puts it back, so a frame held for
//     retransmission, or being sent while its ack arrives, is never overwritten.
//   - Received payloads are copied into buffers of rxPool; Release gives a delivery's buffer back
//     once its receiver is done with it. A payload never given back is simply collected.
//   - The peer MACs of each link are cached for macCacheTTL instead of copied per frame.

// frameBuf is one sent frame's bytes and the number of its holders (guarded by sendMu).
type frameBuf struct {
	b    []byte
	refs int
}

// maxFreeFrames bounds the free frame buffers an engine keeps (each up to one link MTU).
const maxFreeFrames = 4096

// newFrameLocked returns an empty frame buffer with room for a header and the largest payload,
// held twice: by the window slot and by the caller, who sends it. Called with sendMu held.
func (e *Engine) newFrameLocked() *frameBuf {
	if n := len(e.txFree); n > 0 {
		fb := e.txFree[n-1]
		e.txFree[n-1] = nil
		e.txFree = e.txFree[:n-1]
		fb.refs = 2
		return fb
	}
	return &frameBuf{b: make([]byte, 0, frame.HeaderLen+e.maxPayload), refs: 2}
}

// releaseLocked drops one holder of fb; the last one puts it back on the free list. Called with
// sendMu held; a nil fb is ignored.
func (e *Engine) releaseLocked(fb *frameBuf) {
	if fb == nil {
		return
	}
	if fb.refs--; fb.refs > 0 {
		return
	}
	if len(e.txFree) < maxFreeFrames {
		fb.b = fb.b[:0]
		e.txFree = append(e.txFree, fb)
	}
}

// rxPool keeps received payload buffers for reuse; its zero value is empty and ready.
type rxPool struct {
	mu   sync.Mutex
	size int // the capacity of a pooled buffer: the largest link MTU minus the header
	free [][]byte
}

// maxFreeRx bounds the received payload buffers an engine keeps.
const maxFreeRx = 4096

// copyOf returns a copy of p in a pooled buffer (a new one when none is free or p is larger).
func (p *rxPool) copyOf(b []byte) []byte {
	p.mu.Lock()
	var buf []byte
	if n := len(p.free); n > 0 && len(b) <= p.size {
		buf = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if buf == nil {
		buf = make([]byte, 0, max(p.size, len(b)))
	}
	return append(buf[:0], b...)
}

// put takes back b when it can hold any received payload.
func (p *rxPool) put(b []byte) {
	if cap(b) < p.size {
		return
	}
	p.mu.Lock()
	if len(p.free) < maxFreeRx {
		p.free = append(p.free, b[:0])
	}
	p.mu.Unlock()
}

// Release gives the payloads of deliveries the caller is done with back to the engine, which
// reuses their memory for later deliveries. After Release the caller must not read or keep
// those payloads. Calling it is optional: a payload not released is garbage collected.
func (e *Engine) Release(ds []Delivery) {
	for _, d := range ds {
		if d.Payload != nil {
			e.rx.put(d.Payload)
		}
	}
}

// macCacheTTL is how long the engine sends with the peer MACs it read from the discovery table
// before reading them again: a peer NIC that expires from the table is still sent to for at most
// this long.
const macCacheTTL = 10 * time.Millisecond

// macCache is a link's peer MACs as read from the discovery table at a time.
type macCache struct {
	at   time.Time
	macs []net.HardwareAddr
}

// cachedMACs returns the peer MACs on link i at now, read from the table at most macCacheTTL
// before.
func (e *Engine) cachedMACs(now time.Time, i int) []net.HardwareAddr {
	p := &e.links[i].macs
	if c := p.Load(); c != nil && now.Sub(c.at) < macCacheTTL && !now.Before(c.at) {
		return c.macs
	}
	macs := e.table.MACs(now, e.cfg.Peer, i)
	if len(macs) > 0 { // none known is not cached: a hello may arrive any moment
		p.Store(&macCache{at: now, macs: macs})
	}
	return macs
}
