//go:build linux

package stripebed

import (
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestStripeTunnel checks the stripe arms' path for correctness only: through the tun devices
// one TCP connection delivers every byte, a slow UDP stream arrives complete and in order, and
// (round-robin, weighted) every link carries bytes, for the weighted, round-robin and seed policies. No
// timing is asserted.
func TestStripeTunnel(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	b := New(t, Spec{})
	rates := make([]float64, len(b.Links))
	for i, l := range b.Links {
		rates[i] = float64(l.RateMbit) * 1e6
	}
	for _, kind := range []policy.Kind{policy.KindWeighted, policy.KindRoundRobin, policy.KindSeed} {
		t.Run(string(kind), func(t *testing.T) {
			s := b.StartStripe(t, kind, rates)
			ctx := t.Context()
			before, err := b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			const n = 8 << 20
			r, err := TCPBulk(ctx, b.A, b.B, TCPSpec{Src: s.AAddr, Dst: s.BAddr, Bytes: n, CC: defaultCC()})
			if err != nil {
				t.Fatalf("TCP over the tunnel: %v", err)
			}
			if r.Bytes != n {
				t.Errorf("TCP over the tunnel: received %d bytes, want %d", r.Bytes, n)
			}
			u, err := UDPStream(ctx, b.A, b.B, UDPSpec{Src: s.AAddr, Dst: s.BAddr, RateBitsPerSec: 20e6, Duration: time.Second})
			if err != nil {
				t.Fatalf("UDP over the tunnel: %v", err)
			}
			if u.Sent == 0 || u.Lost != 0 || u.Reordered != 0 || u.Duplicates != 0 {
				t.Errorf("UDP over the tunnel: %+v, want every datagram once and in order", u)
			}
			if want := s.A.Tunnel.MTU() - 28; u.Payload != want {
				t.Errorf("UDP over the tunnel: %d-byte datagrams, want %d (the tun's MTU less the headers: no fragments)", u.Payload, want)
			}
			after, err := b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if kind == policy.KindRoundRobin || kind == policy.KindWeighted {
				for i, x := range after.Sub(before).LinkAB {
					if x < 100<<10 {
						t.Errorf("link %d carried %d bytes A→B, want every link used by %s", i, x, kind)
					}
				}
			}
			ta, tb := s.A.Tunnel.Stats(), s.B.Tunnel.Stats()
			if !ta.Offload || ta.Reads >= ta.TxPackets {
				t.Errorf("tunnel A: offload %v, %d reads for %d packets: want TCP super-packets read and split", ta.Offload, ta.Reads, ta.TxPackets)
			}
			if ta.TxPackets == 0 || tb.RxPackets < ta.TxPackets-ta.TxPackets/100 || ta.Malformed+tb.Malformed+tb.Foreign+tb.WriteErrors != 0 {
				t.Errorf("tunnel counters A %+v, B %+v: want B to write what A read, nothing dropped", ta, tb)
			}
			if es := s.B.Engine.Stats(); es.Lost != 0 {
				t.Errorf("engine B lost %d frames", es.Lost)
			}
			if err := s.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
	}
}
