package collect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// ReceiverConfig configures a Receiver. Zero values take the defaults shown.
type ReceiverConfig struct {
	// Addr is the UDP address to listen on, host:port ("[::]:2055" for IPv4 and IPv6,
	// "127.0.0.1:0" for an ephemeral port). Required.
	Addr string
	// Sockets is how many SO_REUSEPORT sockets (one reading goroutine each) share Addr
	// (default 2, at most 64). The kernel spreads exporters over them by source address and port.
	Sockets int
	// RcvBuf is the socket receive buffer to request, in bytes (0: the kernel default; at most
	// 1 GiB). As root the request may exceed net.core.rmem_max (SO_RCVBUFFORCE); Receiver.RcvBuf
	// reports what the kernel granted.
	RcvBuf int
	// Batch is how many datagrams one read (recvmmsg) may return (default 32, at most 1024).
	Batch int
	// MaxDatagram is the largest datagram accepted, in bytes (default and maximum 65535);
	// larger ones are counted (oversized) and dropped. Each socket holds Batch buffers of it.
	MaxDatagram int
}

func (c ReceiverConfig) withDefaults() (ReceiverConfig, error) {
	if c.Addr == "" {
		return c, errors.New("flow receiver: no listen address: set Addr (host:port, e.g. [::]:2055)")
	}
	if c.Sockets == 0 {
		c.Sockets = 2
	}
	if c.Batch == 0 {
		c.Batch = 32
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = MaxDatagram
	}
	switch {
	case c.Sockets < 1 || c.Sockets > 64:
		return c, fmt.Errorf("flow receiver %s: %d sockets: want 1 to 64", c.Addr, c.Sockets)
	case c.Batch < 1 || c.Batch > 1024:
		return c, fmt.Errorf("flow receiver %s: batch %d: want 1 to 1024", c.Addr, c.Batch)
	case c.MaxDatagram < 64 || c.MaxDatagram > MaxDatagram:
		return c, fmt.Errorf("flow receiver %s: max datagram %d: want 64 to %d", c.Addr, c.MaxDatagram, MaxDatagram)
	case c.RcvBuf < 0 || c.RcvBuf > 1<<30:
		return c, fmt.Errorf("flow receiver %s: receive buffer %d: want 0 to 1 GiB", c.Addr, c.RcvBuf)
	}
	return c, nil
}

// Sink consumes what one receiving goroutine reads. Each goroutine has its own Sink, so a Sink
// needs no locking of its own.
type Sink interface {
	// Datagram handles one datagram from exporter (source address, unmapped, and port),
	// received at received (Unix ns). b is only valid during the call.
	Datagram(exporter netip.AddrPort, received int64, b []byte)
	// EndBatch is called after the datagrams of one read, to hand on what they produced.
	EndBatch()
}

// Receiver is a set of SO_REUSEPORT UDP sockets bound to one address.
type Receiver struct {
	cfg     ReceiverConfig
	c       *Counters
	conns   []*net.UDPConn
	inodes  map[uint64]bool
	granted int
	once    sync.Once

	dropsMu sync.Mutex
	drops   uint64 // the last sum read, kept once the sockets are closed
	closed  bool
}

// Listen opens cfg.Sockets sockets on cfg.Addr and makes c report their kernel drops
// (Snapshot.SocketDrops). The sockets receive from now on; Run reads them.
func Listen(ctx context.Context, cfg ReceiverConfig, c *Counters) (*Receiver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Receiver{cfg: cfg, c: c, inodes: make(map[uint64]bool)}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && cfg.RcvBuf > 0 {
				if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, cfg.RcvBuf) != nil {
					serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, cfg.RcvBuf)
				}
			}
		})
		return errors.Join(err, serr)
	}}
	addr := cfg.Addr
	for i := range cfg.Sockets {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("flow receiver: listen on %s (socket %d of %d): %w", addr, i+1, cfg.Sockets, err)
		}
		conn := pc.(*net.UDPConn)
		r.conns = append(r.conns, conn)
		// An ephemeral port: the other sockets join the one the first got.
		addr = conn.LocalAddr().String()
		if err := r.inspect(conn); err != nil {
			r.Close()
			return nil, err
		}
	}
	if c != nil {
		c.receiver.Store(r)
	}
	return r, nil
}

// inspect records the socket's inode (for /proc/net/udp) and granted buffer.
func (r *Receiver) inspect(conn *net.UDPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("flow receiver %s: %w", r.cfg.Addr, err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if serr = unix.Fstat(int(fd), &st); serr != nil {
			return
		}
		r.inodes[st.Ino] = true
		r.granted, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("flow receiver %s: inspect socket: %w", r.cfg.Addr, err)
	}
	return nil
}

// Addr is the bound address (with the port the kernel chose for port 0).
func (r *Receiver) Addr() *net.UDPAddr { return r.conns[0].LocalAddr().(*net.UDPAddr) }

// RcvBuf is the receive buffer the kernel granted each socket, in bytes (Linux reports twice
// the requested size, its bookkeeping overhead included).
func (r *Receiver) RcvBuf() int { return r.granted }

// Close closes the sockets; it is safe to call more than once and while Run runs (Run then
// returns).
func (r *Receiver) Close() {
	r.once.Do(func() {
		r.SocketDrops() // the kernel forgets a socket's drops when it closes
		r.dropsMu.Lock()
		r.closed = true
		r.dropsMu.Unlock()
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
}

// Run reads every socket in its own goroutine until ctx ends or Close, feeding the sink
// newSink(i) made for socket i. It closes the sockets and returns nil when stopped by ctx or
// Close, or the first read error otherwise.
func (r *Receiver) Run(ctx context.Context, newSink func(socket int) Sink) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		r.Close()
	}()
	errs := make(chan error, len(r.conns))
	for i, conn := range r.conns {
		go func() { errs <- r.read(conn, newSink(i)) }()
	}
	var first error
	for range r.conns {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

func (r *Receiver) read(conn *net.UDPConn, sink Sink) error {
	var readBatch func([]ipv4.Message, int) (int, error)
	if a := conn.LocalAddr().(*net.UDPAddr); a.IP.To4() != nil {
		readBatch = ipv4.NewPacketConn(conn).ReadBatch
	} else {
		readBatch = ipv6.NewPacketConn(conn).ReadBatch
	}
	size := r.cfg.MaxDatagram + 1 // one byte more shows a datagram over the limit
	msgs := make([]ipv4.Message, r.cfg.Batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, size)}
	}
	for {
		n, err := readBatch(msgs, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("flow receiver %s: read: %w", r.cfg.Addr, err)
		}
		now := time.Now().UnixNano()
		for i := range msgs[:n] {
			m := &msgs[i]
			if m.N > r.cfg.MaxDatagram || m.Flags&unix.MSG_TRUNC != 0 {
				if r.c != nil {
					r.c.datagrams.Add(1)
					r.c.bytes.Add(uint64(m.N))
					r.c.decodeError(ErrOversized)
				}
				continue
			}
			var from netip.AddrPort
			if ua, ok := m.Addr.(*net.UDPAddr); ok {
				a, _ := netip.AddrFromSlice(ua.IP)
				from = netip.AddrPortFrom(a.Unmap(), uint16(ua.Port))
			}
			sink.Datagram(from, now, m.Buffers[0][:m.N])
		}
		sink.EndBatch()
	}
}

// SocketDrops sums the kernel's drop counters of the receiver's sockets, read from
// /proc/net/udp and /proc/net/udp6 (the "drops" column, matched by socket inode). It returns 0
// for sockets it cannot find (the files are per network namespace). After Close it returns
// the last sum read before the sockets closed.
func (r *Receiver) SocketDrops() uint64 {
	r.dropsMu.Lock()
	defer r.dropsMu.Unlock()
	if r.closed {
		return r.drops
	}
	var total uint64
	for _, p := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		n, _ := procUDPDrops(p, r.inodes)
		total += n
	}
	r.drops = max(r.drops, total)
	return r.drops
}

// procUDPDrops sums the drops column of the lines of a /proc/net/udp-format file whose inode
// is in inodes.
func procUDPDrops(path string, inodes map[uint64]bool) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("socket drops: %w", err)
	}
	defer f.Close()
	var total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:tm retrnsmt uid timeout inode ref pointer drops
		if len(fields) < 13 {
			continue
		}
		ino, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil || !inodes[ino] {
			continue
		}
		if d, err := strconv.ParseUint(fields[12], 10, 64); err == nil {
			total += d
		}
	}
	if err := sc.Err(); err != nil {
		return total, fmt.Errorf("socket drops: read %s: %w", path, err)
	}
	return total, nil
}
