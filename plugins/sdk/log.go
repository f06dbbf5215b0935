package sdk

import (
	"io"
	"log/slog"
	"time"
)

// NewLogger returns a logger writing one JSON object per line to w (the plugin's standard
// error) in hclog's format, which the host parses into structured records of its own log,
// keeping the level, the message and every attribute, under the plugin's name.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: hclogAttr}))
}

// hclogTime is the timestamp layout go-plugin's host parses ("@timestamp").
const hclogTime = "2006-01-02T15:04:05.000000Z07:00"

// hclogAttr renames slog's built-in keys to hclog's: @timestamp, @level, @message.
func hclogAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if t, ok := a.Value.Any().(time.Time); ok {
			return slog.String("@timestamp", t.Format(hclogTime))
		}
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			return slog.String("@level", hclogLevel(l))
		}
	case slog.MessageKey:
		return slog.String("@message", a.Value.String())
	}
	return a
}

func hclogLevel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}
