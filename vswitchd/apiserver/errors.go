package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ovsplane/ovsplane/model"
)

// classify returns the status code for a Backend error (see the package doc). ctx is the
// call's context: a Backend that returns some other error after the caller went away still
// reports Canceled or DeadlineExceeded.
func classify(ctx context.Context, err error) connect.Code {
	var ce *connect.Error
	switch {
	case errors.As(err, &ce):
		return ce.Code()
	case errors.Is(err, model.ErrInvalid):
		return connect.CodeInvalidArgument
	case errors.Is(err, model.ErrNotFound):
		return connect.CodeNotFound
	case errors.Is(err, model.ErrConflict):
		return connect.CodeFailedPrecondition
	case errors.Is(err, model.ErrUnavailable):
		return connect.CodeUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	case ctx.Err() != nil:
		return connect.CodeCanceled
	}
	return connect.CodeInternal
}

// RetryDelay is the retry hint of an Unavailable Backend error: toConnect attaches a
// google.rpc.RetryInfo detail with this retry_delay, telling the client that the same request
// may be sent again after that pause (OVSDB, ovs-vswitchd or a plugin did not answer, or the
// daemon is restarting; the API's writes are idempotent). Other codes carry no hint: retrying
// them as is cannot help.
const RetryDelay = time.Second

// toConnect wraps a Backend error with its status code, keeping its message (which names the
// object and the fix); an Unavailable error gets the RetryDelay hint.
func toConnect(ctx context.Context, err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	ce = connect.NewError(classify(ctx, err), err)
	if ce.Code() == connect.CodeUnavailable {
		// A RetryInfo always marshals; a failure would only lose the hint, not the error.
		if d, derr := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryDelay)}); derr == nil {
			ce.AddDetail(d)
		}
	}
	return ce
}

// isStopping reports whether Serve's shutdown has started.
func (s *Server) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// logInterceptor logs each call at debug level: procedure, duration and, for failures, the
// code and message. Failures are the client's to report; the server only records them.
type logInterceptor struct{ log *slog.Logger }

func (l logInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		l.record(ctx, req.Spec().Procedure, start, err)
		return resp, err
	}
}

func (l logInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (l logInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		l.record(ctx, conn.Spec().Procedure, start, err)
		return err
	}
}

func (l logInterceptor) record(ctx context.Context, procedure string, start time.Time, err error) {
	if !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []any{"procedure", procedure, "duration", time.Since(start)}
	if err != nil {
		attrs = append(attrs, "code", connect.CodeOf(err).String(), "error", err)
	}
	l.log.DebugContext(ctx, "api call", attrs...)
}
