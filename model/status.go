package model

// Kind is the kind of a managed object.
type Kind string

// Kinds of objects.
const (
	KindBridge    Kind = "bridge"
	KindPort      Kind = "port"
	KindInterface Kind = "interface"
)

// State is the state of a managed object. The empty State marks an object that was removed
// (in a change notification).
type State string

// States.
const (
	// StatePending: not (yet) in OVSDB, or not yet set up by ovs-vswitchd.
	StatePending State = "pending"
	// StateReady: present and set up; interfaces have an ofport.
	StateReady State = "ready"
	// StateError: ovs-vswitchd reported an Interface.error, or the last pass failed.
	StateError State = "error"
)

// Status is the status of one managed object.
type Status struct {
	Kind   Kind
	Name   string
	Bridge string // bridge of a port or interface
	State  State
	Ofport int    // interfaces only, when Ready
	Error  string // when State is StateError
}

// Key identifies an object: "bridge/NAME", "port/NAME" or "interface/NAME".
func (s Status) Key() string { return string(s.Kind) + "/" + s.Name }

// WatchedStatus is a watcher plugin's status of one interface (plugins/api.InterfaceStatus):
// the plugin's one-line view of an interface it watches, whoever created it. The daemon keeps
// it in memory only (never in OVSDB) and drops it when the interface goes away, when the
// plugin's next resync does not list the interface, and when the plugin stops.
type WatchedStatus struct {
	Plugin    string
	Interface string
	// Bridge and Port hold the interface now.
	Bridge, Port string
	// Owner is who created the interface's port: WatchedOwnerDaemon, WatchedOwnerPlugin or
	// WatchedOwnerForeign.
	Owner string
	// Level is "info", "warning" or "error".
	Level   string
	Summary string
	// Details are the plugin's key/value facts (at most 16 entries).
	Details map[string]string
}

// Owners of a watched interface's port.
const (
	// WatchedOwnerDaemon: ovsplaned's, for its configuration or API.
	WatchedOwnerDaemon = "daemon"
	// WatchedOwnerPlugin: ovsplaned's, for a plugin's port type.
	WatchedOwnerPlugin = "plugin"
	// WatchedOwnerForeign: someone else's (ovs-vsctl, os-vif, an operator).
	WatchedOwnerForeign = "foreign"
)
