// Package flowmon is the root of the flowmon plugin's packages (issue 18): OVS's own flow
// export (NetFlow v5, NetFlow v9, IPFIX) collected, decoded, stored and queried, with a traffic
// generator whose runs can be compared with what OVS exported for them.
//
//   - flowmon/flow: the decoded, enriched flow record every other package passes around;
//   - flowmon/collect: UDP receivers and decoders that turn export datagrams into records,
//     counting every datagram they drop;
//   - flowmon/query: the query model every store answers and every front end asks;
//   - flowmon/store: the store interface and the embedded and PostgreSQL stores;
//   - flowmon/gen: the traffic generator and its per-flow receive counter.
//
// The plugin binary (plugins/flowmon) wires them into data-path jobs and a command line.
package flowmon
