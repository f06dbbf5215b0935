//go:build !cgo

package duckstore

import (
	"context"
	"errors"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
)

// errNoCgo returns what every call returns in a build without cgo.
func errNoCgo() error {
	return errors.New("duckstore: this binary was built without cgo, which DuckDB needs: rebuild with CGO_ENABLED=1 and a C compiler")
}

// Store is the DuckDB flow store; in this build (no cgo) it cannot be opened.
type Store struct{}

var _ store.Store = (*Store)(nil)

// Open fails: DuckDB needs cgo.
func Open(context.Context, string, Options) (*Store, error) { return nil, errNoCgo() }

// Days returns nothing: the store cannot be opened in this build.
func (*Store) Days() []time.Time { return nil }

// Append fails: DuckDB needs cgo.
func (*Store) Append(context.Context, store.Batch) error { return errNoCgo() }

// Query fails: DuckDB needs cgo.
func (*Store) Query(context.Context, query.Query) (query.Result, error) {
	return query.Result{}, errNoCgo()
}

// Retain fails: DuckDB needs cgo.
func (*Store) Retain(context.Context, time.Time) (int, error) { return 0, errNoCgo() }

// Close does nothing.
func (*Store) Close() error { return nil }
