//go:build linux

package wg_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/wg"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestLinkBetweenNamespaces brings up one WireGuard device in each of two namespaces joined by
// a veth underlay, then pings and moves 8 MiB over TCP across the encrypted link, and checks
// that a handshake happened and both peers counted the traffic.
func TestLinkBetweenNamespaces(t *testing.T) {
	lab.Require(t, lab.NeedTraffic)
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b, AAddr: "10.77.0.1/24", BAddr: "10.77.0.2/24"})
	keyA, err := wg.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := wg.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	pubA, _ := keyA.PublicKey()
	pubB, _ := keyB.PublicKey()
	ctx := t.Context()
	devA, err := wg.Open(ctx, wg.Config{Name: "wgA", PrivateKey: keyA, ListenPort: 51820, RunIn: a.Do,
		Address: netip.MustParsePrefix("10.78.0.1/24"),
		Peers: []wg.Peer{{PublicKey: pubB, Endpoint: netip.MustParseAddrPort("10.77.0.2:51821"),
			AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.78.0.2/32")}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = devA.Close() })
	// B does not know A's endpoint: it learns it from A's handshake.
	devB, err := wg.Open(ctx, wg.Config{Name: "wgB", PrivateKey: keyB, ListenPort: 51821, RunIn: b.Do,
		Address: netip.MustParsePrefix("10.78.0.2/24"),
		Peers:   []wg.Peer{{PublicKey: pubA, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.78.0.1/32")}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = devB.Close() })
	if devA.PublicKey() != pubA {
		t.Fatalf("device A public key %v, want %v", devA.PublicKey(), pubA)
	}
	if port, err := devB.ListenPort(); err != nil || port != 51821 {
		t.Fatalf("device B listen port %d, %v", port, err)
	}
	// The tun and its address live in the namespace, not in the test's own.
	if out := a.Run(t, "ip", "-o", "addr", "show", "dev", "wgA"); !strings.Contains(out, "10.78.0.1/24") {
		t.Fatalf("wgA in %s: %s", a, out)
	}
	ps, err := lab.Ping(ctx, a, "10.78.0.2", 3)
	if err != nil || ps.Received == 0 {
		t.Fatalf("ping across WireGuard: %+v %v", ps, err)
	}
	const n = 8 << 20
	st, err := lab.TCPTransfer(ctx, a, b, "10.78.0.2", n)
	if err != nil {
		t.Fatalf("TCP across WireGuard: %v", err)
	}
	t.Logf("%d bytes in %.2fs (%.0f Mbit/s)", st.Bytes, st.Seconds, st.BitsPerSecond/1e6)
	sa, err := devA.Stats()
	if err != nil || len(sa) != 1 {
		t.Fatalf("stats A: %+v %v", sa, err)
	}
	sb, err := devB.Stats()
	if err != nil || len(sb) != 1 {
		t.Fatalf("stats B: %+v %v", sb, err)
	}
	if sa[0].LastHandshake.IsZero() || time.Since(sa[0].LastHandshake) > time.Hour {
		t.Errorf("A's last handshake %v", sa[0].LastHandshake)
	}
	if sa[0].TxBytes < n || sb[0].RxBytes < n {
		t.Errorf("A sent %d bytes, B received %d: want at least the %d transferred", sa[0].TxBytes, sb[0].RxBytes, n)
	}
	if want := netip.MustParseAddrPort("10.77.0.1:51820"); sb[0].Endpoint != want {
		t.Errorf("B learned endpoint %v, want %v", sb[0].Endpoint, want)
	}
	_ = devA.Close()
	if _, err := devA.Stats(); err == nil {
		t.Error("Stats after Close succeeded")
	}
}
