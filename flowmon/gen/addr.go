package gen

import "net/netip"

// addrPort returns an IPv4 address and port.
func addrPort(a [4]byte, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4(a), port)
}
