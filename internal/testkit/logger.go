package testkit

import (
	"io"
	"log/slog"
	"strings"
	"sync"
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

// Output returns tb.Output() for a logger that goroutines may still use as the test ends (a
// server's handler finishing a request while the server shuts down): writes made after tb's
// cleanups have begun to run past this one are dropped instead of racing with the testing
// package's end of the test. Call it before starting what logs, so its cleanup runs after
// the cleanups that stop those goroutines.
func Output(tb testing.TB) io.Writer {
	g := &lateSafeOutput{w: tb.Output()}
	tb.Cleanup(func() {
		g.mu.Lock()
		g.done = true
		g.mu.Unlock()
	})
	return g
}

type lateSafeOutput struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (o *lateSafeOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return len(p), nil
	}
	return o.w.Write(p)
}
