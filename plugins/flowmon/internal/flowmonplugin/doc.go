// Package flowmonplugin is the flowmon plugin of ovsplane (issue 18, docs/flowmon.md):
//
//   - job type flowmon-collector: UDP receivers (flowmon/collect, SO_REUSEPORT sockets per
//     listen address) decode NetFlow v5/v9 and IPFIX, name bridges and ports, and batch the
//     records into the job's store (Options.OpenStore: the embedded DuckDB store in the
//     plugin's data dir, or PostgreSQL); the job owns the store (DuckDB allows one writing
//     process) and answers queries on the unix socket SocketPath(<plugin data dir>, <job>)
//     with flowmon/query's socket protocol, which the daemon's API (vswitchd/flowmonapi) and
//     the flowmon command line use; it drops day partitions older than its retention hourly;
//   - job type flowmon-gen: one run of the traffic generator (flowmon/gen) on an interface,
//     with the frames counted per flow where they arrive; Stats report sent vs received;
//   - a FlowProgrammer that programs no flows: the daemon calls Flows per bridge with its
//     interfaces and OpenFlow port numbers, which is how the collectors learn port names (the
//     plugin contract hands plugins no other bridge facts). The engine id → bridge mapping
//     comes from the collector's configuration (engines), as OVS's NetFlow and IPFIX rows set
//     it.
//
// The package does not link a store: the binary (plugins/flowmon) passes OpenStore, so this
// package and its users build without cgo.
package flowmonplugin
