//go:build linux

package link_test

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestSendBatch sends batches with sendmmsg between two namespaces: every frame arrives, in
// order, intact, from the right MAC; the counters add up; bad batches are refused whole; a
// batch larger than the socket's send buffer waits for room instead of failing.
func TestSendBatch(t *testing.T) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
	la := openIn(t, a, link.Config{Interface: p.A.Name, SendBuffer: link.MinSocketBuffer})
	lb := openIn(t, b, link.Config{Interface: p.B.Name, RxRing: true})
	bl, ok := la.(link.Batcher)
	if !ok {
		t.Fatal("the AF_PACKET link does not implement link.Batcher")
	}
	ctx := t.Context()
	const batches, per = 8, link.MaxBatch
	frames := make([]link.Outgoing, per)
	received := make(chan error, 1)
	go func() {
		buf := make([]byte, 1500)
		for k := range batches * per {
			n, src, err := lb.Recv(ctx, buf)
			if err != nil {
				received <- err
				return
			}
			want := frameBytes(k)
			if !bytes.Equal(buf[:n], want) || !bytes.Equal(src, la.MAC()) {
				received <- errors.New("frame out of order, changed or from another MAC")
				return
			}
		}
		received <- nil
	}()
	for i := range batches {
		for k := range frames {
			frames[k] = link.Outgoing{Dst: lb.MAC(), B: frameBytes(i*per + k)}
		}
		n, err := bl.SendBatch(ctx, frames)
		if err != nil || n != per {
			t.Fatalf("batch %d: sent %d of %d: %v", i, n, per, err)
		}
	}
	if err := <-received; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if st := la.Stats(); st.TxFrames != batches*per || st.TxErrors != 0 {
		t.Errorf("sender stats %+v, want %d frames and no errors", st, batches*per)
	}
	for _, bad := range [][]link.Outgoing{
		make([]link.Outgoing, link.MaxBatch+1),
		{{Dst: lb.MAC(), B: []byte{1}}, {Dst: net.HardwareAddr{1, 2}, B: []byte{1}}},
		{{Dst: lb.MAC(), B: make([]byte, 1501)}},
	} {
		if n, err := bl.SendBatch(ctx, bad); err == nil || n != 0 {
			t.Errorf("bad batch of %d frames: sent %d, %v; want it refused whole", len(bad), n, err)
		}
	}
	if st := la.Stats(); st.TxFrames != batches*per {
		t.Errorf("refused batches changed the counters: %+v", st)
	}
}

// frameBytes is the k-th test frame: 60 to 1499 bytes of a pattern of k.
func frameBytes(k int) []byte {
	b := make([]byte, 60+(k*37)%1440)
	for i := range b {
		b[i] = byte(k + i)
	}
	return b
}
