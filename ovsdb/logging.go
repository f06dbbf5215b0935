package ovsdb

import (
	"context"
	"log/slog"
)

// capLevel is a slog.Handler that lowers records above max to max. libovsdb reports every failed
// reconnection attempt as an error; for a client that reconnects by design those are warnings,
// and the caller sees real failures as returned errors.
type capLevel struct {
	h   slog.Handler
	max slog.Level
}

func (c capLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return c.h.Enabled(ctx, min(l, c.max))
}

func (c capLevel) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > c.max {
		r.Level = c.max
	}
	return c.h.Handle(ctx, r)
}

func (c capLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return capLevel{h: c.h.WithAttrs(attrs), max: c.max}
}

func (c capLevel) WithGroup(name string) slog.Handler {
	return capLevel{h: c.h.WithGroup(name), max: c.max}
}
