// Package stripe is the root of the stripe plugin's packages (issue 16): one
// application connection carried over several NICs at their summed speed, delivered in order,
// with a load-aware choice of send NIC and fair per-application shares.
//
// The building blocks below do no I/O and start no goroutines; every one that depends on time
// takes it from its caller, so tests drive them deterministically:
//
//   - stripe/toeplitz: the Microsoft RSS Toeplitz hash and the flow tuple's hash → NIC index;
//   - stripe/frame: the fixed-size stripe frame header, encoded and decoded strictly;
//   - stripe/load: port counters → rates → EWMA-smoothed load, balance degree, adjust decision;
//   - stripe/fair: Jain's fairness index, max-min fair shares, a token bucket for pacing;
//   - stripe/reorder: a bounded reorder buffer with a loss timeout;
//   - stripe/policy: the send-NIC policies behind one interface (seed, round-robin, hash,
//     weighted by capacity);
//   - stripe/discovery: the hello control frames and the node → NICs table.
//
// On top of them, with I/O:
//
//   - stripe/link: a NIC carrying stripe frames (AF_PACKET, ethertype 0x88B5);
//   - stripe/engine: one node's data path to a peer in kernel-NIC mode;
//   - stripe/endpoint: the local endpoint for applications (unix, TCP, UDP sockets) with fair
//     shares and pacing;
//   - stripe/tunnel: the transparent mode, a tun device per peer carried by an engine;
//   - stripe/ovslane: the OVS-DPDK link mode's OpenFlow rules and paced lanes.
//
// The plugin is plugins/stripe; docs/stripe.md describes the design, docs/stripe-plugin.md the
// plugin and docs/benchmarks.md the testbed's numbers.
package stripe
