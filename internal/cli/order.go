package cli

// This file models the iteration order of the string-keyed hash map ovs-vsctl keeps its
// command table and each command's options in. That order is visible to users in two places:
// the listing printed by --commands, and which offending option is reported when a command is
// given several bad options ("'show' command has no '--x' option" names the first bad option in
// map order, not in argument order). The model was written from observation and checked
// against the ovs-vsctl 3.1 binary (see TestCommandsListingOrder and the differential test):
//
//   - keys hash with a 32-bit multiply-rotate mixer over little-endian 4-byte words (the
//     MurmurHash3 x86_32 block and finalisation steps, basis 0, length folded in before the
//     final mix);
//   - the table starts with one bucket; after each insertion, if count/2 exceeds the bucket mask,
//     the mask grows to the next all-ones value covering count/2 (at least 3), and entries are
//     moved bucket by bucket;
//   - an entry is pushed at the head of its bucket's chain; iteration walks buckets in index
//     order and each chain from its head.

// hashString returns the 32-bit hash ovs-vsctl's string map uses for key s.
func hashString(s string) uint32 {
	var h uint32
	n := len(s)
	i := 0
	for ; n-i >= 4; i += 4 {
		w := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
		h = mixWord(h, w)
	}
	if i < n {
		var w uint32
		for j := 0; i+j < n; j++ {
			w |= uint32(s[i+j]) << (8 * j)
		}
		h = mixWord(h, w)
	}
	return finalMix(h ^ uint32(n))
}

func rotl32(x uint32, r uint) uint32 { return x<<r | x>>(32-r) }

// mixWord folds one 32-bit word into the running hash.
func mixWord(h, w uint32) uint32 {
	w *= 0xcc9e2d51
	w = rotl32(w, 15)
	w *= 0x1b873593
	h ^= w
	h = rotl32(h, 13)
	return h*5 + 0xe6546b64
}

// finalMix avalanches the bits of h.
func finalMix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// growMask returns the bucket mask the map adopts when it holds n entries.
func growMask(n int) int {
	m := n / 2
	for _, s := range []uint{1, 2, 4, 8, 16, 32} {
		m |= m >> s
	}
	return m | (m&1)<<1
}

// hashOrder returns the indexes of keys, inserted in the given order, in the order
// ovs-vsctl's string map iterates them. Repeated keys are separate entries, as when ovs-vsctl
// adds a key twice; a lookup finds the entry that comes first in this order.
func hashOrder(keys []string) []int {
	hashes := make([]uint32, len(keys))
	for i, k := range keys {
		hashes[i] = hashString(k)
	}
	mask := 0
	buckets := [][]int{nil}
	for i := range keys {
		b := int(hashes[i]) & mask
		buckets[b] = append([]int{i}, buckets[b]...)
		if n := i + 1; n/2 > mask {
			if nm := growMask(n); nm > mask {
				next := make([][]int, nm+1)
				for _, chain := range buckets {
					for _, idx := range chain {
						nb := int(hashes[idx]) & nm
						next[nb] = append([]int{idx}, next[nb]...)
					}
				}
				buckets, mask = next, nm
			}
		}
	}
	order := make([]int, 0, len(keys))
	for _, chain := range buckets {
		order = append(order, chain...)
	}
	return order
}
