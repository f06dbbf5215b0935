package ovsdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/cenkalti/rpc2"
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

func TestTransportErrorsMeanNotConnected(t *testing.T) {
	cases := []error{
		&net.OpError{Op: "write", Net: "unix", Err: syscall.EPIPE},
		fmt.Errorf("wrapped: %w", syscall.ECONNRESET),
		io.EOF,
		rpc2.ErrShutdown,
	}
	for _, err := range cases {
		if got := translateTransportErr(err); !errors.Is(got, ErrNotConnected) {
			t.Errorf("translateTransportErr(%v) = %v, want ErrNotConnected", err, got)
		}
	}
	other := errors.New("validation failed for the operation")
	if got := translateTransportErr(other); errors.Is(got, ErrNotConnected) {
		t.Errorf("a non-transport error became ErrNotConnected: %v", got)
	}
}
