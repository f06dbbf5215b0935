//go:build linux

package flowbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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
	b := &Bed{DB: lab.StartOVSDB(t)}
	b.Switch = b.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK,
		OtherConfig: map[string]string{"max-idle": strconv.Itoa(spec.MaxIdleMS)}})
	b.NS1, b.NS2 = lab.NewNetns(t), lab.NewNetns(t)
	b.In = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS1, DisableOffloads: true})
	b.Out = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS2, DisableOffloads: true})
	for _, ns := range []*lab.Netns{b.NS1, b.NS2} { // no IPv6 chatter through the bridge
		ns.Run(t, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
	}
	b.DB.Vsctl(t, "add-br", Bridge, "--", "set", "Bridge", Bridge, "datapath_type=netdev",
		"--", "add-port", Bridge, "p1", "--", "set", "Interface", "p1", "type=dpdk", "ofport_request=1",
		"options:dpdk-devargs="+b.Switch.AFPacketDevargs(b.In.B.Name),
		"--", "add-port", Bridge, "p2", "--", "set", "Interface", "p2", "type=dpdk", "ofport_request=2",
		"options:dpdk-devargs="+b.Switch.AFPacketDevargs(b.Out.B.Name))
	of := b.Switch.OpenFlowTarget(Bridge)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "del-flows", of)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "add-flow", of, "in_port=1,actions=output:2")
	b.Collector = Listen(t)
	b.DB.Vsctl(t, "--", "set", "Bridge", Bridge, "netflow=@nf", "--", "--id=@nf", "create", "NetFlow",
		"targets="+strconv.Quote(b.Collector.Addr().String()), "active_timeout="+strconv.Itoa(spec.ActiveTimeout))
	return b
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
	// it could not; Lost is the gap in NetFlow flow_sequence numbers.
	ExportedPackets, ExportedOctets uint64
	Other, Records, Datagrams       uint64
	DecodeErrors, SequenceGaps      uint64
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
}

// Run generates spec's frames (spec.Interface must be b.In.A.Name, as GenSpec sets it) and
// waits until the receiver has them all (or stops counting) and until NetFlow has exported at
// least as many packets for the spec's flows as the receiver counted (or stops exporting; the
// wait is bounded by exportWait), then compares.
func (b *Bed) Run(t testing.TB, spec gen.Spec, exportWait time.Duration) Result {
	t.Helper()
	b.Collector.Reset()
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
	res.Other, res.Records, res.Datagrams, res.DecodeErrors, res.SequenceGaps = other, st.records, st.datagrams, st.errors, st.gaps
	for i, f := range rep.Flows {
		e := exp[i]
		fr := FlowResult{Flow: i, Key: f.Key, Sent: f.SentPackets, Received: f.RecvPackets,
			SentL3Bytes: f.SentL3Bytes, SentFrameBytes: f.SentPackets * uint64(spec.FrameSize),
			ExportedPackets: e.packets, ExportedOctets: e.octets, Records: e.records}
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
	_, err := fmt.Fprintf(w, "netflow: %d datagrams, %d records (%d of other flows), %d decode errors, %d sequence gaps; settled %v after the run\n",
		r.Datagrams, r.Records, r.Other, r.DecodeErrors, r.SequenceGaps, r.ExportWait.Round(10*time.Millisecond))
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
	seq  map[uint16]uint32 // next expected flow_sequence per engine type<<8|id
}

// exported is what NetFlow exported for one 5-tuple.
type exported struct {
	packets, octets uint64
	records         int
}

// collectorStats are the collector's counters.
type collectorStats struct {
	datagrams, records, errors, gaps uint64
}

// Listen opens the collector on 127.0.0.1 (an ephemeral port) in the test's namespace and
// reads until the test ends.
func Listen(t testing.TB) *Collector {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("flowbed: NetFlow collector: %v", err)
	}
	c := &Collector{conn: conn, done: make(chan struct{}), sums: map[gen.FlowKey]exported{}, seq: map[uint16]uint32{}}
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
		eng := uint16(h.EngineType)<<8 | uint16(h.EngineID)
		if next, ok := c.seq[eng]; ok && h.FlowSequence != next {
			c.st.gaps += uint64(h.FlowSequence - next)
		}
		c.seq[eng] = h.FlowSequence + uint32(h.Count)
		for _, r := range recs {
			c.st.records++
			if r.Proto != 17 {
				continue
			}
			k := gen.FlowKey{Src: r.Src, Dst: r.Dst}
			e := c.sums[k]
			e.packets += uint64(r.Packets)
			e.octets += uint64(r.Octets)
			e.records++
			c.sums[k] = e
		}
		c.mu.Unlock()
	}
}

// Reset forgets the sums and counters of earlier runs (sequence tracking stays).
func (c *Collector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sums = map[gen.FlowKey]exported{}
	c.st = collectorStats{}
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
