// Package stripebed is the testbed of the stripe plugin's benchmark (issue 16): two network
// namespaces as nodes joined by several veth links, each shaped with tc tbf in both directions
// to its own rate (100/200/300/400 Mbit/s by default), and the arms that the stripe engine is
// compared with, run on the same links in the same run: the best single link, MPTCP with one
// subflow per link, and Open vSwitch bonds (balance-slb and balance-tcp with LACP, userspace
// datapath, one ovs-vswitchd per namespace).
//
// It is test support, built on test/lab: New takes a testing.TB and registers the teardown of
// everything it creates with t.Cleanup, so a failed or aborted test leaves no namespace, veth or
// daemon behind (names carry the process id and random characters, see test/lab).
//
// Traffic is generated in process: sockets are opened inside the namespaces with lab.Netns.Do
// (setns on a locked OS thread), so no iperf3 or other helper program is needed. One arm moves
// one TCP connection with a fixed byte count (TCPBulk) and one UDP stream of numbered datagrams
// paced to a rate (UDPStream). Retransmissions are read from the sending namespace's
// /proc/net/snmp (TcpRetransSegs, which counts every MPTCP subflow), per-link bytes from the
// links' interface counters.
//
// The matrix: New builds the bed, RunAlternatives measures the links alone and then each
// alternative, returning a Report (FormatMarkdown renders docs/benchmarks.md's table). Another
// arm, such as the stripe engine's, sets up its path (a tun device, an OVS bridge…) and calls
// Bed.RunPair with the addresses that path uses and the Report's measured rates; its Result has
// the same columns. TestHarness is the short form `make test` runs (correctness of the harness,
// no timed assertion); BenchmarkAlternatives is the full run of `make bench-stripe`.
//
// The package is Linux-only; elsewhere it holds nothing but this documentation.
package stripebed
