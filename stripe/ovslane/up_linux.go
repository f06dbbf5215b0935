//go:build linux

package ovslane

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ovsplane/ovsplane/stripe/link"
)

// Up sets the kernel device of a lane administratively up (IFF_UP) in the caller's network
// namespace, as `ip link set NAME up` does; a lane that is up already is left alone. The
// userspace datapath creates an internal port's tap device down, and the engine's link needs it
// up to send and receive.
func Up(name string) error {
	if err := link.CheckInterfaceName(name); err != nil {
		return fmt.Errorf("ovslane: lane: %w", err)
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ovslane: lane %s up: socket: %w", name, err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("ovslane: lane %s up: %w", name, err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("ovslane: lane %s: read flags: %w", name, err)
	}
	if ifr.Uint16()&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("ovslane: lane %s up: %w", name, err)
	}
	return nil
}
