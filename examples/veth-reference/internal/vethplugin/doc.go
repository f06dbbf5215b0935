// Package vethplugin is the sample plugin's implementation: the port type "veth" and every
// capability of the ovsplane plugin contract (plugins/api), each put to a real use.
//
//   - PortProvider: a port of type veth is a veth pair (package veth); Attach creates it and
//     returns its OVS shape, one port with one "system" interface named like the port (the
//     host end, opened with af_packet by a datapath_type=netdev bridge); Detach deletes it;
//     List rebuilds what the plugin owns from the kernel's ownership marks.
//   - Watcher: counts the interfaces others put on the bridges of its ports, and warns (Health
//     degraded) when one of them is in fact the peer end of one of its pairs.
//   - GlobalConfigContributor: other_config:stats-update-interval, when configured.
//   - FlowProgrammer: flows dropping configured ethertypes on traffic coming from its ports,
//     with the cookie the host assigned.
//   - DataPath: the job type "veth-stats", sampling the pairs' kernel counters in the
//     background and streaming them.
//
// The kernel is reached through the Links interface (*veth.Manager in production), so the
// contract can be tested without root; the root tests use the real thing.
package vethplugin
