//go:build linux

package overlaytunnels

import (
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestTunnelsCarryTraffic is the short form of the comparison: on one bed, every tunnel in
// turn must carry a ping and a 2 MiB TCP transfer between the sites (no timing is asserted).
func TestTunnelsCarryTraffic(t *testing.T) {
	lab.Require(t, lab.NeedTraffic, lab.NeedOVS)
	b := newBed(t)
	for _, spec := range arms() {
		t.Run(spec.name, func(t *testing.T) {
			a := spec.setup(t, b)
			waitPing(t, b, a.server)
			if ps, err := lab.Ping(t.Context(), b.ns[0], a.server, 2); err != nil || ps.Received == 0 {
				t.Fatalf("%s: ping %s: %+v %v", spec.what, a.server, ps, err)
			}
			const n = 2 << 20
			st, err := lab.TCPTransfer(t.Context(), b.ns[0], b.ns[1], a.server, n)
			if err != nil {
				t.Fatalf("%s: TCP transfer: %v", spec.what, err)
			}
			if st.Bytes != n {
				t.Fatalf("%s: %d bytes arrived, want %d", spec.what, st.Bytes, n)
			}
		})
	}
}
