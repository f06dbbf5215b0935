//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// netnsDir is where `ip netns add` pins named namespaces.
const netnsDir = "/run/netns"

// Do runs fn on a new goroutine whose OS thread has entered the namespace and returns fn's
// error. Sockets fn creates (net.Listen, net.Dial…) stay in the namespace after Do returns and
// may be used from any goroutine; no other goroutine ever runs in the namespace. For a nil
// *Netns it calls fn directly. fn must not call t.FailNow, as it runs on another goroutine.
func (n *Netns) Do(fn func() error) error {
	if n == nil {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// The thread stays locked, and so is retired by the runtime with this goroutine, unless
		// it is back in its own namespace.
		runtime.LockOSThread()
		errc <- n.doLocked(fn)
	}()
	return <-errc
}

// doLocked enters the namespace on the current (locked) thread, runs fn and returns to the
// original namespace, unlocking the thread only when that worked.
func (n *Netns) doLocked(fn func() error) error {
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: %w", n.Name, err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join(netnsDir, n.Name))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: %w", n.Name, err)
	}
	defer target.Close()
	if err := setns(target); err != nil { // a failed setns leaves the thread where it was
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: enter: %w", n.Name, err)
	}
	fnErr := fn()
	if err := setns(orig); err != nil {
		return errors.Join(fnErr, fmt.Errorf("netns %s: leave: %w", n.Name, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// setns moves the calling thread into the network namespace f refers to.
func setns(f *os.File) error {
	if sysSetns == 0 {
		return fmt.Errorf("setns: not supported on %s", runtime.GOARCH)
	}
	_, _, errno := syscall.RawSyscall(sysSetns, f.Fd(), syscall.CLONE_NEWNET, 0)
	if errno != 0 {
		return fmt.Errorf("setns: %w", errno)
	}
	return nil
}
