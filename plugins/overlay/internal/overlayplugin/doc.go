// Package overlayplugin is the overlay plugin of ovsplane (issue 17, docs/overlay.md):
//
//   - job type overlay-agent, one per site: registers the node in the fabric database, follows
//     the route versions (overlay/agent), installs each version's table as OpenFlow next-hop
//     forwarding through the plugin's FlowProgrammer (overlay/ovsinstall), acknowledges it once
//     the daemon took the flows, keeps forwarding on the last table (also across a restart of
//     the plugin: the table is stored in the plugin's data directory) while the fabric is
//     unreachable, and probes its links (overlay/probe);
//   - job type overlay-controller: the controller role (overlay/controller), at most one active
//     in the fabric through its lease;
//   - port type overlay-tunnel: the flow-based tunnel port (remote_ip=flow, key=flow) whose
//     OVSDB row the daemon writes.
//
// The daemon learns a new route version's flows by calling Flows again: every answer asks for
// a call after flow_refresh_ms (FlowSet.RefreshMillis), the contract's only way for a plugin
// to have its flows re-read.
package overlayplugin
