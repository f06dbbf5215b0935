//go:build linux

package flowbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Bridge is the bed's bridge name.
const Bridge = "br0"

// Spec describes a bed. The zero value is the defaults.
type Spec struct {
	// ActiveTimeout is the NetFlow row's active_timeout in seconds (default 1): a flow still
	// active is exported every that many seconds.
	ActiveTimeout int
	// MaxIdleMS is the vswitchd's other_config:max-idle (default 1000): how long an idle
	// datapath flow lives, after which its NetFlow record is exported.
	MaxIdleMS int
	// RingFrames is the af_packet PMD's receive ring per port, in frames (devargs framecnt;
	// default 4096, DPDK's own default is 512): the frames a port buffers while the PMD thread
	// is not scheduled, which on a busy two-CPU machine is what loses frames first.
	RingFrames int
}

// Bed is a running testbed.
type Bed struct {
	// DB and Switch are the private ovsdb-server and ovs-vswitchd-dpdk.
	DB     *lab.OVSDB
	Switch *lab.OVSVswitchd
	// NS1 holds the generator's veth end (In.A), NS2 the receiver's (Out.A); the B ends are
	// br0's ports p1 and p2 in the root namespace.
	NS1, NS2 *lab.Netns
	In, Out  *lab.VethPair
	// Collector receives the bridge's NetFlow v5 export.
	Collector *Collector
}

// New builds the bed: OVSDB, DPDK vswitchd, namespaces, veths, br0 with the two af_packet
// ports, the forwarding rule, the collector and the NetFlow row. Fails the test on any error.
func New(t testing.TB, spec Spec) *Bed {
	t.Helper()
	lab.Require(t, lab.NeedDPDK, lab.NeedNetns)
	if spec.ActiveTimeout == 0 {
		spec.ActiveTimeout = 1
	}
	if spec.MaxIdleMS == 0 {
		spec.MaxIdleMS = 1000
	}
	if spec.RingFrames == 0 {
		spec.RingFrames = 4096
	}
	ring := ",framecnt=" + strconv.Itoa(spec.RingFrames)
	b := &Bed{DB: lab.StartOVSDB(t)}
	b.Switch = b.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK,
		OtherConfig: map[string]string{"max-idle": strconv.Itoa(spec.MaxIdleMS)}})
	b.NS1, b.NS2 = lab.NewNetns(t), lab.NewNetns(t)
	// No IPv6 on the veths (router solicitations and DAD would cross the bridge among the
	// generated frames): off in the namespaces before the A ends are made, and on the B ends
	// in the root namespace as soon as they exist.
	for _, ns := range []*lab.Netns{b.NS1, b.NS2} {
		disableIPv6(t, ns, "default", "all")
	}
	b.In = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS1, DisableOffloads: true})
	b.Out = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS2, DisableOffloads: true})
	disableIPv6(t, nil, b.In.B.Name, b.Out.B.Name)
	b.DB.Vsctl(t, "add-br", Bridge, "--", "set", "Bridge", Bridge, "datapath_type=netdev",
		"--", "add-port", Bridge, "p1", "--", "set", "Interface", "p1", "type=dpdk", "ofport_request=1",
		"options:dpdk-devargs="+b.Switch.AFPacketDevargs(b.In.B.Name)+ring,
		"--", "add-port", Bridge, "p2", "--", "set", "Interface", "p2", "type=dpdk", "ofport_request=2",
		"options:dpdk-devargs="+b.Switch.AFPacketDevargs(b.Out.B.Name)+ring)
	of := b.Switch.OpenFlowTarget(Bridge)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "del-flows", of)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "add-flow", of, "in_port=1,actions=output:2")
	b.Collector = Listen(t, nil)
	b.DB.Vsctl(t, "--", "set", "Bridge", Bridge, "netflow=@nf", "--", "--id=@nf", "create", "NetFlow",
		"targets="+strconv.Quote(b.Collector.Addr().String()), "active_timeout="+strconv.Itoa(spec.ActiveTimeout))
	return b
}

// disableIPv6 writes 1 to net.ipv6.conf.<conf>.disable_ipv6 for each conf ("all", "default"
// or an interface) in ns (nil: the test's own). /proc/sys/net belongs to the namespace of the
// thread that opens it, which Do provides.
func disableIPv6(t testing.TB, ns *lab.Netns, confs ...string) {
	t.Helper()
	err := ns.Do(func() error {
		for _, c := range confs {
			if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", c, "disable_ipv6"), []byte("1\n"), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("flowbed: disable IPv6 in %s: %v", ns, err)
	}
}

// GenSpec returns a generator spec into the bed's input veth: flows from 10.98.0.1.. ports
// 40000.. to 10.98.1.1:9000.., with the given frame size, flow count and frame count.
func (b *Bed) GenSpec(size, flows int, count uint64) gen.Spec {
	return gen.Spec{
		Interface: b.In.A.Name,
		SrcMAC:    net.HardwareAddr{0x02, 0xfb, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0xfb, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.98.0.1"), SrcIPs: 16, SrcPort: 40000, SrcPorts: 256,
		DstIP: netip.MustParseAddr("10.98.1.1"), DstPort: 9000, DstPorts: 16,
		FrameSize: size, Flows: flows, Count: count,
	}
}

// Result is one run through the bed.
type Result struct {
	// Report is the generator's and the receiver's view.
	Report gen.Report
	// Flows compares each generated flow with what NetFlow exported for it.
	Flows []FlowResult
	// Exported sums what NetFlow exported for the generated flows; Other counts records of
	// other 5-tuples; Records and Datagrams count what the collector decoded; DecodeErrors what
	// it could not.
	ExportedPackets, ExportedOctets uint64
	Other, Records, Datagrams       uint64
	DecodeErrors                    uint64
	// SequenceGaps adds up NetFlow records missing by flow_sequence under OVS's convention
	// (flow_sequence is the 0-based number of the datagram's last record: consecutive
	// datagrams differ by the new one's count); CiscoSeqMismatches counts datagrams that break
	// Cisco's convention (the number of records before the datagram), which OVS does not
	// follow; FirstSeqNotLast counts exporters whose first datagram did not carry count-1;
	// SequenceBackwards counts datagrams whose flow_sequence went back.
	SequenceGaps, SequenceBackwards, CiscoSeqMismatches, FirstSeqNotLast uint64
	// VethRx is what the kernel counted into the bridge's input veth end (In.B) during the run;
	// OVSRx and OVSTx are OpenFlow port counters of p1 (received) and p2 (transmitted). Frames
	// lost between VethRx and OVSRx were dropped by the af_packet PMD's socket, which neither
	// OVS's statistics nor NetFlow see.
	VethRx, OVSRx, OVSTx uint64
	// ExportWait is how long after the end of the run the export took to settle.
	ExportWait time.Duration
}

// FlowResult compares one flow.
type FlowResult struct {
	Flow int
	Key  gen.FlowKey
	// Sent and Received are the generator's and the receiver's frames; SentL3Bytes and
	// SentFrameBytes are the sent frames' IPv4 bytes and whole-frame bytes.
	Sent, Received              uint64
	SentL3Bytes, SentFrameBytes uint64
	// ExportedPackets and ExportedOctets add up dPkts and dOctets of every NetFlow record of the
	// flow's 5-tuple; Records counts those records.
	ExportedPackets, ExportedOctets uint64
	Records                         int
	// Input and Output are the records' SNMP interface indexes, which OVS fills with OpenFlow
	// port numbers (p1 is 1, p2 is 2); MixedPorts is set when the records disagree.
	Input, Output uint16
	MixedPorts    bool
}

// Run generates spec's frames (spec.Interface must be b.In.A.Name, as GenSpec sets it) and
// waits until the receiver has them all (or stops counting) and until NetFlow has exported at
// least as many packets for the spec's flows as the receiver counted (or stops exporting; the
// wait is bounded by exportWait), then compares.
func (b *Bed) Run(t testing.TB, spec gen.Spec, exportWait time.Duration) Result {
	t.Helper()
	b.Collector.Reset()
	c0 := b.counters(t)
	var rx *gen.Receiver
	if err := b.NS2.Do(func() error {
		var err error
		rx, err = gen.NewReceiver(gen.ReceiverSpec{Interface: b.Out.A.Name, Flows: spec.Flows})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rxDone := make(chan error, 1)
	go func() { rxDone <- rx.Run(ctx) }()
	stopRx := sync.OnceValue(func() error {
		cancel()
		return <-rxDone
	})
	defer stopRx()
	var g *gen.Generator
	if err := b.NS1.Do(func() error {
		var err error
		g, err = gen.NewGenerator(spec)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sent, err := g.Run(t.Context())
	if err != nil {
		t.Fatalf("generator: %v", err)
	}
	end := time.Now()
	settle(func() uint64 { return received(rx.Snapshot()) }, sent.Packets, 3*time.Second, 30*time.Second)
	if err := stopRx(); err != nil {
		t.Errorf("receiver: %v", err)
	}
	rep := gen.NewReport(sent, rx.Snapshot())
	keys := make(map[gen.FlowKey]int, spec.Flows)
	for i := range spec.Flows {
		keys[spec.FlowKey(i)] = i
	}
	settle(func() uint64 { return b.Collector.packetsOf(keys) }, rep.RecvPackets, 5*time.Second, exportWait)
	res := Result{Report: rep, ExportWait: time.Since(end)}
	exp, other, st := b.Collector.snapshot(keys)
	res.Other, res.Records, res.Datagrams, res.DecodeErrors = other, st.records, st.datagrams, st.errors
	res.SequenceGaps, res.SequenceBackwards = st.gaps, st.backwards
	res.CiscoSeqMismatches, res.FirstSeqNotLast = st.ciscoMismatches, st.firstSeqNotLast
	c1 := b.counters(t)
	res.VethRx, res.OVSRx, res.OVSTx = c1.vethRx-c0.vethRx, c1.p1Rx-c0.p1Rx, c1.p2Tx-c0.p2Tx
	for i, f := range rep.Flows {
		e := exp[i]
		fr := FlowResult{Flow: i, Key: f.Key, Sent: f.SentPackets, Received: f.RecvPackets,
			SentL3Bytes: f.SentL3Bytes, SentFrameBytes: f.SentPackets * uint64(spec.FrameSize),
			ExportedPackets: e.packets, ExportedOctets: e.octets, Records: e.records,
			Input: e.input, Output: e.output, MixedPorts: e.mixedPorts}
		res.ExportedPackets += e.packets
		res.ExportedOctets += e.octets
		res.Flows = append(res.Flows, fr)
	}
	return res
}

// received returns the distinct frames a receiver counted.
func received(r gen.Received) uint64 {
	var n uint64
	for _, f := range r.Flows {
		n += f.Packets - f.Duplicates
	}
	return n
}

// settle polls count every 50 ms until it reaches want, or has not moved for quiet, or limit
// has passed.
func settle(count func() uint64, want uint64, quiet, limit time.Duration) {
	last, lastChange := count(), time.Now()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		n := count()
		if n >= want {
			return
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > quiet {
			return
		}
	}
}

// MaxTableFlows is how many flows WriteTable lists one by one.
const MaxTableFlows = 32

// WriteTable writes the comparison: per flow sent, received, exported packets, and sent L3 and
// frame bytes against exported octets, then the totals.
func (r Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\t5-tuple\tsent\treceived\texported pkts\trecords\tsent L3 B\tsent frame B\texported octets\toctets/pkt\t")
	var tot FlowResult
	for i, f := range r.Flows {
		if i < MaxTableFlows {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", f.Flow, f.Key, f.Sent, f.Received,
				f.ExportedPackets, f.Records, f.SentL3Bytes, f.SentFrameBytes, f.ExportedOctets,
				perPacket(f.ExportedOctets, f.ExportedPackets))
		}
		tot.Sent += f.Sent
		tot.Received += f.Received
		tot.Records += f.Records
		tot.SentL3Bytes += f.SentL3Bytes
		tot.SentFrameBytes += f.SentFrameBytes
	}
	if len(r.Flows) > MaxTableFlows {
		fmt.Fprintf(tw, "…\t%d more\t\t\t\t\t\t\t\t\t\n", len(r.Flows)-MaxTableFlows)
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", tot.Sent, tot.Received, r.ExportedPackets,
		tot.Records, tot.SentL3Bytes, tot.SentFrameBytes, r.ExportedOctets, perPacket(r.ExportedOctets, r.ExportedPackets))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("flowbed: write table: %w", err)
	}
	_, err := fmt.Fprintf(w, "path: sent %d, veth into OVS %d, OVS p1 rx %d, OVS p2 tx %d, received %d\n"+
		"netflow: %d datagrams, %d records (%d of other flows), %d decode errors, %d sequence gaps and %d steps back (OVS convention; %d datagrams break Cisco's); settled %v after the run\n",
		tot.Sent, r.VethRx, r.OVSRx, r.OVSTx, tot.Received,
		r.Datagrams, r.Records, r.Other, r.DecodeErrors, r.SequenceGaps, r.SequenceBackwards, r.CiscoSeqMismatches, r.ExportWait.Round(10*time.Millisecond))
	if err != nil {
		return fmt.Errorf("flowbed: write table: %w", err)
	}
	return nil
}

// perPacket returns octets/packets, or 0.
func perPacket(octets, packets uint64) float64 {
	if packets == 0 {
		return 0
	}
	return float64(octets) / float64(packets)
}

// Collector is a NetFlow v5 UDP receiver on 127.0.0.1 that adds up dPkts and dOctets per
// 5-tuple.
type Collector struct {
	conn *net.UDPConn
	done chan struct{}
	mu   sync.Mutex
	sums map[gen.FlowKey]exported
	st   collectorStats
	last map[uint16]V5Header // the last header per engine type<<8|id
	raw  []Record
}

// MaxRawRecords is how many records a Collector keeps as they came (Records).
const MaxRawRecords = 4096

// Record is one decoded NetFlow v5 record with its exporter's engine type and id.
type Record struct {
	EngineType, EngineID uint8
	V5Record
}

// Records returns the first MaxRawRecords records received since the last Reset, as they came.
func (c *Collector) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.raw...)
}

// exported is what NetFlow exported for one 5-tuple.
type exported struct {
	packets, octets uint64
	records         int
	input, output   uint16 // of the first record
	mixedPorts      bool   // a later record had other ports
}

// collectorStats are the collector's counters.
type collectorStats struct {
	datagrams, records, errors uint64
	// gaps adds up missing records under OVS's convention (negative steps wrap; 0 when none is
	// lost); ciscoMismatches counts datagrams whose flow_sequence breaks Cisco's convention;
	// firstSeqNotLast counts engines whose first datagram's flow_sequence was not count-1.
	// backwards counts datagrams whose flow_sequence went back (a restarted exporter, or a
	// convention this bed does not know).
	gaps, backwards, ciscoMismatches, firstSeqNotLast uint64
}

// Listen opens the collector on 127.0.0.1 (an ephemeral port) in ns (nil: the test's own
// namespace) and reads until the test ends.
func Listen(t testing.TB, ns *lab.Netns) *Collector {
	t.Helper()
	var conn *net.UDPConn
	err := ns.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		return err
	})
	if err != nil {
		t.Fatalf("flowbed: NetFlow collector in %s: %v", ns, err)
	}
	c := &Collector{conn: conn, done: make(chan struct{}), sums: map[gen.FlowKey]exported{}, last: map[uint16]V5Header{}}
	go c.read()
	t.Cleanup(func() {
		_ = conn.Close()
		<-c.done
	})
	return c
}

// Addr is the collector's address, for NetFlow targets.
func (c *Collector) Addr() *net.UDPAddr { return c.conn.LocalAddr().(*net.UDPAddr) }

// read decodes datagrams until the socket closes.
func (c *Collector) read() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.mu.Lock()
				c.st.errors++
				c.mu.Unlock()
			}
			return
		}
		h, recs, err := DecodeV5(buf[:n])
		c.mu.Lock()
		c.st.datagrams++
		if err != nil {
			c.st.errors++
			c.mu.Unlock()
			continue
		}
		c.sequence(h)
		for _, r := range recs {
			c.st.records++
			if len(c.raw) < MaxRawRecords {
				c.raw = append(c.raw, Record{EngineType: h.EngineType, EngineID: h.EngineID, V5Record: r})
			}
			if r.Proto != 17 {
				continue
			}
			k := gen.FlowKey{Src: r.Src, Dst: r.Dst}
			e := c.sums[k]
			if e.records == 0 {
				e.input, e.output = r.Input, r.Output
			} else if e.input != r.Input || e.output != r.Output {
				e.mixedPorts = true
			}
			e.packets += uint64(r.Packets)
			e.octets += uint64(r.Octets)
			e.records++
			c.sums[k] = e
		}
		c.mu.Unlock()
	}
}

// sequence checks h's flow_sequence against the engine's previous datagram under both
// conventions. OVS (ofproto/netflow.c) writes the 0-based number of the datagram's last record,
// so consecutive datagrams differ by the new datagram's count; Cisco's convention is the number
// of flows exported before the datagram, so they differ by the previous datagram's count.
// Called with c.mu held.
func (c *Collector) sequence(h V5Header) {
	eng := uint16(h.EngineType)<<8 | uint16(h.EngineID)
	prev, ok := c.last[eng]
	c.last[eng] = h
	if !ok {
		if h.FlowSequence != uint32(h.Count-1) {
			c.st.firstSeqNotLast++
		}
		return
	}
	switch d := int32(h.FlowSequence - prev.FlowSequence - uint32(h.Count)); {
	case d > 0:
		c.st.gaps += uint64(d)
	case d < 0:
		c.st.backwards++
	}
	if h.FlowSequence != prev.FlowSequence+uint32(prev.Count) {
		c.st.ciscoMismatches++
	}
}

// Reset forgets the sums and counters of earlier runs (sequence tracking stays).
func (c *Collector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sums = map[gen.FlowKey]exported{}
	c.st = collectorStats{}
	c.raw = nil
}

// packetsOf returns the exported packets of the given flows.
func (c *Collector) packetsOf(keys map[gen.FlowKey]int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for k := range keys {
		n += c.sums[k].packets
	}
	return n
}

// snapshot returns the sums per flow index, the records of other 5-tuples and the counters.
func (c *Collector) snapshot(keys map[gen.FlowKey]int) (map[int]exported, uint64, collectorStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int]exported, len(keys))
	var other uint64
	for k, e := range c.sums {
		if i, ok := keys[k]; ok {
			out[i] = e
		} else {
			other += uint64(e.records)
		}
	}
	return out, other, c.st
}
