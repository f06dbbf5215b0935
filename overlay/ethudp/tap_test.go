//go:build linux

package ethudp_test

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/ethudp"
	"github.com/ovsplane/ovsplane/test/lab"
)

// site is one end of an EthUDP tunnel in its own namespace.
type site struct {
	ns   *lab.Netns
	link *ethudp.Link
	tap  *ethudp.TapPort
}

// openSite opens a Link from local to remote and attaches tap name to it, inside ns.
func openSite(t *testing.T, ns *lab.Netns, local, remote, name string, opts ethudp.Options, log *slog.Logger) site {
	t.Helper()
	var l *ethudp.Link
	if err := ns.Do(func() (err error) {
		l, err = ethudp.Open(t.Context(), ethudp.Config{Local: netip.MustParseAddrPort(local),
			Remote: netip.MustParseAddrPort(remote), Codec: opts, Logger: log})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	tp, err := ethudp.AttachTap(t.Context(), l, ethudp.TapConfig{Name: name, MTU: 1400, RunIn: ns.Do})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	return site{ns: ns, link: l, tap: tp}
}

// underlay returns two namespaces joined by a veth with 10.77.0.1/24 and 10.77.0.2/24.
func underlay(t *testing.T) (a, b *lab.Netns) {
	t.Helper()
	a, b = lab.NewNetns(t), lab.NewNetns(t)
	lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b, AAddr: "10.77.0.1/24", BAddr: "10.77.0.2/24"})
	return a, b
}

// TestTapThroughOVS runs one userspace-datapath ovs-vswitchd per namespace. In each, br-int
// holds an internal port with the overlay address and the tap of an EthUDP Link, so frames
// that br-int forwards to the tap cross the underlay as EthUDP datagrams and come out of the
// peer's br-int. A ping and a 4 MiB TCP transfer between the internal ports must succeed, with
// plain EthUDP and with LZ4, and the Link and tap counters must show the frames went through
// the tunnel.
func TestTapThroughOVS(t *testing.T) {
	lab.Require(t, lab.NeedTraffic, lab.NeedOVS)
	for _, tc := range []struct {
		name string
		opts ethudp.Options
	}{{"plain", ethudp.Options{}}, {"lz4", ethudp.Options{LZ4: 1}}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := underlay(t)
			sa := openSite(t, a, "10.77.0.1:6000", "10.77.0.2:6000", "eth0", tc.opts, nil)
			sb := openSite(t, b, "10.77.0.2:6000", "10.77.0.1:6000", "eth0", tc.opts, nil)
			for i, s := range []site{sa, sb} {
				db := lab.StartOVSDB(t)
				db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: s.ns})
				db.Vsctl(t, "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev",
					"--", "add-port", "br-int", s.tap.Name(),
					"--", "add-port", "br-int", "vm0", "--", "set", "Interface", "vm0", "type=internal")
				s.ns.Run(t, "ip", "link", "set", "vm0", "mtu", "1400", "up")
				s.ns.Run(t, "ip", "addr", "add", "10.80.0."+string(rune('1'+i))+"/24", "dev", "vm0")
			}
			ps, err := lab.Ping(t.Context(), a, "10.80.0.2", 3)
			if err != nil || ps.Received == 0 {
				t.Fatalf("ping through OVS and EthUDP: %+v %v", ps, err)
			}
			const n = 4 << 20
			if _, err := lab.TCPTransfer(t.Context(), a, b, "10.80.0.2", n); err != nil {
				t.Fatalf("TCP through OVS and EthUDP: %v", err)
			}
			ca, cb := sa.link.Counters(), sb.link.Counters()
			if ca.FramesSent < n/1400 || cb.FramesReceived < n/1400 {
				t.Errorf("link A sent %d frames, B received %d: want at least %d", ca.FramesSent, cb.FramesReceived, n/1400)
			}
			if tc.opts.LZ4 > 0 && cb.Decompressed == 0 && ca.Decompressed == 0 {
				t.Errorf("LZ4 on, but no payload was sent compressed: %+v", ca)
			}
			ta, tb := sa.tap.Counters(), sb.tap.Counters()
			if ta.FromTap < n/1400 || tb.ToTap < n/1400 {
				t.Errorf("tap A read %d frames, tap B wrote %d", ta.FromTap, tb.ToTap)
			}
			t.Logf("link A %+v; tap A %+v; tap B %+v", ca, ta, tb)
		})
	}
}

// TestTapWeakCipherWarns attaches taps (addressed directly, without OVS) to Links that use
// EthUDP's AES-128 mode, checks that a ping crosses, and that the attach logged the weak-cipher
// warning.
func TestTapWeakCipherWarns(t *testing.T) {
	lab.Require(t, lab.NeedTraffic)
	a, b := underlay(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	opts := ethudp.Options{Cipher: ethudp.CipherAES128, Key: "interop-only"}
	openSite(t, a, "10.77.0.1:6000", "10.77.0.2:6000", "eu0", opts, log)
	openSite(t, b, "10.77.0.2:6000", "10.77.0.1:6000", "eu0", opts, log)
	a.Run(t, "ip", "addr", "add", "10.80.0.1/24", "dev", "eu0")
	b.Run(t, "ip", "addr", "add", "10.80.0.2/24", "dev", "eu0")
	if ps, err := lab.Ping(t.Context(), a, "10.80.0.2", 2); err != nil || ps.Received == 0 {
		t.Fatalf("ping over the AES tap link: %+v %v", ps, err)
	}
	if s := logs.String(); !strings.Contains(s, "weak") || !strings.Contains(s, "interoperability only") {
		t.Fatalf("no weak-cipher warning logged:\n%s", s)
	}
}

func TestAttachTapRefuses(t *testing.T) {
	l, err := ethudp.Open(t.Context(), ethudp.Config{Local: netip.MustParseAddrPort("127.0.0.1:0"),
		Remote: netip.MustParseAddrPort("127.0.0.1:9")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		cfg  ethudp.TapConfig
		want string
	}{
		{ethudp.TapConfig{Name: ""}, "give 1-15"},
		{ethudp.TapConfig{Name: "a-very-long-tap-name"}, "give 1-15"},
		{ethudp.TapConfig{Name: "tap 0"}, "use only"},
		{ethudp.TapConfig{Name: "tap0", MTU: 10}, "MTU 10"},
		{ethudp.TapConfig{Name: "tap0", MTU: ethudp.MaxTapMTU + 1}, "MTU"},
	} {
		if _, err := ethudp.AttachTap(t.Context(), l, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := ethudp.AttachTap(t.Context(), nil, ethudp.TapConfig{Name: "tap0"}); err == nil {
		t.Error("nil link accepted")
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
