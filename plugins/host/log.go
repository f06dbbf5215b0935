package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// levelTrace is hclog's Trace level on the slog scale (below Debug).
const levelTrace = slog.LevelDebug - 4

// slogHCLog is the hclog.Logger go-plugin logs through (its own messages and the plugin's
// stderr, which it parses as hclog JSON lines); it writes to the daemon's *slog.Logger, so
// every line carries plugin=<name>. Untagged stderr lines, which go-plugin logs at Debug, are
// raised to Info under the "stderr" logger: a plugin writing plain text to its stderr means it
// to be read.
type slogHCLog struct {
	l      *slog.Logger
	name   string
	stderr bool // the logger go-plugin reads the plugin's stderr with
	args   []any
}

var _ hclog.Logger = (*slogHCLog)(nil)

func newHCLog(l *slog.Logger) *slogHCLog { return &slogHCLog{l: l} }

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *slogHCLog) Log(level hclog.Level, msg string, args ...any) {
	lvl := toSlog(level)
	if h.stderr && level == hclog.Debug && len(args) == 0 && !strings.HasPrefix(msg, "[DEBUG]") {
		lvl = slog.LevelInfo
	}
	if !h.l.Enabled(context.Background(), lvl) {
		return
	}
	attrs := make([]any, 0, len(h.args)+len(args)+2)
	if h.name != "" {
		attrs = append(attrs, slog.String("logger", h.name))
	}
	attrs = append(attrs, h.args...)
	attrs = append(attrs, pairs(args)...)
	h.l.Log(context.Background(), lvl, msg, attrs...)
}

// pairs turns hclog's alternating keys and values into slog attributes, dropping hclog's
// own timestamp (slog adds its own) and naming a dangling value.
func pairs(args []any) []any {
	out := make([]any, 0, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		key := fmt.Sprint(args[i])
		if i+1 == len(args) {
			out = append(out, slog.Any("EXTRA_VALUE", args[i]))
			break
		}
		if key == "timestamp" {
			continue
		}
		out = append(out, slog.Any(key, args[i+1]))
	}
	return out
}

func (h *slogHCLog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *slogHCLog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *slogHCLog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *slogHCLog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *slogHCLog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *slogHCLog) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }

func (h *slogHCLog) IsTrace() bool              { return h.enabled(levelTrace) }
func (h *slogHCLog) IsDebug() bool              { return h.enabled(slog.LevelDebug) }
func (h *slogHCLog) IsInfo() bool               { return h.enabled(slog.LevelInfo) }
func (h *slogHCLog) IsWarn() bool               { return h.enabled(slog.LevelWarn) }
func (h *slogHCLog) IsError() bool              { return h.enabled(slog.LevelError) }
func (h *slogHCLog) ImpliedArgs() []interface{} { return h.args }
func (h *slogHCLog) Name() string               { return h.name }

func (h *slogHCLog) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), pairs(args)...)
	return &c
}

// Named returns a child logger. go-plugin names the logger it reads the plugin's stderr with
// after the binary's base name and its stdio logger "stdio"; a fixed name ("stderr") keeps the
// attribute predictable.
func (h *slogHCLog) Named(name string) hclog.Logger {
	c := *h
	c.stderr = name != "stdio"
	c.name = "stderr"
	if !c.stderr {
		c.name = name
	}
	return &c
}

func (h *slogHCLog) ResetNamed(name string) hclog.Logger { return h.Named(name) }

// SetLevel does nothing: the slog handler decides.
func (h *slogHCLog) SetLevel(hclog.Level) {}

// GetLevel returns the lowest level the slog handler keeps.
func (h *slogHCLog) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(toSlog(l)) {
			return l
		}
	}
	return hclog.Off
}

func (h *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *slogHCLog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{log: func(line string) { h.Info(line) }}
}

// lineWriter calls log once per complete line written to it; a partial last line waits for
// its newline (or is dropped when longer than maxLine, after being logged in pieces).
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	log func(line string)
}

const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.log(string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

// streamLogger returns the writer for the plugin's synced stdout or stderr (what it writes to
// os.Stdout/os.Stderr after Serve, which go-plugin streams over gRPC): one Info record per
// line, with stream=<stream>.
func streamLogger(l *slog.Logger, stream string) io.Writer {
	return &lineWriter{log: func(line string) {
		l.Info(line, slog.String("stream", stream))
	}}
}
