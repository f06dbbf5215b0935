// Package overlayconverge measures the overlay fabric's convergence (issue 17): simulated node
// agents against a real 3-member clustered ovsdb-server holding the Overlay_Fabric schema,
// optionally through OVSDB relays. It reports the time from a route version's commit until
// every agent has read its own table and acknowledged it, the ovsdb-servers' memory and the
// leader's CPU. The code is in the _test files: TestConvergeShort (200 agents, run by `make
// test`) asserts every agent acked; `make bench-overlay-converge` runs the 10,000-agent arms
// and prints a table for docs/benchmarks.md.
package overlayconverge
