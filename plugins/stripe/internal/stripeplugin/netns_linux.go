//go:build linux

package stripeplugin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// netnsDir holds the named network namespaces (`ip netns add`).
const netnsDir = "/run/netns"

// inNetns runs fn on a thread inside the named network namespace ("" runs it here) and returns
// its error. Sockets fn opens stay in that namespace after it returns. The thread goes back to
// its own namespace; if it cannot, it is retired with its goroutine.
func inNetns(name string, fn func() error) error {
	if name == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- doInNetns(name, fn)
	}()
	return <-errc
}

// doInNetns enters the namespace on the locked thread, runs fn, and goes back, unlocking the
// thread only when it is back.
func doInNetns(name string, fn func() error) error {
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: read this thread's namespace: %w", name, err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join(netnsDir, name))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: %w (create it with ip netns add, or leave netns out)", name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns %s: enter: %w", name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked: the runtime retires it with this goroutine.
		return fmt.Errorf("netns %s: return to the plugin's namespace: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}
