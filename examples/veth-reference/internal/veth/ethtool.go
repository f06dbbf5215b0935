package veth

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The legacy ethtool "set" commands for the offloads a userspace switch cannot cope with
// (linux/ethtool.h). They still work on every kernel, unlike feature names, which changed.
var offloadCommands = []struct {
	name string
	cmd  uint32
}{
	{"tx-checksumming", 0x17},          // ETHTOOL_STXCSUM
	{"rx-checksumming", 0x15},          // ETHTOOL_SRXCSUM
	{"tcp-segmentation-offload", 0x1f}, // ETHTOOL_STSO
	{"generic-segmentation-offload", 0x24},
	{"generic-receive-offload", 0x2c},
}

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd, data uint32
}

// ifreqData is struct ifreq with ifr_data: the name and a pointer, padded to 40 bytes.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [40 - unix.IFNAMSIZ - unsafe.Sizeof(unsafe.Pointer(nil))]byte
}

// disableOffloads turns off checksum and segmentation offloads of dev in namespace ns, as
// `ethtool -K dev tx off rx off tso off gso off gro off` does. Without it, the kernel hands
// af_packet (OVS's userspace datapath) TCP segments with partial checksums that the switch
// forwards as they are and the receiver drops: TCP stalls. Features a device lacks are skipped.
func disableOffloads(ns netns.NsHandle, dev string) error {
	if len(dev) >= unix.IFNAMSIZ {
		return fmt.Errorf("%s: name too long", dev)
	}
	fd, err := socketIn(ns)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	defer unix.Close(fd)
	for _, c := range offloadCommands {
		v := &ethtoolValue{cmd: c.cmd, data: 0}
		ifr := &ifreqData{data: unsafe.Pointer(v)}
		copy(ifr.name[:], dev)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(ifr)))
		runtime.KeepAlive(v)
		if errno != 0 && errno != unix.EOPNOTSUPP {
			return fmt.Errorf("%s: ethtool: turn %s off: %w", dev, c.name, errno)
		}
	}
	return nil
}

// socketIn returns a datagram socket created inside the namespace, for ioctls on its
// interfaces. The creating thread enters the namespace and returns before it is unlocked.
func socketIn(ns netns.NsHandle) (int, error) {
	type result struct {
		fd  int
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{-1, fmt.Errorf("current namespace: %w", err)}
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			res <- result{-1, fmt.Errorf("enter namespace: %w", err)}
			return
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if serr := netns.Set(orig); serr != nil {
			if err == nil {
				unix.Close(fd)
			}
			res <- result{-1, errors.Join(err, fmt.Errorf("return to the original namespace: %w", serr))}
			return // still locked: the runtime retires the thread
		}
		runtime.UnlockOSThread()
		res <- result{fd, err}
	}()
	r := <-res
	return r.fd, r.err
}
