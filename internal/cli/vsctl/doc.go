// Package vsctl runs ovs-vsctl command lines: it is the whole of the vsctl program but its
// main function. Main parses the command line (internal/cli), runs each command's
// prerequisites, connects (ovsdb/dbcmd), runs the commands against one lazy view of the
// database, commits them as one transaction (retrying the whole list when a value it relied
// on changed), prints the outputs, waits for ovs-vswitchd to apply the change unless
// --no-wait, and reports interfaces it failed to set up — with ovs-vsctl 3.1's output, errors
// and exit statuses throughout.
//
// Commands are Handlers (Pre, Run, Post) registered by name: the generic database commands
// (dbcmds.go: get, set, list, find, create, ...), the Open vSwitch commands (vswitch*.go:
// bridges, ports, bonds, controllers, show, ...). Commands for ovsplane's own objects are added
// the same way. The Open vSwitch commands answer from targeted lookups whose cost does not grow
// with the size of the switch, and fall back to ovs-vsctl's complete model of bridges, ports
// and interfaces only where that model's answer could differ.
package vsctl

//go:generate go run ./internal/genschema schema_gen.go
