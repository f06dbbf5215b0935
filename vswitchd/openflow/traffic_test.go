//go:build linux

package openflow_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/openflow"
)

// Traffic of TestSelectGroupWeightsUnderTraffic: UDP from flowsPerSender source ports (so the
// select group's hash spreads them over the buckets), one datagram every sendEvery.
const (
	sinkIP         = "10.97.0.2"
	sinkMAC        = "02:00:0a:61:00:02"
	udpPort        = 9999
	flowsPerSender = 64
	sendEvery      = 500 * time.Microsecond
)

// TestSelectGroupWeightsUnderTraffic: a plugin's select group of three buckets, each output to
// a veth into its own namespace, on a userspace (netdev) bridge of a real ovs-vswitchd, takes
// a steady UDP stream (sequence numbers, 64 source ports) while Sync changes its weights five
// times, a bucket going to 0 and back. Every datagram sent arrives exactly once at one of the
// sinks (none lost, none duplicated; an operator's flow below the plugin's drops the stream, so
// a moment without the plugin's flow or group would lose datagrams), dump-groups shows each new
// set of weights right after its Sync, and the group is modified in place: its duration only grows (a delete and add would
// reset it), and the flow pointing at it is not rewritten: its packet count only grows. Open
// vSwitch 3.1 resets a group's packet and byte counters when it is modified (measured here:
// they count from the last change), so they are logged, not compared. The numbers are logged.
func TestSelectGroupWeightsUnderTraffic(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedNetns)
	vsns := lab.NewNetns(t) // ovs-vswitchd's namespace, where the bridge-side veth ends go
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: vsns})

	srcNS := lab.NewNetns(t)
	src := lab.NewVethPair(t, lab.VethSpec{ANetns: vsns, BNetns: srcNS, BAddr: "10.97.0.1/24", DisableOffloads: true})
	srcNS.Run(t, "ip", "neigh", "replace", sinkIP, "lladdr", sinkMAC, "dev", src.B.Name)
	db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev", "protocols=OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15",
		"--", "add-port", "br0", src.A.Name, "--", "set", "Interface", src.A.Name, "ofport_request=1")
	var sinks []*sink
	for i := range 3 {
		ns := lab.NewNetns(t)
		v := lab.NewVethPair(t, lab.VethSpec{ANetns: vsns, BNetns: ns, DisableOffloads: true})
		ns.Run(t, "ip", "link", "set", "dev", v.B.Name, "address", sinkMAC)
		ns.Run(t, "ip", "addr", "add", sinkIP+"/24", "dev", v.B.Name)
		db.Vsctl(t, "add-port", "br0", v.A.Name, "--", "set", "Interface", v.A.Name, "ofport_request="+strconv.Itoa(i+2))
		sinks = append(sinks, listen(t, ns))
	}
	db.Vsctl(t, "--timeout=30", "wait-until", "Interface", src.A.Name, "ofport=1")

	b := &bridge{sw: sw, prog: &openflow.Programmer{RunDir: db.Dir}, name: "br0"}
	// Below the plugin's flow, the stream is dropped: a moment without the plugin's flow or
	// group shows as lost datagrams (NORMAL would deliver them to the sink it learnt).
	b.ofctl(t, "add-flow", "cookie=0x1234,priority=10,in_port=1,udp,actions=drop")
	gid := groups.First
	setOf := func(w [3]uint16) api.FlowSet {
		g := api.Group{ID: gid, Type: "select", SelectionMethod: "dp_hash"}
		for i, wi := range w {
			g.Buckets = append(g.Buckets, api.Bucket{Actions: "output:" + strconv.Itoa(i+2), Weight: wi})
		}
		return api.FlowSet{Groups: []api.Group{g}, Flows: []api.Flow{
			{Cookie: cookies.Value | 1, Priority: 1000, Match: "in_port=1,udp", Actions: "group:" + itoa(gid)}}}
	}
	ctx := t.Context()
	schedule := [][3]uint16{{10, 10, 10}, {20, 10, 0}, {0, 10, 10}, {10, 0, 30}, {10, 10, 0}, {10, 10, 10}}
	if err := b.prog.Sync(ctx, b.name, cookies, groups, setOf(schedule[0])); err != nil {
		t.Fatalf("Sync %v: %v", schedule[0], err)
	}

	sctx, stopSending := context.WithCancel(ctx)
	sent := make(chan sendResult, 1)
	go func() { sent <- sendStream(sctx, srcNS) }()
	stopped := false
	defer func() {
		if !stopped {
			stopSending()
			<-sent
		}
	}()

	var last groupStats
	phase := func(i int) {
		t.Helper()
		time.Sleep(time.Second) // traffic under this set of weights
		st := b.groupStats(t, gid)
		counts := make([]int, len(sinks))
		for k, s := range sinks {
			counts[k] = s.count()
		}
		st.flowPackets = b.flowPackets(t, cookies.Value|1)
		t.Logf("weights %v: group duration %.3fs, packets since its last change %d, per bucket %v; the flow's packets %d; received so far per sink %v",
			schedule[i], st.duration, st.packets, st.buckets, st.flowPackets, counts)
		if st.duration <= last.duration {
			t.Errorf("weights %v: the group's duration went back (%.3fs after %.3fs): it was deleted and added, not modified", schedule[i], st.duration, last.duration)
		}
		if st.flowPackets <= last.flowPackets {
			t.Errorf("weights %v: the flow's packet count went back or stood still (%d after %d): the flow was rewritten", schedule[i], st.flowPackets, last.flowPackets)
		}
		last = st
	}
	phase(0)
	for i, w := range schedule[1:] {
		if err := b.prog.Sync(ctx, b.name, cookies, groups, setOf(w)); err != nil {
			t.Fatalf("Sync %v: %v", w, err)
		}
		if got, want := b.weights(t, gid), w; got != want {
			t.Errorf("after Sync of %v, dump-groups shows weights %v", want, got)
		}
		phase(i + 1)
	}
	stopSending()
	res := <-sent
	stopped = true
	if res.err != nil {
		t.Fatalf("sender: %v", res.err)
	}
	time.Sleep(500 * time.Millisecond) // the last datagrams in flight
	seen := make([]int, res.n)
	per := make([]int, len(sinks))
	for k, s := range sinks {
		s.close()
		for _, seq := range s.seqs() {
			if seq >= uint64(res.n) {
				t.Fatalf("sink %d got sequence number %d, beyond the %d sent", k, seq, res.n)
			}
			seen[seq]++
			per[k]++
		}
	}
	lost, dup := 0, 0
	for _, c := range seen {
		switch {
		case c == 0:
			lost++
		case c > 1:
			dup += c - 1
		}
	}
	t.Logf("sent %d datagrams in %v (%.0f/s) over %d weight changes; received per sink %v; lost %d, duplicated %d; the flow counted %d",
		res.n, res.took.Round(time.Millisecond), float64(res.n)/res.took.Seconds(), len(schedule)-1, per, lost, dup, last.flowPackets)
	if lost != 0 || dup != 0 {
		t.Errorf("lost %d and duplicated %d of %d datagrams across the weight changes", lost, dup, res.n)
	}
	if res.n == 0 || last.packets == 0 {
		t.Errorf("no traffic went through the group (sent %d, group packets %d)", res.n, last.packets)
	}
	for k, c := range per {
		if c == 0 {
			t.Errorf("sink %d received nothing: the group never chose its bucket", k)
		}
	}
}

// groupStats is one group's line of dump-group-stats.
type groupStats struct {
	duration    float64
	packets     uint64
	buckets     []uint64
	flowPackets uint64 // of the flow pointing at the group (dump-aggregate)
}

var (
	durationRe = regexp.MustCompile(`duration=([0-9.]+)s`)
	packetsRe  = regexp.MustCompile(`(?:^|,)packet_count=([0-9]+)`)
	bucketRe   = regexp.MustCompile(`bucket[0-9]+:packet_count=([0-9]+)`)
	weightRe   = regexp.MustCompile(`bucket=(?:bucket_id:[0-9]+,)?(?:weight:([0-9]+),)?`)
)

// groupStats reads the group's duration and counters (OpenFlow 1.5 dump-group-stats).
func (b *bridge) groupStats(t testing.TB, id uint32) groupStats {
	t.Helper()
	out := b.ofctl(t, "dump-group-stats", "group_id="+itoa(id))
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "group_id="+itoa(id)+",") {
			continue
		}
		var st groupStats
		d := durationRe.FindStringSubmatch(l)
		p := packetsRe.FindStringSubmatch(l)
		if d == nil || p == nil {
			t.Fatalf("dump-group-stats: no duration or packet_count in %q", l)
		}
		st.duration, _ = strconv.ParseFloat(d[1], 64)
		st.packets, _ = strconv.ParseUint(p[1], 10, 64)
		for _, m := range bucketRe.FindAllStringSubmatch(l, -1) {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			st.buckets = append(st.buckets, n)
		}
		return st
	}
	t.Fatalf("dump-group-stats: no group %d in:\n%s", id, out)
	return groupStats{}
}

// flowPackets reads the packet count of the flows with exactly cookie (dump-aggregate).
func (b *bridge) flowPackets(t testing.TB, cookie uint64) uint64 {
	t.Helper()
	out := b.ofctl(t, "dump-aggregate", "cookie="+hex(cookie)+"/-1")
	m := packetsRe.FindStringSubmatch(strings.ReplaceAll(out, " ", ","))
	if m == nil {
		t.Fatalf("dump-aggregate: no packet_count in %q", out)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// weights reads the group's bucket weights from dump-groups (a bucket without weight: has
// Open vSwitch's default, 1).
func (b *bridge) weights(t testing.TB, id uint32) [3]uint16 {
	t.Helper()
	var w [3]uint16
	for _, l := range b.groups(t, true) {
		if !strings.HasPrefix(l, "group_id="+itoa(id)+",") {
			continue
		}
		ms := weightRe.FindAllStringSubmatch(l, -1)
		if len(ms) != len(w) {
			t.Fatalf("dump-groups: %d buckets in %q, want %d", len(ms), l, len(w))
		}
		for i, m := range ms {
			w[i] = 1
			if m[1] != "" {
				n, _ := strconv.ParseUint(m[1], 10, 16)
				w[i] = uint16(n)
			}
		}
		return w
	}
	t.Fatalf("dump-groups: no group %d", id)
	return w
}

// sink receives the stream's datagrams in one namespace and records their sequence numbers.
type sink struct {
	conn *net.UDPConn
	done chan struct{}
	mu   sync.Mutex
	got  []uint64
}

// listen opens the sink's socket on sinkIP:udpPort inside ns and reads until closed.
func listen(t *testing.T, ns *lab.Netns) *sink {
	t.Helper()
	s := &sink{done: make(chan struct{})}
	err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(sinkIP), Port: udpPort})
		if err != nil {
			return err
		}
		s.conn = c
		return c.SetReadBuffer(8 << 20)
	})
	if err != nil {
		t.Fatalf("sink in %s: %v", ns, err)
	}
	go func() {
		defer close(s.done)
		buf := make([]byte, 64)
		for {
			n, err := s.conn.Read(buf)
			if err != nil {
				return
			}
			if n >= 8 {
				s.mu.Lock()
				s.got = append(s.got, binary.BigEndian.Uint64(buf[:8]))
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func (s *sink) seqs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.got...)
}

func (s *sink) close() {
	s.conn.Close()
	<-s.done
}

type sendResult struct {
	n    int
	took time.Duration
	err  error
}

// sendStream sends numbered datagrams from ns to sinkIP:udpPort, round robin over
// flowsPerSender sockets (source ports), one every sendEvery, until ctx ends.
func sendStream(ctx context.Context, ns *lab.Netns) sendResult {
	var conns []*net.UDPConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	err := ns.Do(func() error {
		for range flowsPerSender {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(sinkIP), Port: udpPort})
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		return sendResult{err: err}
	}
	start := time.Now()
	tick := time.NewTicker(sendEvery)
	defer tick.Stop()
	buf := make([]byte, 64)
	n := 0
	for {
		select {
		case <-ctx.Done():
			return sendResult{n: n, took: time.Since(start)}
		case <-tick.C:
		}
		binary.BigEndian.PutUint64(buf, uint64(n))
		if _, err := conns[n%len(conns)].Write(buf); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return sendResult{n: n, took: time.Since(start)}
			}
			return sendResult{n: n, took: time.Since(start), err: fmt.Errorf("datagram %d: %w", n, err)}
		}
		n++
	}
}
