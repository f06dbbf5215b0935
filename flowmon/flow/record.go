package flow

import (
	"fmt"
	"net/netip"
)

// Protocol names the export protocol a record arrived in.
type Protocol uint8

// The export protocols the collector decodes.
const (
	// Unknown is the zero value: a record whose protocol was not set.
	Unknown Protocol = iota
	// NetFlowV5 is Cisco NetFlow version 5, the format OVS's NetFlow table exports.
	NetFlowV5
	// NetFlowV9 is NetFlow version 9 (RFC 3954), template based.
	NetFlowV9
	// IPFIX is IPFIX (RFC 7011), the format of OVS's IPFIX table and sample actions.
	IPFIX
	// SFlow is sFlow version 5 (a sampled packet header turned into a one-packet record).
	SFlow
)

// String returns the protocol's lowercase name as the CLI and the stores spell it.
func (p Protocol) String() string {
	switch p {
	case NetFlowV5:
		return "netflow5"
	case NetFlowV9:
		return "netflow9"
	case IPFIX:
		return "ipfix"
	case SFlow:
		return "sflow"
	default:
		return "unknown"
	}
}

// ParseProtocol is String's inverse; it rejects every other name.
func ParseProtocol(s string) (Protocol, error) {
	for p := NetFlowV5; p <= SFlow; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return Unknown, fmt.Errorf("flow protocol %q: want netflow5, netflow9, ipfix or sflow", s)
}

// Record is one flow as reported by one exporter, decoded and enriched. Times are Unix
// nanoseconds (UTC). Counters are what the exporter reported, not scaled by the sampling rate.
// Addresses are unmapped (an IPv4 flow has 4-byte addresses). Names are empty when the
// collector could not resolve them.
type Record struct {
	// Received is when the collector received the datagram that carried this record.
	Received int64
	// Start and End bound the flow: first and last packet seen by the exporter.
	Start, End int64

	// Exporter is the datagram's source address; Protocol how it was encoded.
	Exporter netip.Addr
	Protocol Protocol
	// Domain identifies the exporting process within Exporter: NetFlow v5's
	// engine_type<<8 | engine_id, NetFlow v9's source id, IPFIX's observation domain id.
	Domain uint32
	// SamplingRate is 1 in N packets as the exporter stated it; 0 when it stated none.
	SamplingRate uint32

	// Src and Dst are the flow's network addresses; Proto its IP protocol number.
	Src, Dst netip.Addr
	Proto    uint8
	// SrcPort and DstPort are the transport ports (for ICMP, DstPort is type<<8 | code).
	SrcPort, DstPort uint16
	// TCPFlags is the OR of every packet's TCP flags; ToS the IP type of service byte.
	TCPFlags uint8
	ToS      uint8

	// Bytes are the layer-3 bytes and Packets the packets the exporter counted.
	Bytes, Packets uint64

	// InIf and OutIf are the exporter's interface indexes (OVS: the OpenFlow port numbers,
	// with the engine id in the top bits when add_id_to_interface is set).
	InIf, OutIf uint32
	// Bridge, InPort and OutPort are the OVS names enrichment resolved for Exporter, Domain,
	// InIf and OutIf.
	Bridge, InPort, OutPort string
}
