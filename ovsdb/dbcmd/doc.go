// Package dbcmd is the OVSDB engine under vsctl: a lean JSON-RPC client (unix:, tcp:, ssl:
// remotes, clustered databases with --leader-only), the database schema as vsctl's value layer
// (internal/cli) sees it, and DB, one invocation's view of the database. The daemon uses only
// its connection, to ask who holds ovs-vswitchd's lock (Conn.LockHeld); it writes through
// package ovsdb.
//
// DB reads lazily: nothing is downloaded at connect time. A command asks for the rows it needs
// (by a column's value, by UUID, or a whole table with only some columns) and DB fetches them
// with "select" operations, keeping what it fetched. Writes are made to the rows in memory and
// sent by Commit as one transaction: inserts, "update" for scalar columns, "mutate" for changes
// to sets and maps (so a bridge's port set is never rewritten to add one port), deletes, and a
// "wait" for every value a decision depended on (Verify, VerifyAbsent), so that a concurrent
// writer makes the transaction fail with TryAgain instead of being overwritten. That is what
// makes a vsctl invocation cost the same on a switch with 20 ports or 20,000.
//
// Within one invocation a DB behaves like one consistent database: rows inserted, changed or
// deleted by earlier commands are seen as such by later lookups. Rows are not re-read once
// fetched, so an invocation works on the snapshot it read (as ovs-vsctl does) and relies on the
// waits to detect that the snapshot went stale.
//
// Everything here is single-goroutine: a DB and its Rows are used by one invocation at a time.
package dbcmd
