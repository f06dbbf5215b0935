// Package integration holds ovsplane's integration tests: package ovsdb driving a real
// ovsdb-server and a real ovs-vswitchd (the DPDK build with af_packet "NICs" over veths in network
// namespaces, or the dummy datapath for control-plane scale), started by test/lab. They need root;
// `make test` prepares the machine and makes a missing precondition a failure, not a skip.
package integration
