//go:build linux && !cgo

package flowingest

import (
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/store"
)

// storesExtra adds the stores beyond discard that this build can open: none without cgo
// (DuckDB needs it).
func storesExtra() map[string]func(testing.TB) store.Store { return nil }
