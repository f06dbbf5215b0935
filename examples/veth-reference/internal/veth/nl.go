package veth

import (
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// isNotFound reports whether a netlink look-up failed because the link does not exist.
func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return err != nil && (errors.As(err, &nf) || errors.Is(err, unix.ENODEV))
}

// linkList lists the links of h's namespace, retrying a dump the kernel interrupted.
func linkList(h *netlink.Handle) ([]netlink.Link, error) {
	var err error
	for range 5 {
		var links []netlink.Link
		if links, err = h.LinkList(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return links, err
		}
	}
	return nil, err
}

// toPrefix converts a netlink address (host bits kept) to a netip.Prefix.
func toPrefix(a netlink.Addr) (netip.Prefix, bool) {
	if a.IPNet == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := a.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}

// prefixToIPNet converts p (host bits kept) to a *net.IPNet.
func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// counters copies l's kernel statistics.
func counters(l netlink.Link) Counters {
	s := l.Attrs().Statistics
	if s == nil {
		return Counters{}
	}
	return Counters{RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes,
		TxBytes: s.TxBytes, RxDropped: s.RxDropped, TxDropped: s.TxDropped}
}

// nsName names a namespace for messages.
func nsName(name string) string {
	if name == "" {
		return "the host namespace"
	}
	return "netns " + name
}
