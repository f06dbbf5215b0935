//go:build !linux

package ovsproc

import (
	"errors"
	"syscall"
)

// sysProcAttr fails: daemons rely on Linux's parent-death signal and namespaces.
func sysProcAttr(bool, bool) (*syscall.SysProcAttr, error) {
	return nil, errors.New("ovsproc: needs Linux (parent-death signal, network namespaces)")
}
