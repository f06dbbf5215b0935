// Package api is the contract between ovsplaned and its plugins: the Go interfaces a plugin
// implements (Plugin, and per capability PortProvider, Watcher, GlobalConfigContributor,
// FlowProgrammer, DataPath), the Go types of their requests and answers, the typed Error that
// crosses the process boundary as a gRPC status, and the hashicorp/go-plugin glue: the
// handshake, the versioned plugin sets and the gRPC shims.
//
// The wire format is the protobuf package ovsplane.plugin.v1 (proto/ovsplane/plugin/v1, code
// generated into gen/ovsplane/plugin/v1 by `make proto`). It is a transport detail: plugin
// authors and the host use only this package's types; the shims convert.
//
// Plugin side: plugins/sdk.Serve serves an implementation with ServerPluginSets. Host side:
// ClientConfig.VersionedPlugins = ClientPluginSets(); dispense NamePlugin, then the name of
// each capability Info lists (DispenseName), and type-assert to the capability's interface.
//
// Every method takes a context; the host sets a deadline on every call (the shims add none and
// never replace the caller's context) and a plugin must return promptly when it expires. The
// shims map errors both ways: an *Error keeps its Code, Message and Problems; a context error
// becomes DeadlineExceeded or Canceled; any other error becomes Internal.
package api
