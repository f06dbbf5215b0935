//go:build linux

package sandbox

import "syscall"

// sysProcAttr returns the process attributes of a sandbox daemon: its own process group (terminal
// signals go to ovsplaned, which stops the daemons in order), SIGKILL when its parent thread
// dies, and, when privateNet, a new network namespace.
func sysProcAttr(privateNet bool) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if privateNet {
		attr.Cloneflags = syscall.CLONE_NEWNET
	}
	return attr, nil
}
