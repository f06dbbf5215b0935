// Package ovsdbtest is fast unit-test infrastructure for code built on OVSDB:
// libovsdb's in-memory OVSDB server serving the vswitch schema on a unix
// socket (Server), clients and dumps of it, and StartOVSVswitchd, which runs
// the simulated ovs-vswitchd of ovsdb/simvswitchd against a Server.
//
// # Use
//
//	s := ovsdbtest.Start(t)              // Open_vSwitch row as after `ovs-vsctl init`
//	ovsdbtest.StartOVSVswitchd(t, s)     // ofports, Interface.error, cur_cfg
//	c := s.Client(t)                     // or your own client on s.Endpoint()
//	...                                  // write, bump next_cfg, wait for cur_cfg
//	s.Restart(t)                         // same data, clients must reconnect
//
// Start and StartOVSVswitchd register their cleanup with t; New,
// simvswitchd.New and Dial are the same without testing.TB.
//
// # The server
//
// The Server seeds the database like ovsdb-server plus `ovs-vsctl init` plus
// ovs-vswitchd 3.1.0 built with DPDK: one Open_vSwitch row with ovs_version
// "3.1.0", db_version "8.3.1", the DPDK build's iface_types and
// datapath_types [netdev, system]. It also serves the _Server database with
// a "standalone", connected, leader row per database, which real
// ovsdb-server has and libovsdb's in-memory server lacks.
//
// Restart works over the same in-memory database object: libovsdb's
// NewOvsdbServer calls CreateDatabase for every model, which would replace
// the content, so the Server wraps the database to make CreateDatabase a
// no-op for existing databases. OvsdbServer.Close only closes the listener;
// the Server also closes every accepted connection so clients notice.
//
// # libovsdb v0.8.1's in-memory server compared with ovsdb-server
//
// Tests in inmemory_test.go pin each point; when one fails after a libovsdb
// upgrade, update this list.
//
// Supported as in ovsdb-server:
//   - wait with until "==" or "!=" and timeout 0: succeeds, or fails with
//     "timed out" and aborts the whole transaction.
//   - mutate insert/delete on sets, insert on maps (existing keys are not
//     overwritten), delete on maps by key-value pairs (only matching pairs
//     go) and by a set of keys.
//   - select returns the matching rows (but see below).
//   - garbage collection of non-root rows (Bridge, Port, Interface, ...):
//     unreferenced inserted rows are dropped silently, rows losing their
//     last strong reference are deleted, transitively.
//   - referential integrity: a strong reference to a missing row, or
//     deleting a still-referenced row, fails the transaction with
//     "referential integrity violation" (the details text differs from
//     ovsdb-server's "cannot delete ... because of N remaining reference(s)").
//   - index uniqueness (Bridge, Port and Interface name), against existing
//     rows and within one transaction: "constraint violation: operation would
//     cause rows in the "Bridge" table to have identical values (br0) for
//     index on column "name" ...".
//   - monitor_cond and monitor_cond_since, which libovsdb clients use
//     (updates arrive as update2; monitor_cond_since always answers
//     found=false, so every reconnect is a full resync). Plain "monitor"
//     sends version-1 rows under the update2 method, which no client parses.
//
// Different from ovsdb-server:
//   - a wait with a timeout other than 0 holds the server's transaction lock
//     while it polls every 200ms, so no other client can make it true: it
//     always times out, and without a timeout it hangs the server for good.
//     Always use timeout 0.
//   - wait ignores columns whose value in the wait row is the column's
//     default (0, "", empty set or map): waiting for next_cfg == 0 succeeds
//     whatever next_cfg is. "==" also compares row counts only.
//   - libovsdb compares the sets of a wait row element by element, in order.
//     Server hides this: the rows its transactions read have every set column
//     sorted, so a client that sends sorted sets (package ovsdb does) gets
//     ovsdb-server's answer.
//   - Port.interfaces below its minimum of 1 is not refused (see below), so a
//     client that replaces a port's only interface by delete-then-insert
//     passes here and fails on ovsdb-server ("Attempted to store 0 elements").
//   - select ignores the columns list and leaves out columns holding their
//     default value.
//   - schema constraints are not enforced: Port.interfaces may become empty
//     (min 1), ofport_request may be 70000 (max 65279), enum columns accept
//     any string. ovsdb-server answers "constraint violation".
//   - operations without a table ("comment" as ovs-vsctl sends, "commit",
//     "abort", "assert") fail the whole transaction with `table "" not found
//     in schema`. (Unknown columns are caught by libovsdb's client before
//     sending: "validation failed for the operation".)
//   - no _Server database unless served explicitly (this package does).
//     A client created WithLeaderOnly(true) adds _Server to its databases and
//     Connect fails with "target database _Server not found" on a server
//     without it (try WithoutServerDB); WithLeaderOnly defaults to false.
//   - update notifications are sent synchronously, before the commit and
//     the reply, while the transaction lock is held: a monitoring client
//     that stops reading stalls every transaction. Monitors of closed
//     connections are never removed; the server logs "client error handling
//     update2 rpc" through the standard library's log package for them.
//   - locks (lock, steal, unlock), cancel and monitor_cancel are not
//     implemented.
//
// Client-side facts found on the way: libovsdb panics when the backoff of
// WithReconnect gives up (ReconnectOption never gives up); Close during a
// reconnect attempt does not stop it; without WithReconnect, a connection
// the server dropped leaves Connected() true (CurrentEndpoint() turns empty
// and Transact fails with ErrNotConnected), and DisconnectNotify reaches
// only a receiver already waiting on it.
//
// # The simulated ovs-vswitchd
//
// The simulator itself is product code (ovsplaned's embedded mode runs it)
// and lives in ovsdb/simvswitchd; StartOVSVswitchd starts one on a Server
// for a test.
package ovsdbtest
