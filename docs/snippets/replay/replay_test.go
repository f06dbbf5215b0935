package replay

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestSlotsSurviveARestart(t *testing.T) {
	h := sdktest.NewFakeHost(t, &Slots{})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: name, Type: "slot"}); err != nil {
			t.Fatal(err)
		}
	}
	restarted := &Slots{}
	if err := h.Restart(restarted); err != nil { // replays a and b with Replay and their State
		t.Fatal(err)
	}
	a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "c", Type: "slot"})
	if err != nil || a.Ports[0].ExternalIDs["slot"] != "2" {
		t.Fatalf("a new port after the restart: %+v, %v; want slot 2", a, err)
	}
	if st, _ := h.State("br0", "b"); string(st) != `{"slot":1}` {
		t.Fatalf("b's state after the replay: %s", st)
	}
}
