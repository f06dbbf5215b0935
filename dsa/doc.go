// Package dsa discovers, plans and applies Intel Data Streaming Accelerator (DSA) configurations
// for OVS-DPDK's vhost async copies: idxd work queues DPDK can use (user WQs named with the
// dpdk_ prefix, bound to the user driver, /dev/dsa/wqX.Y readable by the OVS user) or the whole
// device handed to vfio-pci for DPDK to configure. It reads and writes the kernel's idxd sysfs
// ABI (Documentation/ABI/stable/sysfs-driver-dma-idxd) through FS, rooted at a directory chosen
// by the caller ("/" on a host, a simulated kernel's tree in tests), and never runs a program.
//
// Every failure the operator has to act on is an *Error with a stable Code from the catalogue
// in errors.go, naming the object, the cause and the fix.
package dsa
