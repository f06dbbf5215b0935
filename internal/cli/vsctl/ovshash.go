package vsctl

import (
	"encoding/binary"
	"math/bits"
	"strconv"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// Some ovs-vsctl output is in the iteration order of OVS's hash tables (struct hmap), which
// is a function of the keys' hashes and the order they were inserted. These functions model
// both, for the generic (non-SSE4.2) build of OVS that distributions ship.

// ovsHashString is OVS's hash_string(s, 0): a Murmur3-style hash of the bytes of s.
func ovsHashString(s string) uint32 {
	return ovsHashBytes([]byte(s), 0)
}

func ovsHashBytes(p []byte, basis uint32) uint32 {
	h := basis
	n := len(p)
	for len(p) >= 4 {
		h = ovsHashAdd(h, binary.LittleEndian.Uint32(p))
		p = p[4:]
	}
	if len(p) > 0 {
		var tail [4]byte
		copy(tail[:], p)
		h = ovsHashAdd(h, binary.LittleEndian.Uint32(tail[:]))
	}
	return ovsHashFinish(h ^ uint32(n))
}

func ovsHashAdd(h, data uint32) uint32 {
	if data != 0 {
		data *= 0xcc9e2d51
		data = bits.RotateLeft32(data, 15)
		data *= 0x1b873593
		h ^= data
	}
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func ovsHashFinish(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// hmapOrder returns the indexes of hashes in the order an OVS hmap iterates them after they
// were inserted one by one in index order: buckets in increasing order, each bucket from its
// most recent node, with the table growing (and every bucket's list reversed by the rehash)
// whenever it holds more than twice as many nodes as it has buckets.
func hmapOrder(hashes []uint32) []int {
	mask := uint32(0)
	buckets := [][]int{nil} // each bucket listed head first
	for i, h := range hashes {
		b := h & mask
		buckets[b] = append([]int{i}, buckets[b]...)
		n := uint32(i + 1)
		if n/2 > mask {
			newMask := hmapCalcMask(n)
			if newMask > mask {
				next := make([][]int, newMask+1)
				for _, list := range buckets {
					for _, node := range list {
						nb := hashes[node] & newMask
						next[nb] = append([]int{node}, next[nb]...)
					}
				}
				buckets, mask = next, newMask
			}
		}
	}
	var out []int
	for _, list := range buckets {
		out = append(out, list...)
	}
	return out
}

// hmapCalcMask is the bucket mask OVS picks for a table of n nodes.
func hmapCalcMask(n uint32) uint32 {
	mask := n / 2
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	mask |= (mask & 1) << 1
	return mask
}

// smapHashOrder returns the indexes of a string map's pairs in the order ovs-vsctl iterates
// the smap its IDL builds from the column (pairs inserted in key order, hashed by key).
func smapHashOrder(d cli.Datum) []int {
	hashes := make([]uint32, len(d.Keys))
	for i, k := range d.Keys {
		hashes[i] = ovsHashString(k.Str)
	}
	return hmapOrder(hashes)
}

// idlOrder puts rows, given in the order of ovsdb-server's monitor reply (dbcmd's listing
// order), into the order ovs-vsctl's IDL iterates them, which is what ovs-vsctl's list and
// find print: the client parses the reply's JSON object into a hash table keyed by UUID
// string, and inserts the rows, in that table's order, into the IDL's row table, hashed by the
// first 32 bits of their UUID. Rows inserted by this invocation come last, in their own order.
func idlOrder(rows []*dbcmd.Row) []*dbcmd.Row {
	var old, fresh []*dbcmd.Row
	for _, r := range rows {
		if r.Inserted() {
			fresh = append(fresh, r)
		} else {
			old = append(old, r)
		}
	}
	byString := func(in []*dbcmd.Row) []*dbcmd.Row {
		hashes := make([]uint32, len(in))
		for i, r := range in {
			hashes[i] = ovsHashString(r.UUID())
		}
		out := make([]*dbcmd.Row, len(in))
		for i, j := range hmapOrder(hashes) {
			out[i] = in[j]
		}
		return out
	}
	old = byString(old) // the client's parse of the server's JSON object
	hashes := make([]uint32, len(old))
	for i, r := range old {
		if v, err := strconv.ParseUint(r.UUID()[:8], 16, 32); err == nil {
			hashes[i] = uint32(v)
		}
	}
	out := make([]*dbcmd.Row, 0, len(rows))
	for _, j := range hmapOrder(hashes) {
		out = append(out, old[j])
	}
	return append(out, fresh...)
}
