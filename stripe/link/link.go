// Package link is the stripe engine's view of one NIC: a Link sends and receives whole stripe
// frames (the stripe/frame header and its payload) as the payload of Ethernet frames of the
// stripe ethertype, addressed by MAC.
//
// # Ethertype
//
// Stripe frames travel directly over Ethernet with EtherType 0x88B5, one of the two values IEEE
// 802 reserves for local experimental use (0x88B5 and 0x88B6, "Local Experimental EtherType 1
// and 2"). It never leaves a site's L2 network and no registered protocol uses it, so a host
// receives only stripe frames on a socket bound to it. A deployment that already uses 0x88B5
// picks another value with Config.EtherType.
//
// # Kernel-NIC mode
//
// Open returns the AF_PACKET implementation: a SOCK_DGRAM packet socket bound to one interface
// and the ethertype, non-blocking and driven by the Go runtime's poller, so Send and Recv block
// only their goroutine and end when their context does. The kernel builds and strips the
// Ethernet header; Send takes the destination MAC (from stripe/discovery) and Recv reports the
// source MAC. Frames are bounded by the interface MTU in both directions: Send rejects a longer
// frame and Recv drops (and counts) one that does not fit the caller's buffer. Stats reads the
// socket's kernel counters (PACKET_STATISTICS: frames received and frames dropped because the
// receive buffer was full) and adds them up, since every read resets them.
//
// A packet socket keeps working across `ip link set down` / `up`: while the interface is down,
// Send fails with an error for which IsDown is true, and State reports it down; once it is up
// again both work as before.
//
// Send is one sendto per frame; SendBatch (the optional Batcher interface) hands up to MaxBatch
// frames to the kernel with one sendmmsg. Received frames are one recvfrom each, or, with
// Config.RxRing, are read from a TPACKET_V3 ring the kernel fills in blocks: Recv makes a system
// call only to wait when the ring is empty. A block is handed over when full or RingBlockTimeout
// after its first frame, so a lone frame waits up to that long. AF_XDP is not used.
package link

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// EtherType is the default ethertype of stripe frames: IEEE 802 Local Experimental EtherType 1.
const EtherType = 0x88B5

// Bounds of a link's frames and configuration.
const (
	// MinMTU is the smallest interface MTU a link accepts (the IPv4 minimum, 68 bytes).
	MinMTU = 68
	// MaxMTU is the largest frame a link sends or receives, whatever the interface's MTU.
	MaxMTU = 65535
	// MaxNameLen is the longest interface name (Linux IFNAMSIZ − 1).
	MaxNameLen = 15
	// DefaultRecvBuffer is the receive socket buffer Open asks for when Config.RecvBuffer is 0.
	DefaultRecvBuffer = 4 << 20
	// MaxSocketBuffer bounds Config.RecvBuffer and Config.SendBuffer.
	MaxSocketBuffer = 256 << 20
	// MinSocketBuffer is the smallest socket buffer Config accepts (the kernel rounds smaller
	// values up anyway).
	MinSocketBuffer = 4096
)

// ErrTooLong is wrapped by Send for a frame longer than the link's MTU.
var ErrTooLong = errors.New("frame longer than the link MTU")

// ErrClosed is wrapped by Send and Recv on a closed link.
var ErrClosed = errors.New("link closed")

// Link is one NIC carrying stripe frames. Send and Recv may be called from different goroutines
// at the same time, and each of them from several goroutines; Stats, State and Close from any.
type Link interface {
	// Name is the interface name.
	Name() string
	// MAC is the interface's hardware address, read when the link was opened.
	MAC() net.HardwareAddr
	// MTU is the largest frame, in bytes, Send accepts and Recv returns.
	MTU() int
	// Send transmits b (a whole stripe frame, at most MTU bytes) to the NIC with MAC dst. It
	// blocks while the socket's send buffer is full, until ctx ends. A failure because the
	// interface is down or gone satisfies IsDown.
	Send(ctx context.Context, dst net.HardwareAddr, b []byte) error
	// Recv waits until a frame arrives or ctx ends, copies it into buf and returns its length
	// and source MAC (a new slice). A frame longer than buf is dropped and counted
	// (Stats.RxOversize) and Recv waits for the next one. After the interface went down, one
	// call returns an error satisfying IsDown; the caller may go on receiving.
	Recv(ctx context.Context, buf []byte) (int, net.HardwareAddr, error)
	// Stats returns the link's counters.
	Stats() Stats
	// State reads whether the interface is administratively up and has carrier now.
	State() (State, error)
	// Close releases the socket; pending and later Send and Recv calls fail with ErrClosed.
	Close() error
}

// State is an interface's state.
type State struct {
	Up bool // administratively up (IFF_UP)
	// Running says the carrier is present: the driver's answer to ETHTOOL_GLINK, immediate, or,
	// for a driver without it, IFF_RUNNING (which lags the carrier by up to a second).
	Running bool
}

// Usable reports whether frames can flow: up and running.
func (s State) Usable() bool { return s.Up && s.Running }

// Stats are a link's counters since Open.
type Stats struct {
	TxFrames, TxBytes uint64 // frames and bytes handed to the kernel
	TxErrors          uint64 // Send calls the kernel refused (down, no buffer, …)
	RxFrames, RxBytes uint64 // frames and bytes returned by Recv
	RxOversize        uint64 // frames dropped because they did not fit the caller's buffer
	// KernelRx and KernelDrops are the socket's PACKET_STATISTICS, summed: frames that reached
	// the socket, and frames the kernel dropped because its receive buffer was full.
	KernelRx, KernelDrops uint64
}

// Config configures Open.
type Config struct {
	// Interface names the NIC: 1..MaxNameLen characters, no '/', no space.
	Interface string
	// EtherType of the stripe frames; 0 means EtherType. Must be ≥ 0x0600 (an ethertype, not a
	// length).
	EtherType uint16
	// RecvBuffer is the socket receive buffer in bytes; 0 means DefaultRecvBuffer, otherwise
	// MinSocketBuffer..MaxSocketBuffer. Root processes get it even above net.core.rmem_max.
	RecvBuffer int
	// SendBuffer is the socket send buffer in bytes; 0 keeps the kernel default (which, smaller
	// than a shaped link's queue, makes Send wait instead of the qdisc dropping), otherwise
	// MinSocketBuffer..MaxSocketBuffer.
	SendBuffer int
	// RxRing receives through a TPACKET_V3 ring mapped into the process (RingBlocks blocks of
	// RingBlockSize bytes) instead of one recvfrom per frame; RecvBuffer then does not apply.
	RxRing bool
	// PeerNode, when not 0, makes the kernel hand the socket only the frames whose header names
	// PeerNode as their source node (a socket filter; data, acks and hellos alike), so that the
	// engines of several peers on one NIC do not each get a copy of every other peer's frames.
	// 0 takes every frame of the ethertype.
	PeerNode uint32
	// RingBlocks is the receive ring's size in blocks of RingBlockSize (256 KiB) with RxRing;
	// 0 means the package's RingBlocks (16, 4 MiB), otherwise 1 to MaxRingBlocks. The kernel
	// drops what arrives while the ring is full, so it should hold what the link carries while
	// the receiver may be kept from running (100–200 ms on a busy host).
	RingBlocks int
}

// MaxRingBlocks bounds Config.RingBlocks (256 MiB).
const MaxRingBlocks = 1024

// check validates and fills the defaults of cfg.
func (c *Config) check() error {
	if err := CheckInterfaceName(c.Interface); err != nil {
		return err
	}
	if c.EtherType == 0 {
		c.EtherType = EtherType
	}
	if c.EtherType < 0x0600 {
		return fmt.Errorf("link %s: ethertype %#04x is an 802.3 length, not an ethertype: use %#04x or another value ≥ 0x0600", c.Interface, c.EtherType, EtherType)
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = DefaultRecvBuffer
	}
	if c.RingBlocks < 0 || c.RingBlocks > MaxRingBlocks {
		return fmt.Errorf("link %s: receive ring of %d blocks: want 1 to %d (or 0 for the default)", c.Interface, c.RingBlocks, MaxRingBlocks)
	}
	for _, b := range []struct {
		what string
		n    int
	}{{"receive", c.RecvBuffer}, {"send", c.SendBuffer}} {
		if b.n != 0 && (b.n < MinSocketBuffer || b.n > MaxSocketBuffer) {
			return fmt.Errorf("link %s: %s buffer of %d bytes: want %d to %d (or 0 for the default)", c.Interface, b.what, b.n, MinSocketBuffer, MaxSocketBuffer)
		}
	}
	return nil
}

// CheckInterfaceName validates an interface name: 1..MaxNameLen bytes, printable, without '/'
// or white space, not "." or "..".
func CheckInterfaceName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("link: interface name %q: want 1 to %d characters", name, MaxNameLen)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("link: interface name %q is not a valid name", name)
	}
	for _, r := range name {
		if r <= ' ' || r == '/' || r == ':' || r >= 0x7f {
			return fmt.Errorf("link: interface name %q: %q is not allowed in an interface name", name, r)
		}
	}
	return nil
}

// IsDown reports whether err says the link's interface is down or gone (ENETDOWN, ENXIO,
// ENODEV): the engine then skips the link until State reports it usable again.
func IsDown(err error) bool { return isDown(err) }

// Outgoing is one frame of a batch: the destination MAC and the whole stripe frame.
type Outgoing struct {
	Dst net.HardwareAddr
	B   []byte
}

// MaxBatch bounds the frames of one SendBatch call.
const MaxBatch = 256

// Batcher is implemented by links that hand several frames to the kernel with one system call
// (the AF_PACKET link: sendmmsg). The engine uses it when the link has it.
type Batcher interface {
	// SendBatch transmits the frames in order, as Send does each (same bounds and errors). It
	// blocks while the socket's send buffer is full, until ctx ends, and returns how many frames
	// the kernel took: on an error, the frames before the one that failed. At most MaxBatch
	// frames per call.
	SendBatch(ctx context.Context, frames []Outgoing) (int, error)
}
