// Package plugins groups ovsplane's out-of-process plugins, programs that ovsplaned starts
// and supervises with hashicorp/go-plugin over gRPC and asks for what is hardware- or
// data-path-specific (ports' OVS shapes, global other_config keys, OpenFlow flows):
//
//   - plugins/api: the contract, as Go interfaces and the protobuf package ovsplane.plugin.v1,
//     with the checks the daemon applies to every answer;
//   - plugins/sdk: what a plugin author uses (sdk.Serve, logging, options and state helpers),
//     and plugins/sdk/sdktest, a fake daemon for tests;
//   - plugins/host: the daemon's side, which verifies each configured binary against its
//     SHA-256 pin, runs it, restarts it with backoff behind a circuit breaker, and replays the
//     ports it owns;
//   - plugins/vdpa: the binary ovsplane-plugin-vdpa, ports of type vdpa on mlx5 NICs
//     (docs/vdpa.md);
//   - plugins/dsa: the binary ovsplane-plugin-dsa, Intel DSA work queues for OVS-DPDK's vhost
//     async copies and a DSA status on every vhost-user port (docs/dsa.md);
//   - plugins/stripe: the binary ovsplane-plugin-stripe, data-path jobs of type stripe that
//     carry traffic over several kernel NICs, or over NICs ovs-vswitchd owns (port type
//     stripe-lanes), to peer nodes and serve applications (docs/stripe-plugin.md);
//   - plugins/overlay: the binary ovsplane-plugin-overlay, the overlay's node agent and
//     controller as data-path jobs, a flow-based tunnel port type and the next-hop flows of the
//     current route version (docs/overlay.md).
//
// The package itself has no code. docs/plugins.md is the guide for plugin authors,
// examples/plugin-sample the template to copy and examples/veth-reference a plugin using every
// capability.
package plugins
