//go:build linux

package lab

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// RequireEnv is the environment variable that turns Require's skips into failures: set it to
// 1 in CI and on lab machines, so a broken setup cannot pass by skipping every test.
const RequireEnv = "OVSPLANE_REQUIRE_LAB"

// Paths of the OVS files the lab uses (Debian 12's openvswitch-switch(-dpdk) 3.1). Debian
// installs both vswitchd builds outside $PATH; the lab calls each by its path.
const (
	// SchemaPath is the Open_vSwitch schema StartOVSDB creates databases from.
	SchemaPath = ovsproc.DefaultSchema
	// OVSVswitchdPath is the ovs-vswitchd without DPDK, for Dummy and Userspace.
	OVSVswitchdPath = ovsproc.DefaultVswitchd
	// OVSVswitchdDPDKPath is the ovs-vswitchd built with DPDK, for DPDK.
	OVSVswitchdDPDKPath = ovsproc.DefaultVswitchdDPDK
)

// Fixes Require suggests.
const (
	fixMake  = "run `make test` as root; it installs the lab packages and reserves hugepages"
	fixApt   = "apt-get install -y openvswitch-switch-dpdk dpdk iproute2 ethtool iputils-ping iperf3"
	fixOSVIF = "apt-get install -y python3-os-vif python3-ovsdbapp (Debian's /usr/bin/python3 must import them)"
	fixRoot  = "run the tests as root, e.g. sudo -E go test …"
)

// Need names one precondition of a lab test.
type Need int

// The preconditions Require can check.
const (
	// NeedRoot: the test runs as root (namespaces, veths, hugepages, af_packet).
	NeedRoot Need = iota + 1
	// NeedOVS: ovsdb-tool, ovsdb-server, ovs-vsctl, ovs-appctl, the vswitch schema and the
	// non-DPDK ovs-vswitchd. Enough for StartOVSDB and a Dummy vswitchd; root is not needed.
	NeedOVS
	// NeedDPDK: NeedOVS, NeedRoot, ovs-vswitchd-dpdk, and at least DefaultSocketMemMB of reserved
	// hugepages. As root, Require reserves DPDKHugepages 2 MiB pages itself when fewer are
	// reserved (see EnsureHugepages) and logs that it did.
	NeedDPDK
	// NeedNetns: NeedRoot, ip, ethtool and tc.
	NeedNetns
	// NeedTraffic: NeedNetns, ping and iperf3.
	NeedTraffic
	// NeedOSVIF: OSVIFPython can import os_vif, vif_plug_ovs and ovsdbapp (Debian's
	// python3-os-vif and python3-ovsdbapp), for OSVIFPlug and OSVIFUnplug.
	NeedOSVIF
)

// String returns the need's name.
func (n Need) String() string {
	switch n {
	case NeedRoot:
		return "root"
	case NeedOVS:
		return "ovs"
	case NeedDPDK:
		return "dpdk"
	case NeedNetns:
		return "netns"
	case NeedTraffic:
		return "traffic"
	case NeedOSVIF:
		return "osvif"
	}
	return "Need(" + strconv.Itoa(int(n)) + ")"
}

// Require checks the given preconditions and returns when all hold. Otherwise it skips the
// test with what is missing and how to fix it, or fails it (t.Fatalf) when RequireEnv is set
// to a true value. It is the only function of the package that skips. Its one side effect:
// NeedDPDK reserves hugepages when running as root (see NeedDPDK).
func Require(t testing.TB, what ...Need) {
	t.Helper()
	var missing []string
	for _, n := range expand(what) {
		missing = append(missing, check(t, n)...)
	}
	decide(t, os.Getenv(RequireEnv), missing)
}

// decide skips or fails t when missing is not empty, according to the value of RequireEnv.
func decide(t testing.TB, env string, missing []string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	msg := "lab: missing " + strings.Join(missing, "; ") + "\n(fix: " + fixMake + ")"
	if strict, _ := strconv.ParseBool(env); strict {
		t.Fatalf("%s\n(%s=%s forbids skipping)", msg, RequireEnv, env)
		return
	}
	t.Skipf("%s\n(set %s=1 to fail instead of skip)", msg, RequireEnv)
}

// expand adds the needs implied by each need and removes duplicates, keeping order.
func expand(what []Need) []Need {
	implied := map[Need][]Need{
		NeedDPDK:    {NeedRoot, NeedOVS, NeedDPDK},
		NeedNetns:   {NeedRoot, NeedNetns},
		NeedTraffic: {NeedRoot, NeedNetns, NeedTraffic},
	}
	seen := map[Need]bool{}
	var out []Need
	for _, n := range what {
		all, ok := implied[n]
		if !ok {
			all = []Need{n}
		}
		for _, m := range all {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// check returns the problems that make n unmet, each with its fix.
func check(t testing.TB, n Need) []string {
	t.Helper()
	switch n {
	case NeedRoot:
		if os.Geteuid() != 0 {
			return []string{fmt.Sprintf("root (running as uid %d; %s)", os.Geteuid(), fixRoot)}
		}
		return nil
	case NeedOVS:
		return append(missingPrograms("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-appctl"),
			missingFiles(SchemaPath, OVSVswitchdPath)...)
	case NeedDPDK:
		if p := missingFiles(OVSVswitchdDPDKPath); p != nil {
			return p
		}
		return checkHugepages(t)
	case NeedNetns:
		return missingPrograms("ip", "ethtool", "tc")
	case NeedTraffic:
		return missingPrograms("ping", "iperf3")
	case NeedOSVIF:
		return missingOSVIF(t)
	}
	return []string{fmt.Sprintf("unknown lab.Need %d", int(n))}
}

// missingPrograms lists the programs not found in $PATH.
func missingPrograms(names ...string) []string {
	var out []string
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			out = append(out, fmt.Sprintf("program %s (%s)", name, fixApt))
		}
	}
	return out
}

// missingFiles lists the files that do not exist.
func missingFiles(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			out = append(out, fmt.Sprintf("file %s (%s)", p, fixApt))
		}
	}
	return out
}

// checkHugepages makes sure enough hugepage memory of the default size is reserved for a DPDK
// vswitchd with the default socket memory, reserving DPDKHugepages pages itself when running
// as root.
func checkHugepages(t testing.TB) []string {
	t.Helper()
	reserved := func() int64 {
		h, err := ovsproc.ReadHugepages(ovsproc.DefaultMeminfo)
		if err != nil {
			return 0
		}
		return h.TotalMB()
	}
	if reserved() >= DefaultSocketMemMB {
		return nil
	}
	if os.Geteuid() == 0 {
		if err := EnsureHugepages(DPDKHugepages); err != nil {
			return []string{fmt.Sprintf("hugepages: %v", err)}
		}
		t.Logf("lab: reserved %d hugepages of 2 MiB for DPDK (vm.nr_hugepages)", DPDKHugepages)
		if reserved() >= DefaultSocketMemMB {
			return nil
		}
	}
	return []string{fmt.Sprintf("%d MiB of reserved hugepages for DPDK (have %d MiB; "+
		"echo %d > /proc/sys/vm/nr_hugepages as root)",
		DefaultSocketMemMB, reserved(), DPDKHugepages)}
}

// missingOSVIF reports what keeps OSVIFPython from importing os-vif's OVS plugin and ovsdbapp,
// with the interpreter's own error.
func missingOSVIF(t testing.TB) []string {
	t.Helper()
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, OSVIFPython, "-I", "-c",
		"import os_vif, vif_plug_ovs.ovs, ovsdbapp.schema.open_vswitch.impl_idl").CombinedOutput()
	if err == nil {
		return nil
	}
	return []string{fmt.Sprintf("os-vif for %s (%v: %s; %s)", OSVIFPython, err,
		lastLines(strings.TrimSpace(string(out)), 1), fixOSVIF)}
}
