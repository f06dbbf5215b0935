package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// TestFakeHost plays the daemon in-process (sdktest), through the real gRPC conversions and the
// daemon's checks on every answer.
func TestFakeHost(t *testing.T) {
	h := sdktest.NewFakeHost(t, &plugin{log: slog.New(slog.DiscardHandler)})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	problems, err := h.Validate(api.PortRequest{Bridge: "br0", Name: "s0", Type: PortType,
		Options: map[string]string{"mtu": "20", "tag": "5000"}})
	if err != nil || len(problems) != 2 || problems[0].Field != "options.mtu" || problems[1].Field != "options.tag" {
		t.Fatalf("Validate = %v, %v: want problems naming options.mtu and options.tag", problems, err)
	}
	req := api.PortRequest{Bridge: "br0", Name: "s0", Type: PortType, Options: map[string]string{"mtu": "9000", "tag": "10"}}
	a, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	ifc := a.Ports[0].Interfaces[0]
	if ifc.Type != "internal" || *ifc.MTURequest != 9000 || *a.Ports[0].Tag != 10 {
		t.Fatalf("Attach = %+v", a)
	}
	if err := h.Restart(&plugin{log: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("replay after a restart: %v", err)
	}
	if err := h.Detach("br0", "s0"); err != nil {
		t.Fatal(err)
	}
}

// TestPluginProcess builds the plugin and has ovsplane's plugin host verify, start, configure
// and call the binary, as ovsplaned does.
func TestPluginProcess(t *testing.T) {
	dir, err := os.MkdirTemp("", "sample") // short: the host's unix sockets live below
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pluginDir := filepath.Join(dir, "plugins")
	bin := filepath.Join(pluginDir, "ovsplane-plugin-sample")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	h, err := host.New(host.Options{PluginDir: pluginDir, DataDir: dir, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	// t.Context() is already cancelled when cleanups run: Close would return at once and leave
	// the plugin process stopping (and logging through t) after the test.
	t.Cleanup(func() { _ = h.Close(context.WithoutCancel(t.Context())) })
	err = h.Start(t.Context(), []model.Plugin{{Name: Name, Path: "ovsplane-plugin-sample", SHA256: hex.EncodeToString(sum[:])}})
	if err != nil {
		t.Fatal(err)
	}
	if st := h.Plugins()[0]; st.State != host.StateRunning || st.Version != Version {
		t.Fatalf("plugin status %+v, want running %s", st, Version)
	}
	pp, _, ok := h.PortProvider(PortType)
	if !ok {
		t.Fatalf("no provider of port type %s", PortType)
	}
	a, err := pp.Attach(t.Context(), api.PortRequest{Bridge: "br0", Name: "s1", Type: PortType})
	if err != nil || *a.Ports[0].Interfaces[0].MTURequest != 1500 {
		t.Fatalf("Attach through the plugin process = %+v, %v", a, err)
	}
	_, err = pp.Attach(t.Context(), api.PortRequest{Bridge: "br0", Name: "s1", Type: PortType, Options: map[string]string{"mtu": "x"}})
	if api.CodeOf(err) != api.InvalidArgument {
		t.Fatalf("Attach with a bad mtu = %v, want invalid_argument", err)
	}
}
