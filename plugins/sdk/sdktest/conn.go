package sdktest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// Conn is an in-process connection to a plugin: host-side clients that call the plugin through
// the real gRPC shims the daemon uses (plugins/internal/wire), over a real gRPC connection on a unix socket, so errors,
// deadlines and conversions behave as with the host. (go-plugin's own process handling,
// handshake and logging are not involved: a test that needs them runs the built plugin.)
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
	conn := serve(t, impl)
	c := &Conn{}
	c.Plugin = dispense[api.Plugin](t, conn, wire.NamePlugin)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	info, err := c.Plugin.Info(ctx)
	if err != nil {
		t.Fatalf("sdktest: GetInfo: %v", err)
	}
	c.Info = info
	for _, capability := range info.Capabilities {
		name, _ := wire.DispenseName(capability)
		switch capability {
		case api.CapabilityPortProvider:
			c.PortProvider = dispense[api.PortProvider](t, conn, name)
		case api.CapabilityWatcher:
			c.Watcher = dispense[api.Watcher](t, conn, name)
		case api.CapabilityGlobalConfig:
			c.GlobalConfig = dispense[api.GlobalConfigContributor](t, conn, name)
		case api.CapabilityFlowProgram:
			c.FlowProgram = dispense[api.FlowProgrammer](t, conn, name)
		case api.CapabilityDataPath:
			c.DataPath = dispense[api.DataPath](t, conn, name)
		}
	}
	return c
}

// serve registers impl's services (wire.ServerPluginMap) on a gRPC server listening on a unix
// socket in a private directory and dials it; everything is torn down when the test ends.
func serve(t testing.TB, impl api.Plugin) *grpc.ClientConn {
	t.Helper()
	// A short directory: t.TempDir's paths can pass the 108-byte limit of socket paths.
	dir, err := os.MkdirTemp("", "sdktest")
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "plugin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	server := plugin.DefaultGRPCServer(nil)
	for name, p := range wire.ServerPluginMap(impl) {
		if err := p.(plugin.GRPCPlugin).GRPCServer(nil, server); err != nil {
			t.Fatalf("sdktest: register %s: %v", name, err)
		}
	}
	go func() { _ = server.Serve(ln) }()
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		server.Stop()
		t.Fatalf("sdktest: dial %s: %v", sock, err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		server.Stop()
	})
	return conn
}

// dispense builds the host-side client of a dispense name over conn, as go-plugin's Dispense
// does with wire.ClientPluginSets.
func dispense[T any](t testing.TB, conn *grpc.ClientConn, name string) T {
	t.Helper()
	p, ok := wire.ClientPluginSets()[wire.ProtocolVersion][name].(plugin.GRPCPlugin)
	if !ok {
		t.Fatalf("sdktest: no client for %s", name)
	}
	raw, err := p.GRPCClient(t.Context(), nil, conn)
	if err != nil {
		t.Fatalf("sdktest: dispense %s: %v", name, err)
	}
	v, ok := raw.(T)
	if !ok {
		t.Fatalf("sdktest: dispensed %s is a %T", name, raw)
	}
	return v
}
