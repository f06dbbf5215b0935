package testkit

import (
	"log/slog"
	"strings"
	"testing"
)

// TestLog is an io.Writer that logs every write into the test's log, trimmed of surrounding
// white space: a logger's output, shown with the test's.
type TestLog struct{ TB testing.TB }

// Write logs p into the test's log.
func (w TestLog) Write(p []byte) (int, error) {
	w.TB.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Logger returns a slog text logger at level that logs into tb's log (see TestLog).
func Logger(tb testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(TestLog{tb}, &slog.HandlerOptions{Level: level}))
}
