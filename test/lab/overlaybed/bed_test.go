//go:build linux

package overlaybed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestShortBed builds the CI bed (one ordinary site per carrier and a super node) and checks
// that overlay traffic crosses carriers both ways: directly, through the 130 ms relay, and
// through the super node. Round trips are only checked against the relays' delays as lower
// bounds, and the relays' counters say which paths carried the packets.
func TestShortBed(t *testing.T) {
	lab.Require(t, lab.NeedTraffic, lab.NeedOVS)
	var names []string
	t.Run("bed", func(t *testing.T) {
		b := New(t, Spec{Sites: ShortSites()})
		for _, s := range b.Sites {
			names = append(names, s.NS.Name, s.Edge.Name, s.Uplink.Name)
		}
		direct, as, sb := b.Path("a1", "b1"), b.Path("a1", "s1"), b.Path("s1", "b1")
		if !direct.Cross || as.Cross || sb.Cross {
			t.Fatalf("cross-carrier flags: a1-b1 %v, a1-s1 %v, s1-b1 %v; want only a1-b1", direct.Cross, as.Cross, sb.Cross)
		}

		b.SetRoutes(t, "a1", "b1", "b1")
		if err := b.Warm(t.Context(), "a1", "b1"); err != nil {
			t.Fatal(err)
		}
		before := [3]uint64{direct.Forwarded(), as.Forwarded(), sb.Forwarded()}
		st := ping(t, b, "a1", "b1")
		// The relays' counters prove the path; the round trip is only logged (no timed
		// assertions).
		t.Logf("direct a1→b1: average round trip %v (the relay's delay: %v)", st.AvgRTT, 2*DefaultCrossDelay)
		if got := direct.Forwarded() - before[0]; got < 2*uint64(st.Received) {
			t.Errorf("direct a1→b1: the a1-b1 relay forwarded %d datagrams for %d echo replies", got, st.Received)
		}
		if as.Forwarded() != before[1] || sb.Forwarded() != before[2] {
			t.Errorf("direct a1→b1: the super node's relays forwarded traffic")
		}

		b.SetRoutes(t, "a1", "b1", "s1")
		if err := b.Warm(t.Context(), "a1", "b1"); err != nil {
			t.Fatal(err)
		}
		before = [3]uint64{direct.Forwarded(), as.Forwarded(), sb.Forwarded()}
		st = ping(t, b, "a1", "b1")
		t.Logf("a1→b1 through s1: average round trip %v (the relays' delay: %v)", st.AvgRTT, 2*(DefaultSuperDelay+DefaultSuperDelay))
		if direct.Forwarded() != before[0] {
			t.Errorf("a1→b1 through s1: the direct relay still forwarded %d datagrams", direct.Forwarded()-before[0])
		}
		for i, p := range []*Path{as, sb} {
			if got := p.Forwarded() - before[i+1]; got < 2*uint64(st.Received) {
				t.Errorf("a1→b1 through s1: the %s-%s relay forwarded %d datagrams for %d echo replies", p.X.Name, p.Y.Name, got, st.Received)
			}
		}
		if st.AvgRTT >= 2*DefaultCrossDelay {
			t.Logf("note: relayed round trip %v not below the direct path's delay (a loaded machine)", st.AvgRTT)
		}

		// The benchmark's harness on the relayed arm: TCP both ways and the report.
		rep := b.NewReport()
		r := b.MeasureArm(t, rep, "via s1", "bed flows", "a1", "b1", []string{"a1", "s1", "b1"}, Load{Pings: 3, TCPBytes: 1 << 20})
		rep.Finish()
		if r.Forward.Bytes <= 0 || r.Reverse.Bytes <= 0 || r.Forward.BitsPerSecond <= 0 || r.Reverse.BitsPerSecond <= 0 {
			t.Errorf("TCP through s1: forward %+v, reverse %+v: want bytes both ways", r.Forward, r.Reverse)
		}
		if md := rep.FormatMarkdown(); !strings.Contains(md, "| via s1 | bed flows | a1 → s1 → b1 |") {
			t.Errorf("report lacks the arm's row:\n%s", md)
		}
	})
	// The subtest's cleanup has run: nothing of it may be left.
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("namespace %s left behind", n)
		}
		if out, err := exec.Command("ip", "-o", "link", "show", "dev", n).CombinedOutput(); err == nil {
			t.Errorf("interface %s left behind in the root namespace: %s", n, out)
		}
	}
}

// ping pings b's overlay address from a and fails the test when no reply comes back.
func ping(t *testing.T, b *Bed, from, to string) lab.PingStats {
	t.Helper()
	st, err := b.Ping(t.Context(), from, to, 5)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s→%s: %d/%d replies, average round trip %v", from, to, st.Received, st.Transmitted, st.AvgRTT)
	return st
}
