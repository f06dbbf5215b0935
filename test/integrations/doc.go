// Package integrations holds the tests that run other programs' code paths against a live
// ovsplaned: the API clients (the Python example of examples/python, run with Debian's
// /usr/bin/python3 only, and the curl recipes of docs/api.md, each extracted from the document
// and run) on the daemon's embedded OVSDB, and a ZStack host (the agent's ovs-vsctl lines through
// vsctl, beside ovsplaned, on a private Open vSwitch) as docs/zstack.md describes it.
package integrations
