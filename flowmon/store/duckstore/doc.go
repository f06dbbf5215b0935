// Package duckstore is flowmon's embedded flow store: one DuckDB database file in a directory
// the caller owns (the daemon's data dir). It implements store.Store.
//
// # Partitions: one table per UTC day
//
// Each UTC day of a record's End time has its own table, flows_YYYYMMDD. A day column in one
// table was the alternative; tables per day won on both of the store's costs:
//   - Retain is a DROP TABLE per day: DuckDB frees the table's blocks for reuse at once, while a
//     DELETE on one big table only marks rows deleted and leaves row groups to be rewritten.
//   - A query reads only the tables of the days its [From, To) covers (a UNION ALL of them),
//     so old days cost nothing without relying on zone-map pruning.
//
// The set of day tables lives in memory (read from the catalog at Open) and changes only
// under the store's locks, so queries never name a table that is being dropped.
//
// # Writes
//
// Append runs one DuckDB transaction on the store's single writer connection: it checks the
// batch ID in flow_batches, creates the day tables it needs, appends the records through a
// DuckDB Appender per day, records the ID and commits. A failure rolls everything back; a
// repeated ID is a no-op. The appender's row is one reused []driver.Value and addresses are
// sliced from one reused byte arena; duckdb-go's Appender accepts rows only as driver.Values,
// so values above 255 and slices are still boxed (one small allocation each) — the API offers
// no typed path for appenders in v2.20000.0. Measured (perf), that Go side is about a tenth of
// an Append's CPU; the rest is DuckDB's own (WAL, compression at checkpoints, page faults).
// Bigger batches are cheaper per row (10k records ≈ 4.2, 50k ≈ 3.3 CPU-µs/row on a busy
// 2-vCPU VM), and so is Options.Threads = 1 for a store that mostly ingests (≈ 27 % less CPU
// per row than 2 threads), at the cost of single-threaded queries.
//
// Only one process may open the file at a time (DuckDB locks it); within the process the Store
// is the one owner.
//
// Addresses are stored as 4- or 16-byte BLOBs, never with DuckDB's inet extension (it is
// downloaded at run time). See flowmon/store/internal/sqlflow for the column encoding.
//
// DuckDB needs cgo: built with CGO_ENABLED=0 the package still compiles, and Open fails
// saying so (nocgo.go).
package duckstore
