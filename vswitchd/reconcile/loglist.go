package reconcile

import (
	"fmt"

	"github.com/ovsplane/ovsplane/model/limits"
)

// logList returns names for a log attribute: all of them up to limits.MaxLoggedObjects, else
// the first ones and a count of the rest, so a pass over 100,000 objects logs one short line.
func logList(names []string) []string {
	if len(names) <= limits.MaxLoggedObjects {
		return names
	}
	out := append([]string(nil), names[:limits.MaxLoggedObjects]...)
	return append(out, fmt.Sprintf("… and %d more", len(names)-limits.MaxLoggedObjects))
}
