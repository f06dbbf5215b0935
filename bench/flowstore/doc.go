// Package flowstore benchmarks the flow stores side by side, for the choice of flowmon's
// embedded default: Append throughput (rows/s, in collector-sized batches) and a top-N query
// over what was appended, for DuckDB (duckstore), PostgreSQL (pgstore on a private lab server,
// also with pgx's CopyFromSource for comparison with pgstore's own binary COPY encoder) and
// SQLite (modernc.org/sqlite, pure Go; a minimal table written here, test code only).
//
// Run: go test -run '^$' -bench . -benchtime 1x ./bench/flowstore/ (PostgreSQL needs Debian's
// postgresql-15). FLOWSTORE_ROWS sets the rows appended per store (default 1,000,000).
package flowstore
