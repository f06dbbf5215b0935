package duckstore_test

import (
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/flowmon/store/storetest"
)

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := duckstore.Open(t.Context(), t.TempDir(), duckstore.Options{Threads: 2})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
