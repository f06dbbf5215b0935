// Package pluginv1 holds the messages and gRPC stubs of the ovsplane.plugin.v1 plugin contract,
// generated from plugins/api/proto/ovsplane/plugin/v1 by `make proto` (every file here but this
// one is generated). Plugin authors and the host use the Go types and shims of plugins/api
// instead.
package pluginv1
