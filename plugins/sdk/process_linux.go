package sdk

import (
	"syscall"
	"unsafe"
)

// processAttr puts a supervised program in its own process group and has the kernel kill it
// (SIGKILL) when the thread that started it ends, which Process.supervise makes the end of the
// supervision or of the plugin process.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitid's idtype and options (linux/wait.h).
const (
	pPID    = 1
	wExited = 0x4
	wNowait = 0x1000000
)

// waitExited blocks until the process pid has exited, without reaping it (waitid WNOWAIT): its
// id, and so its process group's, stays reserved until Wait reaps it. It reports whether it
// waited; on an error the caller reaps as usual.
func waitExited(pid int) bool {
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNowait, 0, 0)
		if e != syscall.EINTR {
			return e == 0
		}
	}
}
