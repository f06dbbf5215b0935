// Package ethudp is a wire-compatible reimplementation of EthUDP (github.com/bg6cq/ethudp,
// EthUDP.c): Ethernet frames carried in plain UDP datagrams, with optional LZ4 block
// compression, optional xor or AES-CBC obfuscation, a two-piece "UDPFRG" fragmentation, PING/PONG
// link monitoring and a PASSWORD packet that authenticates and latches a peer behind NAT.
//
// The package has two layers:
//
//   - [Codec] turns one payload (an Ethernet frame or a control message) into the one or two UDP
//     datagrams the reference sends, and a received datagram back into a payload, in the same
//     order as the reference: compress, then encrypt, then fragment on send; reassemble, then
//     decrypt, then decompress on receive. A Codec is pure: it owns no socket and reads no clock.
//   - [Link] is one UDP endpoint pair (a fixed remote, or a remote learned from the first valid or
//     authenticated datagram) that sends and receives frames with a Codec, answers PINGs, sends a
//     PING (and the PASSWORD, when set) every tick, tracks link up/down with the reference's
//     hysteresis and counts what it sent, received and dropped, by reason.
//
// Security: EthUDP's "encryption" is for interoperability with existing sites only. xor is a
// repeating-key xor, and AES-CBC uses a constant all-zero IV and a key made of the raw key string
// zero-padded to the key size, with no integrity check: equal frames give equal ciphertext and
// frames can be altered. [NewCodec] reports this through its warn hook. New deployments should use
// a maintained protocol (WireGuard in userspace), never these modes.
//
// The wire format is documented, as tables, in docs/overlay-ethudp.md.
package ethudp
