package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/plugins/vdpa/internal/vdpaplugin"
)

// switchdevFixture is the ConnectX-6 Dx host in switchdev mode with two VFs.
var switchdevFixture = filepath.Join("..", "..", "vdpa", "testdata", "cx6dx-switchdev.fixture")

// TestBinaryUnderThePluginHost builds the plugin as `make plugins` does, pins it, and has
// ovsplane's plugin host verify, start, configure (simulate mode over the CX-6 Dx switchdev
// fixture) and call the real process: a kernel-mode port attaches with the representor shape
// and /dev/vhost-vdpa-0, a second attach answers the same, health and status say SIMULATION,
// the hw-offload contribution is merged, and detach succeeds (twice).
func TestBinaryUnderThePluginHost(t *testing.T) {
	ctx := t.Context()
	pluginDir := testkit.ShortTempDir(t, "vdpaplugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-vdpa")
	fixtureFile, err := filepath.Abs(switchdevFixture)
	if err != nil {
		t.Fatal(err)
	}

	dataDir := testkit.ShortTempDir(t, "vdpadata") // the host's unix sockets live below
	logs := &testkit.LogBuffer{}
	h, err := host.New(host.Options{
		PluginDir:      pluginDir,
		DataDir:        dataDir,
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		Environ:        os.Environ(),
		HealthInterval: 200 * time.Millisecond,
		Facts:          func(context.Context) (api.HostFacts, error) { return sdktest.DefaultFacts(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	err = h.Start(ctx, []model.Plugin{{Name: "vdpa", Path: "ovsplane-plugin-vdpa", SHA256: sum,
		Config: map[string]any{"simulate": fixtureFile}}})
	if err != nil {
		t.Fatal(err)
	}
	st := h.Plugins()[0]
	if st.State != host.StateRunning || st.Version != vdpaplugin.Version {
		t.Fatalf("plugin status %+v", st)
	}
	pp, name, ok := h.PortProvider("vdpa")
	if !ok || name != "vdpa" {
		t.Fatalf("PortProvider(vdpa) = %v %q %v", pp, name, ok)
	}
	req := api.PortRequest{Bridge: "br-vdpa", Name: "vm1", Type: "vdpa",
		Options: map[string]string{"pf": "0000:65:00.0", "vf": "1", "mac": "02:11:22:33:44:55", "max-vqp": "4", "mode": "kernel"}}
	if problems, err := pp.Validate(ctx, req); err != nil || len(problems) != 0 {
		t.Fatalf("Validate: %+v %v", problems, err)
	}
	a, err := pp.Attach(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.ValidateAttachment(sdktest.DefaultFacts(), req, a); err != nil {
		t.Fatal(err)
	}
	ifc := a.Ports[0].Interfaces[0]
	if ifc.Type != "dpdk" || ifc.Options["dpdk-devargs"] != "0000:65:00.0,representor=vf1" || a.Endpoints["vhost-vdpa"] != "/dev/vhost-vdpa-0" {
		t.Errorf("attachment %+v", a)
	}
	if !strings.HasPrefix(a.Status, "SIMULATED") || !strings.Contains(a.Status, "ovs-vswitchd restart required") {
		t.Errorf("status %q", a.Status)
	}
	req.State = a.State
	if again, err := pp.Attach(ctx, req); err != nil || string(again.State) != string(a.State) || again.Status != a.Status {
		t.Errorf("second attach: %+v, %v", again, err)
	}
	if gc := h.GlobalConfig(ctx, map[string]string{}); gc.OtherConfig["hw-offload"] != "true" || !slices.Equal(gc.Owners["hw-offload"], []string{"vdpa"}) {
		t.Errorf("merged global config %+v", gc)
	}
	if err := pp.Detach(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := pp.Detach(ctx, req); err != nil {
		t.Errorf("second detach: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if health := h.Plugins()[0].Health; health.State != api.HealthOK || !strings.Contains(health.Message, "SIMULATION") || !strings.Contains(health.Message, "0 vdpa ports") {
			return errors.New("health " + health.Message)
		}
		return nil
	})
	if !strings.Contains(logs.String(), "NO HARDWARE IS TOUCHED") {
		t.Errorf("the simulation warning is not in the daemon's log:\n%s", logs.String())
	}
}
