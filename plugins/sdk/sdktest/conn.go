package sdktest

import (
	"context"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Conn is an in-process connection to a plugin: host-side clients that call the plugin through
// the real gRPC shims of plugins/api, over a real gRPC connection (go-plugin's
// TestPluginGRPCConn), so errors, deadlines and conversions behave as with the host.
type Conn struct {
	// Info is what the plugin's GetInfo returned through the shims.
	Info api.Info
	// Plugin is the base service.
	Plugin api.Plugin
	// The capability clients; nil for a capability the plugin does not serve.
	PortProvider api.PortProvider
	Watcher      api.Watcher
	GlobalConfig api.GlobalConfigContributor
	FlowProgram  api.FlowProgrammer
	DataPath     api.DataPath
}

// Connect serves impl in-process and connects to it; it fails the test when the connection or
// GetInfo fails. The connection is closed when the test ends.
func Connect(t testing.TB, impl api.Plugin) *Conn {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, api.ServerPluginMap(impl))
	t.Cleanup(func() {
		_ = client.Close()
		server.Stop()
	})
	c := &Conn{}
	c.Plugin = dispense[api.Plugin](t, client, api.NamePlugin)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	info, err := c.Plugin.Info(ctx)
	if err != nil {
		t.Fatalf("sdktest: GetInfo: %v", err)
	}
	c.Info = info
	for _, capability := range info.Capabilities {
		name, _ := api.DispenseName(capability)
		switch capability {
		case api.CapabilityPortProvider:
			c.PortProvider = dispense[api.PortProvider](t, client, name)
		case api.CapabilityWatcher:
			c.Watcher = dispense[api.Watcher](t, client, name)
		case api.CapabilityGlobalConfig:
			c.GlobalConfig = dispense[api.GlobalConfigContributor](t, client, name)
		case api.CapabilityFlowProgram:
			c.FlowProgram = dispense[api.FlowProgrammer](t, client, name)
		case api.CapabilityDataPath:
			c.DataPath = dispense[api.DataPath](t, client, name)
		}
	}
	return c
}

func dispense[T any](t testing.TB, client *plugin.GRPCClient, name string) T {
	t.Helper()
	raw, err := client.Dispense(name)
	if err != nil {
		t.Fatalf("sdktest: dispense %s: %v", name, err)
	}
	v, ok := raw.(T)
	if !ok {
		t.Fatalf("sdktest: dispensed %s is a %T", name, raw)
	}
	return v
}
