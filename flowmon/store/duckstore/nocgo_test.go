//go:build !cgo

package duckstore_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
)

func TestOpenWithoutCgo(t *testing.T) {
	_, err := duckstore.Open(t.Context(), t.TempDir(), duckstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Fatalf("Open without cgo = %v; want an error naming CGO_ENABLED=1", err)
	}
}
