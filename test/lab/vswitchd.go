//go:build linux

package lab

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Mode selects the ovs-vswitchd build and how it reaches devices.
type Mode int

const (
	// Dummy runs the non-DPDK ovs-vswitchd with --enable-dummy=override: every netdev becomes a
	// dummy, so any number of ports get an ofport without touching the host. Control-plane tests.
	// DPDK-only interface types (dpdkvhostuserclient…) are unknown to this build.
	Dummy Mode = iota + 1
	// Userspace runs the non-DPDK ovs-vswitchd against real devices: bridges need
	// datapath_type=netdev and ports are af_packet "system" ports on veths. The datapath creates
	// a tap device "ovs-netdev", and each bridge a tap named after it, in the vswitchd's
	// namespace: without a OVSVswitchdSpec.Netns, such vswitchds (DPDK too) take turns through
	// RootNetdevLockFile; give each its own Netns to run them in parallel. Needs root.
	Userspace
	// DPDK runs ovs-vswitchd-dpdk with dpdk-init=true, --no-pci and hugepages, on the
	// userspace datapath like Userspace. Ports use type=dpdk with af_packet vdevs
	// (AFPacketDevargs) or dpdkvhostuser(client). Only one DPDK instance runs at a time across
	// all processes (DPDKLockFile). Needs root.
	DPDK
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Dummy:
		return "dummy"
	case Userspace:
		return "userspace"
	case DPDK:
		return "dpdk"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Defaults of OVSVswitchdSpec.
const (
	// DefaultSocketMemMB is the hugepage memory, in MiB, a DPDK vswitchd preallocates
	// (other_config:dpdk-socket-mem).
	DefaultSocketMemMB = 512
	// DefaultDPDKExtra is other_config:dpdk-extra: no PCI scan, there are no NICs to take.
	DefaultDPDKExtra = "--no-pci"
	// DefaultPMDMaxSleepUS is other_config:pmd-maxsleep (µs, OVS 3.1's name; later releases
	// call it pmd-sleep-max): an idle PMD thread sleeps instead of spinning a core at 100 %.
	DefaultPMDMaxSleepUS = 1000
)

// OVSVswitchdSpec describes the ovs-vswitchd to start. The zero value of every field but Mode
// means its default.
type OVSVswitchdSpec struct {
	// Mode is required.
	Mode Mode
	// Netns runs the daemon inside this namespace (nil: the test's own). Its bridges' tap
	// devices, its af_packet ports' veths and its routes for userspace tunnels live there.
	Netns *Netns
	// SocketMemMB is dpdk-socket-mem for DPDK (default DefaultSocketMemMB).
	SocketMemMB int
	// DPDKExtra is dpdk-extra for DPDK (default DefaultDPDKExtra).
	DPDKExtra string
	// OtherConfig adds or overrides Open_vSwitch other_config keys written before the start,
	// after the lab's own (pmd-maxsleep and the dpdk-* keys).
	OtherConfig map[string]string
	// StartTimeout bounds the start-up wait (default 20 s, 60 s for DPDK).
	StartTimeout time.Duration
}

// OVSVswitchd is an ovs-vswitchd attached to an OVSDB, running as a child of the test binary. It
// is stopped at the end of the test with `ovs-appctl exit --cleanup`, which also removes its
// datapath and the bridges' tap devices.
type OVSVswitchd struct {
	// Mode is the build and device mode it runs in.
	Mode Mode
	// DB is the database it serves.
	DB *OVSDB
	// Netns is the namespace it runs in; nil for the test's own.
	Netns *Netns
	// CtlPath is its unixctl socket, for ovs-appctl -t; LogPath is its --log-file.
	CtlPath, LogPath string

	d            *daemon
	startTimeout time.Duration
	vdevs        atomic.Int64 // af_packet vdev numbers handed out
}

// StartOVSVswitchd writes the spec's other_config, starts ovs-vswitchd on o and waits until it
// has applied the database (it raises next_cfg and waits for cur_cfg to follow), DPDK reports
// dpdk_initialized=true, and ovs-appctl answers. For DPDK it first takes DPDKLockFile and
// checks that enough hugepages are free; Userspace and DPDK without a Netns take
// RootNetdevLockFile. Locks are waited for at most until the test's deadline and held until
// cleanup. One vswitchd per OVSDB. It calls Require for the mode's needs and fails the test on
// any other error, quoting the tail of the vswitchd log.
func (o *OVSDB) StartOVSVswitchd(t testing.TB, spec OVSVswitchdSpec) *OVSVswitchd {
	t.Helper()
	needs, err := spec.needs()
	if err != nil {
		t.Fatalf("lab: start ovs-vswitchd: %v", err)
	}
	Require(t, needs...)
	v := newOVSVswitchd(o, spec)
	if _, err := os.Stat(v.d.outPath); err == nil {
		t.Fatalf("lab: start ovs-vswitchd: %s already has one (one vswitchd per OVSDB)", o.Dir)
	}
	if spec.Mode == DPDK {
		lockExclusive(t, DPDKLockFile, "one DPDK vswitchd at a time")
		checkFreeHugepages(t, spec.socketMem())
	}
	if spec.Mode != Dummy && spec.Netns == nil {
		lockExclusive(t, RootNetdevLockFile, "one userspace datapath in the root namespace at a time")
	}
	o.Vsctl(t, append([]string{"--no-wait", "set", "Open_vSwitch", "."}, spec.otherConfigArgs()...)...)
	t.Cleanup(func() { v.cleanup(t) })
	v.Start(t)
	t.Logf("lab: ovs-vswitchd (%s) pid %d in %s", spec.Mode, v.PID(), v.Netns)
	return v
}

// needs validates the spec and returns what Require must check for it.
func (s OVSVswitchdSpec) needs() ([]Need, error) {
	var needs []Need
	switch s.Mode {
	case Dummy:
		needs = []Need{NeedOVS}
	case Userspace:
		needs = []Need{NeedOVS, NeedRoot}
	case DPDK:
		needs = []Need{NeedDPDK}
	default:
		return nil, fmt.Errorf("OVSVswitchdSpec.Mode %v: want Dummy, Userspace or DPDK", s.Mode)
	}
	if s.Netns != nil {
		needs = append(needs, NeedNetns)
	}
	return needs, nil
}

// socketMem returns dpdk-socket-mem in MiB.
func (s OVSVswitchdSpec) socketMem() int {
	if s.SocketMemMB > 0 {
		return s.SocketMemMB
	}
	return DefaultSocketMemMB
}

// otherConfigArgs returns the ovs-vsctl `set` arguments for the spec's other_config, sorted by key.
func (s OVSVswitchdSpec) otherConfigArgs() []string {
	cfg := map[string]string{"pmd-maxsleep": strconv.Itoa(DefaultPMDMaxSleepUS)}
	if s.Mode == DPDK {
		cfg["dpdk-init"] = "true"
		cfg["dpdk-socket-mem"] = strconv.Itoa(s.socketMem())
		cfg["dpdk-extra"] = DefaultDPDKExtra
		if s.DPDKExtra != "" {
			cfg["dpdk-extra"] = s.DPDKExtra
		}
	}
	for k, val := range s.OtherConfig {
		cfg[k] = val
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		args = append(args, "other_config:"+strconv.Quote(k)+"="+strconv.Quote(cfg[k]))
	}
	return args
}

// newOVSVswitchd lays out the paths and command line of a vswitchd for o.
func newOVSVswitchd(o *OVSDB, spec OVSVswitchdSpec) *OVSVswitchd {
	v := &OVSVswitchd{
		Mode:         spec.Mode,
		DB:           o,
		Netns:        spec.Netns,
		CtlPath:      filepath.Join(o.Dir, "ovs-vswitchd.ctl"),
		LogPath:      filepath.Join(o.Dir, "ovs-vswitchd.log"),
		startTimeout: spec.StartTimeout,
	}
	if v.startTimeout == 0 {
		v.startTimeout = 20 * time.Second
		if spec.Mode == DPDK {
			v.startTimeout = 60 * time.Second
		}
	}
	bin := OVSVswitchdPath
	if spec.Mode == DPDK {
		bin = OVSVswitchdDPDKPath
	}
	argv := []string{bin, o.Endpoint,
		"--pidfile=" + filepath.Join(o.Dir, "ovs-vswitchd.pid"),
		"--unixctl=" + v.CtlPath,
		"--log-file=" + v.LogPath,
		"-vconsole:warn"}
	if spec.Mode == Dummy {
		argv = append(argv, "--enable-dummy=override", "--disable-system", "--disable-system-route")
	}
	if spec.Netns != nil {
		argv = append([]string{"ip", "netns", "exec", spec.Netns.Name}, argv...)
	}
	v.d = &daemon{name: "ovs-vswitchd", argv: argv, env: o.Env(),
		outPath: filepath.Join(o.Dir, "ovs-vswitchd.out"), logPath: v.LogPath}
	return v
}

// PID returns the process id of the running ovs-vswitchd, or 0 when it is stopped.
func (v *OVSVswitchd) PID() int { return v.d.pid() }

// Start starts the stopped ovs-vswitchd again and waits until it is up (see StartOVSVswitchd).
// It fails the test when it is already running or does not come up.
func (v *OVSVswitchd) Start(t testing.TB) {
	t.Helper()
	p, err := v.d.start()
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	ctx, cancel := testContext(t, v.startTimeout)
	defer cancel()
	ctx, stopWatch := watch(ctx, p)
	defer stopWatch()
	if err := v.waitReady(ctx); err != nil {
		if stopErr := v.d.stop(context.Background(), nil); stopErr != nil {
			t.Logf("lab: %v", stopErr)
		}
		t.Fatalf("lab: %v", v.d.exitReport(p, err))
	}
}

// waitReady waits until the vswitchd has applied the database and answers ovs-appctl.
func (v *OVSVswitchd) waitReady(ctx context.Context) error {
	if err := v.waitApplied(ctx); err != nil {
		return fmt.Errorf("waiting for cur_cfg: %w (cause: %w)", err, context.Cause(ctx))
	}
	if v.Mode == DPDK {
		err := poll(ctx, func(ctx context.Context) error {
			out, _, err := v.DB.VsctlErr(ctx, "get", "Open_vSwitch", ".", "dpdk_initialized")
			if err == nil && out != "true" {
				err = fmt.Errorf("dpdk_initialized=%s", out)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("waiting for dpdk_initialized=true: %w (cause: %w)", err, context.Cause(ctx))
		}
	}
	if _, _, err := v.AppctlErr(ctx, "version"); err != nil {
		return fmt.Errorf("waiting for ovs-appctl: %w (cause: %w)", err, context.Cause(ctx))
	}
	return nil
}

// waitApplied raises Open_vSwitch.next_cfg by one and waits until the vswitchd acknowledges it
// in cur_cfg. (`ovs-vsctl init` would not do: ovs-vsctl waits only for transactions that change
// something, so it returns at once on an initialised database.)
func (v *OVSVswitchd) waitApplied(ctx context.Context) error {
	out, _, err := v.DB.VsctlErr(ctx, "get", "Open_vSwitch", ".", "next_cfg")
	if err != nil {
		return err
	}
	next, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return fmt.Errorf("parse next_cfg %q: %w", out, err)
	}
	want := strconv.FormatInt(next+1, 10)
	if _, _, err := v.DB.VsctlErr(ctx, "--no-wait", "set", "Open_vSwitch", ".", "next_cfg="+want); err != nil {
		return err
	}
	_, _, err = v.DB.VsctlErr(ctx, "wait-until", "Open_vSwitch", ".", "cur_cfg>="+want)
	return err
}

// Stop asks ovs-vswitchd to exit with `ovs-appctl exit --cleanup` (datapath, tap devices and
// DPDK ports released; OVSDB untouched), escalating to SIGTERM and SIGKILL, and waits for it
// to exit. Stopping a stopped vswitchd does nothing.
func (v *OVSVswitchd) Stop(t testing.TB) {
	t.Helper()
	err := v.d.stop(context.Background(), func(ctx context.Context) error {
		_, _, err := v.AppctlErr(ctx, "exit", "--cleanup")
		return err
	})
	if err != nil {
		t.Logf("lab: %v", err)
		v.removeTaps(t)
	}
}

// Restart is Stop followed by Start.
func (v *OVSVswitchd) Restart(t testing.TB) {
	t.Helper()
	v.Stop(t)
	v.Start(t)
}

// removeTaps deletes the tap devices (one per bridge, and "ovs-netdev" for the datapath) a
// vswitchd killed without --cleanup left in the test's namespace: OVS makes them persistent.
// Inside a Netns they go with the namespace.
func (v *OVSVswitchd) removeTaps(t testing.TB) {
	if v.Mode == Dummy || v.Netns != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	// Without ovsdb-server there are no bridge names, but the datapath's ovs-netdev still goes.
	out, _, _ := v.DB.VsctlErr(ctx, "list-br")
	for _, br := range append(strings.Fields(out), "ovs-netdev") {
		if _, err := os.Stat(filepath.Join("/sys/class/net", br, "tun_flags")); err != nil {
			continue
		}
		if _, _, err := run(ctx, nil, "ip", "link", "del", br); err != nil {
			t.Logf("lab: remove leftover tap %s: %v", br, err)
		}
	}
}

// cleanup stops the vswitchd at the end of the test, reporting an unexpected earlier death
// and, when the test failed, the tail of the log.
func (v *OVSVswitchd) cleanup(t testing.TB) {
	if p := v.d.current(); p != nil && p.exited() && !stoppedOnPurpose(p) {
		t.Logf("lab: ovs-vswitchd died during the test: %v", p.err)
		v.removeTaps(t)
	}
	v.Stop(t)
	if t.Failed() {
		t.Logf("lab: tail of %s:\n%s", v.LogPath, tail(v.LogPath, 60))
	}
}

// Appctl runs `ovs-appctl -t <CtlPath> args…` with a 30 s timeout and returns its trimmed
// stdout; it fails the test with stderr on error.
func (v *OVSVswitchd) Appctl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	out, _, err := v.AppctlErr(ctx, args...)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return out
}

// AppctlErr runs `ovs-appctl -t <CtlPath> args…` until it exits or ctx ends and returns its
// trimmed stdout and stderr; err names the command and quotes stderr.
func (v *OVSVswitchd) AppctlErr(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	return run(ctx, v.DB.Env(), "ovs-appctl", append([]string{"-t", v.CtlPath}, args...)...)
}

// OpenFlowTarget returns the ovs-ofctl target of bridge's management socket,
// "unix:<Dir>/<bridge>.mgmt".
func (v *OVSVswitchd) OpenFlowTarget(bridge string) string {
	return "unix:" + filepath.Join(v.DB.Dir, bridge+".mgmt")
}
