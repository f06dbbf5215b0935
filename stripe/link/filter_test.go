//go:build linux

package link_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/frame"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestPeerFilter: a link opened with PeerNode 2 receives the frames whose header names node 2
// as the source and nothing of node 3's, on a plain socket and on a receive ring, while a link
// without PeerNode on the same NIC receives both; the kernel counts no drop for the filtered
// frames (they never reach the socket).
func TestPeerFilter(t *testing.T) {
	for _, ring := range []bool{false, true} {
		name := "recvfrom"
		if ring {
			name = "rx-ring"
		}
		t.Run(name, func(t *testing.T) { testPeerFilter(t, ring) })
	}
}

func testPeerFilter(t *testing.T, ring bool) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
	send := openIn(t, a, link.Config{Interface: p.A.Name})
	only2 := openIn(t, b, link.Config{Interface: p.B.Name, PeerNode: 2, RxRing: ring})
	all := openIn(t, b, link.Config{Interface: p.B.Name, RxRing: ring})
	ctx := t.Context()
	frameFrom := func(src uint32, seq uint64) []byte {
		f, err := frame.Append(nil, frame.Header{Service: 7, SrcNode: src, DstNode: 1, Seq: seq}, []byte("payload"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Interleaved: 3, 2, 3, 2, ...
	const n = 20
	for i := range n {
		src := uint32(3)
		if i%2 == 1 {
			src = 2
		}
		if err := send.Send(ctx, only2.MAC(), frameFrom(src, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	recvAll := func(l link.Link) map[uint32]int {
		got := map[uint32]int{}
		buf := make([]byte, 2048)
		for {
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			k, _, err := l.Recv(rctx, buf)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				return got
			}
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := frame.Decode(buf[:k])
			if err != nil {
				t.Fatalf("received a frame that does not decode: %v", err)
			}
			got[h.SrcNode]++
		}
	}
	if got := recvAll(only2); got[2] != n/2 || got[3] != 0 {
		t.Errorf("link with PeerNode 2 received %v, want %d frames of node 2 and none of node 3", got, n/2)
	}
	if got := recvAll(all); got[2] != n/2 || got[3] != n/2 {
		t.Errorf("link without PeerNode received %v, want %d frames of each node", got, n/2)
	}
	if d := only2.Stats().KernelDrops; d != 0 {
		t.Errorf("filtered link counted %d kernel drops, want 0 (filtered frames are not drops)", d)
	}
}
