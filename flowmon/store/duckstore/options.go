package duckstore

// Limits on input.
const (
	// DefaultFileName is the database file Open uses when Options.FileName is empty.
	DefaultFileName = "flows.duckdb"
	// DefaultMaxBatchRecords is Options.MaxBatchRecords when zero.
	DefaultMaxBatchRecords = 1 << 20
	// MaxBatchIDLen is the longest Batch.ID accepted.
	MaxBatchIDLen = 256
)

// Options tune Open. The zero value is the default.
type Options struct {
	// FileName is the database file's name inside the directory (no path separators);
	// DefaultFileName when empty.
	FileName string
	// MaxBatchRecords bounds one Append's records; DefaultMaxBatchRecords when 0.
	MaxBatchRecords int
	// Threads caps DuckDB's worker threads (its "threads" setting); DuckDB's default (one per
	// CPU) when 0.
	Threads int
}
