// Package vdpa provisions mlx5 (ConnectX-6 Dx, BlueField in NIC mode) vDPA ports on a host: it
// discovers the PCI physical functions, their SR-IOV virtual functions, VF representors, the devlink
// eswitch mode, vdpa management devices and vdpa devices with their bus drivers and character
// devices; it plans, applies and tears down the host work a port needs; and it says what the
// running Open vSwitch must be told (the interface row and other_config keys), without ever
// writing OVSDB itself.
//
// # Shape
//
// A Host is built from three small interfaces defined here: FS (rooted sysfs, /dev and /proc
// access; internal/sysfs implements it over a directory), VDPANetlink (the kernel's "vdpa" generic
// netlink family) and Devlink (eswitch mode); vdpa/nlkernel implements the last two over
// github.com/vishvananda/netlink. Tests, and the vdpa plugin's simulate mode, use vdpa/simkernel
// instead, a simulated kernel that implements all three over a host description (vdpa/simhost)
// and enforces the kernel's rules and errno values while mutating the tree the way the kernel
// would.
//
// The entry points the vdpa plugin calls:
//
//	h := vdpa.New(vdpa.Config{FS: sysfs.New("/"), VDPA: nl, Devlink: nl})
//	report, err := h.Detect(ctx, ovs)             // read-only capability report
//	plan, err := h.Plan(ctx, req, ovs, prev)      // dry run: ordered steps with what and why
//	state, err := h.Apply(ctx, plan, prev)        // idempotent; state is what the plugin persists
//	report, err := h.Teardown(ctx, state, opts)   // undoes exactly state.Done, in reverse
//
// Plan is a pure function of the request, the discovered host (Snapshot) and the OVS facts the
// caller passes in (OVSState), so a plan can be shown, stored and compared. Apply re-verifies every
// step against the live host before acting and skips what is already true, so applying twice
// changes nothing. Every step that changed something is recorded in State.Done with what it found
// before; Teardown inverts those records newest first and touches nothing else. PF-wide steps
// (SR-IOV VF count, eswitch mode, VF driver binding) are kept while other consumers use the PF.
//
// Errors are *Error values with a stable Code (errors.Is(err, vdpa.CodeSRIOVBusy) works) and a
// message that says what to do.
package vdpa
