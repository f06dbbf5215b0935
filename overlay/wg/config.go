package wg

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Bounds of a Config.
const (
	// DefaultMTU is the tun MTU when Config.MTU is 0: WireGuard's usual 1420 (a 1500-byte
	// underlay minus 80 bytes of IPv6 + UDP + WireGuard overhead).
	DefaultMTU = 1420
	// MinMTU and MaxMTU bound Config.MTU (IPv6's minimum; jumbo frames).
	MinMTU, MaxMTU = 1280, 9000
	// MaxPeers bounds Config.Peers.
	MaxPeers = 1024
	// MaxAllowedIPs bounds Peer.AllowedIPs.
	MaxAllowedIPs = 256
	// MaxKeepalive bounds Peer.PersistentKeepalive (WireGuard's field is 16 bits of seconds).
	MaxKeepalive = 65535 * time.Second
	// maxNameLen is the kernel's interface name limit (IFNAMSIZ - 1).
	maxNameLen = 15
)

// Peer is one WireGuard peer.
type Peer struct {
	// PublicKey is the peer's public key (required, unique, not this device's own).
	PublicKey Key
	// PresharedKey is an optional symmetric key mixed into the handshake (zero: none).
	PresharedKey Key
	// Endpoint is the peer's underlay address; the zero value means "learn it from the
	// peer's first authenticated packet" (the peer must then know ours).
	Endpoint netip.AddrPort
	// AllowedIPs are the inner prefixes routed to this peer and accepted from it (1 to
	// MaxAllowedIPs, canonical: no host bits set; no prefix may be given to two peers).
	AllowedIPs []netip.Prefix
	// PersistentKeepalive sends a keepalive this often (whole seconds, 0 = off, at most
	// MaxKeepalive); useful behind NAT.
	PersistentKeepalive time.Duration
}

// Config describes one WireGuard device: a tun interface driven by WireGuard's Go
// implementation in this process.
type Config struct {
	// Name is the tun interface's name (1–15 characters of A-Z a-z 0-9 . _ -).
	Name string
	// PrivateKey is this device's private key (required, not zero).
	PrivateKey Key
	// ListenPort is the UDP port WireGuard listens on (0: a free port, see Device.ListenPort).
	ListenPort uint16
	// Address is the tun's inner address with its prefix length ("10.78.0.1/24"); the zero
	// value leaves the tun without an address (the caller configures it).
	Address netip.Prefix
	// MTU is the tun's MTU (0: DefaultMTU; MinMTU–MaxMTU).
	MTU int
	// Peers are the peers (at most MaxPeers).
	Peers []Peer
	// Logger receives WireGuard's errors (Error) and verbose messages (Debug); nil discards.
	Logger *slog.Logger
	// RunIn runs fn on a thread that is in the network namespace the device belongs to; the
	// tun, its address and WireGuard's UDP sockets are created through it. nil runs fn directly
	// (the caller's namespace). Tests pass test/lab's Netns.Do.
	RunIn func(fn func() error) error
}

// validate checks every field and returns the effective MTU.
func (c *Config) validate() (int, error) {
	if err := checkName(c.Name); err != nil {
		return 0, err
	}
	if c.PrivateKey.IsZero() {
		return 0, errors.New("wg: PrivateKey is required: generate one with `wg genkey` or GeneratePrivateKey")
	}
	own, err := c.PrivateKey.PublicKey()
	if err != nil {
		return 0, err
	}
	mtu := c.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	if mtu < MinMTU || mtu > MaxMTU {
		return 0, fmt.Errorf("wg: MTU %d: use 0 (default %d) or %d-%d", c.MTU, DefaultMTU, MinMTU, MaxMTU)
	}
	if c.Address.IsValid() && c.Address.Addr().Is4In6() {
		return 0, fmt.Errorf("wg: Address %v: write IPv4 addresses as IPv4", c.Address)
	}
	if len(c.Peers) > MaxPeers {
		return 0, fmt.Errorf("wg: %d peers: at most %d", len(c.Peers), MaxPeers)
	}
	keys := make(map[Key]int, len(c.Peers))
	owner := make(map[netip.Prefix]int)
	for i, p := range c.Peers {
		if p.PublicKey.IsZero() {
			return 0, fmt.Errorf("wg: peer %d: PublicKey is required", i)
		}
		if p.PublicKey == own {
			return 0, fmt.Errorf("wg: peer %d: PublicKey %v is this device's own public key: give the peer's", i, p.PublicKey)
		}
		if j, dup := keys[p.PublicKey]; dup {
			return 0, fmt.Errorf("wg: peers %d and %d have the same PublicKey %v: merge them", j, i, p.PublicKey)
		}
		keys[p.PublicKey] = i
		if p.Endpoint.IsValid() && (p.Endpoint.Port() == 0 || p.Endpoint.Addr().IsUnspecified()) {
			return 0, fmt.Errorf("wg: peer %d: Endpoint %v needs a specific address and a non-zero port (or leave it empty to learn it)", i, p.Endpoint)
		}
		if len(p.AllowedIPs) == 0 || len(p.AllowedIPs) > MaxAllowedIPs {
			return 0, fmt.Errorf("wg: peer %d: %d AllowedIPs: give 1-%d prefixes", i, len(p.AllowedIPs), MaxAllowedIPs)
		}
		for _, pfx := range p.AllowedIPs {
			if !pfx.IsValid() || pfx != pfx.Masked() {
				return 0, fmt.Errorf("wg: peer %d: AllowedIP %v: give a prefix without host bits (%v)", i, pfx, pfx.Masked())
			}
			if j, dup := owner[pfx]; dup {
				return 0, fmt.Errorf("wg: AllowedIP %v is given to peers %d and %d: each prefix routes to one peer", pfx, j, i)
			}
			owner[pfx] = i
		}
		if p.PersistentKeepalive < 0 || p.PersistentKeepalive > MaxKeepalive || p.PersistentKeepalive%time.Second != 0 {
			return 0, fmt.Errorf("wg: peer %d: PersistentKeepalive %v: whole seconds from 0 (off) to %v", i, p.PersistentKeepalive, MaxKeepalive)
		}
	}
	return mtu, nil
}

// checkName validates an interface name.
func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("wg: interface name %q: give 1-%d characters", name, maxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("wg: interface name %q: use only A-Z a-z 0-9 . _ -", name)
		}
	}
	return nil
}

// uapi renders the validated configuration in WireGuard's configuration protocol
// (https://www.wireguard.com/xplatform/#configuration-protocol), replacing any previous peers.
func (c *Config) uapi() string {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line("private_key", c.PrivateKey.hex())
	line("listen_port", strconv.Itoa(int(c.ListenPort)))
	line("replace_peers", "true")
	for _, p := range c.Peers {
		line("public_key", p.PublicKey.hex())
		if !p.PresharedKey.IsZero() {
			line("preshared_key", p.PresharedKey.hex())
		}
		if p.Endpoint.IsValid() {
			line("endpoint", p.Endpoint.String())
		}
		line("persistent_keepalive_interval", strconv.Itoa(int(p.PersistentKeepalive/time.Second)))
		line("replace_allowed_ips", "true")
		for _, pfx := range p.AllowedIPs {
			line("allowed_ip", pfx.String())
		}
	}
	return b.String()
}
