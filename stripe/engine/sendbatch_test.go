//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/policy"
)

// TestSendBatchReceiveBatch moves a stream with SendBatch (messages of 1 to 3000 bytes, so some
// split into two frames, 48 to a batch) and reads it with ReceiveBatch: every byte arrives once
// and in order (the receiver releases every payload for reuse once checked), every link
// carries frames, and bad batches are refused before anything is
// sent.
func TestSendBatchReceiveBatch(t *testing.T) {
	tb := newTestbed(t)
	a, b := tb.start(t, arm{kind: policy.KindWeighted})
	conn := engine.Conn{Service: 7, SrcPort: 1000, DstPort: 2000}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const total = 4 << 20
	var wg sync.WaitGroup
	var rerr error
	wg.Go(func() {
		ds := make([]engine.Delivery, 100)
		off, want, first := 0, uint64(0), true
		for off < total {
			n, err := b.e.ReceiveBatch(ctx, ds)
			if err != nil {
				rerr = fmt.Errorf("after %d bytes: %w", off, err)
				return
			}
			for _, d := range ds[:n] {
				if first { // sequence numbers start at a clock-based value
					want, first = d.Seq, false
				}
				if d.Conn != conn || d.Seq != want || !bytes.Equal(d.Payload, chunk(off, len(d.Payload))) {
					rerr = fmt.Errorf("delivery %+v seq %d at offset %d: want seq %d of %+v with the stream's bytes", d.Conn, d.Seq, off, want, conn)
					return
				}
				want++
				off += len(d.Payload)
			}
			b.e.Release(ds[:n]) // the engine reuses these buffers: later payloads must stay intact
		}
	})
	var ms []engine.Message
	for off, k := 0, 0; off < total; k++ {
		n := min(total-off, 1+(k*977)%3000)
		ms = append(ms, engine.Message{Conn: conn, Payload: chunk(off, n)})
		off += n
		if len(ms) == 48 || off == total {
			if err := a.e.SendBatch(ctx, ms); err != nil {
				cancel()
				wg.Wait()
				t.Fatalf("SendBatch at offset %d: %v", off, err)
			}
			ms = ms[:0]
		}
	}
	wg.Wait()
	if rerr != nil {
		t.Fatalf("receive: %v\nsender %+v", rerr, a.e.Stats())
	}
	s := a.e.Stats()
	for i, l := range s.Links {
		if l.TxFrames < 100 {
			t.Errorf("link %d sent %d frames, want every link used", i, l.TxFrames)
		}
	}
	sent := s.SentFrames
	for _, bad := range [][]engine.Message{
		{{Conn: conn, Payload: []byte{1}}, {Conn: conn}},
		{{Conn: engine.Conn{Service: 0xffff}, Payload: []byte{1}}},
		{{Conn: conn, Payload: make([]byte, engine.MaxSend+1)}},
	} {
		if err := a.e.SendBatch(ctx, bad); err == nil {
			t.Errorf("SendBatch(%d messages) accepted a bad batch", len(bad))
		}
	}
	if got := a.e.Stats().SentFrames; got != sent {
		t.Errorf("refused batches sent %d frames", got-sent)
	}
	if _, err := b.e.ReceiveBatch(ctx, nil); err == nil {
		t.Error("ReceiveBatch with no room accepted")
	}
}
