//go:build linux

package flowbed_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab/flowbed"
)

// TestNetFlowMatchesGenerated sends 8, 12 and 16 flows of 64, 512 and 1448-byte frames through
// the OVS-DPDK bridge, paced at 10k frames/s so nothing is lost, and checks per flow that the receiver got
// every frame and that NetFlow exported exactly the generated packets, and bytes as OVS counts
// them: dOctets are whole frames as they crossed the port, the 14-byte Ethernet header included
// (not the IPv4 total length NetFlow v5 defines), so a collector must subtract 14 bytes per
// packet (18 with a VLAN tag) to get L3 bytes. It also checks OVS's flow_sequence convention
// (the 0-based number of the datagram's last record) holds with no gap, and that the records'
// input and output interfaces are the OpenFlow port numbers.
func TestNetFlowMatchesGenerated(t *testing.T) {
	b := flowbed.New(t, flowbed.Spec{})
	for i, size := range []int{64, 512, 1448} {
		flows := 8 + 4*i
		spec := b.GenSpec(size, flows, uint64(flows*250))
		spec.PacketsPerSecond = 10000
		res := b.Run(t, spec, 30*time.Second)
		var out bytes.Buffer
		_ = res.Report.WriteTable(&out)
		_ = res.WriteTable(&out)
		t.Logf("%d-byte frames:\n%s", size, out.String())
		if res.SequenceGaps != 0 || res.SequenceBackwards != 0 || res.FirstSeqNotLast != 0 || res.DecodeErrors != 0 || res.Datagrams == 0 {
			t.Errorf("%d B: netflow sequence gaps %d, steps back %d, first-sequence mismatches %d, decode errors %d, datagrams %d",
				size, res.SequenceGaps, res.SequenceBackwards, res.FirstSeqNotLast, res.DecodeErrors, res.Datagrams)
		}
		// Every frame into the veth (the generated ones, and any other) crossed OVS.
		if res.VethRx < res.Report.SentPackets || res.OVSRx != res.VethRx || res.OVSTx != res.OVSRx {
			t.Errorf("%d B: path sent %d, veth %d, OVS rx %d, OVS tx %d", size, res.Report.SentPackets, res.VethRx, res.OVSRx, res.OVSTx)
		}
		for _, f := range res.Flows {
			if f.Received != f.Sent || f.ExportedPackets != f.Sent {
				t.Errorf("%d B flow %d (%s): sent %d, received %d, exported %d packets", size, f.Flow, f.Key, f.Sent, f.Received, f.ExportedPackets)
			}
			if f.Input != 1 || f.Output != 2 || f.MixedPorts {
				t.Errorf("%d B flow %d: records say input %d output %d (mixed %v); want OpenFlow ports 1 and 2", size, f.Flow, f.Input, f.Output, f.MixedPorts)
			}
			if f.ExportedOctets != f.SentFrameBytes || f.ExportedOctets-14*f.ExportedPackets != f.SentL3Bytes {
				t.Errorf("%d B flow %d (%s): exported %d octets for %d packets; sent %d frame bytes, %d L3 bytes",
					size, f.Flow, f.Key, f.ExportedOctets, f.ExportedPackets, f.SentFrameBytes, f.SentL3Bytes)
			}
		}
	}
}
