// Command plugin is the SDK's test plugin as a real plugin binary, built and started by the
// SDK's tests. With OVSPLANE_TESTPLUGIN_PROTOCOL=2 it plays a plugin of a future protocol
// version that the host must refuse.
package main

import (
	"log/slog"
	"os"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/plugins/internal/wire"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/plugins/sdk/internal/testplugin"
)

func main() {
	log := sdk.NewLogger(os.Stderr, slog.LevelDebug)
	impl := testplugin.New(log)
	if os.Getenv("OVSPLANE_TESTPLUGIN_PROTOCOL") == "2" {
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  wire.Handshake(),
			VersionedPlugins: map[int]plugin.PluginSet{2: wire.ServerPluginSets(impl)[wire.ProtocolVersion]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
		return
	}
	sdk.Serve(impl)
}
