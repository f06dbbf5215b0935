package model

// Version is ovsplaned's version, reported by Health and the API, and handed to plugins as
// the host version.
const Version = "0.4.0-dev"

// Origin says where an object's desired state comes from.
type Origin string

// Origins.
const (
	// OriginConfig: the configuration file (and environment, flags). Changed by editing it and
	// reloading; the API refuses to change or delete such objects.
	OriginConfig Origin = "config"
	// OriginAPI: created through the API. Persisted in OVSDB itself (the row's external_ids
	// carry the spec), so a restarted daemon finds it again.
	OriginAPI Origin = "api"
)

// BridgeInfo is one managed bridge: its spec (Ports always empty: ports are separate objects),
// where it comes from and its status.
type BridgeInfo struct {
	Spec   Bridge
	Origin Origin
	Status Status
}

// PortInfo is one managed port: its bridge, its spec, where it comes from, its status and the
// status of each of its interfaces (in spec order).
type PortInfo struct {
	Bridge     string
	Spec       Port
	Origin     Origin
	Status     Status
	Interfaces []Status
	// Plugin names the plugin that attached a port of a plugin's type ("" for other ports);
	// PluginStatus is its description of the attachment, Endpoints what a user needs (e.g.
	// the vhost-vdpa device of a VM's port) and Shape the OVS port it asked for, which is
	// what OVSDB holds (Interfaces follow Shape's interfaces).
	Plugin       string
	PluginStatus string
	Endpoints    map[string]string
	Shape        *Port
}

// Mode says what the daemon is connected to.
type Mode string

// Modes.
const (
	// ModeOVS: an Open vSwitch (configured endpoints or the local socket).
	ModeOVS Mode = "ovs"
	// ModeSandbox: a private ovsdb-server + ovs-vswitchd the daemon started and will stop.
	ModeSandbox Mode = "sandbox"
	// ModeEmbedded: the daemon's own OVSDB with a simulated ovs-vswitchd; no packets flow.
	ModeEmbedded Mode = "embedded"
)

// Health is the daemon's state for health checks.
type Health struct {
	Version        string
	Mode           Mode
	OVSDBEndpoint  string // the endpoint in use; "" while disconnected
	OVSDBConnected bool
	// Objects counts the managed objects (bridges, ports, interfaces) by state.
	Objects map[State]int
	// LastError is the error of the last failed reconcile pass; "" after a successful one.
	LastError string
	// PluginConflicts are the other_config keys plugins disagree on (with each other or
	// with the configuration), one message per key naming the plugins and values; none of
	// the disagreeing values is applied.
	PluginConflicts []string
	// Degraded says, one line each, what does not work now: OVSDB not connected, ovs-vswitchd
	// not running, and what the daemon's Options.Degraded reports (the sandbox's daemons being
	// restarted). Empty when all is well; the daemon keeps serving either way.
	Degraded []string
}
