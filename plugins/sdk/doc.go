// Package sdk is what an ovsplane plugin's main uses: Serve runs the plugin under the host
// (the ovsplane.plugin.v1 contract of plugins/api, over hashicorp/go-plugin and gRPC, which an
// author never sees), NewLogger writes structured logs the host forwards into its own log under
// the plugin's name, and the helpers decode a port's options and the plugin's configuration
// into structs (errors naming the field), build the OVS shape of a port and encode plugin state.
//
// A plugin is a type implementing api.Plugin and any of the capability interfaces
// (api.PortProvider, api.Watcher, api.GlobalConfigContributor, api.FlowProgrammer,
// api.DataPath); Serve detects which and serves those. Embedding Base (or BaseWithConfig for a
// plugin with a configuration) supplies ConfigSchema, Configure, Health, Detach and List, so a
// port type that does no host work is three methods, Info, Validate and Attach:
//
//	type lan struct{ sdk.Base }
//
//	func (*lan) Info(context.Context) (api.Info, error)                          { … }
//	func (*lan) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { … }
//	func (*lan) Attach(context.Context, api.PortRequest) (api.Attachment, error)  { … }
//
//	func main() {
//		sdk.Serve(&lan{})
//	}
//
// Nothing may be written to standard output before Serve: go-plugin's handshake uses it.
// Package sdktest exercises a plugin through the real gRPC shims in-process and plays the host.
// docs/plugins.md is the guide; examples/plugin-sample is a template to copy.
package sdk
