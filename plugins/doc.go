// Package plugins groups ovsplane's out-of-process plugins (hashicorp/go-plugin over gRPC): the
// contract in plugins/api, the SDK in plugins/sdk, the host in plugins/host, and one directory per
// plugin binary (vdpa, dsa, stripe, overlay, flowmon).
//
// The plugin system is built in a later issue; this package holds its place in the layout.
package plugins
