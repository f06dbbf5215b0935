package main

import (
	"log/slog"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestAttach(t *testing.T) {
	h := sdktest.NewFakeHost(t, &lan{log: slog.New(slog.DiscardHandler)})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "lan0", Type: "lan",
		Options: map[string]string{"mtu": "9000"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := *a.Ports[0].Interfaces[0].MTURequest; got != 9000 {
		t.Errorf("mtu_request = %d", got)
	}
	if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "lan1", Type: "lan",
		Options: map[string]string{"mtu": "big"}}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("bad mtu: %v", err)
	}
}
