package flowmonplugin

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
)

// Bounds and defaults of a generator job.
const (
	// MinFrame and MaxFrame bound frame_size (Ethernet frame without FCS).
	MinFrame = gen.MinFrameSize
	MaxFrame = gen.MaxFrameSize
	// DefaultFrame is frame_size when 0.
	DefaultFrame = 64
	// MaxGenFlows bounds flows; DefaultGenFlows is its default.
	MaxGenFlows     = gen.MaxFlows
	DefaultGenFlows = 16
	// MaxRatePPS bounds rate_pps (0: as fast as the ring goes).
	MaxRatePPS = 100_000_000
	// DefaultDuration and MaxDuration bound duration_ms.
	DefaultDuration = 10 * time.Second
	MaxDuration     = 24 * time.Hour
)

// GenConfig is a "flowmon-gen" job's configuration (JSON): UDP frames over AF_PACKET with a
// TX ring, flows distinct by source port, counted per flow on the receive side.
type GenConfig struct {
	// Interface is the kernel interface the frames are sent on (a veth whose peer is an OVS
	// port, or an OVS internal port). Required.
	Interface string `json:"interface"`
	// ReceiveInterface is where the frames arrive after OVS forwarded them, counted per flow;
	// empty counts nothing (Stats then report sent only).
	ReceiveInterface string `json:"receive_interface,omitempty"`
	// FrameSize is each frame's size in bytes, 64 to 1448 (default 64).
	FrameSize int `json:"frame_size,omitempty"`
	// Flows is the number of distinct flows (source ports src_port .. src_port+flows-1),
	// 1 to 65536 (default 16).
	Flows int `json:"flows,omitempty"`
	// RatePPS is the total rate in packets per second (0: as fast as possible).
	RatePPS int64 `json:"rate_pps,omitempty"`
	// DurationMillis is how long the run lasts (default 10000, at most a day).
	DurationMillis int64 `json:"duration_ms,omitempty"`
	// Src and Dst are the IPv4 addresses (default 10.0.0.1 and 10.0.0.2).
	Src string `json:"src,omitempty"`
	Dst string `json:"dst,omitempty"`
	// SrcPort is the first flow's UDP source port (default 10000); DstPort the destination
	// port (default 9).
	SrcPort uint16 `json:"src_port,omitempty"`
	DstPort uint16 `json:"dst_port,omitempty"`
	// SrcMAC and DstMAC are the Ethernet addresses (default: the interface's, and broadcast).
	SrcMAC string `json:"src_mac,omitempty"`
	DstMAC string `json:"dst_mac,omitempty"`
}

// genSettings is a checked GenConfig with its defaults applied.
type genSettings struct {
	cfg      GenConfig
	spec     gen.Spec // SrcMAC nil when src_mac is not set: the interface's, found at start
	duration time.Duration
}

// ifNameRE is a Linux interface name (IFNAMSIZ 16 with the NUL).
var ifNameRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,15}$`)

// ParseGenConfig decodes a flowmon-gen job's configuration strictly and checks it.
func ParseGenConfig(data []byte) (GenConfig, error) {
	s, err := parseGen(data)
	return s.cfg, err
}

func parseGen(data []byte) (genSettings, error) {
	var s genSettings
	c := &s.cfg
	if err := decodeStrict(data, c, JobGen); err != nil {
		return s, err
	}
	if !ifNameRE.MatchString(c.Interface) {
		return s, problem("config.interface", "%q: want the kernel interface to send on, 1 to 15 letters, digits, '.', '_', '@' or '-' (a veth peered with an OVS port)", clip(c.Interface))
	}
	if c.ReceiveInterface != "" && !ifNameRE.MatchString(c.ReceiveInterface) {
		return s, problem("config.receive_interface", "%q: want a kernel interface name of 1 to 15 characters, or leave it out", clip(c.ReceiveInterface))
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrame
	}
	if c.FrameSize < MinFrame || c.FrameSize > MaxFrame {
		return s, problem("config.frame_size", "%d: want %d to %d bytes", c.FrameSize, MinFrame, MaxFrame)
	}
	if c.Flows == 0 {
		c.Flows = DefaultGenFlows
	}
	if c.Flows < 1 || c.Flows > MaxGenFlows {
		return s, problem("config.flows", "%d: want 1 to %d", c.Flows, MaxGenFlows)
	}
	if c.RatePPS < 0 || c.RatePPS > MaxRatePPS {
		return s, problem("config.rate_pps", "%d: want 0 (as fast as possible) to %d packets per second", c.RatePPS, MaxRatePPS)
	}
	s.duration = DefaultDuration
	if c.DurationMillis != 0 {
		s.duration = time.Duration(c.DurationMillis) * time.Millisecond
		if c.DurationMillis < 1 || s.duration > MaxDuration {
			return s, problem("config.duration_ms", "%d: want 1 to %d milliseconds", c.DurationMillis, MaxDuration.Milliseconds())
		}
	}
	src, err := ipv4("config.src", c.Src, "10.0.0.1")
	if err != nil {
		return s, err
	}
	dst, err := ipv4("config.dst", c.Dst, "10.0.0.2")
	if err != nil {
		return s, err
	}
	if c.SrcPort == 0 {
		c.SrcPort = 10000
	}
	if int(c.SrcPort)+c.Flows-1 > 65535 {
		return s, problem("config.src_port", "%d with %d flows passes port 65535: lower src_port or flows", c.SrcPort, c.Flows)
	}
	if c.DstPort == 0 {
		c.DstPort = 9
	}
	srcMAC, err := mac("config.src_mac", c.SrcMAC)
	if err != nil {
		return s, err
	}
	dstMAC, err := mac("config.dst_mac", c.DstMAC)
	if err != nil {
		return s, err
	}
	if dstMAC == nil {
		dstMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	s.spec = gen.Spec{Interface: c.Interface, SrcMAC: srcMAC, DstMAC: dstMAC, SrcIP: src, DstIP: dst,
		SrcPort: c.SrcPort, SrcPorts: c.Flows, DstPort: c.DstPort, FrameSize: c.FrameSize, Flows: c.Flows,
		PacketsPerSecond: float64(c.RatePPS), Duration: s.duration}
	check := s.spec
	if check.SrcMAC == nil {
		check.SrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1} // stands for the interface's, known at start
	}
	if err := check.Validate(); err != nil {
		return s, problem("config", "%v", err)
	}
	return s, nil
}

// ipv4 parses an IPv4 address, def when empty.
func ipv4(field, s, def string) (netip.Addr, error) {
	if s == "" {
		s = def
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Unmap().Is4() {
		return netip.Addr{}, problem(field, "%q: want an IPv4 address, e.g. %s", clip(s), def)
	}
	return a.Unmap(), nil
}

// mac parses an Ethernet address; empty is nil.
func mac(field, s string) (net.HardwareAddr, error) {
	if s == "" {
		return nil, nil
	}
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != 6 {
		return nil, problem(field, "%q: want an Ethernet address like 02:00:00:00:00:01", clip(s))
	}
	return m, nil
}

// String describes the run for Start's status.
func (s genSettings) String() string {
	return fmt.Sprintf("%d flows of %d-byte frames %s→%s on %s for %s", s.cfg.Flows, s.cfg.FrameSize, s.spec.SrcIP, s.spec.DstIP, s.cfg.Interface, s.duration)
}
