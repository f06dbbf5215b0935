package wire

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ovsplane/ovsplane/plugins/api"
	pluginv1 "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// toStatus turns an error returned by a plugin implementation into the gRPC status error the
// server shim sends.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var e *api.Error
	msg := err.Error()
	var problems []api.Problem
	if errors.As(err, &e) {
		msg, problems = e.Message, e.Problems
	}
	st := status.New(codes.Code(api.CodeOf(err)), msg)
	if len(problems) > 0 {
		if withDetails, derr := st.WithDetails(&pluginv1.ErrorDetail{Problems: problemsToProto(problems)}); derr == nil {
			st = withDetails
		}
	}
	return st.Err()
}

// fromStatus turns an error returned by a generated client stub into an *Error. A call that
// failed because the caller's context ended gets the context's code even when the transport
// reported it differently.
func fromStatus(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return api.Errorf(api.CodeOf(err), "%s: %w", method, err)
	}
	e := &api.Error{Code: api.Code(st.Code()), Message: st.Message()}
	if ctxErr := ctx.Err(); ctxErr != nil && e.Code != api.DeadlineExceeded && e.Code != api.Canceled {
		e.Code = api.CodeOf(ctxErr)
	}
	for _, d := range st.Details() {
		if detail, ok := d.(*pluginv1.ErrorDetail); ok {
			e.Problems = append(e.Problems, problemsFromProto(detail.GetProblems())...)
		}
	}
	return e
}
