// Package simvswitchd is a simulated ovs-vswitchd: a process-less stand-in
// for Open vSwitch's switch daemon (not ovsplaned, whose core is package
// vswitchd) that connects to an OVSDB server like the real one and writes
// back what ovs-vswitchd 3.1 would after each reconfiguration. No packets
// flow and no OpenFlow is spoken.
//
// It is product code: ovsplaned's embedded mode (cmd/ovsplaned, with
// ovsdb/embedded) runs it so the daemon works on a machine without Open
// vSwitch. Tests start it through ovsdbtest.StartOVSVswitchd.
//
// # Use
//
//	sw, err := simvswitchd.New(ctx, simvswitchd.Config{Endpoint: ep})
//	...
//	defer sw.Close()
//	sw.PauseAck() // keep reconfiguring, stop acknowledging next_cfg
//
// # What it simulates
//
// Switch monitors Open_vSwitch, Bridge, Port and Interface. After every
// change it reads the four tables in one select transaction (the client
// cache may be mid-update) and writes, in one transaction guarded by a wait
// on next_cfg (retried on conflict), what bridge.c would:
//   - per interface of a port of a bridge: the checks of iface_do_create in
//     order, with ovs-vswitchd 3.1's messages in Interface.error:
//     type not in iface_types → "could not open network device NAME (Address
//     family not supported by protocol)"; missing kernel device (see
//     Config.SystemDevice) → "... (No such device)"; dpdk without,
//     with unacceptable (DevargsPolicy) or already used dpdk-devargs; patch
//     without a valid peer; tunnels without a valid remote_ip; DPDK types on
//     a bridge whose datapath_type is not netdev → "could not add network
//     device NAME to ofproto (Invalid argument)". A failed interface gets
//     ofport -1 and its status columns cleared (iface_clear_db_record).
//   - ofports per bridge like ofproto: 65534 for the bridge's own interface,
//     ofport_request when no other interface holds it, the current ofport
//     otherwise, and new numbers from 1 upward after the last allocated, so
//     a freed number is not reused until the range wraps.
//   - admin_state up, link_state up (down for vhost-user types without a
//     guest and for patch ports without a matching peer), mtu (mtu_request or
//     1500), mac_in_use, statistics rx/tx packets/bytes.
//   - Open_vSwitch: dpdk_initialized once other_config:dpdk-init is "true"
//     or "try", dpdk_version, and cur_cfg = next_cfg (unless PauseAck).
//
// It does not simulate Bridge and Port status columns, datapath_id,
// controllers, managers, bonds, QoS, mirrors or ifindex, and never changes
// iface_types.
package simvswitchd
