//go:build linux

package stripebed

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// udpPayloadFor returns the payload of the datagrams a UDPStream sends on the connected socket
// c: want when set (8 to udpPayload), else the largest that fits the path MTU without
// fragments (IP_MTU minus the IPv4 and UDP headers), at most udpPayload.
func udpPayloadFor(c *net.UDPConn, want int) (int, error) {
	if want != 0 {
		if want < 8 || want > udpPayload {
			return 0, fmt.Errorf("datagram payload of %d bytes: want 8 to %d, or 0 for the path's", want, udpPayload)
		}
		return want, nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("path MTU: %w", err)
	}
	var mtu int
	var gerr error
	if err := rc.Control(func(fd uintptr) { mtu, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU) }); err != nil {
		return 0, fmt.Errorf("path MTU: %w", err)
	}
	if gerr != nil {
		return 0, fmt.Errorf("path MTU (IP_MTU): %w", gerr)
	}
	if mtu-28 < 8 {
		return 0, fmt.Errorf("path MTU %d leaves no room for a datagram's sequence number", mtu)
	}
	return min(udpPayload, mtu-28), nil
}
