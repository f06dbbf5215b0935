package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

// TestLogStatusesSummarises (issue 12 item 2): a change of 100,000 statuses logs the objects in
// error (at most limits.MaxLoggedObjects) and one summary line, not a line per object; a
// small change still logs a line per object.
func TestLogStatusesSummarises(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	changed := make([]model.Status, 100000)
	for i := range changed {
		changed[i] = model.Status{Kind: model.KindInterface, Name: fmt.Sprint("m", i), State: model.StateReady, Ofport: i + 1}
	}
	for i := range 3 {
		changed[i*1000].State, changed[i*1000].Error = model.StateError, "could not open network device"
	}
	logStatuses(log, changed)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], "objects=100000") || !strings.Contains(lines[3], "ready=99997") ||
		!strings.Contains(lines[3], "error=3") || !strings.Contains(lines[0], "object=interface/m0") {
		t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines[:min(len(lines), 30)], "\n"))
	}
	buf.Reset()
	logStatuses(log, changed[1:limits.MaxLoggedObjects+1])
	if n := strings.Count(buf.String(), "\n"); n != limits.MaxLoggedObjects {
		t.Fatalf("%d lines for %d objects, want one each", n, limits.MaxLoggedObjects)
	}
}
