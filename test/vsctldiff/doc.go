// Package vsctldiff is the differential harness behind vsctl's compatibility promise: it runs
// the same scripted ovs-vsctl session twice, each time against a fresh private ovsdb-server with
// an ovs-vswitchd on the dummy datapath (test/lab), once with the real /usr/bin/ovs-vsctl and
// once with a candidate binary, and reports every difference in exit status, stdout, stderr and
// final database contents (`ovsdb-client dump`, with UUIDs normalised).
//
// Session files are plain text, one command line per line, written as the arguments that follow
// the program name (the harness adds --db). Words split like a POSIX shell's: single and double
// quotes, backslash escapes. Blank lines and lines starting with # are ignored.
package vsctldiff
