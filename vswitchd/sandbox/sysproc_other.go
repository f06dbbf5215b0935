//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// sysProcAttr fails: the sandbox relies on Linux's parent-death signal and namespaces.
func sysProcAttr(bool) (*syscall.SysProcAttr, error) {
	return nil, errors.New("sandbox: needs Linux (parent-death signal, network namespaces)")
}
