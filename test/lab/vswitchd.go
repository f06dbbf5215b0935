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

	"github.com/ovsplane/ovsplane/internal/ovsproc"
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
	DefaultSocketMemMB = ovsproc.DefaultSocketMemMB
	// DefaultDPDKExtra is other_config:dpdk-extra: no PCI scan, there are no NICs to take.
	DefaultDPDKExtra = ovsproc.DefaultDPDKExtra
	// DefaultPMDMaxSleepUS is other_config:pmd-maxsleep (µs, OVS 3.1's name; later releases
	// call it pmd-sleep-max): an idle PMD thread sleeps instead of spinning a core at 100 %.
	DefaultPMDMaxSleepUS = ovsproc.DefaultPMDMaxSleepUS
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

	d            *ovsproc.Daemon
	startTimeout time.Duration
	vdevs        atomic.Int64 // af_packet vdev numbers handed out
	socketMem    int          // DPDK: the hugepage memory it needs, MB
	// releaseDPDK gives DPDKLockFile up (DPDK mode, while running; nil while stopped): Stop
	// releases it and Start takes it again, so that one test can run DPDK vswitchds one after
	// the other.
	releaseDPDK func()
}

// StartOVSVswitchd writes the spec's other_config, starts ovs-vswitchd on o and waits until it
// has applied the database (it raises next_cfg and waits for cur_cfg to follow), DPDK reports
// dpdk_initialized=true, and ovs-appctl answers. For DPDK it first takes DPDKLockFile and
// checks that enough hugepages are free; Userspace and DPDK without a Netns take
// RootNetdevLockFile. Locks are waited for at most until the test's deadline and held until
// cleanup (DPDKLockFile only while the vswitchd runs: see Stop). One vswitchd per OVSDB. It calls Require for the mode's needs and fails the test on
// any other error, quoting the tail of the vswitchd log.
func (o *OVSDB) StartOVSVswitchd(t testing.TB, spec OVSVswitchdSpec) *OVSVswitchd {
	t.Helper()
	needs, err := spec.needs()
	if err != nil {
		t.Fatalf("lab: start ovs-vswitchd: %v", err)
	}
	Require(t, needs...)
	v := newOVSVswitchd(o, spec)
	if _, err := os.Stat(v.d.Spec().Out); err == nil {
		t.Fatalf("lab: start ovs-vswitchd: %s already has one (one vswitchd per OVSDB)", o.Dir)
	}
	if spec.Mode == DPDK {
		v.socketMem = spec.socketMem()
		v.releaseDPDK = lockExclusive(t, DPDKLockFile, "one DPDK vswitchd at a time")
		checkFreeHugepages(t, v.socketMem)
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
		startTimeout: spec.StartTimeout,
	}
	if v.startTimeout == 0 {
		v.startTimeout = 20 * time.Second
		if spec.Mode == DPDK {
			v.startTimeout = 60 * time.Second
		}
	}
	bin, extra := OVSVswitchdPath, []string(nil)
	switch spec.Mode {
	case DPDK:
		bin = OVSVswitchdDPDKPath
	case Dummy:
		extra = ovsproc.DummyArgs()
	}
	ds := o.layout.Vswitchd(bin, extra...)
	if spec.Netns != nil {
		ds.Argv = append([]string{"ip", "netns", "exec", spec.Netns.Name}, ds.Argv...)
	}
	v.CtlPath, v.LogPath = ds.Ctl, ds.Log
	v.d = ovsproc.NewDaemon(ds)
	return v
}

// PID returns the process id of the running ovs-vswitchd, or 0 when it is stopped.
func (v *OVSVswitchd) PID() int { return v.d.Running().PID() }

// Start starts the stopped ovs-vswitchd again and waits until it is up (see StartOVSVswitchd).
// It fails the test when it is already running or does not come up.
func (v *OVSVswitchd) Start(t testing.TB) {
	t.Helper()
	if v.Mode == DPDK && v.releaseDPDK == nil {
		v.releaseDPDK = lockExclusive(t, DPDKLockFile, "one DPDK vswitchd at a time")
		checkFreeHugepages(t, v.socketMem)
	}
	p, err := v.d.Start()
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	ctx, cancel := testContext(t, v.startTimeout)
	defer cancel()
	ctx, stopWatch := p.Watch(ctx)
	defer stopWatch()
	if _, err := v.DB.tools.WaitVswitchd(ctx, v.CtlPath, v.Mode == DPDK); err != nil {
		if stopErr := p.Stop(context.Background(), nil); stopErr != nil {
			t.Logf("lab: %v", stopErr)
		}
		t.Fatalf("lab: %v", p.Report(err))
	}
}

// Stop asks ovs-vswitchd to exit with `ovs-appctl exit --cleanup` (datapath, tap devices and
// DPDK ports released; OVSDB untouched), escalating to SIGTERM and SIGKILL, and waits for it
// to exit; a DPDK vswitchd then gives DPDKLockFile up (Start takes it again), so the test may
// start another. Stopping a stopped vswitchd does nothing.
func (v *OVSVswitchd) Stop(t testing.TB) {
	t.Helper()
	err := v.d.Stop(context.Background(), func(ctx context.Context) error {
		_, _, err := v.AppctlErr(ctx, "exit", "--cleanup")
		return err
	})
	if err != nil {
		t.Logf("lab: %v", err)
		v.removeTaps(t)
	}
	if v.releaseDPDK != nil { // stopped: its hugepages are free for the next DPDK vswitchd
		v.releaseDPDK()
		v.releaseDPDK = nil
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
		if _, _, err := ovsproc.Run(ctx, nil, "ip", "link", "del", br); err != nil {
			t.Logf("lab: remove leftover tap %s: %v", br, err)
		}
	}
}

// cleanup stops the vswitchd at the end of the test, reporting an unexpected earlier death
// and, when the test failed, the tail of the log.
func (v *OVSVswitchd) cleanup(t testing.TB) {
	if p := v.d.Current(); p != nil && p.Exited() && !p.StoppedOnPurpose() {
		t.Logf("lab: ovs-vswitchd died during the test: %v", p.Err())
		v.removeTaps(t)
	}
	v.Stop(t)
	if t.Failed() {
		t.Logf("lab: tail of %s:\n%s", v.LogPath, ovsproc.Tail(v.LogPath, 60))
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
	return v.DB.tools.Appctl(ctx, v.CtlPath, args...)
}

// OpenFlowTarget returns the ovs-ofctl target of bridge's management socket,
// "unix:<Dir>/<bridge>.mgmt".
func (v *OVSVswitchd) OpenFlowTarget(bridge string) string {
	return "unix:" + filepath.Join(v.DB.Dir, bridge+".mgmt")
}
