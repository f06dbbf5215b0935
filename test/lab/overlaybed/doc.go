// Package overlaybed is the testbed of the overlay plugin (issue 17): sites in network
// namespaces on two carriers plus super nodes on both, each site with its own ovsdb-server and
// ovs-vswitchd (userspace datapath, the br-phy/br-int pattern of OVS's userspace tunnelling),
// and an underlay in which every path between two sites goes through a userspace relay
// (test/lab/udprelay) that adds the path's one-way delay: 5 ms inside a carrier and to a super
// node, 130 ms directly across carriers, changeable at run time to degrade a link.
//
// Addressing: site i (1-based) has underlay 10.80.0.i/16 on br-phy and overlay 10.90.0.i/24 on
// br-int's internal port ovl0 (MAC 02:0b:ed:00:00:i). Each site's uplink ends in the site's own
// edge namespace, which holds every other site's underlay address and does not route. The path
// between sites x and y is a relay per relayed UDP port (VXLAN's 4789 and the plugin's probe
// port 7471): one socket in x's edge bound to y's address, one in y's edge bound to x's. So a
// site reaches every peer at the peer's real address (as a flow-based tunnel with tun_dst does)
// and sees its datagrams come from there, and every pair of sites has its own delay.
//
// Routes: until the overlay plugin installs them, the bed installs its own: SetRoute writes
// OpenFlow rules on br-int matching the destination's MAC and sending it out of the tunnel
// toward the next hop (the destination itself, or a super node, which forwards it on). These
// are the "bed-built" arms of the benchmark.
//
// It is test support, built on test/lab: New takes a testing.TB and registers the teardown of
// everything with t.Cleanup, so a failed test leaves no namespace, veth, relay or daemon.
// TestShortBed is the CI form (three sites); BenchmarkOverlayBed is `make bench-overlay`, which
// writes its table into docs/benchmarks.md between this package's markers.
//
// The package is Linux-only; elsewhere it holds nothing but this documentation.
package overlaybed
