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
