package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Mode is the DSA setting of one half of the matrix.
type Mode string

// The two modes every scenario and size is measured in.
const (
	// DSAOff: other_config:vhost-async-support=false; vhost copies on the PMD's CPU.
	DSAOff Mode = "off"
	// DSAOn: other_config:vhost-async-support=true on a build that has it, the threshold set,
	// work queues present; the report checks the vhost_async coverage counters moved.
	DSAOn Mode = "on"
)

// modes returns the order the modes run in: the baseline first.
func modes() []Mode { return []Mode{DSAOff, DSAOn} }

// Timeouts of the kit's commands.
const (
	cmdTimeout    = 60 * time.Second
	trafficTail   = 5 * time.Second  // generator runs this long after the window closes
	trafficGrace  = 60 * time.Second // beyond its own duration before it is killed
	readyInterval = time.Second
)

// step is one thing the kit does: a command (Argv) or an internal check (Argv empty).
type step struct {
	Kind string   // what the step is, e.g. "restart", "traffic", "pmd-stats"
	Argv []string // the command, run without a shell; empty for a check
	Why  string   // one line for the plan
	// Mode and Sample name the recorded output a dry run answers with (testdata/samples/
	// <Mode>/<Sample>); Sample is empty when the output is not parsed.
	Mode   Mode
	Sample string
}

// executor runs the kit's steps: for real (execRunner) or from recorded samples (dryRunner).
type executor interface {
	// Run runs s.Argv to completion within timeout and returns its stdout.
	Run(ctx context.Context, s step, timeout time.Duration) (string, error)
	// Start starts s.Argv in the background; wait waits for it to exit (killed after timeout).
	Start(ctx context.Context, s step, timeout time.Duration) (wait func() error, err error)
	// Sleep waits d or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
	// Now is the clock the measurement window is timed with.
	Now() time.Time
	// ListDir lists the entry names of dir.
	ListDir(dir string) ([]string, error)
}

// Measurement is one cell pair of the matrix: a scenario, a mode and a frame size.
type Measurement struct {
	Scenario string
	Mode     Mode
	Size     int
	// Seconds is the measured window; Packets and Bytes the tx counters' growth over it,
	// summed over the scenario's Measure interfaces.
	Seconds        float64
	Packets, Bytes uint64
	// PMD is the PMD threads' cycles over the window.
	PMD pmdCycles
	// AsyncOps is the growth of the vhost_async* coverage counters over the window.
	AsyncOps uint64
}

// Mpps is millions of packets per second.
func (m Measurement) Mpps() float64 { return float64(m.Packets) / m.Seconds / 1e6 }

// Gbps is Gbit/s of L2 frames as OVS counts tx_bytes (no preamble, inter-frame gap or CRC).
func (m Measurement) Gbps() float64 { return float64(m.Bytes) * 8 / m.Seconds / 1e9 }

// kit runs the matrix of cfg through ex, writing every step to plan as it goes.
type kit struct {
	cfg  *Config
	ex   executor
	plan io.Writer
	n    int
	// second is how long one configured second of warm-up and window lasts: time.Second when
	// zero; tests shorten it.
	second time.Duration
}

// do prints s to the plan and runs it.
func (k *kit) do(ctx context.Context, s step, timeout time.Duration) (string, error) {
	k.print(s)
	out, err := k.ex.Run(ctx, s, timeout)
	if err != nil {
		return out, fmt.Errorf("dsakit: step %d (%s): %w", k.n, s.Kind, err)
	}
	return out, nil
}

// print writes one plan line: number, kind, argv as JSON (unambiguous, no shell quoting), why.
func (k *kit) print(s step) {
	k.n++
	argv := "-"
	if len(s.Argv) > 0 {
		b, _ := json.Marshal(s.Argv)
		argv = string(b)
	}
	fmt.Fprintf(k.plan, "%3d  %-16s %s\n       %s\n", k.n, s.Kind, argv, s.Why)
}

func (k *kit) vsctl(args ...string) []string {
	return append(append([]string{}, k.cfg.Vsctl...), args...)
}
func (k *kit) appctl(args ...string) []string {
	return append(append([]string{}, k.cfg.Appctl...), args...)
}

// Run measures every scenario × mode × size and returns the measurements made, also when an
// error stops the run part-way.
func (k *kit) Run(ctx context.Context) ([]Measurement, error) {
	var res []Measurement
	for _, sc := range k.cfg.Scenarios {
		for _, mode := range modes() {
			if err := k.prepare(ctx, mode); err != nil {
				return res, err
			}
			ms, err := k.scenario(ctx, sc, mode)
			res = append(res, ms...)
			if err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// prepare switches ovs-vswitchd to mode: writes vhost-async-support, restarts, waits until it
// answers, and for DSAOn checks the build has vhost async and work queues exist, then sets the
// threshold. Writing the key is never taken as proof: upstream OVS ignores it silently.
func (k *kit) prepare(ctx context.Context, mode Mode) error {
	val := strconv.FormatBool(mode == DSAOn)
	if _, err := k.do(ctx, step{Kind: "vsctl", Argv: k.vsctl("set", "Open_vSwitch", ".", "other_config:vhost-async-support="+val),
		Why: "DSA " + string(mode) + ": the branch reads vhost-async-support at start only"}, cmdTimeout); err != nil {
		return err
	}
	if _, err := k.do(ctx, step{Kind: "restart", Argv: k.cfg.Restart, Why: "restart ovs-vswitchd to apply it"},
		time.Duration(k.cfg.ReadyTimeoutS)*time.Second); err != nil {
		return err
	}
	ready := step{Kind: "ready", Argv: k.appctl("version"), Why: fmt.Sprintf("poll every %v until ovs-vswitchd answers (at most %ds)", readyInterval, k.cfg.ReadyTimeoutS)}
	k.print(ready)
	deadline := k.ex.Now().Add(time.Duration(k.cfg.ReadyTimeoutS) * time.Second)
	for {
		_, err := k.ex.Run(ctx, ready, cmdTimeout)
		if err == nil {
			break
		}
		if k.ex.Now().After(deadline) {
			return fmt.Errorf("dsakit: step %d (ready): ovs-vswitchd did not answer within %ds after the restart: %w", k.n, k.cfg.ReadyTimeoutS, err)
		}
		if err := k.ex.Sleep(ctx, readyInterval); err != nil {
			return err
		}
	}
	cmds, err := k.do(ctx, step{Kind: "list-commands", Argv: k.appctl("list-commands"), Mode: mode, Sample: "list-commands.txt",
		Why: "capability: vhost async builds have " + asyncThreshCommand}, cmdTimeout)
	if err != nil {
		return err
	}
	if mode == DSAOff {
		return nil
	}
	if !hasCommand(cmds, asyncThreshCommand) {
		return fmt.Errorf("dsakit: OVS_NO_VHOST_ASYNC: this ovs-vswitchd has no %s, so it has no vhost async DMA support "+
			"(upstream OVS never merged it); DSA on cannot be measured: build Intel's dpdk-dma-tracking branch (docs/dsa.md)", asyncThreshCommand)
	}
	k.print(step{Kind: "check-dsa", Why: "at least one idxd user work queue in " + k.cfg.DevDSA})
	names, err := k.ex.ListDir(k.cfg.DevDSA)
	if err != nil {
		return fmt.Errorf("dsakit: step %d (check-dsa): %w (provision the work queues first: docs/dsa.md)", k.n, err)
	}
	wqs := 0
	for _, n := range names {
		if strings.HasPrefix(n, "wq") {
			wqs++
		}
	}
	if wqs == 0 {
		return fmt.Errorf("dsakit: step %d (check-dsa): no wq* in %s: provision DSA work queues first (docs/dsa.md)", k.n, k.cfg.DevDSA)
	}
	_, err = k.do(ctx, step{Kind: "set-thresh", Argv: k.appctl(asyncThreshCommand, strconv.Itoa(k.cfg.Threshold)),
		Why: "copies of at least this many bytes go to DSA"}, cmdTimeout)
	return err
}

// scenario runs sc's setup, every size, and its teardown (also after a failure).
func (k *kit) scenario(ctx context.Context, sc Scenario, mode Mode) (res []Measurement, err error) {
	defer func() {
		for i, argv := range sc.Teardown {
			// Teardown runs even when ctx ended, with its own bound.
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmdTimeout)
			_, terr := k.do(tctx, step{Kind: "teardown", Argv: argv, Why: fmt.Sprintf("%s, DSA %s: teardown %d", sc.Name, mode, i+1)}, cmdTimeout)
			cancel()
			err = errors.Join(err, terr)
		}
	}()
	for i, argv := range sc.Setup {
		if _, err := k.do(ctx, step{Kind: "setup", Argv: argv, Why: fmt.Sprintf("%s, DSA %s: setup %d", sc.Name, mode, i+1)}, cmdTimeout); err != nil {
			return res, err
		}
	}
	for _, size := range k.cfg.Sizes {
		m, err := k.measure(ctx, sc, mode, size)
		if err != nil {
			return res, err
		}
		res = append(res, m)
	}
	return res, nil
}

// measure runs the generator for one size and measures the window in the middle of its run.
func (k *kit) measure(ctx context.Context, sc Scenario, mode Mode, size int) (Measurement, error) {
	m := Measurement{Scenario: sc.Name, Mode: mode, Size: size}
	unit := k.second
	if unit == 0 {
		unit = time.Second
	}
	warmup, window := time.Duration(k.cfg.WarmupS)*unit, time.Duration(k.cfg.DurationS)*unit
	total := warmup + window + trafficTail
	argv := make([]string, len(sc.Traffic))
	for i, a := range sc.Traffic {
		a = strings.ReplaceAll(a, "{size}", strconv.Itoa(size))
		argv[i] = strings.ReplaceAll(a, "{seconds}", strconv.Itoa(int(total/time.Second)))
	}
	label := fmt.Sprintf("%s, DSA %s, %d B", sc.Name, mode, size)
	ts := step{Kind: "traffic", Argv: argv, Why: label + fmt.Sprintf(": generator in the background for %v", total)}
	k.print(ts)
	// A failed measurement stops the generator instead of waiting out its run.
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	wait, err := k.ex.Start(tctx, ts, total+trafficGrace)
	if err != nil {
		return m, fmt.Errorf("dsakit: step %d (traffic): %w", k.n, err)
	}
	measured, err := k.window(ctx, sc, mode, warmup, window, &m)
	if err != nil {
		stop()
	}
	k.print(step{Kind: "traffic-wait", Why: label + ": the generator exits 0"})
	if werr := wait(); werr != nil {
		err = errors.Join(err, fmt.Errorf("dsakit: step %d (traffic-wait): %s: %w", k.n, label, werr))
	}
	if err != nil {
		return m, err
	}
	if !measured {
		return m, fmt.Errorf("dsakit: %s: no measurement", label)
	}
	return m, nil
}

// window waits out the warm-up, then snapshots counters around the measured window into m.
func (k *kit) window(ctx context.Context, sc Scenario, mode Mode, warmup, window time.Duration, m *Measurement) (bool, error) {
	k.print(step{Kind: "sleep", Why: fmt.Sprintf("warm-up %v", warmup)})
	if err := k.ex.Sleep(ctx, warmup); err != nil {
		return false, err
	}
	if _, err := k.do(ctx, step{Kind: "pmd-stats-clear", Argv: k.appctl("dpif-netdev/pmd-stats-clear"), Why: "PMD cycle counters from zero"}, cmdTimeout); err != nil {
		return false, err
	}
	statsArgv := k.vsctl("--format=json", "--columns=name,statistics", "list", "Interface")
	before, err := k.do(ctx, step{Kind: "stats", Argv: statsArgv, Mode: mode, Sample: "stats-before.json", Why: "tx counters at the window's start"}, cmdTimeout)
	if err != nil {
		return false, err
	}
	covBefore, err := k.do(ctx, step{Kind: "coverage", Argv: k.appctl("coverage/show"), Mode: mode, Sample: "coverage-before.txt", Why: asyncCoveragePrefix + "* counters at the start"}, cmdTimeout)
	if err != nil {
		return false, err
	}
	t0 := k.ex.Now()
	k.print(step{Kind: "sleep", Why: fmt.Sprintf("measured window %v", window)})
	if err := k.ex.Sleep(ctx, window); err != nil {
		return false, err
	}
	after, err := k.do(ctx, step{Kind: "stats", Argv: statsArgv, Mode: mode, Sample: "stats-after.json", Why: "tx counters at the window's end"}, cmdTimeout)
	if err != nil {
		return false, err
	}
	m.Seconds = k.ex.Now().Sub(t0).Seconds()
	pmd, err := k.do(ctx, step{Kind: "pmd-stats", Argv: k.appctl("dpif-netdev/pmd-stats-show"), Mode: mode, Sample: "pmd-stats-show.txt", Why: "PMD idle and processing cycles over the window"}, cmdTimeout)
	if err != nil {
		return false, err
	}
	covAfter, err := k.do(ctx, step{Kind: "coverage", Argv: k.appctl("coverage/show"), Mode: mode, Sample: "coverage-after.txt", Why: asyncCoveragePrefix + "* counters at the end: did DSA copy anything?"}, cmdTimeout)
	if err != nil {
		return false, err
	}
	return true, m.fill(sc.Measure, before, after, pmd, covBefore, covAfter)
}

// fill computes m's counters from the tool outputs around the window.
func (m *Measurement) fill(measure []string, before, after, pmd, covBefore, covAfter string) error {
	b, err := parseInterfaceStats(before)
	if err != nil {
		return err
	}
	a, err := parseInterfaceStats(after)
	if err != nil {
		return err
	}
	for _, name := range measure {
		cb, okb := b[name]
		ca, oka := a[name]
		if !okb || !oka {
			return fmt.Errorf("dsakit: interface %s (scenario %s measure) is not in OVS", name, m.Scenario)
		}
		if ca.TxPackets < cb.TxPackets || ca.TxBytes < cb.TxBytes {
			return fmt.Errorf("dsakit: interface %s: tx counters went backwards (ovs-vswitchd restarted during the window?)", name)
		}
		m.Packets += ca.TxPackets - cb.TxPackets
		m.Bytes += ca.TxBytes - cb.TxBytes
	}
	if m.Packets == 0 || m.Seconds <= 0 {
		return fmt.Errorf("dsakit: %s, DSA %s, %d B: no packets left through %s in the window: check the generator and the guests",
			m.Scenario, m.Mode, m.Size, strings.Join(measure, ", "))
	}
	if m.PMD, err = parsePMDStats(pmd); err != nil {
		return err
	}
	cb, err := parseCoverageTotal(covBefore, asyncCoveragePrefix)
	if err != nil {
		return err
	}
	ca, err := parseCoverageTotal(covAfter, asyncCoveragePrefix)
	if err != nil {
		return err
	}
	if ca > cb {
		m.AsyncOps = ca - cb
	}
	return nil
}
