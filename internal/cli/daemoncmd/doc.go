// Package daemoncmd implements vsctl's commands that talk to ovsplaned's API instead of
// OVSDB: `vsctl status [OBJECT...]`, `vsctl apply -f FILE` and `vsctl plugin list|status
// [NAME]|stats NAME`. ovs-vsctl has no commands of these names, so cmd/vsctl hands a command line to Main
// when Handles says its first non-option argument is one of them.
//
// It also routes ovs-vsctl lines that name an interface type Open vSwitch does not have (a
// plugin's type: OVSInterfaceTypes lists OVS 3.1's, and the decision needs no I/O). Classify
// sorts a line into RouteOVSDB (every line naming only OVS types: ovs-vsctl's implementation
// runs it unchanged), RouteDaemon (exactly `[--may-exist] add-port BR P -- set Interface P
// type=T [options:K=V]... [external_ids:K=V]...`: RoutePort applies the port through the
// daemon's ApplyPort) and RouteRefuse (a plugin type in any other shape: one message, exit 1).
// On a host without ovsplaned (no $OVSPLANE_API, no directory for the default socket) nothing
// is routed, so vsctl stays ovs-vsctl there for any type. del-port is never routed: it acts
// on OVSDB as ovs-vsctl's does (see docs/api.md).
//
// The daemon commands reach it at --daemon=ADDR, else $OVSPLANE_API, else
// model.DefaultAPIAddr(), through apiClient (the Connect protocol's JSON form over
// HTTP, not api/client's gRPC: see apiclient.go for why); the routed add-port at
// $OVSPLANE_API else the default. Options are written --name=value (or -f FILE); a daemon that is not
// running is reported with the address tried and how to start it. Exit status: 0 when
// everything asked for is ready (or running), 1 otherwise (an object not ready or failed, a
// plugin not running, the daemon unreachable, an invalid file), 2 for a usage error.
package daemoncmd
