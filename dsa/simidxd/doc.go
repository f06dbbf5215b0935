// Package simidxd is a simulated Linux idxd driver (Intel DSA) for the dsa library's tests and
// the dsa plugin's --simulate mode: Write lays out the sysfs and /dev entries of a host with DSA
// devices under a directory, and Open returns a *Sim that implements dsa.FS over that directory
// and answers writes the way the kernel's idxd driver does — the same rules, the same errno
// values — while changing the tree as the kernel would.
//
// # State
//
// All state lives in the files under the directory; a *Sim keeps only the directory and the
// variant's immutable description (.simidxd/spec.json). Several *Sim values and several processes
// may therefore work on one tree: every write takes an exclusive flock on .simidxd/lock for its
// whole read-modify-write, every read a shared one, and every file is replaced by rename, so a
// reader never sees a half-written attribute. A process killed between two writes leaves a
// consistent tree; one killed inside a multi-file write (a bind) may leave that write partly
// done, as a crashed kernel would not, but the next writer still sees well-formed files.
//
// # Layout (variant "spr")
//
//	sys/devices/pci0000:6a/0000:6a:01.0/{vendor,device,class,numa_node,driver_override,
//	    iommu_group -> ../../../kernel/iommu_groups/1, driver -> ../../../bus/pci/drivers/idxd}
//	sys/devices/pci0000:6a/0000:6a:01.0/dsa0/{version,max_groups,...,state,cmd_status,clients}
//	sys/devices/pci0000:6a/0000:6a:01.0/dsa0/{wq0.0..wq0.7,engine0.0..engine0.3,group0.0..group0.3}/
//	sys/bus/dsa/devices/{dsa0,wq0.M,engine0.M,group0.M} -> the directories above
//	sys/bus/dsa/drivers/{idxd,user,dmaengine}/{bind,unbind} (old-kernel: drivers/dsa only)
//	sys/bus/pci/devices/0000:6a:01.0, sys/bus/pci/drivers/{idxd,vfio-pci}/{bind,unbind,new_id}
//	sys/kernel/iommu_groups/1/devices/0000:6a:01.0, dev/dsa/, dev/vfio/vfio
//
// Attribute values are what the kernel prints: one line ending in a newline ("-1" for an
// unassigned group_id, "disabled"/"enabled", "dedicated"/"shared", "none"/"user"/"kernel",
// cmd_status as "%#x"), except a group's engines and work_queues, which are empty files while the
// group has none, as in the kernel. Attribute files carry the kernel's modes (0444, 0644, 0200);
// reading a write-only file or writing a read-only one fails with EACCES as on sysfs.
//
// # Kernel rules simulated (drivers/dma/idxd sysfs.c, device.c, cdev.c; drivers/base)
//
// Configuration writes:
//   - WQ group_id, mode, priority, type, name, driver_name, max_batch_size, max_transfer_size,
//     ats_disable: EPERM while the WQ is enabled. block_on_fault and threshold: ENXIO while
//     enabled (the kernel's choice). size: EPERM while the device is enabled (not just the WQ).
//   - EPERM for any configuration write when the device is not configurable.
//   - EINVAL: numbers that do not parse; group_id outside -1..max_groups-1; priority above 15
//     (the kernel accepts 0); size making the WQs' sum exceed max_work_queues_size; mode other
//     than dedicated/shared; type other than none/kernel/user; name or driver_name empty or
//     longer than 1024/128 bytes; max_batch_size or max_transfer_size 0 or, rounded up to a power
//     of two as the kernel does, above the device's maximum; threshold 0, above size, or on a
//     dedicated WQ. Changing type clears the name, choosing dedicated clears threshold.
//   - engine group_id: EPERM only when the device is not configurable; the kernel accepts it
//     while the device is enabled (it takes effect at the next enable), and so does the
//     simulator.
//   - cmd_status: any write clears it to 0.
//
// dsa bus binds (bind_store: unknown device or no driver match → ENODEV, already bound → EBUSY;
// unbind from a driver the device is not bound to → ENODEV):
//   - idxd/bind dsaN: writes the configuration as idxd_device_config does — no WQ in a group:
//     cmd_status 0x800d0000 (WQ_NONE_CONFIGURED); a shared WQ in a group without PASID:
//     0x800c0000 (WQ_NO_SWQ_SUPPORT); no engine in a group: no status; a group with WQs but no
//     engine: hardware status 0x15 (GRP_CONFIG) — each failing with ENXIO, the errno the driver
//     core passes back from a probe that rejects the device. A grouped WQ of size 0 and type other
//     than none gets the kernel's default size 16. Success: state "enabled", cmd_status 0.
//   - idxd/unbind dsaN: disables every enabled WQ (their /dev/dsa nodes disappear) and resets the
//     whole configuration to the boot defaults (sizes 0, group_id -1, type none, names empty),
//     as idxd_device_clear_state does for a configurable device; state "disabled".
//   - user/bind wqN.M (dmaengine/bind alike, without the PASID rule and the node): device not
//     enabled → ENXIO; driver_name not starting with the driver's name → ENODEV and cmd_status
//     0x80200000 (WQ_NO_DRV_NAME); pasid_enabled 0 → EOPNOTSUPP and cmd_status 0x80110000
//     (WQ_USER_NO_IOMMU); then the driver sets type to user (kernel) and enables: no group
//     (0x80030000), no name (0x80040000), shared without PASID (0x80050000) or with threshold 0
//     (0x80060000) → ENXIO, and type back to none. Success: state "enabled", cdev_minor the
//     lowest free minor, dev/dsa/wqN.M a 4096-byte regular file (mode 0600) standing for the
//     portal, cmd_status 0.
//   - user/unbind wqN.M: node removed, cdev_minor unreadable again, state "disabled", and the
//     WQ's configuration except size and group_id reset (idxd_wq_disable_cleanup); driver_name
//     is kept.
//   - old-kernel: the single "dsa" driver binds both dsaN and wqN.M; a WQ bind before the
//     device is enabled is EPERM, a missing group, name or type EINVAL, and there is no PASID rule
//     for user WQs (the 5.10-era probe).
//   - Clients: the kernel does not refuse to disable a WQ or device that processes hold open; it
//     tears it down under them. The simulator refuses instead, with EBUSY, both unbinds (dsa and
//     PCI) while the WQ's or device's clients count is non-zero, so that a plan ignoring the
//     clients attribute fails loudly in tests. SetClients sets the counts.
//
// Reads: cdev_minor of a WQ without a character device fails with ENXIO, enqcmds_retries of a
// dedicated WQ with EOPNOTSUPP, as in the kernel.
//
// PCI (drivers/pci, drivers/base):
//   - pci/drivers/idxd/unbind BDF: the dsaN device and its WQs, engines and groups disappear
//     from the tree and sys/bus/dsa/devices; their configuration is lost, as on a real host.
//     pci/drivers/idxd/bind BDF recreates them with the boot defaults.
//   - driver_override: shown as "(null)" when unset; a write sets it (up to the first newline;
//     empty clears it; 4095 bytes or more → EINVAL). A set override makes a device match that
//     driver only: binding idxd while the override says vfio-pci is ENODEV, as in the kernel —
//     clear it first.
//   - pci/drivers/vfio-pci/bind BDF: matches through driver_override or an ID written to
//     new_id ("8086 0b25"; EEXIST when present, EINVAL when unparsable; a new ID binds matching
//     unbound devices at once). Success: driver -> vfio-pci and dev/vfio/<iommu group>.
//
// Device nodes: the entries under dev/dsa and dev/vfio are regular files (tests cannot mknod);
// Stat reports them as character devices with their real permission bits. Chown and Chmod act on
// the real files below dev/ and refuse other paths with EPERM.
//
// # Use
//
// Tests call Write (or Ensure, which writes only into an empty directory and otherwise reopens)
// and use the *Sim as the dsa library's FS; SetClients stands for processes holding WQs open and
// Listing gives the tree as canonical text for golden comparisons. DPDK's idxd bus can enumerate
// the tree with DSA_SYSFS_PATH=<dir>/sys/bus/dsa/devices and DSA_DEV_PATH=<dir>/dev/dsa. Every
// path the simulator is given stays inside its directory, lexically (internal/sysfs.Root) and
// through links.
//
// The package is named sim*, not *test, because the dsa plugin's --simulate mode may use it in
// product code; it touches nothing outside its directory.
package simidxd
