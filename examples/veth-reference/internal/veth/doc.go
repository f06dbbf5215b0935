// Package veth is the Linux side of the sample plugin: it creates, inspects and deletes the
// veth pairs behind ports of type "veth", through netlink, and the named network namespaces
// (`ip netns` compatible) their peer ends may live in.
//
// A pair has a host end, named like the OVS port and left in the host namespace (the one
// ovs-vswitchd runs in, where OVS opens it as an af_packet "system" port), and a peer end,
// optionally moved into a named namespace and given an address and an MTU.
//
// Ownership: every end the package creates carries a mark in its interface alias
// (IFLA_IFALIAS, `ip link show` prints it as "alias"):
//
//	ovsplane/<owner> veth end=host port=<port> peer=<peer> netns=<netns or -> bridge=<label or ->
//	ovsplane/<owner> veth end=peer port=<port> host=<host>
//
// and a namespace it created carries one on its loopback device:
//
//	ovsplane/<owner> netns created
//
// The mark is the only proof of ownership: Manager.Delete refuses an interface that lacks it
// (ErrNotOwned) and removes a namespace only when its loopback is marked and no other
// interface is left inside, so the package never deletes what it did not create, even across
// restarts of the process. Manager.List rebuilds the whole state from the marks.
//
// All operations are idempotent: Ensure converges an existing pair to its Spec (recreating it
// when the peer's name or namespace changed), Delete of a missing pair succeeds.
//
// The package needs CAP_NET_ADMIN (and CAP_SYS_ADMIN to create or delete namespaces). It keeps
// no package state: each Manager holds its own netlink handle for the host namespace.
package veth
