//go:build linux

package stripebed

import (
	"syscall"
	"unsafe"
)

// getsockopt is getsockopt(2) into buf; it returns the length the kernel wrote.
func getsockopt(fd, level, opt int, buf []byte) (int, error) {
	n := uint32(len(buf))
	_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
