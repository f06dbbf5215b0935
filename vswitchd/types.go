package vswitchd

import (
	"errors"

	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

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

// Errors of the Daemon's calls, matched with errors.Is. The API maps them to status codes.
var (
	// ErrInvalid: the request is malformed (bad name, unknown type, missing option…). Nothing
	// was written.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: the named object is not managed by ovsplane.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts existing state (an object of the config file, a port
	// on another bridge, a name held by a row ovsplane does not own). Nothing was written.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: OVSDB or ovs-vswitchd could not be reached or did not answer in time; the
	// outcome may be unknown, and the reconciler converges either way. While the OVSDB
	// connection is down, writes end with it after Options.Commit.ReconnectWait, wrapping an
	// *ovsdb.DisconnectedError that says whether nothing was applied or the outcome is unknown.
	ErrUnavailable = errors.New("unavailable")
	// ErrFailed: an object WaitReady waits for is in the error state (ovs-vswitchd refused it,
	// or the last reconcile pass failed); the message says why.
	ErrFailed = errors.New("failed")
)

// BridgeInfo is one managed bridge: its spec (Ports always empty: ports are separate objects),
// where it comes from and its status.
type BridgeInfo struct {
	Spec   config.Bridge
	Origin Origin
	Status reconcile.Status
}

// PortInfo is one managed port: its bridge, its spec, where it comes from, its status and the
// status of each of its interfaces (in spec order).
type PortInfo struct {
	Bridge     string
	Spec       config.Port
	Origin     Origin
	Status     reconcile.Status
	Interfaces []reconcile.Status
	// Plugin names the plugin that attached a port of a plugin's type ("" for other ports);
	// PluginStatus is its description of the attachment, Endpoints what a user needs (e.g.
	// the vhost-vdpa device of a VM's port) and Shape the OVS port it asked for, which is
	// what OVSDB holds (Interfaces follow Shape's interfaces).
	Plugin       string
	PluginStatus string
	Endpoints    map[string]string
	Shape        *config.Port
}

// Version is ovsplaned's version, reported by Health and the API.
const Version = "0.4.0-dev"

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
	Objects map[reconcile.State]int
	// LastError is the error of the last failed reconcile pass; "" after a successful one.
	LastError string
	// PluginConflicts are the other_config keys plugins disagree on (with each other or
	// with the configuration), one message per key naming the plugins and values; none of
	// the disagreeing values is applied.
	PluginConflicts []string
	// Degraded says, one line each, what does not work now: OVSDB not connected, ovs-vswitchd
	// not running, and what Options.Degraded reports (the sandbox's daemons being restarted).
	// Empty when all is well; the daemon keeps serving either way.
	Degraded []string
}

// PluginInfo is one configured plugin as the daemon's plugin host sees it.
type PluginInfo struct {
	Name, Version string
	// State is starting, running, restarting, failed (circuit breaker open), refused (trust
	// or version check) or stopped; Reason says why when it is not running.
	State, Reason string
	// Types are the port/object types it provides; Capabilities its capability classes.
	Types, Capabilities []string
	Restarts            int
	LastError           string
	PID                 int
}
