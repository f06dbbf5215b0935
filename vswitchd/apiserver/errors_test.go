package apiserver_test

import (
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
)

// TestUnavailableRetryHint: an Unavailable error carries the typed retry hint, a
// google.rpc.RetryInfo detail of apiserver.RetryDelay, over gRPC and over Connect JSON; errors
// that a retry cannot cure carry none.
func TestUnavailableRetryHint(t *testing.T) {
	d, c := startSeeded(t)
	for _, tc := range []struct {
		err  error
		want connect.Code
		hint bool
	}{
		{fmt.Errorf("port %q: not connected to OVSDB (reconnecting): %w", "p1", model.ErrUnavailable), connect.CodeUnavailable, true},
		{fmt.Errorf("port %q: %w", "p1", model.ErrInvalid), connect.CodeInvalidArgument, false},
		{fmt.Errorf("port %q: %w", "p1", model.ErrConflict), connect.CodeFailedPrecondition, false},
		{errors.New(`port "p1": something odd`), connect.CodeInternal, false},
	} {
		t.Run(tc.want.String(), func(t *testing.T) {
			d.fake.SetError(tc.err)
			defer d.fake.SetError(nil)
			_, err := c.ApplyPort(t.Context(), connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0",
				Port: &v1.Port{Name: "p1", Interfaces: []*v1.Interface{{Name: "p1"}}}}))
			if connect.CodeOf(err) != tc.want {
				t.Fatalf("ApplyPort with backend error %q: %v, want %v", tc.err, err, tc.want)
			}
			var ce *connect.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *connect.Error", err)
			}
			var hints []*errdetails.RetryInfo
			for _, detail := range ce.Details() {
				v, derr := detail.Value()
				if derr != nil {
					t.Errorf("detail %s: %v", detail.Type(), derr)
				}
				if ri, ok := v.(*errdetails.RetryInfo); ok {
					hints = append(hints, ri)
				}
			}
			switch {
			case !tc.hint && len(hints) > 0:
				t.Errorf("%v error with a retry hint %v", tc.want, hints)
			case tc.hint && (len(hints) != 1 || hints[0].GetRetryDelay().AsDuration() != apiserver.RetryDelay):
				t.Errorf("retry hints %v, want one RetryInfo of %v", hints, apiserver.RetryDelay)
			}
			if ce.Message() != tc.err.Error() {
				t.Errorf("message %q, want the backend's %q", ce.Message(), tc.err.Error())
			}
			// Connect JSON (curl): the detail is in the body.
			_, m, raw := postJSON(t, d.sock, "GetPort", `{"name":"p1"}`)
			details, _ := m["details"].([]any)
			var types []any
			for _, x := range details {
				if dm, ok := x.(map[string]any); ok {
					types = append(types, dm["type"])
				}
			}
			if got := len(types) == 1 && types[0] == "google.rpc.RetryInfo"; got != tc.hint {
				t.Errorf("Connect JSON error details %v, want a google.rpc.RetryInfo: %v:\n%s", types, tc.hint, raw)
			}
		})
	}
}
