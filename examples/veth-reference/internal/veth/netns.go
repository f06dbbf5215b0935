package veth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultNetnsDir is where `ip netns` keeps named namespaces.
const DefaultNetnsDir = "/run/netns"

// nsHandle is an open named namespace with a netlink handle inside it.
type nsHandle struct {
	name string
	fd   netns.NsHandle
	nl   *netlink.Handle
}

// close releases the handle and the descriptor.
func (h *nsHandle) close() {
	if h == nil {
		return
	}
	h.nl.Close()
	_ = h.fd.Close()
}

// openNetns opens the namespace name under dir; it wraps ErrNetnsNotFound when it is missing.
func openNetns(dir, name string) (*nsHandle, error) {
	path := filepath.Join(dir, name)
	fd, err := netns.GetFromPath(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("netns %s: %w", name, ErrNetnsNotFound)
		}
		return nil, fmt.Errorf("netns %s: open %s: %w", name, path, err)
	}
	nl, err := netlink.NewHandleAt(fd)
	if err != nil {
		_ = fd.Close()
		return nil, fmt.Errorf("netns %s: netlink: %w", name, err)
	}
	return &nsHandle{name: name, fd: fd, nl: nl}, nil
}

// createNetns creates the named namespace as `ip netns add` does — dir a shared mount point, an
// empty file dir/name with the new namespace bind-mounted on it — brings its loopback up and
// marks the loopback with owner's mark. It fails with os.ErrExist when the name is taken.
func createNetns(dir, name, owner string) (*nsHandle, error) {
	if err := makeSharedMount(dir); err != nil {
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if errors.Is(err, os.ErrExist) && stalePlaceholder(dir, name, time.Now()) {
		// An interrupted creation (ours or `ip netns add`'s) left the empty file without a
		// namespace on it: nobody can use it, and it would block the name forever.
		if err = os.Remove(path); err == nil {
			f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	_ = f.Close()
	mark := func() error {
		nl, err := netlink.NewHandle() // in the new namespace: this thread's
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer nl.Close()
		return markLoopback(nl, owner)
	}
	if err := bindNewNetns(path, mark); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	h, err := openNetns(dir, name)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("netns %s: %w", name, err), removeNetns(dir, name))
	}
	return h, nil
}

// markLoopback brings lo up and writes the namespace mark into its alias.
func markLoopback(h *netlink.Handle, owner string) error {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	if err := h.LinkSetAlias(lo, netnsMark(owner)); err != nil {
		return fmt.Errorf("lo: set alias: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo: set up: %w", err)
	}
	return nil
}

// netnsOwned reports whether the namespace's loopback carries owner's mark.
func netnsOwned(h *netlink.Handle, owner string) (bool, error) {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return false, fmt.Errorf("lo: %w", err)
	}
	return lo.Attrs().Alias == netnsMark(owner), nil
}

// bindNewNetns creates a network namespace on a locked OS thread, bind-mounts it on path and
// returns the thread to its original namespace before unlocking it. The thread must survive:
// a terminated thread would fire the parent-death signal (PR_SET_PDEATHSIG) of any child
// process it once started, such as a test's ovs-vswitchd. Only when the way back fails does
// the goroutine exit locked, so that the runtime retires the thread.
//
// inNew, when set, runs inside the new namespace before the mount (on the locked thread): the
// namespace is marked before its name appears, so an interruption never leaves an unmarked
// namespace of ours behind.
func bindNewNetns(path string, inNew func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // a failed unshare changes nothing
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if inNew != nil {
			err = inNew()
		}
		if err == nil {
			self := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
			if err = unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
				err = fmt.Errorf("bind mount %s: %w", path, err)
			}
		}
		if serr := netns.Set(orig); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("return to the original namespace: %w", serr))
			return // still locked: the thread is retired
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// makeSharedMount makes dir a shared mount point, bind-mounting it on itself first when it is
// not a mount point, as iproute2 does, so namespaces mounted below it propagate to other mount
// namespaces.
func makeSharedMount(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s on itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}
	return nil
}

// removeNetns unmounts and removes dir/name, as `ip netns del` does. Processes or sockets
// still holding the namespace keep it alive; its name is gone.
func removeNetns(dir, name string) error {
	path := filepath.Join(dir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns %s: unmount: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	return nil
}

// coarseClockSlack covers the lag of file times behind time.Now (one kernel tick, 10 ms at
// HZ=100).
const coarseClockSlack = 20 * time.Millisecond

// stalePlaceholder reports whether dir/name is what an interrupted namespace creation leaves:
// an empty regular file on dir's own file system (no namespace bind-mounted on it) last
// modified before the given time.
func stalePlaceholder(dir, name string, before time.Time) bool {
	isPlaceholder, mtime := placeholder(dir, name)
	return isPlaceholder && mtime.Before(before.Add(-coarseClockSlack))
}

// placeholder reports whether dir/name is an empty regular file on dir's own file system (no
// namespace bind-mounted on it), and its modification time.
func placeholder(dir, name string) (bool, time.Time) {
	var d, f unix.Stat_t
	if unix.Stat(dir, &d) != nil || unix.Stat(filepath.Join(dir, name), &f) != nil {
		return false, time.Time{}
	}
	return f.Mode&unix.S_IFMT == unix.S_IFREG && f.Size == 0 && f.Dev == d.Dev, time.Unix(f.Mtim.Sec, f.Mtim.Nsec)
}
