package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/flowmon/store/pgstore"
	"github.com/ovsplane/ovsplane/plugins/flowmon/internal/flowmonplugin"
)

// openStore opens a collector job's store: DuckDB (cgo) for embedded, PostgreSQL for postgres.
func openStore(ctx context.Context, spec flowmonplugin.StoreSpec) (store.Store, error) {
	switch spec.Kind {
	case flowmonplugin.StoreEmbedded:
		dir := filepath.Dir(spec.Path)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("the store's directory: %w", err)
		}
		return duckstore.Open(ctx, dir, duckstore.Options{FileName: filepath.Base(spec.Path)})
	case flowmonplugin.StorePostgres:
		return pgstore.Open(ctx, spec.DSN, pgstore.Options{})
	}
	return nil, fmt.Errorf("store kind %q: want embedded or postgres", spec.Kind)
}
