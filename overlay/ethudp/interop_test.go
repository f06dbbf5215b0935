//go:build linux && ethudp_interop

package ethudp

// Interoperability with the reference implementation: our Link against the C EthUDP (mode -i,
// a tap interface) inside a private network namespace, over loopback UDP. Built only with
// -tags ethudp_interop; then a missing EthUDP binary fails the test. Build the reference:
//
//	apt-get install -y gcc liblz4-dev libssl-dev libpcap-dev
//	git clone https://github.com/bg6cq/ethudp && cd ethudp && git checkout c45a8c2
//	gcc -O2 -D_GNU_SOURCE -DVERSION='"c45a8c2"' -o EthUDP EthUDP.c -lpthread -lssl -llz4 -lcrypto -lpcap
//
// and run: ETHUDP_BIN=$PWD/EthUDP go test -tags ethudp_interop -run Interop ./overlay/ethudp/
//
// The test plays a host (10.201.0.2) behind our Link: it answers ARP and ICMP echo requests
// that arrive through the tunnel. `ping` from the C side's tap (10.201.0.1) succeeds only when
// frames cross in both directions, so every case proves encode and decode against the reference.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

const (
	cPort  = 16000
	goPort = 16001
)

var (
	hostMAC = []byte{0x02, 0, 0, 0, 0, 0x02}
	hostIP  = []byte{10, 201, 0, 2}
)

func ethudpBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ETHUDP_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("ETHUDP_BIN=%s: %v", p, err)
		}
		return p
	}
	p, err := exec.LookPath("EthUDP")
	if err != nil {
		t.Fatalf("the reference EthUDP binary is required: set ETHUDP_BIN or put EthUDP on PATH (build steps at the top of interop_test.go; Debian packages gcc liblz4-dev libssl-dev libpcap-dev)")
	}
	return p
}

// lockedBuffer collects the reference's debug output for failure messages, bounded.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

func TestInteropWithReference(t *testing.T) {
	bin := ethudpBinary(t)
	cases := []struct {
		name     string
		cArgs    []string // options for the reference
		opts     Options
		password string
		natC     bool // the reference listens in NAT mode (remote 0.0.0.0 0)
		natGo    bool // our Link listens in NAT mode
		pingSize string
	}{
		{name: "plain", pingSize: "56"},
		{name: "lz4", cArgs: []string{"-lz4", "1"}, opts: Options{LZ4: 1}, pingSize: "56"},
		{name: "xor", cArgs: []string{"-enc", "xor", "-k", "xorkey"}, opts: Options{Cipher: CipherXOR, Key: "xorkey"}, pingSize: "56"},
		{name: "aes-128 default key", cArgs: []string{"-enc", "aes-128"}, opts: Options{Cipher: CipherAES128}, pingSize: "56"},
		{name: "aes-192", cArgs: []string{"-enc", "aes-192", "-k", "a-24-byte-key-for-aes!!!"}, opts: Options{Cipher: CipherAES192, Key: "a-24-byte-key-for-aes!!!"}, pingSize: "56"},
		{name: "aes-256 short key", cArgs: []string{"-enc", "aes-256", "-k", "short"}, opts: Options{Cipher: CipherAES256, Key: "short"}, pingSize: "56"},
		{name: "mtu fragments", cArgs: []string{"-mtu", "1036"}, opts: Options{MTU: 1036}, pingSize: "1200"},
		{name: "lz4+aes-128+mtu", cArgs: []string{"-lz4", "1", "-enc", "aes-128", "-k", "k", "-mtu", "1036"},
			opts: Options{LZ4: 1, Cipher: CipherAES128, Key: "k", MTU: 1036}, pingSize: "1200"},
		{name: "lz4+xor+mtu", cArgs: []string{"-lz4", "1", "-enc", "xor", "-mtu", "1036"},
			opts: Options{LZ4: 1, Cipher: CipherXOR, MTU: 1036}, pingSize: "1200"},
		{name: "reference NAT with password", cArgs: []string{"-p", "pw1"}, password: "pw1", natC: true, pingSize: "56"},
		{name: "our NAT with password", cArgs: []string{"-p", "pw2", "-lz4", "1"}, opts: Options{LZ4: 1}, password: "pw2", natGo: true, pingSize: "56"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := lab.NewNetns(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()

			remote := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), cPort)
			if tc.natGo {
				remote = netip.AddrPort{}
			}
			var link *Link
			err := ns.Do(func() error {
				var err error
				link, err = Open(ctx, Config{Local: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), goPort),
					Remote: remote, Codec: tc.opts, Password: tc.password})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer link.Close()

			args := append([]string{"-d", "-i"}, tc.cArgs...)
			goRemote := []string{"127.0.0.1", fmt.Sprint(goPort)}
			if tc.natC {
				goRemote = []string{"0.0.0.0", "0"}
			}
			args = append(args, "127.0.0.1", fmt.Sprint(cPort))
			args = append(args, goRemote...)
			args = append(args, "10.201.0.1", "24")
			out := &lockedBuffer{}
			cmd := ns.Command(ctx, bin, args...)
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatalf("start %s: %v", bin, err)
			}
			defer func() { cancel(); _ = cmd.Wait() }()

			h := &host{replies: make(chan []byte, 16)}
			go h.serve(ctx, link)

			// the link comes up once the reference answers our PINGs (and, in NAT mode, after
			// the PASSWORD latched one side)
			waitFor(t, "link up with the reference:\n"+out.tail(), func() bool { return link.State() == StateUp })

			if _, err := ns.Exec(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-s", tc.pingSize, "-p", "ab", "10.201.0.2"); err != nil {
				t.Fatalf("ping through the tunnel: %v\nreference output:\n%s\ncounters %+v", err, out.tail(), link.Counters())
			}
			// and the other way: an echo request from our host with an incompressible payload, so
			// that LZ4 cases fragment too; the reference's kernel echoes the payload back.
			size := 100
			if tc.opts.MTU > 0 {
				size = 1200
			}
			payload := make([]byte, size)
			if _, err := rand.Read(payload); err != nil {
				t.Fatal(err)
			}
			req := h.echoRequest(t, payload)
			if err := link.Send(ctx, req); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-h.replies:
				if !bytes.Equal(r, payload) {
					t.Fatalf("echo reply payload differs (%d bytes, want %d)", len(r), len(payload))
				}
			case <-ctx.Done():
				t.Fatalf("no echo reply from the reference's side\n%s", out.tail())
			}
			c := link.Counters()
			t.Logf("counters %+v", c)
			if c.FramesReceived == 0 || c.FramesSent == 0 || c.PongsReceived == 0 || c.PingsReceived == 0 {
				t.Fatalf("counters %+v", c)
			}
			if tc.opts.MTU > 0 && (c.Fragmented == 0 || c.Reassembled == 0) {
				t.Fatalf("fragmentation not exercised both ways: %+v", c)
			}
			if tc.opts.LZ4 > 0 && tc.pingSize != "56" && (c.Compressed == 0 || c.Decompressed == 0) {
				t.Fatalf("LZ4 blocks not exercised both ways: %+v", c)
			}
			if n := len(c.Dropped); n != 0 && !(tc.natGo || tc.natC) {
				t.Fatalf("drops %v", c.Dropped)
			}
			if strings.Contains(out.tail(), "error") {
				t.Logf("reference reported errors:\n%s", out.tail())
			}
		})
	}
}

// host plays 10.201.0.2 behind our Link: it answers ARP and echo requests, remembers the
// reference tap's MAC and hands the payloads of echo replies to replies.
type host struct {
	mu      sync.Mutex
	tapMAC  []byte
	replies chan []byte
}

func (h *host) serve(ctx context.Context, l *Link) {
	for {
		f, err := l.Recv(ctx)
		if err != nil {
			return
		}
		h.mu.Lock()
		if h.tapMAC == nil && len(f) >= 14 {
			h.tapMAC = append([]byte(nil), f[6:12]...)
		}
		h.mu.Unlock()
		if p := echoReplyPayload(f); p != nil {
			select {
			case h.replies <- p:
			default:
			}
			continue
		}
		if reply := hostReply(f); reply != nil {
			_ = l.Send(ctx, reply)
		}
	}
}

// echoRequest builds an ICMP echo request from 10.201.0.2 to 10.201.0.1 carrying payload.
func (h *host) echoRequest(t *testing.T, payload []byte) []byte {
	h.mu.Lock()
	mac := h.tapMAC
	h.mu.Unlock()
	if mac == nil {
		t.Fatal("the reference's tap MAC is unknown")
	}
	total := 20 + 8 + len(payload)
	f := make([]byte, 14+total)
	copy(f[0:6], mac)
	copy(f[6:12], hostMAC)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 1
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	copy(ip[12:16], hostIP)
	copy(ip[16:20], []byte{10, 201, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], checksum(ip[:20]))
	icmp := ip[20:]
	icmp[0] = 8
	binary.BigEndian.PutUint16(icmp[4:], 0x4242)
	binary.BigEndian.PutUint16(icmp[6:], 1)
	copy(icmp[8:], payload)
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return f
}

// echoReplyPayload returns the payload of an ICMP echo reply to hostIP, or nil.
func echoReplyPayload(f []byte) []byte {
	if len(f) < 14+28 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return nil
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if ihl < 20 || total < ihl+8 || total > len(ip) || ip[9] != 1 || !bytes.Equal(ip[16:20], hostIP) || ip[ihl] != 0 {
		return nil
	}
	return append([]byte(nil), ip[ihl+8:total]...)
}

func hostReply(f []byte) []byte {
	if len(f) < 14 {
		return nil
	}
	switch binary.BigEndian.Uint16(f[12:14]) {
	case 0x0806: // ARP
		a := f[14:]
		if len(a) < 28 || binary.BigEndian.Uint16(a[6:8]) != 1 || !bytes.Equal(a[24:28], hostIP) {
			return nil
		}
		r := make([]byte, 42)
		copy(r[0:6], a[8:14])
		copy(r[6:12], hostMAC)
		binary.BigEndian.PutUint16(r[12:], 0x0806)
		copy(r[14:20], a[0:6]) // htype, ptype, hlen, plen
		binary.BigEndian.PutUint16(r[20:], 2)
		copy(r[22:28], hostMAC)
		copy(r[28:32], hostIP)
		copy(r[32:38], a[8:14])
		copy(r[38:42], a[14:18])
		return r
	case 0x0800: // IPv4
		ip := f[14:]
		if len(ip) < 20 {
			return nil
		}
		ihl := int(ip[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(ip[2:4]))
		if ihl < 20 || total < ihl+8 || total > len(ip) || ip[9] != 1 || !bytes.Equal(ip[16:20], hostIP) || ip[ihl] != 8 {
			return nil
		}
		r := append([]byte(nil), f[:14+total]...)
		copy(r[0:6], f[6:12])
		copy(r[6:12], hostMAC)
		rip := r[14:]
		copy(rip[12:16], ip[16:20])
		copy(rip[16:20], ip[12:16]) // swapping addresses keeps the header checksum
		icmp := rip[ihl:total]
		icmp[0] = 0 // echo reply
		icmp[2], icmp[3] = 0, 0
		binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
		return r
	}
	return nil
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
