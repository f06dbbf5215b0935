package wire_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// stub is a port provider whose Attach returns err, or blocks until ctx ends when hang is set.
type stub struct {
	err  error
	hang bool
}

func (s *stub) Info(context.Context) (api.Info, error) { return api.Info{Name: "stub"}, nil }
func (s *stub) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}
func (s *stub) Configure(context.Context, api.ConfigureRequest) error { return s.err }
func (s *stub) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}
func (s *stub) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { return nil, s.err }
func (s *stub) Attach(ctx context.Context, _ api.PortRequest) (api.Attachment, error) {
	if s.hang {
		<-ctx.Done()
		return api.Attachment{}, ctx.Err()
	}
	return api.Attachment{}, s.err
}
func (s *stub) Detach(context.Context, api.PortRequest) error { return s.err }
func (s *stub) List(context.Context) ([]api.OwnedPort, error) { return nil, s.err }

func dispense[T any](t *testing.T, impl api.Plugin, name string) T {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, wire.ServerPluginMap(impl))
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(name)
	if err != nil {
		t.Fatalf("dispense %s: %v", name, err)
	}
	return raw.(T)
}

func TestShimErrorCodes(t *testing.T) {
	for _, code := range []api.Code{api.InvalidArgument, api.NotFound, api.Unavailable, api.FailedPrecondition,
		api.AlreadyExists, api.Internal, api.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			sent := &api.Error{Code: code, Message: "port p0: broken", Problems: []api.Problem{{Field: "options.x", Message: "bad"}}}
			pp := dispense[api.PortProvider](t, &stub{err: sent}, wire.NamePortProvider)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := pp.Attach(ctx, api.PortRequest{Name: "p0"})
			var got *api.Error
			if !errors.As(err, &got) {
				t.Fatalf("Attach: %T %v, want *api.Error", err, err)
			}
			if got.Code != code || got.Message != sent.Message || len(got.Problems) != 1 || got.Problems[0] != sent.Problems[0] {
				t.Errorf("Attach error = %+v, want %+v", got, sent)
			}
		})
	}
}

func TestShimPlainErrorIsInternal(t *testing.T) {
	pp := dispense[api.PortProvider](t, &stub{err: errors.New("boom")}, wire.NamePortProvider)
	err := pp.Detach(t.Context(), api.PortRequest{})
	if api.CodeOf(err) != api.Internal || !errors.Is(err, api.ErrInternal) {
		t.Fatalf("Detach: %v, want code internal", err)
	}
}

func TestShimDeadline(t *testing.T) {
	pp := dispense[api.PortProvider](t, &stub{hang: true}, wire.NamePortProvider)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := pp.Attach(ctx, api.PortRequest{})
	if api.CodeOf(err) != api.DeadlineExceeded {
		t.Fatalf("Attach of a hanging plugin: %v, want deadline_exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Attach returned after %v", d)
	}
}

func TestNegotiateAPIVersion(t *testing.T) {
	if v, err := wire.NegotiateAPIVersion([]string{"1.0"}); err != nil || v != "1.0" {
		t.Errorf("NegotiateAPIVersion([1.0]) = %q, %v", v, err)
	}
	if v, err := wire.NegotiateAPIVersion(nil); err != nil || v != "1.0" {
		t.Errorf("NegotiateAPIVersion(nil) = %q, %v", v, err)
	}
	_, err := wire.NegotiateAPIVersion([]string{"2.0", "1.7"})
	if api.CodeOf(err) != api.InvalidArgument || !strings.Contains(err.Error(), "[2.0 1.7]") || !strings.Contains(err.Error(), "[1.0]") {
		t.Errorf("NegotiateAPIVersion([2.0 1.7]) = %v, want both lists named", err)
	}
	if _, err := wire.ClientPluginSet(2); err == nil || !wire.VersionMismatch(err) {
		t.Errorf("ClientPluginSet(2) = %v, want a version mismatch", err)
	}
}
