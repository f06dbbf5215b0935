//go:build linux

package link

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Receive ring geometry (TPACKET_V3): by default RingBlocks blocks of RingBlockSize bytes,
// 4 MiB shared with the kernel (Config.RingBlocks sets another number). The kernel fills a
// block with frames and hands it over when it is full or RingBlockTimeout milliseconds after
// its first frame, whichever comes first.
const (
	RingBlockSize    = 1 << 18
	RingBlocks       = 16
	RingBlockTimeout = 1 // ms
	ringFrameSize    = 2048
)

// Offsets in the TPACKET_V3 structures (linux/if_packet.h).
const (
	blockStatusOff  = 8  // tpacket_block_desc.hdr.bh1.block_status
	blockNumPktsOff = 12 // num_pkts
	blockFirstOff   = 16 // offset_to_first_pkt
	pktNextOff      = 0  // tpacket3_hdr.tp_next_offset
	pktSnaplenOff   = 12 // tp_snaplen
	pktLenOff       = 16 // tp_len
	pktNetOff       = 26 // tp_net: where the data starts (SOCK_DGRAM: after the link header)
	pktAddrOff      = 48 // TPACKET_ALIGN(sizeof(tpacket3_hdr)): the sockaddr_ll
	llPkttypeOff    = 10 // sockaddr_ll.sll_pkttype
	llHalenOff      = 11 // sockaddr_ll.sll_halen
	llAddrOff       = 12 // sockaddr_ll.sll_addr
)

// rxRing is a mapped TPACKET_V3 receive ring; the receivers take turns on it.
type rxRing struct {
	mu     sync.Mutex
	mem    []byte
	blocks int // RingBlockSize bytes each
	cur    int // the block being read
	left   int // frames left in it; 0: not yet taken (or all read)
	off    int // offset of the next frame in the ring
	open   bool
}

// setupRing switches fd to TPACKET_V3 and maps a receive ring of blocks blocks.
func setupRing(fd, blocks int) (*rxRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, fmt.Errorf("TPACKET_V3: %w", err)
	}
	req := unix.TpacketReq3{Block_size: RingBlockSize, Block_nr: uint32(blocks), Frame_size: ringFrameSize,
		Frame_nr: RingBlockSize / ringFrameSize * uint32(blocks), Retire_blk_tov: RingBlockTimeout}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING of %d × %d bytes: %w", blocks, RingBlockSize, err)
	}
	mem, err := unix.Mmap(fd, 0, RingBlockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the receive ring: %w", err)
	}
	return &rxRing{mem: mem, blocks: blocks, open: true}, nil
}

// status returns a pointer to block b's status word, shared with the kernel.
func (r *rxRing) status(b int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.mem[b*RingBlockSize+blockStatusOff]))
}

// ready reports whether a frame can be taken without waiting.
func (r *rxRing) ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open && (r.left > 0 || atomic.LoadUint32(r.status(r.cur))&unix.TP_STATUS_USER != 0)
}

// ringFrame is one frame taken from the ring.
type ringFrame struct {
	ok       bool // a frame was taken
	n        int  // its length on the wire
	copied   int  // bytes copied into the caller's buffer
	outgoing bool
	src      net.HardwareAddr
}

// take copies the next frame into buf, releasing its block to the kernel when it was the last.
func (r *rxRing) take(buf []byte) ringFrame {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		return ringFrame{}
	}
	base := r.cur * RingBlockSize
	if r.left == 0 {
		if atomic.LoadUint32(r.status(r.cur))&unix.TP_STATUS_USER == 0 {
			return ringFrame{}
		}
		r.left = int(binary.NativeEndian.Uint32(r.mem[base+blockNumPktsOff:]))
		r.off = base + int(binary.NativeEndian.Uint32(r.mem[base+blockFirstOff:]))
		if r.left == 0 { // an empty retired block
			r.release()
			return ringFrame{}
		}
	}
	var f ringFrame
	end := base + RingBlockSize
	if r.off < base || r.off+pktAddrOff+llAddrOff+6 > end {
		r.release() // a malformed block: give it back rather than read outside it
		return ringFrame{}
	}
	p := r.mem[r.off:end]
	snap := int(binary.NativeEndian.Uint32(p[pktSnaplenOff:]))
	f.n = int(binary.NativeEndian.Uint32(p[pktLenOff:]))
	data := int(binary.NativeEndian.Uint16(p[pktNetOff:]))
	ll := p[pktAddrOff:]
	f.outgoing = ll[llPkttypeOff] == unix.PACKET_OUTGOING || ll[llHalenOff] != 6
	f.src = net.HardwareAddr(append([]byte(nil), ll[llAddrOff:llAddrOff+6]...))
	if data+snap <= len(p) && snap == f.n {
		f.copied = copy(buf, p[data:data+snap])
	}
	f.ok = true
	next := int(binary.NativeEndian.Uint32(p[pktNextOff:]))
	r.left--
	if r.left == 0 || next <= 0 {
		r.release()
	} else {
		r.off += next
	}
	return f
}

// release hands the current block back to the kernel and moves to the next one.
func (r *rxRing) release() {
	atomic.StoreUint32(r.status(r.cur), unix.TP_STATUS_KERNEL)
	r.cur = (r.cur + 1) % r.blocks
	r.left = 0
}

// close unmaps the ring; later takes find nothing.
func (r *rxRing) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		return nil
	}
	r.open = false
	return unix.Munmap(r.mem)
}
