// Package flowingest measures flowmon's ingest end to end (issue 18): NetFlow v5 datagrams of 30
// records replayed over loopback UDP into a flowmon/collect.Collector (SO_REUSEPORT sockets,
// goflow2 decoding, enrichment, batching) writing to a store, reporting records/s decoded and
// stored, loss counted by the collector (kernel socket drops, sequence gaps, store
// backpressure), and CPU-µs per record, next to goflow2's own v5 decode rate as the anchor.
// The code is in the _test files: TestFlowIngestShort (a low rate; asserts every record sent
// is stored or counted as a kernel socket drop) runs with the tests; `make bench-flowingest`
// runs BenchmarkFlowIngest: for each store (discard, the embedded DuckDB store in cgo builds,
// PostgreSQL on a private lab server, which needs root and postgresql-15), a flat-out arm to find
// the maximum, then an arm paced at 80 % of it.
package flowingest
