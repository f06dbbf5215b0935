//go:build linux

package gen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// rxBufBytes is the receive socket's buffer (SO_RCVBUFFORCE, or SO_RCVBUF when not
	// permitted).
	rxBufBytes = 32 << 20
	// rxPoll bounds one blocking receive, so Run notices ctx.
	rxPoll = 100 * time.Millisecond
	// rxMaxFrame is the largest frame read whole; longer ones are foreign anyway.
	rxMaxFrame = 9216
)

// Receiver counts generated frames per flow on one interface. Open it with NewReceiver, Run it
// (on its own goroutine), read Snapshot at any time, Close it.
type Receiver struct {
	iface string
	fd    int
	c     counts
	once  sync.Once
	stats struct {
		sync.Mutex
		packets, drops uint64
	}
}

// NewReceiver validates spec and opens an AF_PACKET socket for every protocol bound to
// spec.Interface in the calling thread's network namespace, with a 32 MiB buffer. Needs
// CAP_NET_RAW (CAP_NET_ADMIN for the buffer beyond rmem_max). Frames are counted from the
// moment it returns, even before Run reads them.
func NewReceiver(spec ReceiverSpec) (*Receiver, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	fd, err := openPacket(spec.Interface, htons(unix.ETH_P_ALL))
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rxBufBytes); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rxBufBytes)
	}
	tv := unix.NsecToTimeval(rxPoll.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("receiver on %s: SO_RCVTIMEO: %w", spec.Interface, err)
	}
	r := &Receiver{iface: spec.Interface, fd: fd}
	r.c.recv = Received{Interface: spec.Interface, Flows: make([]FlowRx, spec.Flows)}
	return r, nil
}

// Run reads and counts frames until ctx ends (it then counts what the socket still holds and
// returns nil) or the socket fails (it returns the error). Frames the host sends out of the
// interface are not counted. Call it
// once, and Close after it returned.
func (r *Receiver) Run(ctx context.Context) error {
	buf := make([]byte, rxMaxFrame)
	for ctx.Err() == nil {
		n, from, err := unix.Recvfrom(r.fd, buf, 0)
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			r.readStats()
			continue
		default:
			return fmt.Errorf("receiver on %s: %w", r.iface, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		r.c.frame(buf[:min(n, len(buf))], time.Now())
	}
	// Frames the kernel queued before ctx ended arrived in time: count them too, without
	// waiting for more (a starved reader would otherwise leave them uncounted, as if lost).
	for range rxDrainMax {
		n, from, err := unix.Recvfrom(r.fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			break
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		r.c.frame(buf[:min(n, len(buf))], time.Now())
	}
	r.readStats()
	return nil
}

// rxDrainMax bounds the frames Run reads after its ctx ended: more than a full receive buffer
// of minimum-size frames.
const rxDrainMax = rxBufBytes / 64

// readStats adds the kernel's PACKET_STATISTICS since the last read (reading resets them).
func (r *Receiver) readStats() {
	st, err := unix.GetsockoptTpacketStats(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return
	}
	r.stats.Lock()
	r.stats.packets += uint64(st.Packets)
	r.stats.drops += uint64(st.Drops)
	r.stats.Unlock()
}

// Snapshot returns the counts so far (kernel statistics as of Run's last poll).
func (r *Receiver) Snapshot() Received {
	s := r.c.snapshot()
	r.stats.Lock()
	s.KernelPackets, s.KernelDrops = r.stats.packets, r.stats.drops
	r.stats.Unlock()
	return s
}

// Close closes the socket; call it after Run returned. Safe to call more than once.
func (r *Receiver) Close() error {
	var err error
	r.once.Do(func() { err = unix.Close(r.fd) })
	return err
}
