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

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestBinaryUnderThePluginHost builds the plugin as `make plugins` does, installs it in a
// plugin dir with its SHA-256 pin, and has ovsplane's plugin host verify, start, configure
// and call it, as ovsplaned will: a port attached through the real process creates a veth pair
// in the namespace named by the host_netns setting (a throwaway one), the contribution is
// merged, and Detach removes the pair.
func TestBinaryUnderThePluginHost(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	ctx := t.Context()
	pluginDir := testkit.ShortTempDir(t, "vethplugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-veth")
	dataDir := testkit.ShortTempDir(t, "vethdata") // the host's unix sockets live below
	hostNS := lab.NewNetns(t)
	h, err := host.New(host.Options{
		PluginDir: pluginDir,
		DataDir:   dataDir,
		Logger:    testkit.Logger(t, slog.LevelDebug),
		Environ:   os.Environ(),
		// Frequent health checks, so the test sees a report soon.
		HealthInterval: 200 * time.Millisecond,
		Facts: func(ctx context.Context) (api.HostFacts, error) {
			return sdktest.DefaultFacts(), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// t.Context() is already cancelled when cleanups run: Close would return at once and leave
	// the plugin process stopping (and logging through t) after the test.
	t.Cleanup(func() { _ = h.Close(context.WithoutCancel(t.Context())) })
	err = h.Start(ctx, []model.Plugin{{
		Name: "veth", Path: "ovsplane-plugin-veth", SHA256: sum,
		Config: map[string]any{"host_netns": hostNS.Name, "stats_update_interval_ms": int64(10000)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := h.Plugins()[0]
	if st.State != host.StateRunning || st.Version != vethplugin.Version || len(st.Capabilities) != 5 {
		t.Fatalf("plugin status %+v; want running with every capability", st)
	}

	pp, name, ok := h.PortProvider("veth")
	if !ok || name != "veth" {
		t.Fatalf("PortProvider(veth) = %v %q %v", pp, name, ok)
	}
	ns := uniqueNetns(t, "h")
	req := api.PortRequest{Bridge: "br0", Name: "vh1", Type: "veth", Options: map[string]string{"netns": ns, "address": "10.97.0.1/24"}}
	a, err := pp.Attach(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.ValidateAttachment(sdktest.DefaultFacts(), req, a); err != nil {
		t.Fatal(err)
	}
	if out := hostNS.Run(t, "ip", "-br", "link", "show", "dev", "vh1"); !strings.HasPrefix(out, "vh1@") {
		t.Errorf("host end in %s: %q", hostNS.Name, out)
	}
	if out := (&lab.Netns{Name: ns}).Run(t, "ip", "-br", "addr", "show", "dev", "vh1-p"); !strings.Contains(out, "10.97.0.1/24") {
		t.Errorf("peer end in %s: %q", ns, out)
	}

	gc := h.GlobalConfig(ctx, map[string]string{})
	if gc.OtherConfig["stats-update-interval"] != "10000" || !slices.Equal(gc.Owners["stats-update-interval"], []string{"veth"}) {
		t.Errorf("merged global config %+v", gc)
	}

	req.State = a.State
	if err := pp.Detach(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
		t.Errorf("namespace %s still there after Detach: %v", ns, err)
	}
	lab.WaitFor(t, 10*time.Second, "a health report", func(context.Context) error {
		if health := h.Plugins()[0].Health; health.State != api.HealthOK || !strings.Contains(health.Message, "0 veth pairs") {
			return errors.New("health " + health.Message)
		}
		return nil
	})
}
