package noop_test

import (
	"log/slog"
	"testing"

	"github.com/ovsplane/ovsplane/bench/internal/noopplugin/noop"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// TestNoop drives the plugin through sdktest's fake host (the real gRPC shims and the host's
// checks of every answer): attach gives an internal port named like the request, List and
// Detach follow, a configuration with settings is refused.
func TestNoop(t *testing.T) {
	h := sdktest.NewFakeHost(t, noop.New(slog.New(slog.DiscardHandler)))
	if err := h.Configure([]byte(`{"x": 1}`)); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("Configure with a setting: %v, want InvalidArgument", err)
	}
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	req := api.PortRequest{Bridge: "br0", Name: "p0", Type: noop.PortType}
	if problems, err := h.Validate(req); err != nil || len(problems) != 0 {
		t.Fatalf("Validate: %v %v", problems, err)
	}
	a, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Ports) != 1 || a.Ports[0].Name != "p0" || len(a.Ports[0].Interfaces) != 1 ||
		a.Ports[0].Interfaces[0].Name != "p0" || a.Ports[0].Interfaces[0].Type != "internal" || len(a.State) == 0 {
		t.Fatalf("Attach: %+v", a)
	}
	if owned, err := h.List(); err != nil || len(owned) != 1 || owned[0].Name != "p0" {
		t.Fatalf("List after Attach: %+v %v", owned, err)
	}
	if err := h.Detach("br0", "p0"); err != nil {
		t.Fatal(err)
	}
	if owned, err := h.List(); err != nil || len(owned) != 0 {
		t.Fatalf("List after Detach: %+v %v", owned, err)
	}
}
