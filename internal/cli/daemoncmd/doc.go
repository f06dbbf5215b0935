// Package daemoncmd implements vsctl's commands that talk to ovsplaned's API instead of
// OVSDB: `vsctl status [OBJECT...]` and `vsctl apply -f FILE`. ovs-vsctl has no commands of
// these names, so cmd/vsctl hands a command line to Main when Handles says its first
// non-option argument is one of them, and everything else to the ovs-vsctl implementation
// unchanged.
//
// Both commands reach the daemon at --daemon=ADDR, else $OVSPLANE_API, else
// apiclient.DefaultAddr, over gRPC (vswitchd/apiclient). Their options are written
// --name=value (or -f FILE); a daemon that is not running is reported with the address tried
// and how to start it. Exit status: 0 when everything asked for is ready, 1 otherwise (an
// object not ready or failed, the daemon unreachable, an invalid file), 2 for a usage error.
package daemoncmd
