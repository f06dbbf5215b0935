// Package wire carries the plugin contract of plugins/api across the process boundary: the
// hashicorp/go-plugin handshake, the versioned plugin sets and the gRPC shims that convert
// between the contract's Go types and the protobuf messages of ovsplane.plugin.v1
// (plugins/api/gen). Plugin authors never import it (it is internal to plugins/): plugins/sdk
// serves a plugin with ServerPluginSets, plugins/host dispenses with ClientPluginSets, and
// plugins/sdk/sdktest does both in one process.
//
// Host side: ClientConfig.VersionedPlugins = ClientPluginSets(); dispense NamePlugin, then the
// name of each capability Info lists (DispenseName), and type-assert to the capability's
// interface of plugins/api.
//
// Every call takes the caller's context: the shims add no deadline and never replace the
// context, and a plugin must return promptly when it ends. The shims map errors both ways: an
// *api.Error keeps its Code, Message and Problems; a context error becomes DeadlineExceeded or
// Canceled; any other error becomes Internal.
package wire
