//go:build linux && cgo

package flowingest

import (
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
)

// storesExtra adds the embedded DuckDB store (a fresh database per arm).
func storesExtra() map[string]func(testing.TB) store.Store {
	return map[string]func(testing.TB) store.Store{
		"duckdb": func(tb testing.TB) store.Store {
			s, err := duckstore.Open(tb.Context(), tb.TempDir(), duckstore.Options{Threads: 2})
			if err != nil {
				tb.Fatalf("duckstore: %v", err)
			}
			return s
		},
	}
}
