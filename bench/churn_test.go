//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Port churn (issue 4): N ports created by C concurrent clients, each request one port and done
// only when the port has its ofport from ovs-vswitchd and no Interface.error; then all deleted,
// each delete done when ovs-vswitchd has applied it. Every arm gets a fresh ovsdb-server and
// ovs-vswitchd (dummy datapath: every port gets a real ofport, no devices) with bridge br0 made by
// `ovs-vsctl add-br`; ports are type=internal. The arms (churn_arms_test.go):
//
//	floor          package ovsdb, no clients: C ports per transaction, one transaction after the
//	               other, each waiting for cur_cfg. The target for ovsplaned (within 1.25×).
//	ovsplaned      the daemon's API, C clients, one port per request (see churnOvsplaned).
//	ovs-vsctl      C workers, one `ovs-vsctl add-port … -- set Interface … type=internal` process
//	               per port (waiting form) followed by `ovs-vsctl get Interface p ofport error`;
//	               del-port one process per port.
//	ovsdbapp       C threads of one Python process sharing one ovsdbapp connection, one
//	               transaction per port (churn_ovsdbapp.py), as Neutron and os-vif do.
//	bulk-ovs-vsctl one ovs-vsctl process adding all N ports in one transaction (waiting form),
//	               then one `list Interface` to read the ofports; one process deleting all.
//
// A request's latency runs from its start until it is confirmed: for ovs-vsctl it includes the
// `get` that reads the ofport (the add-port process alone does not tell it; the ovsplaned API and
// ovsdbapp's read from its replica do); for the floor it is the commit of the transaction
// holding the port, for bulk-ovs-vsctl the whole phase. Per phase the harness also counts
// OVSDB write transactions that asked for a vswitchd acknowledgement (next_cfg increments) and
// ovs-vswitchd reconfigurations (its bridge_reconfigure coverage counter), and checks the
// outcome outside the timing: after create every port exists with ofport > 0 and no error; after
// delete no port or interface is left.
//
// OVSPLANE_CHURN_PORTS (default 2000) and OVSPLANE_CHURN_CLIENTS (default 50) size
// BenchmarkChurn, and OVSPLANE_CHURN_PHASE_TIMEOUT (a Go duration, default 30m) bounds each phase
// of each arm; TestChurnShort runs every arm at 200 ports and 10 clients and asserts only
// correctness. Run the benchmark with -benchtime 1x: an arm at 2,000 ports takes minutes.

// Environment variables sizing BenchmarkChurn.
const (
	churnPortsEnv        = "OVSPLANE_CHURN_PORTS"
	churnClientsEnv      = "OVSPLANE_CHURN_CLIENTS"
	churnPhaseTimeoutEnv = "OVSPLANE_CHURN_PHASE_TIMEOUT"
)

// Sizes: the issue's, and TestChurnShort's.
const (
	churnDefaultPorts, churnDefaultClients = 2000, 50
	churnShortPorts, churnShortClients     = 200, 10
)

// churnPhase is what an arm does to the ports: create them all, or delete them all.
type churnPhase int

const (
	churnCreate churnPhase = iota
	churnDelete
)

func (p churnPhase) String() string {
	if p == churnCreate {
		return "create"
	}
	return "delete"
}

// churnEnv is one arm's fresh switch: ovsdb-server, an ovs-vswitchd with the dummy datapath and
// bridge br0 (no ports yet), and the ports to churn.
type churnEnv struct {
	db           *lab.OVSDB
	vs           *lab.OVSVswitchd
	raw          rawOVSDB
	names        []string // p0 … p(N-1)
	clients      int
	phaseTimeout time.Duration
	daemon       *benchDaemon // the ovsplaned arm's, started by its create phase
	// vhostDir, when set, makes this a DPDK switch (ovs-vswitchd-dpdk, br0 netdev) whose ports
	// are dpdkvhostuserclient with their vhost-server-path in this directory (no VM connects:
	// OVS-DPDK sets the port up and keeps trying to connect).
	vhostDir string
	// portType, when set, is the interface type the ovsplaned arm asks for instead (a plugin's
	// port type: see churnOvsplanedNoop); with halfPlugin, for every other port only (p0, p2, …).
	portType   string
	halfPlugin bool
}

// ifaceTypeOf is the type the ovsplaned arm asks for port name's interface.
func (e *churnEnv) ifaceTypeOf(name string) string {
	if n, err := strconv.Atoi(strings.TrimPrefix(name, "p")); e.halfPlugin && err == nil && n%2 == 1 {
		if e.vhostDir != "" {
			return "dpdkvhostuserclient"
		}
		return "internal"
	}
	return e.ifaceType()
}

// ifaceType and ifaceOptions are the type and options of the interface of port name.
func (e *churnEnv) ifaceType() string {
	if e.portType != "" {
		return e.portType
	}
	if e.vhostDir != "" {
		return "dpdkvhostuserclient"
	}
	return "internal"
}

func (e *churnEnv) ifaceOptions(name string) map[string]string {
	if e.vhostDir == "" {
		return nil
	}
	return map[string]string{"vhost-server-path": e.vhostDir + "/" + name + ".sock"}
}

// vsctlIfaceArgs are the ovs-vsctl set arguments giving port name's interface its type and options.
func (e *churnEnv) vsctlIfaceArgs(name string) []string {
	args := []string{"set", "Interface", name, "type=" + e.ifaceType()}
	for k, v := range e.ifaceOptions(name) {
		args = append(args, "options:"+k+"="+v)
	}
	return args
}

// churnSize is how much churn a run makes: ports, clients, and the bound of each phase.
type churnSize struct {
	ports, clients int
	phaseTimeout   time.Duration
	dpdk           bool // ovs-vswitchd-dpdk and dpdkvhostuserclient ports
}

// churnTiming is what an arm measured in one phase.
type churnTiming struct {
	wall    time.Duration   // first request sent → last request confirmed
	lat     []time.Duration // one per port: its request's latency
	batches []int           // ports per OVSDB transaction, when the arm knows (floor, ovsplaned)
	// commit and ack are the phase's transactions' time to commit to OVSDB and then to be
	// acknowledged by ovs-vswitchd (next_cfg to cur_cfg), summed, when the arm knows (floor,
	// ovsplaned): what is left of wall is the time between transactions.
	commit, ack time.Duration
}

// churnArmFunc runs one phase of one arm against e: every port of e.names created (each with an
// ofport > 0 and no error) or deleted, from e.clients clients. It fails tb on any error, and may
// skip it when the arm cannot run here.
type churnArmFunc func(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming

// churnArm names an arm.
type churnArm struct {
	name string
	run  churnArmFunc
}

// churnArms lists the arms in the order they run: the floor and ovsplaned first, so the
// baselines can report their ratios to both.
var churnArms = []churnArm{
	{"floor", churnFloor},
	{"ovsplaned", churnOvsplaned},
	{"bulk-ovs-vsctl", churnBulkVsctl},
	{"ovs-vsctl", churnVsctl},
	{"ovsdbapp", churnOvsdbapp},
}

// churnPhaseResult is one phase of one arm, measured and counted.
type churnPhaseResult struct {
	churnTiming
	txns      int64 // next_cfg increments: write transactions that waited for ovs-vswitchd
	reconfigs int64 // ovs-vswitchd bridge reconfigurations
}

// churnResult is one arm's two phases.
type churnResult struct {
	arm    string
	ports  int
	phases [2]churnPhaseResult
}

// total is the create and delete time together, the time the ratios compare.
func (r *churnResult) total() time.Duration { return r.phases[0].wall + r.phases[1].wall }

// BenchmarkChurn runs every arm once per b.N at OVSPLANE_CHURN_PORTS ports and
// OVSPLANE_CHURN_CLIENTS clients, reports each arm's metrics and prints a markdown table.
func BenchmarkChurn(b *testing.B) {
	size := churnSizeFromEnv(b)
	benchChurnArms(b, churnArms, size)
}

// benchChurnArms runs each arm once per b.N at size, reports each arm's metrics and prints a
// markdown table.
func benchChurnArms(b *testing.B, arms []churnArm, size churnSize) {
	results := map[string]*churnResult{}
	missing := map[string]string{} // arms without a result: why
	for _, arm := range arms {
		ok := b.Run(arm.name, func(b *testing.B) {
			for range b.N {
				r := runChurnArm(b, arm, size)
				results[arm.name] = r
				reportChurn(b, r, results)
			}
		})
		if _, ran := results[arm.name]; !ran {
			missing[arm.name] = map[bool]string{true: "skipped", false: "failed"}[ok]
		}
	}
	printChurnTable(os.Stdout, size.ports, size.clients, results, missing)
}

// TestChurnShort runs every arm at churnShortPorts ports from churnShortClients clients and
// checks that each created every port with an ofport and deleted them all; timing is not judged.
func TestChurnShort(t *testing.T) {
	for _, arm := range churnArms {
		t.Run(arm.name, func(t *testing.T) {
			r := runChurnArm(t, arm, churnSize{ports: churnShortPorts, clients: churnShortClients, phaseTimeout: churnDefaultPhaseTimeout})
			t.Logf("%s: create %.2f s, delete %.2f s, %d+%d transactions, %d+%d reconfigurations", arm.name,
				r.phases[0].wall.Seconds(), r.phases[1].wall.Seconds(), r.phases[0].txns, r.phases[1].txns,
				r.phases[0].reconfigs, r.phases[1].reconfigs)
		})
	}
}

// churnDPDKArms run on the DPDK switch: the floor, ovsplaned and per-port ovs-vsctl.
var churnDPDKArms = []churnArm{churnArms[0], churnArms[1], churnArms[3]}

// BenchmarkChurnDPDK is BenchmarkChurn on ovs-vswitchd-dpdk with dpdkvhostuserclient ports (what
// a cloud platform creates for VMs), at OVSPLANE_CHURN_DPDK_PORTS ports (default 200) and
// OVSPLANE_CHURN_DPDK_CLIENTS clients (default 20): the floor, ovsplaned and per-port ovs-vsctl.
//
//	go test -run '^$' -bench BenchmarkChurnDPDK -benchtime 1x -timeout 60m ./bench/
func BenchmarkChurnDPDK(b *testing.B) {
	size := churnSizeFromEnv(b)
	size.ports, size.clients, size.dpdk = envInt(b, "OVSPLANE_CHURN_DPDK_PORTS", 200), envInt(b, "OVSPLANE_CHURN_DPDK_CLIENTS", 20), true
	benchChurnArms(b, churnDPDKArms, size)
}

// TestChurnDPDKShort checks the DPDK variant's correctness for the floor and ovsplaned at 40
// vhost-user ports from 8 clients.
func TestChurnDPDKShort(t *testing.T) {
	for _, arm := range churnDPDKArms[:2] {
		t.Run(arm.name, func(t *testing.T) {
			runChurnArm(t, arm, churnSize{ports: 40, clients: 8, phaseTimeout: churnDefaultPhaseTimeout, dpdk: true})
		})
	}
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// churnSizeFromEnv returns the benchmark's size from the environment.
func churnSizeFromEnv(tb testing.TB) churnSize {
	size := churnSize{ports: envInt(tb, churnPortsEnv, churnDefaultPorts), clients: envInt(tb, churnClientsEnv, churnDefaultClients),
		phaseTimeout: churnDefaultPhaseTimeout}
	if v := os.Getenv(churnPhaseTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			tb.Fatalf("%s=%q: want a positive Go duration such as 90m", churnPhaseTimeoutEnv, v)
		}
		size.phaseTimeout = d
	}
	return size
}

// newChurnEnv starts a fresh ovsdb-server and ovs-vswitchd (dummy datapath, or DPDK with
// size.dpdk) with bridge br0.
func newChurnEnv(tb testing.TB, size churnSize) *churnEnv {
	tb.Helper()
	lab.Require(tb, lab.NeedOVS)
	db := lab.StartOVSDB(tb)
	e := &churnEnv{db: db, raw: rawOVSDB{sock: db.Sock}, clients: size.clients,
		names: make([]string, size.ports), phaseTimeout: size.phaseTimeout}
	if size.dpdk {
		lab.Require(tb, lab.NeedDPDK)
		e.vs = db.StartOVSVswitchd(tb, lab.OVSVswitchdSpec{Mode: lab.DPDK, StartTimeout: 2 * time.Minute})
		e.vhostDir = tb.TempDir()
		db.Vsctl(tb, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev")
	} else {
		// Stopping a vswitchd that still has thousands of ports takes a while; a failed run may.
		e.vs = db.StartOVSVswitchd(tb, lab.OVSVswitchdSpec{Mode: lab.Dummy, StartTimeout: 2 * time.Minute})
		db.Vsctl(tb, "add-br", "br0")
	}
	for i := range e.names {
		e.names[i] = "p" + strconv.Itoa(i)
	}
	return e
}

// runChurnArm runs arm's create and delete phases on a fresh switch, counting and checking each.
func runChurnArm(tb testing.TB, arm churnArm, size churnSize) *churnResult {
	tb.Helper()
	return runChurnArmOn(tb, newChurnEnv(tb, size), arm, size)
}

// runChurnArmOn is runChurnArm on e, a fresh switch of size.
func runChurnArmOn(tb testing.TB, e *churnEnv, arm churnArm, size churnSize) *churnResult {
	tb.Helper()
	r := &churnResult{arm: arm.name, ports: size.ports}
	for _, phase := range []churnPhase{churnCreate, churnDelete} {
		next0, rec0 := e.counters(tb)
		timing := arm.run(tb, e, phase)
		next1, rec1 := e.counters(tb)
		if len(timing.lat) != size.ports {
			tb.Fatalf("%s %s: %d request latencies for %d ports", arm.name, phase, len(timing.lat), size.ports)
		}
		if err := e.check(phase); err != nil {
			tb.Fatalf("%s, after %s: %v", arm.name, phase, err)
		}
		r.phases[phase] = churnPhaseResult{churnTiming: timing, txns: next1 - next0, reconfigs: rec1 - rec0}
	}
	return r
}

// counters returns Open_vSwitch.next_cfg and ovs-vswitchd's bridge_reconfigure count.
// ovs-vswitchd folds its threads' coverage counts into the total it reports about once a second,
// and only when its main loop wakes up (each ovs-appctl call wakes it), so the count is read
// until two reads a little over a second apart agree.
func (e *churnEnv) counters(tb testing.TB) (nextCfg, reconfigs int64) {
	tb.Helper()
	nextCfg, _, err := e.raw.cfg()
	if err != nil {
		tb.Fatal(err)
	}
	read := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, _, err := e.vs.AppctlErr(ctx, "coverage/read-counter", "bridge_reconfigure")
		if err != nil {
			tb.Fatal(err)
		}
		n, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			tb.Fatalf("coverage/read-counter bridge_reconfigure printed %q", out)
		}
		return n
	}
	prev := read()
	for range 8 {
		time.Sleep(1100 * time.Millisecond)
		cur := read()
		if cur == prev {
			return nextCfg, cur
		}
		prev = cur
	}
	tb.Fatalf("ovs-vswitchd keeps reconfiguring (bridge_reconfigure still moving at %d)", prev)
	return 0, 0
}

// check verifies the phase's outcome from the database: after create, br0 holds exactly the
// ports (and its own), each with one interface that has an ofport > 0 and no error; after delete,
// br0 holds only itself and no interface of the ports is left.
func (e *churnEnv) check(phase churnPhase) error {
	want := 1
	if phase == churnCreate {
		want += len(e.names)
	}
	if n, err := e.raw.portCount("br0"); err != nil {
		return err
	} else if n != want {
		return fmt.Errorf("br0 has %d ports, want %d (br0's own included)", n, want)
	}
	res, err := e.raw.transact(map[string]any{"op": "select", "table": "Interface", "where": []any{},
		"columns": []string{"name", "ofport", "error"}})
	if err != nil {
		return err
	}
	ifaces := map[string]rawResult{}
	for _, row := range res[0].Rows {
		var name string
		if err := json.Unmarshal(row["name"], &name); err != nil {
			return fmt.Errorf("interface name %s: %w", row["name"], err)
		}
		ifaces[name] = rawResult{Rows: []map[string]json.RawMessage{row}}
	}
	if phase == churnDelete {
		if len(ifaces) != 1 {
			return fmt.Errorf("%d interfaces left, want only br0's", len(ifaces))
		}
		return nil
	}
	if len(ifaces) != len(e.names)+1 {
		return fmt.Errorf("%d interfaces, want %d (br0's own included)", len(ifaces), len(e.names)+1)
	}
	for _, name := range e.names {
		iface, ok := ifaces[name]
		if !ok {
			return fmt.Errorf("no interface %s", name)
		}
		if of, err := intColumn(iface, "ofport"); err != nil || of < 1 {
			return fmt.Errorf("interface %s has ofport %s, want one from ovs-vswitchd", name, iface.Rows[0]["ofport"])
		}
		if msg := string(iface.Rows[0]["error"]); msg != `["set",[]]` {
			return fmt.Errorf("interface %s has error %s", name, msg)
		}
	}
	return nil
}

// percentile returns the q-quantile (0 < q ≤ 1) of d by the nearest-rank method.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	k := int(q*float64(len(s)) + 0.999999)
	return s[min(max(k, 1), len(s))-1]
}

// batchSummary describes a batch-size distribution: count, min, p50, p90, max and mean.
func batchSummary(batches []int) string {
	if len(batches) == 0 {
		return "–"
	}
	s := slices.Clone(batches)
	slices.Sort(s)
	sum := 0
	for _, n := range s {
		sum += n
	}
	at := func(q float64) int { return s[min(max(int(q*float64(len(s))+0.999999), 1), len(s))-1] }
	return fmt.Sprintf("%d txns: min %d, p50 %d, p90 %d, max %d, mean %.1f", len(s), s[0], at(0.5), at(0.9), s[len(s)-1],
		float64(sum)/float64(len(s)))
}

// reportChurn reports r's metrics on b, with its ratios to the floor and to ovsplaned when those
// arms have run (a ratio above 1: r's arm took that many times as long, create and delete together).
func reportChurn(b *testing.B, r *churnResult, results map[string]*churnResult) {
	for _, phase := range []churnPhase{churnCreate, churnDelete} {
		p := r.phases[phase]
		b.ReportMetric(p.wall.Seconds(), phase.String()+"-s")
		b.ReportMetric(float64(r.ports)/p.wall.Seconds(), phase.String()+"-req/s")
		b.ReportMetric(ms(percentile(p.lat, 0.5)), phase.String()+"-p50-ms")
		b.ReportMetric(ms(percentile(p.lat, 0.99)), phase.String()+"-p99-ms")
		b.ReportMetric(float64(p.txns), phase.String()+"-txns")
		b.ReportMetric(float64(p.reconfigs), phase.String()+"-reconfigs")
		if len(p.batches) > 0 {
			b.ReportMetric(float64(r.ports)/float64(len(p.batches)), phase.String()+"-mean-batch")
			b.Logf("%s batch sizes: %s", phase, batchSummary(p.batches))
		}
	}
	for _, ref := range []string{"floor", "ovsplaned"} {
		if base, ok := results[ref]; ok && ref != r.arm {
			b.ReportMetric(r.total().Seconds()/base.total().Seconds(), "x-"+ref)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printChurnTable writes the results as the markdown table of docs/benchmarks.md; missing says
// why an arm has no result (skipped, failed).
func printChurnTable(w io.Writer, ports, clients int, results map[string]*churnResult, missing map[string]string) {
	fmt.Fprintf(w, "\nPort churn, %d ports, %d clients (times in s, latencies in ms; ×: total time ÷ that arm's)\n\n", ports, clients)
	fmt.Fprintln(w, "| arm | create s | create req/s | create p50 / p99 ms | delete s | delete req/s | delete p50 / p99 ms | txns c+d | reconfigs c+d | × floor | × ovsplaned |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	ratio := func(r *churnResult, ref string) string {
		base, ok := results[ref]
		if !ok {
			return missing[ref]
		}
		return fmt.Sprintf("%.2f", r.total().Seconds()/base.total().Seconds())
	}
	for _, arm := range churnArms {
		r, ok := results[arm.name]
		if !ok {
			fmt.Fprintf(w, "| %s | %s | | | | | | | | | |\n", arm.name, missing[arm.name])
			continue
		}
		c, d := r.phases[churnCreate], r.phases[churnDelete]
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.0f / %.0f | %.1f | %.1f | %.0f / %.0f | %d+%d | %d+%d | %s | %s |\n", arm.name,
			c.wall.Seconds(), float64(ports)/c.wall.Seconds(), ms(percentile(c.lat, 0.5)), ms(percentile(c.lat, 0.99)),
			d.wall.Seconds(), float64(ports)/d.wall.Seconds(), ms(percentile(d.lat, 0.5)), ms(percentile(d.lat, 0.99)),
			c.txns, d.txns, c.reconfigs, d.reconfigs, ratio(r, "floor"), ratio(r, "ovsplaned"))
	}
	for _, arm := range churnArms {
		if r, ok := results[arm.name]; ok && len(r.phases[churnCreate].batches) > 0 {
			fmt.Fprintf(w, "\n%s batch sizes: create %s; delete %s\n", arm.name,
				batchSummary(r.phases[churnCreate].batches), batchSummary(r.phases[churnDelete].batches))
		}
	}
	fmt.Fprintln(w)
}
