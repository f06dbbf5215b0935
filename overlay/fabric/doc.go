// Package fabric is the overlay's shared database client (issue 17): every node registers
// itself and reports measured links into a clustered (Raft) OVSDB holding the Overlay_Fabric
// schema (schema/fabric.ovsschema, models in fabric/model), the controller publishes
// versioned route tables there, and each node acknowledges the version it has applied.
//
// The version handshake follows OVN's nb_cfg/hv_cfg pattern: Fabric_Global.route_version is the
// newest published version, Node.applied_version what each node runs, and MinApplied the
// slowest running node's version (stored as min_applied_version at each publish), so the
// controller knows when a version is in effect everywhere and old tables can be dropped.
//
// Every write is a compare-and-swap: the transaction carries an OVSDB "wait" on the state it was
// computed from, so a retry after a lost reply (the leader died mid-commit) either finds its
// own earlier commit and reports success, or recomputes from the new state; a version is never
// written twice and never skipped. The client connects to all cluster members, talks only to
// the leader and reconnects by itself (libovsdb's leader-only and reconnect options).
//
// At most one controller publishes: the controller lease in Fabric_Global (holder, expiry,
// epoch) is taken and renewed with a compare-and-swap on all three columns, and PublishRoutes
// given the lease checks in the same transaction that the epoch is still the holder's. Lease
// expiry compares the callers' clocks, so controllers' clocks must agree to well within the
// lease time; the epoch fence keeps a controller whose lease was taken over from writing
// even when its clock is wrong.
//
// Liveness: nodes report by registering, acknowledging and, when otherwise silent, with
// Heartbeat; the controller marks a node that stopped reporting HealthStale (MarkStale, a
// compare-and-swap on the last-seen value it observed) and records the minimum applied version
// as it moves (RecordMinApplied). A version writes only the tables that changed (a node's
// table in version v is its newest Route_Table row at or below v) and marks those nodes'
// Node.routes_version, so AckUnchanged acknowledges a node whose table did not change since
// the version it installed without a read (ChangedSince lists the moved nodes for a process
// hosting many agents). For many agents: WaitRouteVersion learns of new versions from
// an OVSDB monitor instead of polling, RoutesFor reads only the given nodes' tables, and
// AckVersions acknowledges for up to MaxBatch nodes in one transaction.
//
// Cost in ovsdb-server: it finds a condition's rows by a pass over the whole table unless the
// condition is `_uuid == …` (the schema's indexes only enforce uniqueness). The per-agent
// operations therefore address rows by _uuid: the client caches each Node row's _uuid (learnt
// at registration, from a Node read, or once by name), acknowledgements and heartbeats
// update by it, and RoutesFor reads the node's Node row and then the Route_Table row its
// routes_row names (schema 1.3.0; set by the publish that writes the row), scanning only for a
// node whose newest row is newer than the version asked. A publish lists Route_Table without
// its next hops and fetches only rows the client has not read (rows are never modified).
// What still scans is per connection or per publish, not per agent: ChangedSince, the Node
// read of a publish, registration.
package fabric
