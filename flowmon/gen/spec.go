package gen

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"
)

// Bounds of a Spec. Each keeps the generator's memory and run time bounded.
const (
	// MinFrameSize is the smallest frame: Ethernet (14) + IPv4 (20) + UDP (8) + Header (22).
	MinFrameSize = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen + HeaderLen
	// MaxFrameSize is the largest frame: its IPv4 packet (1434 B) fits a 1500-byte MTU.
	MaxFrameSize = 1448
	// MaxFlows is the largest number of distinct flows one run generates.
	MaxFlows = 65536
	// MaxPacketsPerSecond bounds Spec.PacketsPerSecond.
	MaxPacketsPerSecond = 100_000_000
	// MaxBitsPerSecond bounds Spec.BitsPerSecond (400 Gbit/s).
	MaxBitsPerSecond = 400_000_000_000
	// MaxDuration bounds Spec.Duration.
	MaxDuration = 24 * time.Hour
	// MaxCount bounds Spec.Count.
	MaxCount = 1 << 40
)

// Method is how a Generator hands frames to the kernel.
type Method int

const (
	// MethodAuto tries the TX ring and falls back to send(2) when the kernel refuses it.
	MethodAuto Method = iota
	// MethodRing requires the TPACKET_V2 TX ring (PACKET_TX_RING over mmap).
	MethodRing
	// MethodSend sends each frame with send(2) on the bound AF_PACKET socket.
	MethodSend
)

// String returns the method's name: "auto", "tx-ring" or "send".
func (m Method) String() string {
	switch m {
	case MethodAuto:
		return "auto"
	case MethodRing:
		return "tx-ring"
	case MethodSend:
		return "send"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Spec describes one generator run. Flows are numbered 0..Flows-1; flow i's 5-tuple is drawn
// from the address and port ranges by FlowKey, source port varying fastest, then destination
// port, source address and destination address, so the ranges' product must hold Flows.
type Spec struct {
	// Interface is the Linux interface the frames are written into (a veth end, or the
	// kernel-visible netdev of an OVS port), in the namespace of the thread that opens the
	// Generator. Required.
	Interface string
	// SrcMAC and DstMAC are the Ethernet addresses of every frame. SrcMAC must be unicast.
	// Required.
	SrcMAC, DstMAC net.HardwareAddr
	// SrcIP and DstIP are the first IPv4 addresses of the flows' ranges. Required.
	SrcIP, DstIP netip.Addr
	// SrcIPs and DstIPs are the sizes of the address ranges (0 means 1).
	SrcIPs, DstIPs int
	// SrcPort and DstPort are the first UDP ports of the flows' ranges (1..65535). Required.
	SrcPort, DstPort uint16
	// SrcPorts and DstPorts are the sizes of the port ranges (0 means 1).
	SrcPorts, DstPorts int
	// FrameSize is the size in bytes of every frame as written to the interface: Ethernet
	// header, IPv4 packet, no FCS (so a frame's L3 bytes are FrameSize-14).
	// MinFrameSize..MaxFrameSize.
	FrameSize int
	// Flows is the number of distinct flows, 1..MaxFlows. Frames go to the flows in round
	// robin.
	Flows int
	// PacketsPerSecond and BitsPerSecond pace the run (bits of whole frames, FrameSize*8 per
	// frame); at most one is set, and 0 for both sends as fast as the kernel takes frames.
	PacketsPerSecond, BitsPerSecond float64
	// Duration ends the run after this long (at most MaxDuration); Count ends it after this
	// many frames over all flows (at most MaxCount). At least one is set; with both, the run
	// ends at whichever comes first.
	Duration time.Duration
	Count    uint64
	// Method selects the send path; the zero value is MethodAuto.
	Method Method
}

// Validate checks every field of the spec and returns an error naming each bad field and how to
// fix it (errors.Join of all of them), or nil.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("gen spec: "+format, args...)) }
	if s.Interface == "" {
		bad("Interface is empty: name the interface to send into (a veth or an OVS port's netdev)")
	} else if len(s.Interface) >= 16 {
		bad("Interface %q is longer than 15 bytes: Linux interface names are at most 15", s.Interface)
	}
	if len(s.SrcMAC) != 6 {
		bad("SrcMAC %q is not a 6-byte Ethernet address: set it, e.g. 02:00:00:00:00:01", s.SrcMAC)
	} else if s.SrcMAC[0]&1 != 0 {
		bad("SrcMAC %s is a multicast address: use a unicast one (lowest bit of the first byte clear)", s.SrcMAC)
	}
	if len(s.DstMAC) != 6 {
		bad("DstMAC %q is not a 6-byte Ethernet address: set it, e.g. 02:00:00:00:00:02", s.DstMAC)
	}
	checkRange := func(name string, first netip.Addr, n int) {
		switch {
		case !first.Is4():
			bad("%sIP %v is not an IPv4 address: set an IPv4 address (NetFlow v5 is IPv4 only)", name, first)
		case n < 0:
			bad("%sIPs %d is negative: use 0 or 1 for one address, or the size of the range", name, n)
		case uint64(addrU32(first))+uint64(max(n, 1))-1 > math.MaxUint32:
			bad("%sIPs %d from %v passes 255.255.255.255: use a lower first address or a smaller range", name, n, first)
		}
	}
	checkRange("Src", s.SrcIP, s.SrcIPs)
	checkRange("Dst", s.DstIP, s.DstIPs)
	checkPorts := func(name string, first uint16, n int) {
		switch {
		case first == 0:
			bad("%sPort is 0: set a UDP port 1..65535", name)
		case n < 0:
			bad("%sPorts %d is negative: use 0 or 1 for one port, or the size of the range", name, n)
		case int(first)+max(n, 1)-1 > math.MaxUint16:
			bad("%sPorts %d from port %d passes 65535: use a lower first port or a smaller range", name, n, first)
		}
	}
	checkPorts("Src", s.SrcPort, s.SrcPorts)
	checkPorts("Dst", s.DstPort, s.DstPorts)
	if s.FrameSize < MinFrameSize || s.FrameSize > MaxFrameSize {
		bad("FrameSize %d is outside %d..%d: set the frame size in bytes without FCS (64, 512, 1448…)",
			s.FrameSize, MinFrameSize, MaxFrameSize)
	}
	switch {
	case s.Flows < 1 || s.Flows > MaxFlows:
		bad("Flows %d is outside 1..%d: set the number of distinct UDP flows", s.Flows, MaxFlows)
	case s.tuples() < uint64(s.Flows):
		bad("Flows %d is more than the %d distinct 5-tuples the ranges give: widen SrcIPs, DstIPs, SrcPorts or DstPorts",
			s.Flows, s.tuples())
	}
	checkRate := func(name string, v, limit float64) {
		if math.IsNaN(v) || v < 0 || v > limit {
			bad("%s %v is outside 0..%g: use 0 for as fast as possible", name, v, limit)
		}
	}
	checkRate("PacketsPerSecond", s.PacketsPerSecond, MaxPacketsPerSecond)
	checkRate("BitsPerSecond", s.BitsPerSecond, MaxBitsPerSecond)
	if s.PacketsPerSecond > 0 && s.BitsPerSecond > 0 {
		bad("PacketsPerSecond %v and BitsPerSecond %v are both set: set one of them", s.PacketsPerSecond, s.BitsPerSecond)
	}
	if s.Duration < 0 || s.Duration > MaxDuration {
		bad("Duration %v is outside 0..%v", s.Duration, MaxDuration)
	}
	if s.Count > MaxCount {
		bad("Count %d is more than %d frames: send fewer or use Duration", s.Count, uint64(MaxCount))
	}
	if s.Duration == 0 && s.Count == 0 {
		bad("neither Duration nor Count is set: set one (or both) so the run ends")
	}
	if s.Method < MethodAuto || s.Method > MethodSend {
		bad("Method %v is unknown: use MethodAuto, MethodRing or MethodSend", s.Method)
	}
	return errors.Join(errs...)
}

// tuples returns how many distinct 5-tuples the spec's ranges give.
func (s Spec) tuples() uint64 {
	return uint64(max(s.SrcIPs, 1)) * uint64(max(s.DstIPs, 1)) * uint64(max(s.SrcPorts, 1)) * uint64(max(s.DstPorts, 1))
}

// packetRate returns the frames per second the spec asks for; 0 means unpaced.
func (s Spec) packetRate() float64 {
	if s.BitsPerSecond > 0 {
		return s.BitsPerSecond / float64(8*s.FrameSize)
	}
	return s.PacketsPerSecond
}

// FlowKey is a flow's UDP/IPv4 5-tuple (the protocol is always UDP).
type FlowKey struct {
	// Src and Dst are the source and destination address and port.
	Src, Dst netip.AddrPort
}

// String returns "src -> dst".
func (k FlowKey) String() string { return k.Src.String() + " -> " + k.Dst.String() }

// FlowKey returns flow i's 5-tuple for a valid spec; i must be in 0..Flows-1.
func (s Spec) FlowKey(i int) FlowKey {
	n := uint64(i)
	next := func(size int) uint64 {
		size = max(size, 1)
		v := n % uint64(size)
		n /= uint64(size)
		return v
	}
	sp := next(s.SrcPorts)
	dp := next(s.DstPorts)
	sa := next(s.SrcIPs)
	da := next(s.DstIPs)
	return FlowKey{
		Src: netip.AddrPortFrom(u32Addr(addrU32(s.SrcIP)+uint32(sa)), s.SrcPort+uint16(sp)),
		Dst: netip.AddrPortFrom(u32Addr(addrU32(s.DstIP)+uint32(da)), s.DstPort+uint16(dp)),
	}
}

// addrU32 returns an IPv4 address as a number (0 for anything else).
func addrU32(a netip.Addr) uint32 {
	if !a.Is4() {
		return 0
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// u32Addr returns the IPv4 address of a number.
func u32Addr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
