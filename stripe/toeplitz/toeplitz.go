// Package toeplitz computes the Toeplitz hash that NICs use for receive-side scaling (the
// Microsoft RSS hash), with a configurable key, and the stripe flow tuple's hash → NIC index.
//
// # Algorithm
//
// The input is read left to right, most significant bit first. For input bit number p (0-based),
// the 32-bit window of the key starting at key bit p is XORed into the result when the input bit
// is 1. The window must lie inside the key, so an input may be at most len(key)-4 bytes long: 36
// bytes with the usual 40-byte key, enough for an IPv6 address pair with ports.
//
// Inputs are in network byte order, in packet order: source address, destination address, then
// source port and destination port for the L4 variants (IPv4: 8 or 12 bytes; IPv6: 32 or 36).
// AddrInput and AddrPortInput build them.
//
// # The stripe flow tuple
//
// Tuple is the seed's quintuple (ptype, s_node, d_node, s_port, d_port). Its input bytes, big
// endian, are exactly bytes 2..15 of the stripe frame header (stripe/frame), in the same order:
//
//	offset  size  field
//	0       2     ptype   (service type)
//	2       4     s_node  (source node id)
//	6       4     d_node  (destination node id)
//	10      2     s_port  (source endpoint port)
//	12      2     d_port  (destination endpoint port)
//
// 14 bytes in all (TupleLen). The send NIC is Hash(tuple) mod N (Index), as the seed says; it
// equals the RETA-style hash & (N-1) only when N is a power of two.
package toeplitz

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// Key lengths accepted by New. Every accepted key hashes every input this package builds (an IPv6
// 4-tuple needs 36+4 bytes of key).
const (
	MinKeyLen = 40
	MaxKeyLen = 256
)

// microsoftKeyHex is the 40-byte key of Microsoft's RSS verification suite, the default of most
// NIC drivers.
const microsoftKeyHex = "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"

// MicrosoftKey returns a fresh copy of the well-known 40-byte Microsoft RSS key
// (6d5a56da…beac01fa), the key of the verification table and of most NIC drivers' defaults.
func MicrosoftKey() []byte {
	k, err := hex.DecodeString(microsoftKeyHex)
	if err != nil { // the constant is valid hex; keep the no-panic rule anyway
		return nil
	}
	return k
}

// SymmetricKey returns a fresh copy of the 40-byte key 0x6d5a repeated, under which the hash of a
// (src, dst, sport, dport) input equals the hash of (dst, src, dport, sport).
func SymmetricKey() []byte {
	k := make([]byte, MinKeyLen)
	for i := 0; i < len(k); i += 2 {
		k[i], k[i+1] = 0x6d, 0x5a
	}
	return k
}

// Hasher computes Toeplitz hashes with one key. It is immutable and safe for concurrent use.
type Hasher struct {
	key []byte
}

// New returns a Hasher for key, which it copies. A nil or empty key means MicrosoftKey. The key
// must be MinKeyLen..MaxKeyLen bytes long.
func New(key []byte) (*Hasher, error) {
	if len(key) == 0 {
		key = MicrosoftKey()
	}
	if len(key) < MinKeyLen || len(key) > MaxKeyLen {
		return nil, fmt.Errorf("toeplitz: key of %d bytes: want %d to %d bytes (40 is the usual RSS key length)", len(key), MinKeyLen, MaxKeyLen)
	}
	return &Hasher{key: append([]byte(nil), key...)}, nil
}

// Key returns a copy of the hasher's key.
func (h *Hasher) Key() []byte { return append([]byte(nil), h.key...) }

// MaxInputLen is the longest input Hash accepts: len(key)-4 bytes.
func (h *Hasher) MaxInputLen() int { return len(h.key) - 4 }

// Hash returns the Toeplitz hash of input. It fails only when input is longer than MaxInputLen.
func (h *Hasher) Hash(input []byte) (uint32, error) {
	if len(input) > h.MaxInputLen() {
		return 0, fmt.Errorf("toeplitz: input of %d bytes: a %d-byte key hashes at most %d bytes", len(input), len(h.key), h.MaxInputLen())
	}
	return h.hash(input), nil
}

// hash is Hash without the length check; the caller guarantees len(input) <= MaxInputLen.
func (h *Hasher) hash(input []byte) uint32 {
	var result uint32
	for i, b := range input {
		if b == 0 {
			continue
		}
		// Key bits 8i .. 8i+39: the windows of this byte's 8 bits start at bits 8i .. 8i+7.
		w := uint64(binary.BigEndian.Uint32(h.key[i:]))<<8 | uint64(h.key[i+4])
		for bit := 0; bit < 8; bit++ {
			if b&(0x80>>bit) != 0 {
				result ^= uint32(w >> (8 - bit))
			}
		}
	}
	return result
}

// AddrInput returns the IP-only hash input: src then dst, in network byte order (8 bytes for IPv4,
// 32 for IPv6). Both addresses must be valid and of the same family; IPv4-mapped IPv6 addresses
// count as IPv6.
func AddrInput(src, dst netip.Addr) ([]byte, error) {
	if !src.IsValid() || !dst.IsValid() {
		return nil, fmt.Errorf("toeplitz: address pair %v, %v: both addresses must be set", src, dst)
	}
	if src.Is4() != dst.Is4() {
		return nil, fmt.Errorf("toeplitz: address pair %v, %v: mixes IPv4 and IPv6; pass two addresses of one family", src, dst)
	}
	in := append(src.AsSlice(), dst.AsSlice()...)
	return in, nil
}

// AddrPortInput returns the IP+TCP/UDP hash input: src addr, dst addr, src port, dst port, in
// network byte order (12 bytes for IPv4, 36 for IPv6), with AddrInput's rules for the addresses.
func AddrPortInput(src, dst netip.AddrPort) ([]byte, error) {
	in, err := AddrInput(src.Addr(), dst.Addr())
	if err != nil {
		return nil, err
	}
	in = binary.BigEndian.AppendUint16(in, src.Port())
	return binary.BigEndian.AppendUint16(in, dst.Port()), nil
}

// TupleLen is the length of a Tuple's hash input.
const TupleLen = 14

// Tuple is the seed's quintuple identifying a stripe flow; its byte layout is in the package
// documentation.
type Tuple struct {
	Service uint16 // ptype: the frame's service type
	SrcNode uint32 // s_node
	DstNode uint32 // d_node
	SrcPort uint16 // s_port: the source application endpoint port
	DstPort uint16 // d_port: the destination application endpoint port
}

// Bytes returns the tuple's TupleLen-byte hash input.
func (t Tuple) Bytes() [TupleLen]byte {
	var b [TupleLen]byte
	binary.BigEndian.PutUint16(b[0:], t.Service)
	binary.BigEndian.PutUint32(b[2:], t.SrcNode)
	binary.BigEndian.PutUint32(b[6:], t.DstNode)
	binary.BigEndian.PutUint16(b[10:], t.SrcPort)
	binary.BigEndian.PutUint16(b[12:], t.DstPort)
	return b
}

// HashTuple returns the Toeplitz hash of the tuple's bytes. It never fails: every key New accepts
// is long enough.
func (h *Hasher) HashTuple(t Tuple) uint32 {
	b := t.Bytes()
	return h.hash(b[:])
}

// MaxNICs bounds the NIC count of Index and of the policies built on it.
const MaxNICs = 256

// Index maps a hash to a NIC index: hash mod n, n in 1..MaxNICs.
func Index(hash uint32, n int) (int, error) {
	if n < 1 || n > MaxNICs {
		return 0, fmt.Errorf("toeplitz: %d NICs: want 1 to %d", n, MaxNICs)
	}
	return int(hash % uint32(n)), nil
}
