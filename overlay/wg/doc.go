// Package wg brings up encrypted overlay links with WireGuard's Go implementation
// (golang.zx2c4.com/wireguard) in userspace, for kernels without the wireguard module: a tun
// interface whose IP packets are sealed with WireGuard's Noise handshake and ChaCha20-Poly1305
// and sent over UDP. No cryptography is implemented here; keys are checked and public keys are
// derived with the standard library's crypto/ecdh.
//
// WireGuard carries IP packets (layer 3), while an OVS bridge wants Ethernet ports (layer 2),
// and a tun cannot be a port of OVS's userspace datapath. The overlay attaches a WireGuard link
// by running an Ethernet tunnel inside it: the EthUDP engine (package overlay/ethudp, plain,
// no cipher) or an OVS-native vxlan/geneve port uses the peer's WireGuard address as its
// remote, so frames from br-int are encapsulated, the result is routed by the kernel into the
// tun, and WireGuard encrypts it on the way to the underlay. docs/overlay.md describes the
// layout.
//
// A Device is created with Open from a validated, bounded Config (keys, listen port, inner
// address, MTU, peers with endpoints and allowed IPs) and reports per-peer statistics
// (handshake time, bytes) with Stats.
package wg
