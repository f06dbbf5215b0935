//go:build linux

package openflow_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/openflow"
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

	rig := lab.NewSeqRig(t, vsns, 3)
	db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev", "protocols=OpenFlow10,OpenFlow13,OpenFlow14,OpenFlow15",
		"--", "add-port", "br0", rig.Src.A.Name, "--", "set", "Interface", rig.Src.A.Name, "ofport_request=1")
	for i, v := range rig.Sinks {
		db.Vsctl(t, "add-port", "br0", v.A.Name, "--", "set", "Interface", v.A.Name, "ofport_request="+strconv.Itoa(i+2))
	}
	sinks := rig.Recv
	db.Vsctl(t, "--timeout=30", "wait-until", "Interface", rig.Src.A.Name, "ofport=1")

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
	schedule := lab.WeightSchedule()
	if err := b.prog.Sync(ctx, b.name, cookies, groups, setOf(schedule[0])); err != nil {
		t.Fatalf("Sync %v: %v", schedule[0], err)
	}

	stopSending := rig.SendInBackground(t, ctx)

	var last groupStats
	phase := func(i int) {
		t.Helper()
		time.Sleep(time.Second) // traffic under this set of weights
		st := b.groupStats(t, gid)
		counts := rig.Counts()
		st.flowPackets = b.flowPackets(t, cookies.Value|1)
		t.Logf("weights %v: group duration %.3fs, packets since its last change %d, per bucket %v; the flow's packets %d; received so far per sink %v",
			schedule[i], st.Duration, st.Packets, st.Buckets, st.flowPackets, counts)
		if st.Duration <= last.Duration {
			t.Errorf("weights %v: the group's duration went back (%.3fs after %.3fs): it was deleted and added, not modified", schedule[i], st.Duration, last.Duration)
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
	res := stopSending()
	if res.Err != nil {
		t.Fatalf("sender: %v", res.Err)
	}
	time.Sleep(500 * time.Millisecond) // the last datagrams in flight
	c, err := lab.CountSeqs(res.N, sinks...)
	if err != nil {
		t.Fatal(err)
	}
	per, lost, dup := c.PerSink, c.Lost, c.Dup
	t.Logf("sent %d datagrams in %v (%.0f/s) over %d weight changes; received per sink %v; lost %d, duplicated %d; the flow counted %d",
		res.N, res.Took.Round(time.Millisecond), float64(res.N)/res.Took.Seconds(), len(schedule)-1, per, lost, dup, last.flowPackets)
	if lost != 0 || dup != 0 {
		t.Errorf("lost %d and duplicated %d of %d datagrams across the weight changes", lost, dup, res.N)
	}
	if res.N == 0 || last.Packets == 0 {
		t.Errorf("no traffic went through the group (sent %d, group packets %d)", res.N, last.Packets)
	}
	for k, n := range per {
		if n == 0 {
			t.Errorf("sink %d received nothing: the group never chose its bucket", k)
		}
	}
}

// groupStats is what the test reads of the group and of the flow pointing at it.
type groupStats struct {
	lab.GroupStats
	flowPackets uint64 // of the flow pointing at the group (dump-aggregate)
}

// groupStats reads the group's duration and counters (OpenFlow 1.5 dump-group-stats).
func (b *bridge) groupStats(t testing.TB, id uint32) groupStats {
	t.Helper()
	st, err := lab.ParseGroupStats(b.ofctl(t, "dump-group-stats", "group_id="+itoa(id)), id)
	if err != nil {
		t.Fatal(err)
	}
	return groupStats{GroupStats: st}
}

// flowPackets reads the packet count of the flows with exactly cookie (dump-aggregate).
func (b *bridge) flowPackets(t testing.TB, cookie uint64) uint64 {
	t.Helper()
	n, err := lab.ParseAggregatePackets(b.ofctl(t, "dump-aggregate", "cookie="+hex(cookie)+"/-1"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// weights reads the group's bucket weights from dump-groups (a bucket without weight: has
// Open vSwitch's default, 1).
func (b *bridge) weights(t testing.TB, id uint32) [3]uint16 {
	t.Helper()
	var w [3]uint16
	ws, err := lab.ParseGroupWeights(b.ofctl(t, "dump-groups"), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != len(w) {
		t.Fatalf("dump-groups: %d buckets in group %d, want %d", len(ws), id, len(w))
	}
	copy(w[:], ws)
	return w
}
