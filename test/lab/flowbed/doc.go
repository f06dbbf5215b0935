// Package flowbed is flowmon's end-to-end testbed (issue 18): flowmon/gen's generator writes UDP
// flows into a veth whose peer is an af_packet "NIC" of a real OVS-DPDK bridge
// (ovs-vswitchd-dpdk, datapath_type=netdev), one OpenFlow rule forwards them to a second
// af_packet port, flowmon/gen's receiver counts them on the far veth, and the bridge exports
// NetFlow v5 to a UDP socket of the test, which DecodeV5 decodes. A Result compares, per
// generated flow, frames and bytes generated, received and exported.
//
//	ns1: A of veth "in"  ── B (root) = br0 port p1 (net_af_packet) ─┐
//	                                                                 │ in_port=p1 → output:p2
//	ns2: A of veth "out" ── B (root) = br0 port p2 (net_af_packet) ─┘   NetFlow v5 → 127.0.0.1
//
// The NetFlow row is written by the bed itself with ovs-vsctl (the daemon-managed export
// configuration is not used here), with a short active_timeout, and the vswitchd runs with a
// short other_config:max-idle so idle datapath flows, and with them their NetFlow records,
// expire within seconds of the end of a run.
//
// TestTunnelByteSemantics measures, on test/lab/overlaybed's VXLAN sites, which bytes OVS's
// NetFlow counts for flows into, out of and under a userspace tunnel (see its comment).
//
// It is test support built on test/lab: New takes a testing.TB, needs root, ovs-vswitchd-dpdk
// and hugepages (lab.NeedDPDK; lab reserves them), and registers every teardown with
// t.Cleanup. TestNetFlowMatchesGenerated is the CI form; BenchmarkFlowgen is
// `make bench-flowgen`.
//
// The package's bed is Linux-only; elsewhere it holds the NetFlow decoder only.
package flowbed
