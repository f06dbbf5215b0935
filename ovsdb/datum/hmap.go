package datum

import (
	"encoding/binary"
	"math/bits"
)

// This file models OVS's hash_string and the iteration order of its hash tables (struct
// hmap), for the generic (non-SSE4.2) build of OVS that distributions ship. That order is
// visible to users of ovs-vsctl: the listing printed by --commands, which offending option is
// reported when a command has several bad options ("'show' command has no '--x' option" names
// the first bad option in map order, not in argument order), the order of smap columns and of
// the rows list and find print. The model was written from observation and checked against the
// ovs-vsctl 3.1 binary (TestHashOrder, the cli listing tests and the vsctl differential tests):
//
//   - keys hash with a 32-bit multiply-rotate mixer over little-endian 4-byte words (the
//     MurmurHash3 x86_32 block and finalisation steps, basis 0, length folded in before the
//     final mix);
//   - the table starts with one bucket; after each insertion, if count/2 exceeds the bucket mask,
//     the mask grows to the next all-ones value covering count/2 (at least 3), and entries are
//     moved bucket by bucket (which reverses each chain);
//   - an entry is pushed at the head of its bucket's chain; iteration walks buckets in index
//     order and each chain from its head.

// HashString is OVS's hash_string(s, 0): a Murmur3-style hash of the bytes of s.
func HashString(s string) uint32 {
	p := []byte(s)
	var h uint32
	for len(p) >= 4 {
		h = hashAdd(h, binary.LittleEndian.Uint32(p))
		p = p[4:]
	}
	if len(p) > 0 {
		var tail [4]byte
		copy(tail[:], p)
		h = hashAdd(h, binary.LittleEndian.Uint32(tail[:]))
	}
	return hashFinish(h ^ uint32(len(s)))
}

// hashAdd folds one 32-bit word into the running hash.
func hashAdd(h, w uint32) uint32 {
	w *= 0xcc9e2d51
	w = bits.RotateLeft32(w, 15)
	w *= 0x1b873593
	h ^= w
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

// hashFinish avalanches the bits of h.
func hashFinish(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// hmapMask returns the bucket mask an hmap adopts when it holds n entries.
func hmapMask(n uint32) uint32 {
	m := n / 2
	for _, s := range []uint{1, 2, 4, 8, 16} {
		m |= m >> s
	}
	return m | (m&1)<<1
}

// HmapOrder returns the indexes of hashes in the order an OVS hmap iterates them after they
// were inserted one by one in index order. Equal hashes are separate entries; a lookup by key
// finds the one that comes first in this order.
func HmapOrder(hashes []uint32) []int {
	mask := uint32(0)
	buckets := [][]int{nil} // each bucket listed head first
	for i, h := range hashes {
		b := h & mask
		buckets[b] = append([]int{i}, buckets[b]...)
		if n := uint32(i + 1); n/2 > mask {
			if nm := hmapMask(n); nm > mask {
				next := make([][]int, nm+1)
				for _, chain := range buckets {
					for _, idx := range chain {
						nb := hashes[idx] & nm
						next[nb] = append([]int{idx}, next[nb]...)
					}
				}
				buckets, mask = next, nm
			}
		}
	}
	order := make([]int, 0, len(hashes))
	for _, chain := range buckets {
		order = append(order, chain...)
	}
	return order
}

// HashOrder returns the indexes of keys, inserted in the given order into a string-keyed OVS
// hash map (shash, smap, sset), in the order that map iterates them: HmapOrder of their
// HashString.
func HashOrder(keys []string) []int {
	hashes := make([]uint32, len(keys))
	for i, k := range keys {
		hashes[i] = HashString(k)
	}
	return HmapOrder(hashes)
}
