package dsa

import "io/fs"

// FS is the machine's kernel filesystems as the library uses them. Paths are slash paths
// relative to the machine's root ("sys/bus/dsa/devices/dsa0/state"). internal/sysfs.Root
// implements the reads and writes over a directory; dsa/simidxd implements all of FS as a
// simulated kernel. Writes are one write(2) of the whole value, as sysfs attributes need: the
// kernel's refusal comes back as the syscall.Errno it returned (EBUSY, EINVAL, ENODEV,
// EOPNOTSUPP, EPERM...), possibly wrapped.
type FS interface {
	ReadFile(p string) (string, error)
	ReadLink(p string) (string, error)
	ReadDir(p string) ([]string, error)
	Stat(p string) (fs.FileInfo, error)
	WriteFile(p, value string) error
	// Chown and Chmod change a device node's owner and mode (/dev/dsa/wqX.Y for the OVS user).
	Chown(p string, uid, gid int) error
	Chmod(p string, mode fs.FileMode) error
}
