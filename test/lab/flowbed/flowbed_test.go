//go:build linux

package flowbed_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab/flowbed"
)

// TestNetFlowMatchesGenerated sends 8 flows of 64, 512 and 1448-byte frames through the OVS-DPDK
// bridge, paced at 20k frames/s so nothing is lost, and checks per flow that the receiver got
// every frame and that NetFlow exported exactly the generated packets, and bytes as OVS counts
// them: dOctets are whole frames as they crossed the port, the 14-byte Ethernet header included
// (not the IPv4 total length NetFlow v5 defines), so a collector must subtract 14 bytes per
// packet (18 with a VLAN tag) to get L3 bytes.
func TestNetFlowMatchesGenerated(t *testing.T) {
	b := flowbed.New(t, flowbed.Spec{})
	for _, size := range []int{64, 512, 1448} {
		spec := b.GenSpec(size, 8, 8*250)
		spec.PacketsPerSecond = 20000
		res := b.Run(t, spec, 30*time.Second)
		var out bytes.Buffer
		_ = res.Report.WriteTable(&out)
		_ = res.WriteTable(&out)
		t.Logf("%d-byte frames:\n%s", size, out.String())
		for _, f := range res.Flows {
			if f.Received != f.Sent || f.ExportedPackets != f.Sent {
				t.Errorf("%d B flow %d (%s): sent %d, received %d, exported %d packets", size, f.Flow, f.Key, f.Sent, f.Received, f.ExportedPackets)
			}
			if f.ExportedOctets != f.SentFrameBytes || f.ExportedOctets-14*f.ExportedPackets != f.SentL3Bytes {
				t.Errorf("%d B flow %d (%s): exported %d octets for %d packets; sent %d frame bytes, %d L3 bytes",
					size, f.Flow, f.Key, f.ExportedOctets, f.ExportedPackets, f.SentFrameBytes, f.SentL3Bytes)
			}
		}
	}
}
