// Package dpdksmoke holds only a test: a smoke check that DPDK's own idxd bus driver (Debian's
// librte-dma-idxd23, DPDK 22.11) enumerates the work queues of a simulated DSA tree the way the
// dsa library names and types them, without any DSA hardware and without starting a device.
//
// The test builds testdata/idxdscan.c with the system C compiler against libdpdk-dev
// (pkg-config libdpdk), lays out a simulated 4th-gen Xeon host with dsa/simidxd under a
// temporary directory, configures dsa0 through the simulated kernel with the same sysfs writes
// as on a real host (engine to group, WQ attributes, idxd/bind dsa0, user or dmaengine bind per
// WQ), and runs the program with DSA_SYSFS_PATH and DSA_DEV_PATH pointing there (the overrides the
// idxd bus reads "for testing") and the EAL flags --no-pci --no-huge --no-shconf
// --no-telemetry -m 64 -d librte_dma_idxd.so. The program initialises the EAL, which scans and
// probes the bus, and prints rte_dma_count_avail and rte_dma_get_dev_id_by_name for each work
// queue; it never configures or starts a dmadev (the "portal" is a 4 KiB regular file that is
// mapped and never written).
//
// What it proves about DPDK 22.11, which the dsa library's naming rules (DSA_NAME_PREFIX)
// rely on: only type=user work queues whose name starts with "dpdk_" or with the EAL's
// --file-prefix followed by "_" become dmadevs, named after the work queue ("wq0.0"); a
// kernel-type work queue is ignored even with a dpdk_ name and a device node.
//
// The test requires gcc, pkg-config, libdpdk-dev and librte-dma-idxd23 and fails, never skips,
// when one is missing.
package dpdksmoke
