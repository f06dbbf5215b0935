// Package collect is flowmon's collector library: UDP receivers (SO_REUSEPORT worker sockets),
// decoding of NetFlow v5, v9 and IPFIX datagrams with goflow2's decoders into flow.Record values,
// enrichment with OVS names (Resolver), batching into a flowmon/store.Store (Writer), and the
// counters that make every loss visible (Counters, with a Prometheus collector).
//
// The data path is: Receiver (one goroutine per socket, reading datagrams in batches into reused
// buffers) → Decoder (one per socket goroutine, appending into a reused []flow.Record) →
// Resolver → Writer.Write (copies into a reused batch buffer, never waits for the store) →
// Writer.Run (one goroutine that appends sealed batches to the store and retries a failed batch
// with the same ID). Memory is bounded everywhere: datagram size, templates per exporter and
// domain, fields per template, exporters tracked, and records buffered while the store is down;
// whatever exceeds a bound is dropped and counted under a reason.
package collect
