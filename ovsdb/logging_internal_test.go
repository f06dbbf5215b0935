package ovsdb

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestCapLevelLowersErrorsToWarnings(t *testing.T) {
	var buf bytes.Buffer
	base := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	log := slog.New(capLevel{h: base, max: slog.LevelWarn}).With("component", "libovsdb")
	log.Error("failed to reconnect")
	log.Info("connected")
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
		t.Errorf("error record not lowered to a warning: %q", out)
	}
	if strings.Contains(out, "connected\n") && strings.Contains(out, "level=INFO") {
		t.Errorf("info record passed a warn-level handler: %q", out)
	}
	if !(capLevel{h: base, max: slog.LevelWarn}).Enabled(context.Background(), slog.LevelError) {
		t.Error("errors must stay enabled (as warnings)")
	}
}
