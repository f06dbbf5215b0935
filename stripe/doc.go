// Package stripe is the root of the stripe plugin's pure building blocks (issue 16): one
// application connection carried over several NICs at their summed speed, delivered in order,
// with a load-aware choice of send NIC and fair per-application shares.
//
// The packages below this one do no I/O and start no goroutines; every one that depends on time
// takes it from its caller, so tests drive them deterministically:
//
//   - stripe/toeplitz: the Microsoft RSS Toeplitz hash and the flow tuple's hash → NIC index;
//   - stripe/frame: the fixed-size stripe frame header, encoded and decoded strictly;
//   - stripe/load: port counters → rates → EWMA-smoothed load, balance degree, adjust decision;
//   - stripe/fair: Jain's fairness index, max-min fair shares, a token bucket for pacing;
//   - stripe/reorder: a bounded reorder buffer with a loss timeout;
//   - stripe/policy: the send-NIC policies behind one interface (seed, round-robin, hash,
//     weighted by capacity).
//
// The engine, discovery, application endpoints and benchmarks that use them are still to come;
// docs/stripe.md describes the design.
package stripe
