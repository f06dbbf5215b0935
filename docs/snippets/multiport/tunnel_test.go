package multiport

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestPatched(t *testing.T) {
	h := sdktest.NewFakeHost(t, &Patched{})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "p0", Type: "patched"})
	if err != nil { // checked as the daemon checks it
		t.Fatal(err)
	}
	if len(a.Bridges) != 1 || len(a.Ports) != 2 || a.Ports[1].Bridge != a.Bridges[0].Name {
		t.Fatalf("attachment %+v", a)
	}
}
