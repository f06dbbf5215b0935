//go:build !linux

package sdk

import "syscall"

// processAttr puts a supervised program in its own process group. Outside Linux there is no
// parent-death signal: a program may outlive a plugin that is killed (a plugin that exits
// normally stops it first).
func processAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// waitExited does not wait outside Linux and reports so: the group is not killed when the
// program exits, and Stop's signals race a program exiting at that moment.
func waitExited(int) bool { return false }
