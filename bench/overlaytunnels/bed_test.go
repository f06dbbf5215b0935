//go:build linux

package overlaytunnels

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/ethudp"
	"github.com/ovsplane/ovsplane/overlay/wg"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Addresses of the bed. The underlay is 10.77.0.0/24 on the veth (or on br-phy for the
// OVS-native arms), WireGuard's inner network 10.78.0.0/24, the overlay (OVS internal ports
// vm0) 10.80.0.0/24. underlayIP returns the underlay addresses of the two namespaces.
func underlayIP() [2]string { return [2]string{"10.77.0.1", "10.77.0.2"} }

// wgIP returns WireGuard's inner addresses of the two namespaces.
func wgIP() [2]string { return [2]string{"10.78.0.1", "10.78.0.2"} }

// overlayIP returns the overlay addresses (vm0) of the two namespaces.
func overlayIP() [2]string { return [2]string{"10.80.0.1", "10.80.0.2"} }

// overlayMTU is the MTU of the overlay's internal ports and taps: a 1414-byte frame plus
// 50 bytes of vxlan or 28 of EthUDP fits the 1500-byte underlay.
const overlayMTU = 1400

// bed is two namespaces ("sites") joined by one veth underlay with offloads off (af_packet
// ports need that, and every arm uses the same underlay).
type bed struct {
	ns   [2]*lab.Netns
	veth [2]string // the underlay veth's name in each namespace
}

func newBed(t testing.TB) *bed {
	t.Helper()
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b, DisableOffloads: true})
	return &bed{ns: [2]*lab.Netns{a, b}, veth: [2]string{p.A.Name, p.B.Name}}
}

// arm is one tunnel set up on the bed.
type arm struct {
	// server is the address iperf3 and the transfers target in namespace 1.
	server string
	// vswitchd are the ovs-vswitchd processes that forward the traffic (none for WireGuard).
	vswitchd []int
	// engine is set when the tunnel runs inside this test process (EthUDP, WireGuard).
	engine string
}

// armSpec names an arm and sets it up; everything it creates is removed at t's cleanup, and
// the bed is left as it was.
type armSpec struct {
	name, what string
	setup      func(t testing.TB, b *bed) arm
}

// arms are the alternatives, in table order.
func arms() []armSpec {
	return []armSpec{
		{"ovs-vxlan", "OVS vxlan port (userspace datapath, br-phy/br-int)", func(t testing.TB, b *bed) arm { return ovsNative(t, b, "vxlan") }},
		{"ovs-geneve", "OVS geneve port (userspace datapath, br-phy/br-int)", func(t testing.TB, b *bed) arm { return ovsNative(t, b, "geneve") }},
		{"ethudp", "EthUDP engine, plain, tap port of br-int", func(t testing.TB, b *bed) arm { return ethudpArm(t, b, ethudp.Options{}, false) }},
		{"ethudp-lz4", "EthUDP engine, LZ4, tap port of br-int", func(t testing.TB, b *bed) arm { return ethudpArm(t, b, ethudp.Options{LZ4: 1}, false) }},
		{"wireguard", "WireGuard (wireguard-go) on a tun, IP only, no OVS", wireguardArm},
		{"wg+ethudp", "EthUDP engine (plain) inside WireGuard, tap port of br-int", func(t testing.TB, b *bed) arm { return ethudpArm(t, b, ethudp.Options{}, true) }},
	}
}

// startOVS starts an OVSDB and a userspace ovs-vswitchd in namespace i.
func startOVS(t testing.TB, b *bed, i int) (*lab.OVSDB, int) {
	t.Helper()
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: b.ns[i]})
	return db, sw.PID()
}

// addVM adds internal port vm0 with the overlay address to br-int of namespace i.
func addVM(t testing.TB, b *bed, db *lab.OVSDB, i int) {
	t.Helper()
	db.Vsctl(t, "add-port", "br-int", "vm0", "--", "set", "Interface", "vm0", "type=internal")
	b.ns[i].Run(t, "ip", "link", "set", "vm0", "mtu", strconv.Itoa(overlayMTU), "up")
	b.ns[i].Run(t, "ip", "addr", "add", overlayIP()[i]+"/24", "dev", "vm0")
}

// ovsNative is the verified userspace-tunnel recipe: br-phy holds the veth and the underlay
// address, br-int the tunnel port (key 42) and vm0.
func ovsNative(t testing.TB, b *bed, kind string) arm {
	t.Helper()
	var a arm
	for i := range 2 {
		db, pid := startOVS(t, b, i)
		a.vswitchd = append(a.vswitchd, pid)
		db.Vsctl(t, "add-br", "br-phy", "--", "set", "Bridge", "br-phy", "datapath_type=netdev",
			"--", "add-port", "br-phy", b.veth[i],
			"--", "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev",
			"--", "add-port", "br-int", "tun0", "--", "set", "Interface", "tun0", "type="+kind,
			"options:remote_ip="+underlayIP()[1-i], "options:key=42")
		b.ns[i].Run(t, "ip", "addr", "add", underlayIP()[i]+"/24", "dev", "br-phy")
		b.ns[i].Run(t, "ip", "link", "set", "br-phy", "up")
		addVM(t, b, db, i)
	}
	a.server = overlayIP()[1]
	return a
}

// underlayOnVeth puts the underlay address on the veth until cleanup. It first flushes the
// veth's neighbour entries: while the veth was a port of an OVS arm's br-phy, the kernel
// learned the peer's underlay address with br-phy's MAC, which is gone (pings would fail until
// the stale entry expires).
func underlayOnVeth(t testing.TB, b *bed) {
	t.Helper()
	for i := range 2 {
		b.ns[i].Run(t, "ip", "neigh", "flush", "dev", b.veth[i])
		b.ns[i].Run(t, "ip", "addr", "add", underlayIP()[i]+"/24", "dev", b.veth[i])
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := b.ns[i].Exec(ctx, "ip", "addr", "flush", "dev", b.veth[i]); err != nil {
				t.Errorf("remove the underlay address: %v", err)
			}
		})
	}
}

// wireguardPair brings up a WireGuard device in each namespace (10.78.0.x/24 over the
// underlay, port 51820).
func wireguardPair(t testing.TB, b *bed) {
	t.Helper()
	var priv, pub [2]wg.Key
	for i := range 2 {
		k, err := wg.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		priv[i] = k
		if pub[i], err = k.PublicKey(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		d, err := wg.Open(t.Context(), wg.Config{Name: "wgt", PrivateKey: priv[i], ListenPort: 51820, RunIn: b.ns[i].Do,
			Address: netip.MustParsePrefix(wgIP()[i] + "/24"),
			Peers: []wg.Peer{{PublicKey: pub[1-i], Endpoint: netip.MustParseAddrPort(underlayIP()[1-i] + ":51820"),
				AllowedIPs: []netip.Prefix{netip.MustParsePrefix(wgIP()[1-i] + "/32")}}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
	}
}

func wireguardArm(t testing.TB, b *bed) arm {
	t.Helper()
	underlayOnVeth(t, b)
	wireguardPair(t, b)
	return arm{server: wgIP()[1], engine: "wireguard-go"}
}

// ethudpArm runs an EthUDP Link per namespace (over the underlay, or over WireGuard when
// inWG) attached through a tap to br-int, which also holds vm0.
func ethudpArm(t testing.TB, b *bed, opts ethudp.Options, inWG bool) arm {
	t.Helper()
	underlayOnVeth(t, b)
	ips, mtu, engine := underlayIP(), overlayMTU, "ethudp"
	if inWG {
		wireguardPair(t, b)
		// WireGuard's tun MTU is 1420: a frame plus 28 bytes of UDP/IPv4 must fit.
		ips, mtu, engine = wgIP(), wg.DefaultMTU-28-18, "ethudp+wireguard-go"
	}
	a := arm{server: overlayIP()[1], engine: engine}
	for i := range 2 {
		var l *ethudp.Link
		if err := b.ns[i].Do(func() (err error) {
			l, err = ethudp.Open(t.Context(), ethudp.Config{Local: netip.MustParseAddrPort(ips[i] + ":6000"),
				Remote: netip.MustParseAddrPort(ips[1-i] + ":6000"), Codec: opts, RecvQueue: 4096})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		tp, err := ethudp.AttachTap(t.Context(), l, ethudp.TapConfig{Name: "eu0", MTU: mtu, RunIn: b.ns[i].Do})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tp.Close() })
		db, pid := startOVS(t, b, i)
		a.vswitchd = append(a.vswitchd, pid)
		db.Vsctl(t, "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev",
			"--", "add-port", "br-int", "eu0")
		addVM(t, b, db, i)
		if mtu < overlayMTU {
			b.ns[i].Run(t, "ip", "link", "set", "vm0", "mtu", strconv.Itoa(mtu))
		}
	}
	return a
}

// procCPU returns the user+system CPU seconds of process pid (all its threads) from
// /proc/<pid>/stat.
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu of pid %d: unexpected stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu of pid %d: short stat %q", pid, s)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu of pid %d: stat %q", pid, s)
	}
	return float64(u+st) / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux for every
// architecture Go supports).
const clockTicks = 100

// waitPing waits until a ping from namespace 0 to ip is answered (MAC learning, handshakes and
// ports coming up take a moment), failing the test after 20 s.
func waitPing(t testing.TB, b *bed, ip string) {
	t.Helper()
	lab.WaitFor(t, 20*time.Second, "ping "+ip+" from "+b.ns[0].String(), func(ctx context.Context) error {
		_, err := lab.Ping(ctx, b.ns[0], ip, 1)
		return err
	})
}
