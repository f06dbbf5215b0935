//go:build linux

package flowingest

import (
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/store"
)

// storesExtra adds the stores beyond discard that this build can open.
func storesExtra(testing.TB) map[string]func() store.Store { return nil }
