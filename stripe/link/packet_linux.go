//go:build linux

package link

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"golang.org/x/net/bpf"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// packetLink is the AF_PACKET Link.
type packetLink struct {
	name      string
	mac       net.HardwareAddr
	mtu       int
	ifindex   int
	ethertype uint16
	f         *os.File
	rc        syscall.RawConn
	ring      *rxRing // nil without Config.RxRing

	mu     sync.Mutex
	stats  Stats
	closed bool

	batchMu sync.Mutex
	batch   *batchScratch // SendBatch's vectors, allocated by the first call
}

// Open opens a packet socket on cfg.Interface for stripe frames of cfg.EtherType. It must run
// in the network namespace of the interface (the socket stays there; it can then be used from
// any goroutine). It fails, leaving nothing open, when the configuration is invalid, the
// interface does not exist, is not Ethernet-like or its MTU is below MinMTU, or the process may
// not open packet sockets (CAP_NET_RAW).
func Open(ctx context.Context, cfg Config) (Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("link %s: open: %w", cfg.Interface, err)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	proto := htons(cfg.EtherType)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return nil, fmt.Errorf("link %s: open packet socket (needs CAP_NET_RAW): %w", cfg.Interface, err)
	}
	if cfg.PeerNode != 0 {
		// Before the bind: no frame of another node is queued in between.
		if err := attachPeerFilter(fd, cfg.PeerNode); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("link %s: %w", cfg.Interface, err)
		}
	}
	l, err := setup(fd, cfg, proto)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return l, nil
}

// setup configures and binds the socket fd and wraps it for the poller.
func setup(fd int, cfg Config, proto uint16) (*packetLink, error) {
	name := cfg.Interface
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return nil, fmt.Errorf("link %s: no such interface in this network namespace (check `ip link`): %w", name, err)
	}
	ifindex := int(ifr.Uint32())
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return nil, fmt.Errorf("link %s: read MTU: %w", name, err)
	}
	mtu := int(ifr.Uint32())
	if mtu < MinMTU {
		return nil, fmt.Errorf("link %s: MTU %d: want at least %d (ip link set %s mtu 1500)", name, mtu, MinMTU, name)
	}
	mtu = min(mtu, MaxMTU)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, cfg.RecvBuffer); err != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, cfg.RecvBuffer); err != nil {
			return nil, fmt.Errorf("link %s: set receive buffer to %d bytes: %w", name, cfg.RecvBuffer, err)
		}
	}
	if cfg.SendBuffer > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, cfg.SendBuffer); err != nil {
			return nil, fmt.Errorf("link %s: set send buffer to %d bytes: %w", name, cfg.SendBuffer, err)
		}
	}
	var ring *rxRing
	if cfg.RxRing {
		if ring, err = setupRing(fd, cmp.Or(cfg.RingBlocks, RingBlocks)); err != nil {
			return nil, fmt.Errorf("link %s: %w", name, err)
		}
	}
	fail := func(err error) (*packetLink, error) {
		if ring != nil {
			_ = ring.close()
		}
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return fail(fmt.Errorf("link %s: bind packet socket: %w", name, err))
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail(fmt.Errorf("link %s: read hardware address: %w", name, err))
	}
	ll, ok := sa.(*unix.SockaddrLinklayer)
	if !ok || ll.Halen != 6 {
		return fail(fmt.Errorf("link %s: not an Ethernet interface (hardware address of %d bytes)", name, addrLen(ll)))
	}
	// Drop what the statistics counted before the bind finished; the counters start now.
	if _, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err != nil {
		return fail(fmt.Errorf("link %s: read PACKET_STATISTICS: %w", name, err))
	}
	f := os.NewFile(uintptr(fd), "packet:"+name)
	rc, err := f.SyscallConn()
	if err != nil {
		return fail(fmt.Errorf("link %s: %w", name, err))
	}
	return &packetLink{name: name, mac: net.HardwareAddr(append([]byte(nil), ll.Addr[:6]...)), mtu: mtu,
		ifindex: ifindex, ethertype: cfg.EtherType, f: f, rc: rc, ring: ring}, nil
}

func addrLen(ll *unix.SockaddrLinklayer) int {
	if ll == nil {
		return 0
	}
	return int(ll.Halen)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (l *packetLink) Name() string          { return l.name }
func (l *packetLink) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), l.mac...) }
func (l *packetLink) MTU() int              { return l.mtu }

// deadline arms a deadline on the file from ctx and returns the function that disarms it.
func (l *packetLink) deadline(ctx context.Context, set func(time.Time) error) (stop func() bool) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Time{}
	}
	_ = set(d)
	return context.AfterFunc(ctx, func() { _ = set(time.Unix(1, 0)) })
}

// noStop stands in for the deadline's stop function when none was armed.
func noStop() bool { return false }

// Send implements Link.
func (l *packetLink) Send(ctx context.Context, dst net.HardwareAddr, b []byte) error {
	if len(dst) != 6 {
		return fmt.Errorf("link %s: destination %v: want a 6-byte MAC", l.name, dst)
	}
	if len(b) > l.mtu {
		return fmt.Errorf("link %s: frame of %d bytes, MTU %d: %w", l.name, len(b), l.mtu, ErrTooLong)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(l.ethertype), Ifindex: l.ifindex, Halen: 6}
	copy(sa.Addr[:], dst)
	staleDown := false
	// The first attempt does not arm ctx's deadline on the file (a timer and two poller calls
	// per frame): it only sends when the socket has room. EAGAIN, or a deadline left by another
	// caller, arms it and waits.
	armed := false
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("link %s: send: %w", l.name, err)
		}
		stop := noStop
		if armed {
			stop = l.deadline(ctx, l.f.SetWriteDeadline)
		}
		var serr error
		err := l.rc.Write(func(fd uintptr) bool {
			serr = unix.Sendto(int(fd), b, 0, sa)
			return serr != unix.EAGAIN || !armed
		})
		stop()
		switch {
		case err == nil && serr == unix.EAGAIN:
			armed = true
			continue // the socket is full: wait with the deadline armed
		case errors.Is(err, os.ErrDeadlineExceeded):
			armed = true
			continue // ctx ended (checked above) or another caller's deadline fired: retry
		case errors.Is(err, os.ErrClosed) || (err != nil && l.isClosed()):
			return fmt.Errorf("link %s: send: %w", l.name, ErrClosed)
		case err != nil:
			return fmt.Errorf("link %s: send: %w", l.name, err)
		}
		if serr != nil && isDown(serr) && !staleDown {
			// A down event leaves its error on the socket, reported by the next call even after
			// the interface came back: retry once when the interface is usable now.
			if st, err := l.State(); err == nil && st.Usable() {
				staleDown = true
				continue
			}
		}
		l.mu.Lock()
		if serr != nil {
			l.stats.TxErrors++
		} else {
			l.stats.TxFrames++
			l.stats.TxBytes += uint64(len(b))
		}
		l.mu.Unlock()
		if serr != nil {
			return fmt.Errorf("link %s: send %d bytes to %v: %w", l.name, len(b), dst, serr)
		}
		return nil
	}
}

// Recv implements Link.
func (l *packetLink) Recv(ctx context.Context, buf []byte) (int, net.HardwareAddr, error) {
	if l.ring != nil {
		return l.recvRing(ctx, buf)
	}
	armed := false // as in Send: try once before arming ctx's deadline
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, err)
		}
		stop := noStop
		if armed {
			stop = l.deadline(ctx, l.f.SetReadDeadline)
		}
		var (
			n    int
			from unix.Sockaddr
			rerr error
		)
		err := l.rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_TRUNC)
			return rerr != unix.EAGAIN || !armed
		})
		stop()
		switch {
		case err == nil && rerr == unix.EAGAIN:
			armed = true
			continue // nothing waiting: wait with the deadline armed
		case errors.Is(err, os.ErrDeadlineExceeded):
			armed = true
			continue
		case errors.Is(err, os.ErrClosed) || (err != nil && l.isClosed()):
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, ErrClosed)
		case err != nil:
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, err)
		case rerr != nil:
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, rerr)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Pkttype == unix.PACKET_OUTGOING || ll.Halen != 6 {
			continue
		}
		l.mu.Lock()
		if n > len(buf) {
			l.stats.RxOversize++
			l.mu.Unlock()
			continue
		}
		l.stats.RxFrames++
		l.stats.RxBytes += uint64(n)
		l.mu.Unlock()
		return n, net.HardwareAddr(append([]byte(nil), ll.Addr[:6]...)), nil
	}
}

// recvRing is Recv from the TPACKET_V3 ring: no system call while frames are waiting.
func (l *packetLink) recvRing(ctx context.Context, buf []byte) (int, net.HardwareAddr, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, err)
		}
		f := l.ring.take(buf)
		if f.ok {
			if f.outgoing {
				continue
			}
			l.mu.Lock()
			if f.copied != f.n {
				l.stats.RxOversize++
				l.mu.Unlock()
				continue
			}
			l.stats.RxFrames++
			l.stats.RxBytes += uint64(f.n)
			l.mu.Unlock()
			return f.n, f.src, nil
		}
		if l.isClosed() {
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, ErrClosed)
		}
		stop := l.deadline(ctx, l.f.SetReadDeadline)
		err := l.rc.Read(func(uintptr) bool { return l.ring.ready() })
		stop()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case errors.Is(err, os.ErrClosed) || (err != nil && l.isClosed()):
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, ErrClosed)
		case err != nil:
			return 0, nil, fmt.Errorf("link %s: receive: %w", l.name, err)
		}
	}
}

// Stats implements Link: it adds the kernel's PACKET_STATISTICS since the last call.
func (l *packetLink) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		_ = l.rc.Control(func(fd uintptr) {
			if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
				l.stats.KernelRx += uint64(st.Packets)
				l.stats.KernelDrops += uint64(st.Drops)
			}
		})
	}
	return l.stats
}

// State implements Link with SIOCGIFFLAGS on the socket (so in the socket's namespace). An
// interface that no longer exists is reported down with an error satisfying IsDown.
func (l *packetLink) State() (State, error) {
	ifr, err := unix.NewIfreq(l.name)
	if err != nil {
		return State{}, fmt.Errorf("link %s: %w", l.name, err)
	}
	var ierr error
	if err := l.rc.Control(func(fd uintptr) { ierr = unix.IoctlIfreq(int(fd), unix.SIOCGIFFLAGS, ifr) }); err != nil {
		return State{}, fmt.Errorf("link %s: read state: %w", l.name, err)
	}
	if ierr != nil {
		return State{}, fmt.Errorf("link %s: read state: %w", l.name, ierr)
	}
	flags := ifr.Uint16()
	st := State{Up: flags&unix.IFF_UP != 0, Running: flags&unix.IFF_RUNNING != 0}
	if !st.Up {
		return st, nil
	}
	// IFF_RUNNING follows the operational state, which the kernel's linkwatch updates up to a
	// second after the carrier changes; ETHTOOL_GLINK asks the driver for the carrier now.
	var carrier bool
	var gerr error
	if err := l.rc.Control(func(fd uintptr) { carrier, gerr = ethtoolLink(int(fd), l.name) }); err == nil && gerr == nil {
		st.Running = carrier
	}
	return st, nil
}

// ethtoolLink asks the driver of interface name whether it has carrier (ETHTOOL_GLINK).
func ethtoolLink(fd int, name string) (bool, error) {
	value := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_GLINK}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], name)
	ifr.data = uintptr(unsafe.Pointer(&value))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&value)
	if errno != 0 {
		return false, fmt.Errorf("ETHTOOL_GLINK on %s: %w", name, errno)
	}
	return value.data != 0, nil
}

func (l *packetLink) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close implements Link.
func (l *packetLink) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	err := l.f.Close()
	if l.ring != nil {
		if rerr := l.ring.close(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("link %s: close: %w", l.name, err)
	}
	return nil
}

func isDown(err error) bool {
	return errors.Is(err, unix.ENETDOWN) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV)
}

// srcNodeOffset is where stripe/frame's header holds the source node id (TestPeerFilter checks
// it against the frame package).
const srcNodeOffset = 4

// attachPeerFilter attaches to the packet socket fd a classic BPF filter that passes only the
// frames whose source node field (frame header bytes 4–7, big endian; a SOCK_DGRAM socket's
// filter sees the frame from its first byte) is peer, whole, and drops the rest in the kernel.
func attachPeerFilter(fd int, peer uint32) error {
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: srcNodeOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: peer, SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: 0xffff_ffff},
	})
	if err != nil {
		return fmt.Errorf("assemble the filter of peer node %d: %w", peer, err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("attach the filter of peer node %d: %w", peer, err)
	}
	return nil
}
