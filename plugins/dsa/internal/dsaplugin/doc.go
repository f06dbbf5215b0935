// Package dsaplugin is the ovsplane plugin "dsa": it provisions Intel Data Streaming
// Accelerator (DSA) devices for OVS-DPDK's vhost async copies through the dsa host library,
// wires them into Open vSwitch only when the running ovs-vswitchd can use them, and tells, for
// every vhost-user interface of the switch (the daemon's, ovs-vsctl's, os-vif's), the truth
// about its copies: accelerated by which work queue, or CPU copy and why.
//
// The plugin is a thin layer over package dsa:
//   - Configure decodes the configuration strictly (Config), turns it into a dsa.Request, and
//     runs dsa.Host.Apply (idempotent: a matching device is a no-op; a busy one is refused).
//     Devices the plugin configured and the configuration no longer names are reset (their
//     idxd configuration disabled), so provisioning and reset both go through the daemon. The
//     OVS side is judged with dsa.ProbeOVS on the daemon's facts (list-commands, other_config):
//     asyncMode require fails on a build without vhost async (OVS_NO_VHOST_ASYNC), auto keeps
//     the devices prepared and says so in Health and every port status.
//   - Contribute adds "-a <BDF>,max_queues=N" to dpdk-extra for vfio-pci devices, and
//     other_config:vhost-async-support=true only when the running ovs-vswitchd has vhost async.
//     Writing that key is never taken as success (upstream OVS ignores it): on a capable build
//     the plugin sets the threshold through ovs-vswitchd's unixctl socket and reads it back.
//   - OnPortEvents answers each dpdkvhostuser and dpdkvhostuserclient interface with a Status:
//     the PMD threads polling it (dpif-netdev/pmd-rxq-show, read through the unixctl socket at
//     every batch), the work queue each PMD uses (dsa.AssignPMDs), NUMA match, and whether the
//     copies are accelerated. It never asks for other_config changes.
//
// The plugin never writes OVSDB: the daemon does, from Contribute. It reads OVS only through
// the daemon's facts and ovs-vswitchd's unixctl socket: the one found in Facts.OVSRunDir, or the
// path the configuration's ovs.unixctl names (an ovs-vswitchd started with --unixctl=PATH, as
// ZStack's is), through which it then also reads the build's commands.
//
// The configuration names the machine: Root (the directory holding sys/ and dev/, "/" on a
// host) or Simulate, the directory of a simulated idxd kernel (dsa/simidxd) — a clearly
// labelled simulation, for end-to-end tests on machines without DSA.
package dsaplugin
