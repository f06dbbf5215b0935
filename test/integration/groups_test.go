//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// groupsSchedule is the weights TestSelectGroupWeightsThroughDaemon writes, one set after the
// other: a bucket drained to 0 and back, each bucket drained once.
var groupsSchedule = func() [][]uint16 {
	var out [][]uint16
	for _, w := range lab.WeightSchedule() {
		out = append(out, w[:])
	}
	return out
}()

// TestSelectGroupWeightsThroughDaemon runs the real ovsplaned with a real plugin process
// (testdata/weightsplugin: a select group of three buckets, one per sink port, and a flow
// sending the test's UDP stream from the source port to it; weights read from a file in its
// data dir, re-read every 100 ms through FlowSet.RefreshMillis) on a userspace bridge of a
// real ovs-vswitchd whose four ports are veths into namespaces, all from the daemon's
// configuration. While a numbered UDP stream runs, the test rewrites the weights file five
// times (a bucket to 0 and back). Every datagram sent arrives exactly once at one of the sinks
// (an operator's flow below the plugin's drops the stream, so a moment without the plugin's
// flow or group would lose datagrams); dump-groups shows each new set of weights (how long
// after the file was written is logged); the group is modified in place: its duration only
// grows, and the plugin's flow is not rewritten: its packet count only grows.
func TestSelectGroupWeightsThroughDaemon(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedNetns)
	ctx := timeout(t, 3*time.Minute)
	vsns := lab.NewNetns(t) // ovs-vswitchd's namespace, where the bridge-side veth ends go
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: vsns})
	rig := lab.NewSeqRig(t, vsns, 3)
	ofctlErr := func(args ...string) (string, error) {
		args = append([]string{"-O", "OpenFlow15", "--no-names", args[0], sw.OpenFlowTarget("br0")}, args[1:]...)
		out, err := exec.CommandContext(ctx, "ovs-ofctl", args...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ovs-ofctl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	ofctl := func(args ...string) string {
		t.Helper()
		out, err := ofctlErr(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	l := newDaemonLab(t, db)
	pdir, sum := buildPlugin(t, l.dir, "./testdata/weightsplugin", "weights")
	weightsFile := filepath.Join(l.dir, "plugin-data", "weights", "weights")
	if err := os.MkdirAll(filepath.Dir(weightsFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeWeights := func(w []uint16) {
		t.Helper()
		var b strings.Builder
		for i, wi := range w {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatUint(uint64(wi), 10))
		}
		tmp := weightsFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, weightsFile); err != nil { // the plugin never reads half a file
			t.Fatal(err)
		}
	}
	writeWeights(groupsSchedule[0])

	sinks := make([]string, len(rig.Sinks))
	ports := fmt.Sprintf("      - {name: %[1]s, interfaces: [{name: %[1]s, ofport_request: 1}]}\n", rig.Src.A.Name)
	for i, v := range rig.Sinks {
		sinks[i] = v.A.Name
		ports += fmt.Sprintf("      - {name: %[1]s, interfaces: [{name: %[1]s, ofport_request: %[2]d}]}\n", v.A.Name, i+2)
	}
	conf := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: weights
    path: weights
    sha256: %s
    config: {bridge: br0, source: %s, buckets: [%s], refresh_millis: 100}
bridges:
  - name: br0
    datapath_type: netdev
    protocols: [OpenFlow10, OpenFlow13, OpenFlow14, OpenFlow15]
    ports:
%s`, pdir, sum, rig.Src.A.Name, strings.Join(sinks, ", "), ports)
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)
	started := time.Now()

	// The plugin's group, found by its flow's action (its id is the plugin's first group id).
	var gid uint32
	var cookie uint64
	lab.WaitFor(t, 30*time.Second, "the plugin's flow and group on br0", func(context.Context) error {
		flows, err := ofctlErr("dump-flows", "in_port=1,udp")
		if err != nil {
			return err
		}
		if gid, cookie, err = pluginFlow(flows); err != nil {
			return err
		}
		groups, err := ofctlErr("dump-groups")
		if err == nil {
			_, err = lab.ParseGroupWeights(groups, gid)
		}
		return err
	})
	programmedAfter := time.Since(started)
	// Dumps are of all groups, not filtered by group_id=: ovs-ofctl 3.1 takes a group id
	// filter for a signed int and ignores one of 2^31 or more (the plugin's id here) with a
	// warning.
	var group string
	for l := range strings.Lines(ofctl("dump-groups")) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "group_id="+strconv.FormatUint(uint64(gid), 10)+",") {
			group = l
		}
	}
	for i := range rig.Sinks {
		if !strings.Contains(group, "actions=output:"+strconv.Itoa(i+2)) {
			t.Errorf("the group has no bucket to ofport %d (sink %d): %s", i+2, i, group)
		}
	}
	t.Logf("the plugin's flow (cookie %#x) and group (id %#x) on br0 %v after ovsplaned answered: %s",
		cookie, gid, programmedAfter.Round(time.Millisecond), strings.TrimSpace(group))
	// Below the plugin's flow, the stream is dropped: a moment without the plugin's flow or
	// group shows as lost datagrams (NORMAL would deliver them to the sink it learnt).
	ofctl("add-flow", "cookie=0x1234,priority=10,in_port=1,udp,actions=drop")

	// Each set of weights: written, then dump-groups polled every 10 ms (up to 20 s) until it
	// shows them; showWeights returns how long that took.
	showWeights := func(w []uint16) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			got, err := lab.ParseGroupWeights(ofctl("dump-groups"), gid)
			if err == nil && slices.Equal(got, w) {
				return time.Since(start)
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("dump-groups does not show weights %v after 20 s: %v %v", w, got, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	showWeights(groupsSchedule[0])

	stopSending := rig.SendInBackground(t, ctx)

	var lastDuration float64
	var lastFlow uint64
	var lags []time.Duration
	phase := func(w []uint16) {
		t.Helper()
		time.Sleep(time.Second) // traffic under this set of weights
		st, err := lab.ParseGroupStats(ofctl("dump-group-stats"), gid)
		if err != nil {
			t.Fatal(err)
		}
		flow, err := lab.ParseAggregatePackets(ofctl("dump-aggregate", "cookie=0x"+strconv.FormatUint(cookie, 16)+"/-1"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("weights %v: group duration %.3fs, packets since its last change %d, per bucket %v; the flow's packets %d; received so far per sink %v",
			w, st.Duration, st.Packets, st.Buckets, flow, rig.Counts())
		if st.Duration <= lastDuration {
			t.Errorf("weights %v: the group's duration went back (%.3fs after %.3fs): it was deleted and added, not modified", w, st.Duration, lastDuration)
		}
		if flow <= lastFlow {
			t.Errorf("weights %v: the flow's packet count went back or stood still (%d after %d): the flow was rewritten", w, flow, lastFlow)
		}
		lastDuration, lastFlow = st.Duration, flow
	}
	phase(groupsSchedule[0])
	for _, w := range groupsSchedule[1:] {
		writeWeights(w)
		took := showWeights(w)
		lags = append(lags, took)
		t.Logf("weights %v shown by dump-groups %v after the file was written", w, took.Round(time.Millisecond))
		phase(w)
	}
	res := stopSending()
	if res.Err != nil {
		t.Fatalf("sender: %v", res.Err)
	}
	time.Sleep(500 * time.Millisecond) // the last datagrams in flight
	c, err := lab.CountSeqs(res.N, rig.Recv...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d datagrams in %v (%.0f/s) over %d weight changes (shown after %v); received per sink %v; lost %d, duplicated %d; the flow counted %d",
		res.N, res.Took.Round(time.Millisecond), float64(res.N)/res.Took.Seconds(), len(groupsSchedule)-1, lags, c.PerSink, c.Lost, c.Dup, lastFlow)
	if c.Lost != 0 || c.Dup != 0 {
		t.Errorf("lost %d and duplicated %d of %d datagrams across the weight changes", c.Lost, c.Dup, res.N)
	}
	if res.N == 0 {
		t.Errorf("no datagram sent")
	}
	for k, n := range c.PerSink {
		if n == 0 {
			t.Errorf("sink %d received nothing: the group never chose its bucket", k)
		}
	}
}

// pluginFlowRe matches a dump-flows line of a plugin's flow to a group (cookies 0xa5…).
var pluginFlowRe = regexp.MustCompile(`cookie=(0xa5[0-9a-f]+),.*actions=group:([0-9]+)`)

// pluginFlow returns the group id and cookie of the plugin's flow in a dump-flows output.
func pluginFlow(dump string) (gid uint32, cookie uint64, err error) {
	m := pluginFlowRe.FindStringSubmatch(dump)
	if m == nil {
		return 0, 0, fmt.Errorf("no plugin flow to a group in:\n%s", dump)
	}
	cookie, err = strconv.ParseUint(m[1], 0, 64)
	if err != nil {
		return 0, 0, err
	}
	g, err := strconv.ParseUint(m[2], 10, 32)
	return uint32(g), cookie, err
}
