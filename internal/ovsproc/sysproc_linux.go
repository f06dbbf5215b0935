//go:build linux

package ovsproc

import "syscall"

// sysProcAttr returns the process attributes of a daemon: SIGKILL when its parent thread dies,
// and, when asked, its own process group and a new network namespace.
func sysProcAttr(ownGroup, privateNet bool) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
	if privateNet {
		attr.Cloneflags = syscall.CLONE_NEWNET
	}
	return attr, nil
}
