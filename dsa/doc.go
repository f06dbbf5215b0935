// Package dsa discovers, plans and applies Intel Data Streaming Accelerator (DSA) configurations
// for OVS-DPDK's vhost async copies: idxd work queues DPDK can use (user WQs named with the
// dpdk_ prefix, bound to the user driver, /dev/dsa/wqX.Y readable by the OVS user) or the whole
// device handed to vfio-pci for DPDK to configure. It reads and writes the kernel's idxd sysfs
// ABI (Documentation/ABI/stable/sysfs-driver-dma-idxd) through FS, rooted at a directory chosen
// by the caller ("/" on a host, a simulated kernel's tree in tests), and never runs a program.
//
// Every failure the operator has to act on is an *Error with a stable Code from the catalogue
// in errors.go, naming the object, the cause and the fix.
//
// # Use
//
// New builds a Host over an FS; Discover reads the machine; a Request, once Normalized with
// DPDK's --file-prefix, is turned by Plan into the writes it needs (read-only), and Apply
// carries them out and verifies the result; Reset disables a device again.
//
// Per device, Plan decides one action:
//   - none: the device is enabled with exactly the requested work queues; nothing is written.
//   - adopt: the device is enabled with at least the requested number of dedicated user work
//     queues whose names DPDK takes (another tool, accel-config, configured it); it is kept as
//     it is and its work queues are reported. Only their nodes' owner may change (OVSUser).
//   - configure: a disabled device gets engines 0..N-1 and the work queues in group 0, each
//     work queue's attributes written where they differ, then the device is bound to idxd and
//     the work queues to the user driver, and /dev/dsa/wqX.Y is given to OVSUser. An enabled
//     device whose configuration differs is refused (CodeBusy) when it has clients or
//     AllowReconfigure is off; otherwise it is unbound first (the kernel resets its
//     configuration) and configured.
//   - vfio: the PCI function is unbound from idxd, driver_override set to vfio-pci and bound
//     there; Plan.DPDKExtra gets "-a <BDF>,max_queues=N".
//
// # Interrupted applies
//
// The writes are ordered so that stopping anywhere (kill -9) leaves a state a new Apply
// finishes with the same result: attributes are only written while the device is disabled;
// the device is enabled only once its configuration is complete; an enabled device whose
// configuration matches only gets its missing work queue binds and node permissions, without
// needing AllowReconfigure; and a reconfiguration interrupted after the unbind continues as a
// configuration of a disabled device.
package dsa
