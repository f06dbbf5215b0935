package collect

import (
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/ovsplane/ovsplane/flowmon/flow"
)

// Resolver names the OVS bridge and ports of decoded records. The collector calls it from its
// data path, once per read batch of records, so it must not block.
type Resolver interface {
	// Resolve sets Bridge, InPort and OutPort of every record it can name from its Exporter,
	// Protocol, Domain, InIf and OutIf, and leaves the others unchanged.
	Resolve(recs []flow.Record)
}

// HostFacts is a snapshot of one host's OVS flow export, as OVSDB states it: which bridges
// export and how, and their ports.
type HostFacts struct {
	// Exporter is the address the host's datagrams come from; the zero Addr matches any
	// exporter (a single-host setup).
	Exporter netip.Addr
	// Bridges are the host's bridges that export flows.
	Bridges []BridgeFacts
}

// BridgeFacts is one bridge's export settings and ports.
type BridgeFacts struct {
	// Name is the bridge name.
	Name string
	// NetFlow is set when the bridge exports NetFlow (v5).
	NetFlow *NetFlowFacts
	// IPFIX is set when the bridge exports IPFIX; its value is the observation domain id.
	// IPFIX records get the bridge name only: OVS's IPFIX ifIndex is the kernel interface
	// index (0 for DPDK ports), and OVS names the interface in the record itself
	// (interfaceName), which the decoder keeps.
	IPFIX *uint32
	// Ports maps each port's (interface's) name to its OpenFlow port number, which is what
	// OVS's NetFlow reports as ifIndex. Include the LOCAL port (the bridge's name, 65534) if
	// wanted.
	Ports map[string]uint32
}

// NetFlowFacts are a bridge's NetFlow settings (the NetFlow table's columns; OVS defaults
// engine_type and engine_id to the datapath index, so feed what OVSDB or the datapath says).
type NetFlowFacts struct {
	EngineType, EngineID uint8
	// AddIDToInterface: OVS puts the low 7 bits of EngineID in the top 7 bits of the 16-bit
	// ifIndex and the OpenFlow port in the low 9 bits.
	AddIDToInterface bool
}

type resolveKey struct {
	exporter netip.Addr
	proto    flow.Protocol
	domain   uint32
}

type bridgeTable struct {
	name     string
	addID    bool
	engineID uint8
	ports    map[uint32]string
}

// OVSResolver is a Resolver over HostFacts snapshots. Update swaps the snapshot atomically, so
// the plugin can re-feed it whenever OVSDB changes while the data path keeps resolving.
type OVSResolver struct {
	table atomic.Pointer[map[resolveKey]*bridgeTable]
}

// NewOVSResolver returns a resolver over facts (see Update).
func NewOVSResolver(facts []HostFacts) (*OVSResolver, error) {
	r := &OVSResolver{}
	if err := r.Update(facts); err != nil {
		return nil, err
	}
	return r, nil
}

// Update replaces the snapshot. It refuses facts that make a datagram ambiguous: two bridges
// of one exporter with the same NetFlow engine type and id, or the same IPFIX domain.
func (r *OVSResolver) Update(facts []HostFacts) error {
	t := make(map[resolveKey]*bridgeTable)
	add := func(k resolveKey, b *bridgeTable, what string) error {
		if prev, dup := t[k]; dup {
			return fmt.Errorf("flow resolver: bridges %q and %q of exporter %v both export %s %d: give them distinct ids",
				prev.name, b.name, k.exporter, what, k.domain)
		}
		t[k] = b
		return nil
	}
	for _, h := range facts {
		for _, bf := range h.Bridges {
			if bf.Name == "" {
				return fmt.Errorf("flow resolver: exporter %v: a bridge without a name", h.Exporter)
			}
			ports := make(map[uint32]string, len(bf.Ports))
			for name, ofport := range bf.Ports {
				ports[ofport] = name
			}
			if nf := bf.NetFlow; nf != nil {
				b := &bridgeTable{name: bf.Name, addID: nf.AddIDToInterface, engineID: nf.EngineID, ports: ports}
				k := resolveKey{h.Exporter.Unmap(), flow.NetFlowV5, uint32(nf.EngineType)<<8 | uint32(nf.EngineID)}
				if err := add(k, b, "NetFlow engine type<<8|id"); err != nil {
					return err
				}
			}
			if bf.IPFIX != nil {
				b := &bridgeTable{name: bf.Name, ports: ports}
				if err := add(resolveKey{h.Exporter.Unmap(), flow.IPFIX, *bf.IPFIX}, b, "IPFIX observation domain"); err != nil {
					return err
				}
			}
		}
	}
	r.table.Store(&t)
	return nil
}

// Resolve implements Resolver.
func (r *OVSResolver) Resolve(recs []flow.Record) {
	tp := r.table.Load()
	if tp == nil || len(*tp) == 0 {
		return
	}
	t := *tp
	var lastKey resolveKey
	var last *bridgeTable
	for i := range recs {
		rec := &recs[i]
		k := resolveKey{rec.Exporter, rec.Protocol, rec.Domain}
		if last == nil || k != lastKey {
			b, ok := t[k]
			if !ok {
				k0 := k
				k0.exporter = netip.Addr{}
				b = t[k0]
			}
			lastKey, last = k, b
		}
		if last == nil {
			continue
		}
		rec.Bridge = last.name
		if rec.Protocol == flow.NetFlowV5 {
			rec.InPort = last.port(rec.InIf)
			rec.OutPort = last.port(rec.OutIf)
		}
	}
}

// port names ifIndex, undoing add_id_to_interface's engine id bits (and refusing an ifIndex
// whose engine bits are another engine's).
func (b *bridgeTable) port(ifIndex uint32) string {
	if b.addID {
		if ifIndex>>9 != uint32(b.engineID&0x7f) {
			return ""
		}
		ifIndex &= 0x1ff
	}
	return b.ports[ifIndex]
}
