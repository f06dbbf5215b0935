// Package tunnel is the stripe plugin's transparent mode: a tun device per peer whose IP
// packets the stripe engine carries, so an unmodified application's TCP or UDP connection to
// the peer's tunnel address is striped over all links and delivered in order.
//
// # Data path
//
// Run reads every IP packet the kernel routes into the tun device and hands it to the engine;
// on the peer, the engine delivers it and Run writes it to that node's tun device, where the
// kernel delivers it to the application. The tun device's MTU is at most the engine's
// MaxPayload, so one IP packet is exactly one engine frame: the engine never splits a packet,
// the receiver needs no reassembly, and a frame the engine gives up on (Stats.Lost) is one lost
// IP packet, which TCP recovers as on any path, instead of a hole in a byte stream.
//
// # Offloads
//
// The device is opened with IFF_VNET_HDR and TUNSETOFFLOAD (checksum, TSO for IPv4 and IPv6
// and, where the kernel has it, USO), unless Config.NoOffload. The sending kernel then hands
// over TCP (and UDP_SEGMENT) super-packets of up to 64 KiB with one read; the tunnel cuts them
// into packets of the MTU (IP lengths, IPv4 identification and header checksum, TCP sequence
// numbers and flags, UDP lengths) and sends them to the engine together (SendBatch, which
// hands each link its frames with one sendmmsg). Reads that find more packets queued join the
// batch. The receiving tunnel takes the engine's ready deliveries at once (ReceiveBatch),
// coalesces consecutive in-order segments of one TCP flow (and datagrams of one UDP flow, with
// USO) into one super-packet as GRO would, and writes it with a GSO header: one write and one
// pass through the receiving kernel's stack instead of dozens. Inner TCP/UDP checksums are not
// computed between two peers with offloads: packets are written with NEEDS_CSUM
// (CHECKSUM_PARTIAL), so the receiving kernel trusts the payload, and completes the checksum
// itself if it forwards the packet; the frames' integrity is the links' (Ethernet FCS), as
// between a virtio guest and its host. The receiver owns the inner checksum: a tunnel without
// offloads, whose device cannot take a partial checksum, completes the TCP/UDP checksum of
// every packet it writes, so peers may differ in their offloads (offload.go).
//
// # Inner flows and engine connections
//
// The engine orders frames per connection. Each packet's inner flow (IPv4 or IPv6 source and
// destination address, protocol and, for TCP, UDP, UDP-Lite and SCTP packets that are not
// fragments, source and destination port) is hashed with FNV-1a onto one of Config.Conns
// engine connections: connection i is (Config.Service, i, i). All packets of an inner flow take
// the same connection, so each inner flow is delivered in order; different flows sharing a
// connection are ordered with respect to each other too, which costs nothing but a shared
// window. Fragments carry no ports, so they are hashed by addresses and protocol only. The
// tunnel therefore uses at most Config.Conns engine connections in each direction, which must
// not exceed the engine's Config.MaxFlows.
//
// One reader goroutine calls the engine (SendBatch, or Send per packet for an engine without
// it), so a connection whose engine window is full holds back the packets of the others until
// the peer acknowledges; the kernel's tun queue absorbs the wait
// and drops beyond it (counted by the kernel, not here), which TCP reads as congestion.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"sync/atomic"

	"github.com/ovsplane/ovsplane/stripe/engine"
)

// Bounds and defaults of Config.
const (
	// DefaultConns is the number of engine connections when Config.Conns is 0.
	DefaultConns = 16
	// MaxConns bounds Config.Conns.
	MaxConns = 4096
	// MinMTU is the least tun MTU: IPv4's minimum datagram a host must accept.
	MinMTU = 576
	// MaxMTU bounds the tun MTU.
	MaxMTU = 65535
	// DefaultService is the engine service of the tunnel's connections when Config.Service is 0.
	DefaultService = 0x5455 // "TU"
	// maxName is the longest interface name (IFNAMSIZ − 1).
	maxName = 15
)

// Engine is the part of *engine.Engine the tunnel uses.
type Engine interface {
	// Send carries one packet to the peer on its connection, in order with its others.
	Send(ctx context.Context, m engine.Message) error
	// Receive returns the next packet from the peer, in order per connection.
	Receive(ctx context.Context) (engine.Delivery, error)
	// MaxPayload is the largest payload of one engine frame.
	MaxPayload() int
}

// Config configures a Tunnel.
type Config struct {
	// Name is the tun device's name, 1 to 15 characters without '/', spaces or ':'.
	Name string
	// Addr is the device's address and the prefix routed through it (10.78.0.1/24: the peer is
	// another address of 10.78.0.0/24). IPv4 only; the prefix length 1 to 31.
	Addr netip.Prefix
	// MTU is the device's MTU (0: the engine's MaxPayload); MinMTU to the engine's MaxPayload.
	MTU int
	// TxQueueLen is the device's transmit queue in packets (0: the kernel's default, 500); at
	// most 1<<20.
	TxQueueLen int
	// Engine carries the packets, with a MaxFlows of at least Conns. Its Run is the caller's;
	// an *engine.Engine may be handed over before Run runs (Tunnel.Run waits for it, bounded
	// by its ctx); an engine without WaitRunning must be running.
	Engine Engine
	// Conns is the number of engine connections the inner flows are hashed onto (0:
	// DefaultConns); 1 to MaxConns.
	Conns int
	// Service is the engine service of the connections (0: DefaultService). Deliveries of
	// other services are dropped and counted in Stats.Foreign.
	Service uint16
	// NoOffload opens the device without IFF_VNET_HDR and segmentation offloads: one read and
	// one write per packet (the comparison arm; see the package documentation).
	NoOffload bool
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// check validates c and fills its defaults.
func (c *Config) check() error {
	if err := checkName(c.Name); err != nil {
		return err
	}
	if !c.Addr.IsValid() || !c.Addr.Addr().Is4() || c.Addr.Bits() < 1 || c.Addr.Bits() > 31 {
		return fmt.Errorf("tunnel %s: address %v: want an IPv4 address with a prefix length 1 to 31, like 10.78.0.1/24", c.Name, c.Addr)
	}
	if c.Engine == nil {
		return fmt.Errorf("tunnel %s: no engine: create one with engine.New and run it", c.Name)
	}
	mp := c.Engine.MaxPayload()
	if mp < MinMTU {
		return fmt.Errorf("tunnel %s: engine frames carry %d bytes, less than the least MTU %d: use links with a larger MTU", c.Name, mp, MinMTU)
	}
	if c.MTU == 0 {
		c.MTU = min(mp, MaxMTU)
	}
	if c.MTU < MinMTU || c.MTU > min(mp, MaxMTU) {
		return fmt.Errorf("tunnel %s: MTU %d: want %d to %d (the engine's MaxPayload), or 0", c.Name, c.MTU, MinMTU, min(mp, MaxMTU))
	}
	if c.TxQueueLen < 0 || c.TxQueueLen > 1<<20 {
		return fmt.Errorf("tunnel %s: transmit queue of %d packets: want 0 to %d", c.Name, c.TxQueueLen, 1<<20)
	}
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	if c.Conns < 1 || c.Conns > MaxConns {
		return fmt.Errorf("tunnel %s: %d connections: want 1 to %d", c.Name, c.Conns, MaxConns)
	}
	if c.Service == 0 {
		c.Service = DefaultService
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// checkName checks an interface name.
func checkName(name string) error {
	if name == "" || len(name) > maxName {
		return fmt.Errorf("tunnel: device name %q: want 1 to %d characters", name, maxName)
	}
	for _, r := range name {
		if r <= ' ' || r == '/' || r == ':' || r > '~' {
			return fmt.Errorf("tunnel: device name %q: character %q not allowed; use letters, digits, '-', '_' or '.'", name, r)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("tunnel: device name %q not allowed", name)
	}
	return nil
}

// Stats are a tunnel's counters.
type Stats struct {
	// TxPackets and TxBytes are the packets read from the device and sent to the peer.
	TxPackets, TxBytes uint64
	// RxPackets and RxBytes are the packets received from the peer and written to the device.
	RxPackets, RxBytes uint64
	// Malformed counts packets dropped for not being IPv4 or IPv6 (from either side) or
	// larger than the MTU (from the peer).
	Malformed uint64
	// Foreign counts deliveries of another engine service, dropped.
	Foreign uint64
	// WriteErrors counts packets the device refused.
	WriteErrors uint64
	// PerConn counts the packets sent on each engine connection, Conns entries.
	PerConn []uint64
	// Reads and Writes count the device reads and writes. With offloads, a read may return a
	// super-packet that is sent as many packets, and a write may carry many received packets
	// coalesced, so they are smaller than TxPackets and RxPackets.
	Reads, Writes uint64
	// Offload says the device carries super-packets (IFF_VNET_HDR with TCP segmentation
	// offload); UDPOffload that UDP segmentation offload (USO) is on too.
	Offload, UDPOffload bool
}

// counters are the live counters behind Stats.
type counters struct {
	txPackets, txBytes, rxPackets, rxBytes, malformed, foreign, writeErrors atomic.Uint64
	reads, writes                                                           atomic.Uint64
	perConn                                                                 []atomic.Uint64
}

// ErrClosed is wrapped by Run when the tunnel was closed.
var ErrClosed = errors.New("tunnel closed")

// connOf maps an IP packet to its engine connection index in [0, n): the FNV-1a hash of its
// inner flow modulo n. It returns false for a packet that is not a well-formed IPv4 or IPv6
// header.
func connOf(p []byte, n int) (int, bool) {
	if len(p) < 20 {
		return 0, false
	}
	h := fnv.New32a()
	var proto byte
	var l4 []byte
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || len(p) < ihl {
			return 0, false
		}
		proto = p[9]
		_, _ = h.Write(p[12:20])
		fragment := p[6]&0x20 != 0 || (int(p[6]&0x1f)<<8|int(p[7])) != 0
		if !fragment {
			l4 = p[ihl:]
		}
	case 6:
		if len(p) < 40 {
			return 0, false
		}
		proto = p[6]
		_, _ = h.Write(p[8:40])
		l4 = p[40:] // extension headers (fragments among them) are hashed without ports
	default:
		return 0, false
	}
	_, _ = h.Write([]byte{proto})
	switch proto {
	case 6, 17, 132, 136: // TCP, UDP, SCTP, UDP-Lite: ports first
		if len(l4) >= 4 {
			_, _ = h.Write(l4[:4])
		}
	}
	return int(h.Sum32() % uint32(n)), true
}

// netmask is the IPv4 netmask of a prefix length.
func netmask(bits int) [4]byte {
	m := ^uint32(0) << (32 - bits)
	return [4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}
}
