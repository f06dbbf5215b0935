package ethudp

import (
	"bytes"
	"testing"
)

// TestLinkRecvOwnsFrames sends many distinct frames before reading any, in every mode where the
// decoded payload could share memory with the receive buffer (plain, and LZ4 with an
// incompressible frame sent as-is), and checks that each frame Recv returns is intact: a
// frame must not be overwritten by the datagrams read after it.
func TestLinkRecvOwnsFrames(t *testing.T) {
	for _, o := range []Options{{}, {LZ4: 1}} {
		a, b := pair(t, o)
		const n = 64
		want := make([][]byte, n)
		for i := range want {
			f := make([]byte, 200)
			for j := range f {
				f[j] = byte(i*7 + j*13 + j*j) // distinct per frame, poorly compressible
			}
			want[i] = f
			if err := a.Send(t.Context(), f); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "all frames received", func() bool { return b.Counters().FramesReceived == n })
		for i := range want {
			got, err := b.Recv(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[i]) {
				t.Fatalf("options %+v: frame %d changed after it was queued", o, i)
			}
		}
	}
}
