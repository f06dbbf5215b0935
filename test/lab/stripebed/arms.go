//go:build linux

package stripebed

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Load says how much each measurement moves.
type Load struct {
	// LinkSeconds is the time at link rate each link's solo measurement lasts.
	LinkSeconds float64
	// ArmSeconds is the time at the summed rate one arm's TCP transfer lasts, and the UDP stream's
	// duration.
	ArmSeconds float64
	// CC is the congestion control pinned on every TCP socket. Empty: cubic when the kernel
	// lists it in net.ipv4.tcp_available_congestion_control (root may load its module), else
	// reno; the Report's CC says which.
	CC string
	// MoreMPTCPCC are further congestion controls the MPTCP arm is run with ("bbr", "reno"), at
	// most 4.
	MoreMPTCPCC []string
	// LatencySeconds, when not 0, adds to every arm a latency measurement of that length (1.5 to
	// 60 s): small UDP requests answered by B while one TCP connection carries half the summed
	// link rate (Latency).
	LatencySeconds float64
	// OVSDPDK are the stripe arms in OVS-DPDK link mode (StripeOVSArm), at most 4, run after the
	// kernel-mode stripe arms and before the OVS bonds; each needs DPDK (lab.NeedDPDK).
	OVSDPDK []OVSLaneOptions
}

// normalize fills the defaults and checks the bounds.
func (l Load) normalize() (Load, error) {
	if l.CC == "" {
		l.CC = defaultCC()
	}
	if len(l.CC) > 15 {
		return l, fmt.Errorf("stripebed load: congestion control %q longer than 15 characters", l.CC)
	}
	if len(l.OVSDPDK) > 4 {
		return l, fmt.Errorf("stripebed load: %d OVS-DPDK arms, at most 4", len(l.OVSDPDK))
	}
	if len(l.MoreMPTCPCC) > 4 {
		return l, fmt.Errorf("stripebed load: %d more congestion controls for MPTCP, at most 4", len(l.MoreMPTCPCC))
	}
	if l.LatencySeconds != 0 && (l.LatencySeconds < 1.5 || l.LatencySeconds > 60) {
		return l, fmt.Errorf("stripebed load: LatencySeconds %v: want 0 or 1.5 to 60", l.LatencySeconds)
	}
	if l.LinkSeconds <= 0 || l.LinkSeconds > 60 || l.ArmSeconds <= 0 || l.ArmSeconds > 60 {
		return l, fmt.Errorf("stripebed load: LinkSeconds %v and ArmSeconds %v must be within (0, 60]", l.LinkSeconds, l.ArmSeconds)
	}
	return l, nil
}

// LinkRate is one link's solo measurement.
type LinkRate struct {
	// Index is the link; ConfiguredMbit its tbf rate.
	Index, ConfiguredMbit int
	// BitsPerSecond is one TCP connection's throughput on the link alone.
	BitsPerSecond float64
	// Retrans is the TCP segments retransmitted meanwhile.
	Retrans int64
}

// Result is one arm's measurement of one protocol.
type Result struct {
	// Arm names the arm ("best single link", "MPTCP 4 subflows", "OVS balance-slb+LACP"…);
	// Proto is "tcp" or "udp".
	Arm, Proto string
	// Bytes is what the receiver counted; Seconds over how long.
	Bytes   int64
	Seconds float64
	// BitsPerSecond is the delivered throughput, PctOfSum the same as a percentage of the summed
	// measured link rates.
	BitsPerSecond, PctOfSum float64
	// Retrans is TcpRetransSegs of the sending node during the arm.
	Retrans int64
	// LinkBytes is the bytes each link carried from A to B.
	LinkBytes []int64
	// LoadCoV and LoadJain are the CoV and Jain's index of the links' utilization (bytes over
	// measured rate × Seconds).
	LoadCoV, LoadJain float64
	// UDP is the UDP stream's counts (Proto "udp" only).
	UDP *UDPResult
	// CPUSeconds is the test process's CPU time during the measurement (processCPU): the
	// traffic endpoints and, in the stripe arms, both nodes' engines and tunnels. It misses work
	// done in other processes (ovs-vswitchd: OutsideCPU) and softirq work the kernel charges to
	// whatever ran.
	CPUSeconds float64
	// OutsideCPU says the arm's data path runs in other processes (OVS), so CPUSeconds is not
	// its cost.
	OutsideCPU bool
	// Latency is the arm's latency under half the summed load (Load.LatencySeconds; Proto "tcp"
	// only), nil when not measured.
	Latency *LatencyResult
	// Note says what the arm pinned or found (congestion control, fallback…).
	Note string
}

// Report is one run of the matrix.
type Report struct {
	// Started is when the run began; Links the solo measurements; SumBitsPerSecond their sum.
	Started          time.Time
	Kernel, CC       string
	Links            []LinkRate
	SumBitsPerSecond float64
	Results          []Result
}

// MeasureLinks measures each link alone with one TCP connection moving LinkSeconds at its rate.
func (b *Bed) MeasureLinks(ctx context.Context, load Load) ([]LinkRate, error) {
	load, err := load.normalize()
	if err != nil {
		return nil, err
	}
	var out []LinkRate
	for _, l := range b.Links {
		before, err := b.Snapshot()
		if err != nil {
			return nil, err
		}
		n := int64(float64(l.RateMbit) * 1e6 / 8 * load.LinkSeconds)
		r, err := TCPBulk(ctx, b.A, b.B, TCPSpec{Src: l.AAddr, Dst: l.BAddr, Bytes: n, CC: load.CC})
		if err != nil {
			return nil, fmt.Errorf("measure link %d: %w", l.Index, err)
		}
		after, err := b.Snapshot()
		if err != nil {
			return nil, err
		}
		out = append(out, LinkRate{Index: l.Index, ConfiguredMbit: l.RateMbit, BitsPerSecond: r.BitsPerSecond,
			Retrans: after.Sub(before).RetransA})
	}
	return out, nil
}

// measure runs fn between two snapshots and fills the result's counters.
func (b *Bed) measure(res *Result, rates []float64, fn func() error) error {
	before, err := b.Snapshot()
	if err != nil {
		return err
	}
	cpu0 := processCPU()
	if err := fn(); err != nil {
		return fmt.Errorf("%s %s: %w", res.Arm, res.Proto, err)
	}
	res.CPUSeconds = (processCPU() - cpu0).Seconds()
	after, err := b.Snapshot()
	if err != nil {
		return err
	}
	d := after.Sub(before)
	res.Retrans = d.RetransA
	res.LinkBytes = d.LinkAB
	var sum float64
	for _, r := range rates {
		sum += r
	}
	if sum > 0 {
		res.PctOfSum = 100 * res.BitsPerSecond / sum
	}
	u := Utilization(d.LinkAB, rates, res.Seconds)
	res.LoadCoV, res.LoadJain = CoV(u), Jain(u)
	return nil
}

// Pair is what one arm moves: one TCP connection and, when UDP is set, one UDP stream, from
// node A's Src to node B's Dst. An arm that carries the traffic by other means (a bond, an
// overlay's tun device) names the addresses its own path uses; the links' counters still see
// the bytes.
type Pair struct {
	// Arm names the arm in the results.
	Arm string
	// Src and Dst are the addresses in A and B.
	Src, Dst netip.Addr
	// MPTCP opens the TCP sockets with IPPROTO_MPTCP.
	MPTCP bool
	// UDP adds the UDP stream, paced to the summed link rate.
	UDP bool
}

// armSendCap bounds an arm's TCP sending time, in multiples of Load.ArmSeconds: an arm below
// 1/armSendCap of the summed rate stops sending early (the note says so) instead of taking the
// whole transfer's time at its own rate.
const armSendCap = 2

// RunPair measures one arm: the TCP transfer of ArmSeconds at the summed link rate (rates are
// the links' measured bit/s; the sending capped at armSendCap × ArmSeconds) with load.CC
// pinned, then the UDP stream when p.UDP, each between two counter snapshots.
func (b *Bed) RunPair(ctx context.Context, load Load, rates []float64, p Pair) ([]Result, error) {
	load, err := load.normalize()
	if err != nil {
		return nil, err
	}
	if len(rates) != len(b.Links) {
		return nil, fmt.Errorf("%s: %d link rates for %d links", p.Arm, len(rates), len(b.Links))
	}
	var sum float64
	for _, r := range rates {
		sum += r
	}
	if sum <= 0 {
		return nil, fmt.Errorf("%s: the links' measured rates sum to %v", p.Arm, sum)
	}
	tcp := Result{Arm: p.Arm, Proto: "tcp"}
	err = b.measure(&tcp, rates, func() error {
		r, err := TCPBulk(ctx, b.A, b.B, TCPSpec{Src: p.Src, Dst: p.Dst, Bytes: int64(sum / 8 * load.ArmSeconds), MPTCP: p.MPTCP, CC: load.CC,
			SendFor: time.Duration(armSendCap * load.ArmSeconds * float64(time.Second))})
		tcp.Bytes, tcp.Seconds, tcp.BitsPerSecond, tcp.Note = r.Bytes, r.Seconds, r.BitsPerSecond, "cc "+r.CC
		if r.Capped {
			tcp.Note += fmt.Sprintf("; sending stopped after %.0f s with %.0f of %.0f MB written", armSendCap*load.ArmSeconds,
				float64(r.Sent)/1e6, sum/8*load.ArmSeconds/1e6)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if load.LatencySeconds > 0 {
		lr, err := Latency(ctx, b.A, b.B, LatencySpec{Src: p.Src, Dst: p.Dst, LoadBitsPerSec: sum / 2,
			Duration: time.Duration(load.LatencySeconds * float64(time.Second)), MPTCP: p.MPTCP, CC: load.CC})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Arm, err)
		}
		tcp.Latency = &lr
	}
	out := []Result{tcp}
	if !p.UDP {
		return out, nil
	}
	u := Result{Arm: p.Arm, Proto: "udp"}
	err = b.measure(&u, rates, func() error {
		r, err := UDPStream(ctx, b.A, b.B, UDPSpec{Src: p.Src, Dst: p.Dst, RateBitsPerSec: sum,
			Duration: time.Duration(load.ArmSeconds * float64(time.Second))})
		u.UDP = &r
		u.Bytes, u.Seconds, u.BitsPerSecond = r.Received*int64(r.Payload), r.Seconds, r.DeliveredBitsPerSecond
		u.Note = fmt.Sprintf("offered %.0f Mbit/s of %d-byte datagrams", r.OfferedBitsPerSecond/1e6, r.Payload)
		return err
	})
	if err != nil {
		return nil, err
	}
	return append(out, u), nil
}

// Rates returns the links' measured rates in bit/s, in link order.
func (rep Report) Rates() []float64 {
	rates := make([]float64, len(rep.Links))
	for i, l := range rep.Links {
		rates[i] = l.BitsPerSecond
	}
	return rates
}

// MPTCP runs the MPTCP arm (one subflow per link, TCP only) with the congestion control of
// load, and removes its endpoints afterwards.
func (b *Bed) MPTCP(ctx context.Context, load Load, rates []float64) ([]Result, error) {
	if len(b.Links) == 0 {
		return nil, fmt.Errorf("MPTCP arm: the bed has no links")
	}
	if err := b.setupMPTCP(ctx); err != nil {
		return nil, err
	}
	l0 := b.Links[0]
	rs, err := b.RunPair(ctx, load, rates, Pair{Arm: fmt.Sprintf("MPTCP %d subflows", len(b.Links)), Src: l0.AAddr, Dst: l0.BAddr, MPTCP: true})
	if cerr := b.clearMPTCP(ctx); err == nil {
		err = cerr
	}
	return rs, err
}

// RunAlternatives runs the whole matrix of the alternatives on the bed: the solo link
// measurements, then the best single link (TCP and UDP), MPTCP with one subflow per link (TCP;
// MPTCP has no UDP form), the stripe engine in kernel-NIC mode through tun devices with the seed
// and the round-robin policy (TCP and UDP), the stripe engine in OVS-DPDK link mode with each of
// load.OVSDPDK's options (TCP and UDP), and OVS bonds balance-slb and balance-tcp with LACP (TCP
// and UDP, userspace datapath). The OVS arms come last: they turn the links' offloads off and leave
// ovs-vswitchd running until the test's cleanup.
func RunAlternatives(t testing.TB, b *Bed, load Load) Report {
	t.Helper()
	load, err := load.normalize()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(b.Links) == 0 {
		t.Fatalf("stripebed: the bed has no links: build it with New")
	}
	ctx := t.Context()
	rep := Report{Started: time.Now().UTC(), CC: load.CC}
	if out, err := b.A.Exec(ctx, "uname", "-r"); err == nil {
		rep.Kernel = out
	}
	if rep.Links, err = b.MeasureLinks(ctx, load); err != nil {
		t.Fatalf("stripebed: %v", err)
	}
	rates := rep.Rates()
	for _, r := range rates {
		rep.SumBitsPerSecond += r
	}
	best := slices.Index(rates, slices.Max(rates))
	l := b.Links[best]
	rs, err := b.RunPair(ctx, load, rates, Pair{Arm: "best single link (" + strconv.Itoa(l.RateMbit) + " Mbit/s)",
		Src: l.AAddr, Dst: l.BAddr, UDP: true})
	if err != nil {
		t.Fatalf("stripebed: %v", err)
	}
	rep.Results = append(rep.Results, rs...)
	if rs, err = b.MPTCP(ctx, load, rates); err != nil {
		t.Fatalf("stripebed: %v", err)
	}
	rep.Results = append(rep.Results, rs...)
	for _, cc := range load.MoreMPTCPCC {
		more := load
		more.CC = cc
		if rs, err = b.MPTCP(ctx, more, rates); err != nil {
			t.Fatalf("stripebed: %v", err)
		}
		rep.Results = append(rep.Results, rs...)
	}
	for _, kind := range []policy.Kind{policy.KindWeighted, policy.KindSeed, policy.KindRoundRobin} {
		if rs, err = b.StripeArm(t, load, rates, kind); err != nil {
			t.Fatalf("stripebed: %v", err)
		}
		rep.Results = append(rep.Results, rs...)
	}
	for _, o := range load.OVSDPDK {
		if rs, err = b.StripeOVSArm(t, load, rates, o); err != nil {
			t.Fatalf("stripebed: %v", err)
		}
		rep.Results = append(rep.Results, rs...)
	}
	o := b.StartOVSBond(t)
	for _, mode := range []string{"balance-slb", "balance-tcp"} {
		o.SetBondMode(t, mode)
		rs, err = b.RunPair(ctx, load, rates, Pair{Arm: "OVS " + mode + "+LACP", Src: o.AAddr, Dst: o.BAddr, UDP: true})
		if err != nil {
			t.Fatalf("stripebed: %v", err)
		}
		for i := range rs {
			rs[i].OutsideCPU = true
		}
		rep.Results = append(rep.Results, rs...)
	}
	return rep
}

// setupMPTCP lets both nodes use one subflow per link: limits on both, and on A a subflow
// endpoint per link beyond the first, bound to its device (without dev every subflow would
// take the route of the first link).
func (b *Bed) setupMPTCP(ctx context.Context) error {
	n := strconv.Itoa(len(b.Links))
	for _, ns := range []*lab.Netns{b.A, b.B} {
		if err := SetSysctl(ns, "net.mptcp.enabled", "1"); err != nil {
			return fmt.Errorf("enable MPTCP: %w", err)
		}
		if _, err := ns.Exec(ctx, "ip", "mptcp", "limits", "set", "subflows", n, "add_addr_accepted", n); err != nil {
			return fmt.Errorf("MPTCP limits: %w", err)
		}
	}
	for _, l := range b.Links[1:] {
		if _, err := b.A.Exec(ctx, "ip", "mptcp", "endpoint", "add", l.AAddr.String(), "dev", l.A.Name, "subflow"); err != nil {
			return fmt.Errorf("MPTCP endpoint for link %d: %w", l.Index, err)
		}
	}
	return nil
}

// clearMPTCP removes A's MPTCP endpoints.
func (b *Bed) clearMPTCP(ctx context.Context) error {
	if _, err := b.A.Exec(ctx, "ip", "mptcp", "endpoint", "flush"); err != nil {
		return fmt.Errorf("flush MPTCP endpoints: %w", err)
	}
	return nil
}

// FormatMarkdown renders the report as the markdown of docs/benchmarks.md.
func (rep Report) FormatMarkdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Run of %s, kernel %s, congestion control pinned per socket: %s.\n\n",
		rep.Started.Format("2006-01-02 15:04 UTC"), rep.Kernel, rep.CC)
	sb.WriteString("Links measured alone (one TCP connection each):\n\n| link | tbf rate | measured | retransmits |\n| --- | --- | --- | --- |\n")
	for _, l := range rep.Links {
		fmt.Fprintf(&sb, "| %d | %d Mbit/s | %.1f Mbit/s | %d |\n", l.Index, l.ConfiguredMbit, l.BitsPerSecond/1e6, l.Retrans)
	}
	fmt.Fprintf(&sb, "| sum | | %.1f Mbit/s | |\n\n", rep.SumBitsPerSecond/1e6)
	sb.WriteString("CPU s per Gbit: the test process's CPU time (getrusage: traffic endpoints, and the stripe arms' engines and tunnels on both nodes) " +
		"over the gigabits delivered; \"–\" where the data path runs in ovs-vswitchd.\n\n")
	sb.WriteString("Latency: round trips of 64-byte UDP requests every 2 ms on the arm's path while one TCP connection is paced to half " +
		"the summed link rates (first 0.5 s not sampled); a path that cannot carry that load runs saturated.\n\n")
	sb.WriteString("| arm | proto | delivered | % of sum | retransmits (TcpRetransSegs) | UDP lost / reordered (max depth) | per-link MB A→B | load CoV | load Jain | CPU s per Gbit | latency p50 / p99 at 50 % load | note |\n")
	sb.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rep.Results {
		udp, retrans := "–", strconv.FormatInt(r.Retrans, 10)
		if r.UDP != nil {
			udp = fmt.Sprintf("%d of %d (%.1f %%) / %d (%d)", r.UDP.Lost, r.UDP.Sent, 100*float64(r.UDP.Lost)/float64(max(r.UDP.Sent, 1)),
				r.UDP.Reordered, r.UDP.MaxReorder)
			retrans = "–"
		}
		mb := make([]string, len(r.LinkBytes))
		for i, x := range r.LinkBytes {
			mb[i] = strconv.FormatFloat(float64(x)/1e6, 'f', 1, 64)
		}
		cpu := "–"
		if gbit := r.BitsPerSecond * r.Seconds / 1e9; !r.OutsideCPU && gbit > 0 {
			cpu = strconv.FormatFloat(r.CPUSeconds/gbit, 'f', 2, 64)
		}
		lat := "–"
		if r.Latency != nil {
			lat = fmt.Sprintf("%.2f / %.2f ms (load %.0f Mbit/s)", float64(r.Latency.P50.Microseconds())/1e3,
				float64(r.Latency.P99.Microseconds())/1e3, r.Latency.LoadBitsPerSecond/1e6)
		}
		fmt.Fprintf(&sb, "| %s | %s | %.1f Mbit/s | %.1f | %s | %s | %s | %.2f | %.2f | %s | %s | %s |\n", r.Arm, r.Proto,
			r.BitsPerSecond/1e6, r.PctOfSum, retrans, udp, strings.Join(mb, " / "), r.LoadCoV, r.LoadJain, cpu, lat, r.Note)
	}
	return sb.String()
}

// defaultCC is cubic when the kernel offers it, else reno (always built in).
func defaultCC() string {
	data, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err == nil && slices.Contains(strings.Fields(string(data)), "cubic") {
		return "cubic"
	}
	return "reno"
}
