// Package daemoncmd implements vsctl's commands that talk to ovsplaned's API instead of
// OVSDB: `vsctl status [OBJECT...]`, `vsctl apply -f FILE`, `vsctl plugin list|status
// [NAME]|stats NAME` and `vsctl overlay nodes|links|routes NODE [VERSION]|versions|lookup SRC
// DST` (the daemon's read-only overlay view, GET /overlay/v1/..., see vswitchd/overlayapi). ovs-vsctl has no commands of these names, so cmd/vsctl hands a command line to Main
// when Handles says its first non-option argument is one of them.
//
// It also routes ovs-vsctl lines that name an interface type Open vSwitch does not have (a
// plugin's type). Classify sorts a line, without I/O, into RouteOVSDB (every line naming only
// the stock types of OVSInterfaceTypes: ovs-vsctl's implementation runs it unchanged, at no
// extra cost), RouteDaemon (exactly `[--may-exist] add-port BR P -- set Interface P type=T
// [options:K=V]... [external_ids:K=V]...`: RoutePort applies the port through the daemon's
// ApplyPort) and RouteRefuse (a plugin type in any other shape: one message, exit 1). For a line
// of the last two kinds RoutePort first asks the running ovs-vswitchd (Open_vSwitch.iface_types)
// whether it has the type after all (a newer Open vSwitch's): then the line is ovs-vsctl's. Then
// Discover finds the daemon: --daemon=ADDR (CutDaemon takes it from the line's global options,
// where ovs-vsctl's implementation never sees it), else $OVSPLANE_API, else
// model.DefaultAPIAddr() when that socket exists (a stat, no connection). With no daemon the
// line is refused, naming the type and the fix, and nothing is written. del-port is never
// routed: it acts on OVSDB as ovs-vsctl's does (see docs/api.md).
//
// The daemon commands reach it at --daemon=ADDR, else $OVSPLANE_API, else
// model.DefaultAPIAddr(), through apiClient (the Connect protocol's JSON form over
// HTTP, not api/client's gRPC: see apiclient.go for why). Options are written --name=value or
// --name value (or -f FILE); a daemon that is not running is reported with the address tried
// and how to start it. Exit status: 0 when
// everything asked for is ready (or running), 1 otherwise (an object not ready or failed, a
// plugin not running, the daemon unreachable, an invalid file), 2 for a usage error.
package daemoncmd
