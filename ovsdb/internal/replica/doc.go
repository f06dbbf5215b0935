// Package replica holds the daemon's copy of the monitored Open_vSwitch tables in a compact
// form (docs/design/compact-read-path.md §2–§3): the rows of one monitor_cond reply and the
// update2 notifications after it, read token by token from a jsontext.Decoder. It does no I/O
// of its own; the connection (ovsdb/internal/jsonrpc) positions the decoder and calls
// [Store.ReadTableUpdates] for each table-updates object it meets.
//
// # Layout
//
// Port and Interface rows, the only tables with thousands of rows, are hand-written compact
// structs: uuids as [16]byte, a row's string maps in one sorted []string of key/value pairs,
// short strings shared through a bounded interner, optional integers as int32 with presence
// bits, and the rarely set columns behind one pointer that is nil for a plain port. A Bridge
// keeps its ports as a sorted [][16]byte and its other columns as a [vswitch.Bridge]. The nine
// small tables are kept as the generated vswitch structs, built with libovsdb's model and
// updates packages.
//
// # Consistency
//
// Rows are immutable: an update builds new rows and swaps them in under the store's write
// lock, so a value a reader got from the store never changes. A message is read completely
// into a [Pending] before any of it becomes visible; [Pending.Commit] applies it at once or
// not at all. Readers take the read lock only.
//
// # Columns
//
// The store holds the columns the daemon monitors (ovsdb/client.go, monitoredColumns) and
// nothing else: a table or column it does not know is skipped, not an error.
//
// # Empty values
//
// A materialised row has nil, never empty, maps and slices for empty map and set columns (what
// libovsdb's cache has for a column ovsdb-server omitted as default, and after a modify that
// emptied it). Set columns are materialised sorted (libovsdb's order is arbitrary).
package replica
