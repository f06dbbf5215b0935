package main

import (
	"log/slog"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

// logStatuses logs one change of statuses: a line per object when there are at most
// limits.MaxLoggedObjects of them; else the objects in error first, up to that bound, then one
// summary line counting the objects by state, so that a port with 64 interfaces or a
// configuration of 10,000 ports logs a few lines per pass, not one per object.
func logStatuses(log *slog.Logger, changed []model.Status) {
	if len(changed) <= limits.MaxLoggedObjects {
		for _, s := range changed {
			logStatus(log, s)
		}
		return
	}
	counts := map[string]int{}
	listed := 0
	for _, s := range changed {
		state := string(s.State)
		if state == "" {
			state = "removed"
		}
		counts[state]++
		if s.State == model.StateError && listed < limits.MaxLoggedObjects {
			logStatus(log, s)
			listed++
		}
	}
	attrs := []any{"objects", len(changed), "listed", listed}
	for _, state := range []string{string(model.StateReady), string(model.StatePending), string(model.StateError), "removed"} {
		if n := counts[state]; n > 0 {
			attrs = append(attrs, state, n)
		}
	}
	log.Info("status of many objects changed (summary; errors listed above; vsctl status shows each)", attrs...)
}
