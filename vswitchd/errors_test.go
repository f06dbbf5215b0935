package vswitchd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// TestClassifySaysTheKindOnce: ovsdb's ErrInvalid and ErrNotFound are model's, so classify
// must not wrap them a second time ("invalid argument: … invalid argument …").
func TestClassifySaysTheKindOnce(t *testing.T) {
	for _, kind := range []error{ovsdb.ErrInvalid, ovsdb.ErrNotFound} {
		err := classify("port", "p1", fmt.Errorf("%w: port %q: tag 5000 out of range 0-4095", kind, "p1"))
		if !errors.Is(err, kind) {
			t.Errorf("classify(%v) = %v: lost its kind", kind, err)
		}
		if n := strings.Count(err.Error(), kind.Error()); n != 1 {
			t.Errorf("classify(%v) = %q: says %q %d times, want once", kind, err, kind, n)
		}
	}
	err := classify("port", "p1", fmt.Errorf("%w: row of another owner", ovsdb.ErrNotOwned))
	if !errors.Is(err, model.ErrConflict) || !errors.Is(err, ovsdb.ErrNotOwned) {
		t.Errorf("classify(ErrNotOwned) = %v: want ErrConflict wrapping ErrNotOwned", err)
	}
}
