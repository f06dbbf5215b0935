// Package wg brings up encrypted overlay links with WireGuard's Go implementation
// (golang.zx2c4.com/wireguard) in userspace, for kernels without the wireguard module: a tun
// interface whose IP packets are sealed with WireGuard's Noise handshake and ChaCha20-Poly1305
// and sent over UDP. No cryptography is implemented here; keys are checked and public keys are
// derived with the standard library's crypto/ecdh.
//
// WireGuard carries IP packets (layer 3), while an OVS bridge wants Ethernet ports (layer 2),
// and a tun, which has no Ethernet header, does not work as an ordinary OVS port. The overlay
// therefore runs an Ethernet tunnel inside the WireGuard link: the EthUDP engine (package
// overlay/ethudp, plain, no cipher) uses the peer's WireGuard address as its remote and is
// attached to br-int through a tap (ethudp.AttachTap), so frames from br-int become EthUDP
// datagrams, which the kernel routes into the tun, and WireGuard encrypts them on the way to
// the underlay. An OVS-native vxlan port is not used for this on the userspace datapath: its
// encapsulation (tnl_push) leaves through the OVS bridge that holds the underlay address
// (br-phy), while the route to a WireGuard address leaves through the tun. docs/overlay.md
// describes the layout.
//
// A Device is created with Open from a validated, bounded Config (keys, listen port, inner
// address, MTU, peers with endpoints and allowed IPs) and reports per-peer statistics
// (handshake time, bytes) with Stats.
package wg
