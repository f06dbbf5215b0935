package store

import (
	"context"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
)

// Batch is the unit a store ingests: records stored together, at most once. ID is unique per
// batch for the lifetime of the store's data (the collector builds it from its instance id and a
// counter); a store that already holds a batch with this ID must accept it again without storing
// its records twice, so a writer may retry a batch whose commit it could not confirm.
type Batch struct {
	ID      string
	Records []flow.Record
}

// Store keeps flow records and answers queries over them. Implementations are safe for
// concurrent use. Append does not keep Records after it returns (the caller reuses the slice).
type Store interface {
	// Append stores b atomically: all its records or none. Retrying a batch that was stored
	// is a no-op (see Batch).
	Append(ctx context.Context, b Batch) error
	// Query answers q, which the caller has validated (query.Query.Validate).
	Query(ctx context.Context, q query.Query) (query.Result, error)
	// Retain deletes every day partition whose day (UTC) ends at or before cutoff; it returns
	// how many partitions it dropped.
	Retain(ctx context.Context, cutoff time.Time) (int, error)
	// Close releases the store's resources; pending Appends are not lost on a clean Close.
	Close() error
}
