package gen

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// validSpec returns a spec that passes Validate.
func validSpec() Spec {
	return Spec{
		Interface: "veth0",
		SrcMAC:    net.HardwareAddr{0x02, 0, 0, 0, 0, 1},
		DstMAC:    net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP:     netip.MustParseAddr("10.0.0.1"), SrcIPs: 2,
		DstIP: netip.MustParseAddr("10.0.1.1"), DstIPs: 2,
		SrcPort: 1000, SrcPorts: 4, DstPort: 2000, DstPorts: 2,
		FrameSize: 64, Flows: 32, Count: 100,
	}
}

func TestSpecValidateAcceptsBounds(t *testing.T) {
	for _, size := range []int{MinFrameSize, 512, MaxFrameSize} {
		s := validSpec()
		s.FrameSize = size
		if err := s.Validate(); err != nil {
			t.Errorf("FrameSize %d: %v", size, err)
		}
	}
	if MinFrameSize != 64 {
		t.Errorf("MinFrameSize = %d, want 64 (the smallest Ethernet frame)", MinFrameSize)
	}
	s := validSpec()
	s.Count, s.Duration, s.BitsPerSecond = 0, time.Second, 1e9
	if err := s.Validate(); err != nil {
		t.Errorf("duration and bit rate: %v", err)
	}
}

func TestSpecValidateRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Spec)
		want   []string // substrings of the error: the field and the fix
	}{
		{"no interface", func(s *Spec) { s.Interface = "" }, []string{"Interface is empty", "name the interface"}},
		{"long interface", func(s *Spec) { s.Interface = "abcdefghijklmnop" }, []string{"Interface", "15 bytes"}},
		{"small frame", func(s *Spec) { s.FrameSize = 63 }, []string{"FrameSize 63", "64..1448"}},
		{"big frame", func(s *Spec) { s.FrameSize = 1449 }, []string{"FrameSize 1449", "64..1448"}},
		{"no flows", func(s *Spec) { s.Flows = 0 }, []string{"Flows 0", "1..65536"}},
		{"too many flows", func(s *Spec) { s.Flows = MaxFlows + 1 }, []string{"Flows 65537", "1..65536"}},
		{"flows beyond ranges", func(s *Spec) { s.Flows = 33 }, []string{"Flows 33", "32 distinct", "widen"}},
		{"no src mac", func(s *Spec) { s.SrcMAC = nil }, []string{"SrcMAC", "6-byte"}},
		{"multicast src mac", func(s *Spec) { s.SrcMAC = net.HardwareAddr{1, 0, 0x5e, 0, 0, 1} }, []string{"SrcMAC", "unicast"}},
		{"no dst mac", func(s *Spec) { s.DstMAC = net.HardwareAddr{1, 2} }, []string{"DstMAC", "6-byte"}},
		{"ipv6 src", func(s *Spec) { s.SrcIP = netip.MustParseAddr("fd00::1") }, []string{"SrcIP fd00::1", "IPv4"}},
		{"no dst ip", func(s *Spec) { s.DstIP = netip.Addr{} }, []string{"DstIP", "IPv4"}},
		{"ip range overflow", func(s *Spec) { s.DstIP = netip.MustParseAddr("255.255.255.255") }, []string{"DstIPs 2", "255.255.255.255"}},
		{"negative ips", func(s *Spec) { s.SrcIPs = -1 }, []string{"SrcIPs -1", "negative"}},
		{"port zero", func(s *Spec) { s.SrcPort = 0 }, []string{"SrcPort is 0", "1..65535"}},
		{"port overflow", func(s *Spec) { s.DstPort = 65535 }, []string{"DstPorts 2", "65535"}},
		{"two rates", func(s *Spec) { s.PacketsPerSecond, s.BitsPerSecond = 1, 1 }, []string{"both set", "one of them"}},
		{"negative rate", func(s *Spec) { s.PacketsPerSecond = -1 }, []string{"PacketsPerSecond -1"}},
		{"huge rate", func(s *Spec) { s.BitsPerSecond = 1e12 }, []string{"BitsPerSecond"}},
		{"no end", func(s *Spec) { s.Count, s.Duration = 0, 0 }, []string{"neither Duration nor Count", "so the run ends"}},
		{"long duration", func(s *Spec) { s.Duration = 25 * time.Hour }, []string{"Duration 25h0m0s"}},
		{"huge count", func(s *Spec) { s.Count = MaxCount + 1 }, []string{"Count", "send fewer"}},
		{"bad method", func(s *Spec) { s.Method = 7 }, []string{"Method Method(7)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := validSpec()
			c.change(&s)
			err := s.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %+v", s)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if _, gerr := NewGenerator(s); gerr == nil || gerr.Error() != err.Error() {
				t.Errorf("NewGenerator error %v, want the Validate error before any socket", gerr)
			}
		})
	}
}

func TestFlowKeysDistinctAndInRange(t *testing.T) {
	s := validSpec()
	seen := map[FlowKey]int{}
	for i := range s.Flows {
		k := s.FlowKey(i)
		if j, dup := seen[k]; dup {
			t.Fatalf("flows %d and %d share %v", j, i, k)
		}
		seen[k] = i
		if p := k.Src.Port(); p < 1000 || p > 1003 {
			t.Errorf("flow %d src port %d outside 1000..1003", i, p)
		}
		if p := k.Dst.Port(); p < 2000 || p > 2001 {
			t.Errorf("flow %d dst port %d outside 2000..2001", i, p)
		}
		if a := k.Src.Addr().String(); a != "10.0.0.1" && a != "10.0.0.2" {
			t.Errorf("flow %d src %s", i, a)
		}
		if a := k.Dst.Addr().String(); a != "10.0.1.1" && a != "10.0.1.2" {
			t.Errorf("flow %d dst %s", i, a)
		}
	}
	if got := s.FlowKey(5).String(); got != "10.0.0.1:1001 -> 10.0.1.1:2001" {
		t.Errorf("flow 5 = %s, want source port fastest, then destination port", got)
	}
}

func TestPacketRate(t *testing.T) {
	s := validSpec()
	s.FrameSize, s.BitsPerSecond = 1000, 8e6
	if r := s.packetRate(); r != 1000 {
		t.Errorf("8 Mbit/s of 1000-byte frames = %v pps, want 1000", r)
	}
	s.BitsPerSecond, s.PacketsPerSecond = 0, 5
	if r := s.packetRate(); r != 5 {
		t.Errorf("packetRate = %v, want 5", r)
	}
}

func TestSentFlowPackets(t *testing.T) {
	s := Sent{Spec: Spec{Flows: 3}, Packets: 10}
	var sum uint64
	for i, want := range []uint64{4, 3, 3} {
		if got := s.FlowPackets(i); got != want {
			t.Errorf("flow %d: %d frames, want %d", i, got, want)
		}
		sum += s.FlowPackets(i)
	}
	if sum != 10 {
		t.Errorf("flows add up to %d, want 10", sum)
	}
}
