// Package lab starts real Open vSwitch daemons, network namespaces and veth pairs for integration
// tests, and tears every one of them down through t.Cleanup when the test ends, failed or not.
//
// The package is Linux-only; elsewhere it holds nothing but this documentation.
//
// A test states what it needs first, then builds its lab:
//
//	func TestTraffic(t *testing.T) {
//		lab.Require(t, lab.NeedDPDK, lab.NeedTraffic)
//		db := lab.StartOVSDB(t)
//		sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
//		ns := lab.NewNetns(t)
//		veth := lab.NewVethPair(t, lab.VethSpec{BNetns: ns, BAddr: "10.99.0.1/24", DisableOffloads: true})
//		db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev",
//			"--", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=dpdk",
//			"options:dpdk-devargs="+sw.AFPacketDevargs(veth.A.Name))
//		...
//	}
//
// Require is the only function that skips a test: when a precondition (root, OVS binaries,
// hugepages, iproute2, iperf3) is missing it skips with an explanation of the fix, or fails
// instead when the environment variable OVSPLANE_REQUIRE_LAB=1 is set, so CI cannot pass by
// skipping. The constructors call Require for their own needs, so a forgotten Require still
// skips cleanly; every other failure to build the lab fails the test with the command, its
// stderr and the tail of the daemon's log.
//
// Isolation: each OVSDB lives in its own short temporary directory (os.MkdirTemp, because unix
// socket paths are limited to 107 bytes) with OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR pointing at
// it, so nothing touches /var/run/openvswitch. Namespace, veth and directory names carry the
// creating process's id and random characters ("ovlns…", "ovl…a"/"ovl…b" of 15 characters,
// "/tmp/ovslab…-…"), so parallel tests and several test binaries never collide. Userspace-
// datapath vswitchds in the test's own namespace take turns (RootNetdevLockFile), and so do
// DPDK vswitchds (DPDKLockFile), since one PMD thread and its hugepages are all a two-CPU
// machine can host; each DPDK instance hands out its own af_packet vdev names.
//
// Daemons run as children of the test binary (no --detach) with a parent-death signal, so even
// a test binary killed by its -timeout takes its ovsdb-server and ovs-vswitchd with it. They are
// started, awaited and stopped by internal/ovsproc, the process manager vswitchd/sandbox ships
// (same command lines, waits and stop escalation); this package adds only what is
// test-specific: Require and its skips, temporary directories, locks, namespaces, veths and
// traffic. The
// namespaces, veths and directories of such a process are removed by the next lab test that
// creates one, once their owner's process id no longer exists.
//
// Helpers that take a testing.TB must be called from the test's goroutine, as t.Fatalf
// requires (they also work inside t.Cleanup functions). Those that take a context instead —
// VsctlErr, AppctlErr, Netns.Exec, Netns.Command, Netns.Do, Ping, TCPTransfer, Iperf3,
// OSVIFPlug, OSVIFUnplug — return errors and are safe to call from any goroutine.
//
// OSVIFPlug and OSVIFUnplug plug a VIF the way Nova does on an OpenStack compute node: they run
// os-vif's own OVS plugin (Debian's python3-os-vif, native ovsdbapp backend) under
// /usr/bin/python3 against a lab OVSDB; Require(t, NeedOSVIF) checks the packages first.
package lab
