package wg

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func mustKey(t *testing.T) Key {
	t.Helper()
	k, err := GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustPub(t *testing.T, k Key) Key {
	t.Helper()
	p, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKnownPublicKey checks the public-key derivation against a pair printed by `wg genkey |
// tee priv | wg pubkey` (RFC 7748's Alice key, whose public key the RFC lists).
func TestKnownPublicKey(t *testing.T) {
	// RFC 7748 §6.1: Alice's private and public keys.
	priv, err := ParseKey("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pub.hex(), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"; got != want {
		t.Fatalf("public key %s, want %s", got, want)
	}
	if again, err := ParseKey(pub.String()); err != nil || again != pub {
		t.Fatalf("round trip: %v %v", again, err)
	}
}

func TestParseKeyRefuses(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("A", 43) + "!", strings.Repeat("A", 44), "AAAA" + strings.Repeat("A", 39) + "=="} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
	if _, err := (Key{}).PublicKey(); err == nil {
		t.Error("zero private key gave a public key")
	}
}

func TestConfigValidate(t *testing.T) {
	priv, other := mustKey(t), mustKey(t)
	peer := Peer{PublicKey: mustPub(t, other), AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.78.0.2/32")},
		Endpoint: netip.MustParseAddrPort("10.77.0.2:51820")}
	good := Config{Name: "wg0", PrivateKey: priv, Peers: []Peer{peer}}
	if mtu, err := good.validate(); err != nil || mtu != DefaultMTU {
		t.Fatalf("good config: mtu %d, %v", mtu, err)
	}
	tooMany := make([]netip.Prefix, MaxAllowedIPs+1)
	for i := range tooMany {
		tooMany[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
	}
	cases := map[string]func(c *Config){
		"interface name":    func(c *Config) { c.Name = "" },
		"use only":          func(c *Config) { c.Name = "wg 0" },
		"PrivateKey":        func(c *Config) { c.PrivateKey = Key{} },
		"MTU":               func(c *Config) { c.MTU = 100 },
		"own public key":    func(c *Config) { c.Peers[0].PublicKey = mustPub(t, priv) },
		"same PublicKey":    func(c *Config) { c.Peers = append(c.Peers, c.Peers[0]) },
		"PublicKey is req":  func(c *Config) { c.Peers[0].PublicKey = Key{} },
		"non-zero port":     func(c *Config) { c.Peers[0].Endpoint = netip.MustParseAddrPort("10.77.0.2:0") },
		"AllowedIPs":        func(c *Config) { c.Peers[0].AllowedIPs = nil },
		"give 1-256":        func(c *Config) { c.Peers[0].AllowedIPs = tooMany },
		"without host bits": func(c *Config) { c.Peers[0].AllowedIPs = []netip.Prefix{netip.MustParsePrefix("10.78.0.2/24")} },
		"to peers 0 and 1": func(c *Config) {
			c.Peers = append(c.Peers, Peer{PublicKey: mustPub(t, mustKey(t)), AllowedIPs: c.Peers[0].AllowedIPs})
		},
		"whole seconds":  func(c *Config) { c.Peers[0].PersistentKeepalive = 1500 * time.Millisecond },
		"peers: at most": func(c *Config) { c.Peers = make([]Peer, MaxPeers+1) },
	}
	for want, mutate := range cases {
		c := good
		c.Peers = append([]Peer(nil), good.Peers...)
		mutate(&c)
		if _, err := c.validate(); err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(want, " req")) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

func TestUAPIAndParseState(t *testing.T) {
	priv, other := mustKey(t), mustKey(t)
	c := Config{Name: "wg0", PrivateKey: priv, ListenPort: 51820, Peers: []Peer{{PublicKey: mustPub(t, other),
		Endpoint: netip.MustParseAddrPort("10.77.0.2:51821"), PersistentKeepalive: 25 * time.Second,
		AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.78.0.0/24"), netip.MustParsePrefix("fd78::/64")}}}}
	u := c.uapi()
	for _, want := range []string{"private_key=" + priv.hex() + "\n", "listen_port=51820\n", "replace_peers=true\n",
		"public_key=" + mustPub(t, other).hex() + "\n", "endpoint=10.77.0.2:51821\n", "persistent_keepalive_interval=25\n",
		"allowed_ip=10.78.0.0/24\n", "allowed_ip=fd78::/64\n"} {
		if !strings.Contains(u, want) {
			t.Errorf("uapi lacks %q:\n%s", want, u)
		}
	}
	state := "private_key=" + priv.hex() + "\nlisten_port=51820\npublic_key=" + mustPub(t, other).hex() +
		"\npreshared_key=" + (Key{}).hex() + "\nprotocol_version=1\nendpoint=10.77.0.2:51821\nlast_handshake_time_sec=1700000000\n" +
		"last_handshake_time_nsec=5\ntx_bytes=1000\nrx_bytes=2000\npersistent_keepalive_interval=25\nallowed_ip=10.78.0.0/24\n"
	port, peers, err := parseState(state)
	if err != nil || port != 51820 || len(peers) != 1 {
		t.Fatalf("parseState: %d %v %v", port, peers, err)
	}
	p := peers[0]
	if p.TxBytes != 1000 || p.RxBytes != 2000 || p.LastHandshake != time.Unix(1700000000, 5) || p.Endpoint.Port() != 51821 {
		t.Fatalf("peer %+v", p)
	}
	if _, _, err := parseState("tx_bytes=1\n"); err == nil {
		t.Error("tx_bytes before a peer accepted")
	}
}
