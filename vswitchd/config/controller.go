package config

import (
	"fmt"
	"slices"

	"github.com/ovsplane/ovsplane/internal/oftarget"
)

// checkController checks targets[i], a controller target whose connection method is known:
// its address (oftarget.Validate: bounded, no control characters, a valid host, port or path),
// and that no earlier entry lists it already.
func checkController(targets []string, i int) error {
	if err := oftarget.Validate(targets[i]); err != nil {
		return err
	}
	if j := slices.Index(targets[:i], targets[i]); j >= 0 {
		return fmt.Errorf("duplicate controller target %q (also controller[%d]); list each target once", targets[i], j)
	}
	return nil
}
