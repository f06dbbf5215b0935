package engine

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/stripe/discovery"
	"github.com/ovsplane/ovsplane/stripe/link"
)

// maxSendBatch bounds the frames SendBatch gathers before handing them to the links: below any
// window (a batch of unsent frames must never fill a window the sender then waits on).
const maxSendBatch = 64

// sendScratch is one SendBatch call's per-link lists and sendmmsg vector, reused through
// batchPool.
type sendScratch struct {
	perLink [][]batchFrame
	out     []link.Outgoing
}

// scratchPool keeps the sendScratch values of an engine's SendBatch calls (several may run at
// once); its zero value is empty and ready.
type scratchPool struct {
	mu   sync.Mutex
	free []*sendScratch
}

// get returns a free sendScratch or a new one.
func (p *scratchPool) get() *sendScratch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		sc := p.free[n-1]
		p.free = p.free[:n-1]
		return sc
	}
	return new(sendScratch)
}

// put returns sc for reuse; at most 8 are kept.
func (p *scratchPool) put(sc *sendScratch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < 8 {
		p.free = append(p.free, sc)
	}
}

// batchFrame is one frame gathered by SendBatch for its link.
type batchFrame struct {
	conn Conn
	seq  uint64
	mac  net.HardwareAddr
	fb   *frameBuf // held by SendBatch until mark
}

// SendBatch sends the messages in order, each as Send would, but gathers their frames per link
// and hands each link's frames to the kernel together (one sendmmsg on links that implement
// link.Batcher) instead of one system call per frame. Pacing (Config.Pace) sends frame by
// frame, as Send does. It blocks and fails as Send does; frames already gathered when it fails
// stay in the window and are sent by the retransmitter.
func (e *Engine) SendBatch(ctx context.Context, ms []Message) error {
	for _, m := range ms {
		if m.Conn.Service == discovery.ControlService {
			return fmt.Errorf("engine: service %#04x is reserved for control frames: use another", m.Conn.Service)
		}
		if len(m.Payload) == 0 || len(m.Payload) > MaxSend {
			return fmt.Errorf("engine: message of %d bytes: want 1 to %d", len(m.Payload), MaxSend)
		}
	}
	limit := max(1, min(maxSendBatch, e.cfg.Window/2, e.cfg.MaxInFlight/2, link.MaxBatch))
	sc := e.scratch.get()
	defer func() {
		for i := range sc.perLink {
			clear(sc.perLink[i][:cap(sc.perLink[i])]) // keep no frame alive
			sc.perLink[i] = sc.perLink[i][:0]
		}
		e.scratch.put(sc)
	}()
	for len(sc.perLink) < len(e.links) {
		sc.perLink = append(sc.perLink, make([]batchFrame, 0, limit))
	}
	perLink := sc.perLink[:len(e.links)]
	gathered := 0
	flush := func() error {
		for i, fs := range perLink {
			if len(fs) > 0 {
				e.sendFrames(ctx, sc, i, fs)
				perLink[i] = fs[:0]
			}
		}
		gathered = 0
		return e.alive(ctx)
	}
	for _, m := range ms {
		for off := 0; off < len(m.Payload); off += e.maxPayload {
			chunk := m.Payload[off:min(len(m.Payload), off+e.maxPayload)]
			seq, fb, err := e.enqueue(ctx, m.Conn, chunk)
			if err != nil {
				_ = flush()
				return err
			}
			e.c.sentFrames.Add(1)
			e.c.sentBytes.Add(uint64(len(chunk)))
			e.sendMu.Lock()
			choice := e.pol.Choose(e.tuple(m.Conn))
			e.sendMu.Unlock()
			i, mac := e.usableFrom(time.Now(), choice)
			if i < 0 {
				e.mark(m.Conn, seq, -1, time.Time{}, fb) // no usable link: due for the retransmitter
				continue
			}
			if i != choice {
				e.c.skips.Add(1)
			}
			perLink[i] = append(perLink[i], batchFrame{conn: m.Conn, seq: seq, mac: mac, fb: fb})
			if gathered++; gathered >= limit {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// sendFrames sends the gathered frames on link i and records where they went. Frames the link
// did not take are marked for the retransmitter (at once when the link went down).
func (e *Engine) sendFrames(ctx context.Context, sc *sendScratch, i int, fs []batchFrame) {
	ls := e.links[i]
	bl, ok := ls.l.(link.Batcher)
	if !ok || ls.bucket != nil {
		for _, f := range fs {
			err := e.sendOn(ctx, i, f.mac, f.fb.b)
			switch {
			case err == nil:
				e.mark(f.conn, f.seq, i, time.Now(), f.fb)
			case link.IsDown(err):
				e.mark(f.conn, f.seq, -1, time.Time{}, f.fb)
			default:
				e.c.sendErrors.Add(1)
				e.mark(f.conn, f.seq, i, time.Now(), f.fb)
			}
		}
		return
	}
	out := sc.out[:0]
	for _, f := range fs {
		out = append(out, link.Outgoing{Dst: f.mac, B: f.fb.b})
	}
	n, err := bl.SendBatch(ctx, out)
	clear(out)
	sc.out = out[:0]
	now := time.Now()
	for _, f := range fs[:n] {
		e.mark(f.conn, f.seq, i, now, f.fb)
	}
	if err == nil {
		return
	}
	if link.IsDown(err) {
		if ls.usable.CompareAndSwap(true, false) {
			ls.downs.Add(1)
		}
		for _, f := range fs[n:] {
			e.mark(f.conn, f.seq, -1, time.Time{}, f.fb)
		}
		e.kickRetransmit()
		return
	}
	e.c.sendErrors.Add(1)
	for _, f := range fs[n:] {
		e.mark(f.conn, f.seq, i, now, f.fb) // the retransmitter sends them again after the timeout
	}
}
