// Package sdk is what an ovsplane plugin's main uses: Serve runs the plugin under the host
// (hashicorp/go-plugin over gRPC, the ovsplane.plugin.v1 contract of plugins/api), NewLogger
// writes structured logs the host forwards into its own log under the plugin's name, and the
// helpers decode a port's options and the plugin's configuration into structs (errors naming
// the field), build the OVS shape of a port and encode plugin state.
//
// A plugin is a type implementing api.Plugin and any of the capability interfaces
// (api.PortProvider, api.Watcher, api.GlobalConfigContributor, api.FlowProgrammer,
// api.DataPath); Serve detects which and serves those. Its main is:
//
//	func main() {
//		log := sdk.NewLogger(os.Stderr, slog.LevelInfo)
//		sdk.Serve(myplugin.New(log))
//	}
//
// Nothing may be written to standard output before Serve: go-plugin's handshake uses it.
// Package sdktest exercises a plugin through the real gRPC shims in-process and plays the host.
// docs/plugins.md is the guide.
package sdk
