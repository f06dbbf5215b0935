package engine

import (
	"context"
	"fmt"
)

// ReceiveBatch is Receive for several deliveries at once: it waits until at least one is ready
// (or ctx ends), then moves up to len(ds) of the ready deliveries, in order, into ds and returns
// how many. A caller that handles deliveries in batches (the tunnel coalesces consecutive
// packets) learns from a short batch that nothing more is waiting now. ds must not be empty.
func (e *Engine) ReceiveBatch(ctx context.Context, ds []Delivery) (int, error) {
	if len(ds) == 0 {
		return 0, fmt.Errorf("engine: receive batch: no room for a delivery: pass a non-empty slice")
	}
	for {
		e.rxMu.Lock()
		if e.readyHead < len(e.ready) {
			n := copy(ds, e.ready[e.readyHead:])
			clear(e.ready[e.readyHead : e.readyHead+n])
			e.readyHead += n
			more := e.readyHead < len(e.ready)
			if !more {
				e.ready, e.readyHead = e.ready[:0], 0
			}
			e.rxMu.Unlock()
			signal(e.spaceCh)
			if more {
				signal(e.readyCh)
			}
			return n, nil
		}
		e.rxMu.Unlock()
		select {
		case <-e.readyCh:
		case <-ctx.Done():
			return 0, fmt.Errorf("engine: receive: %w", ctx.Err())
		case <-e.done:
			e.rxMu.Lock()
			empty := e.readyHead == len(e.ready)
			e.rxMu.Unlock()
			if empty {
				return 0, fmt.Errorf("engine: receive: %w", ErrNotRunning)
			}
		}
	}
}
